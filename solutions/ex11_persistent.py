"""Exercise 11: the tiles one CTA of rung 11's persistent grid computes.

Rung 11 launches only as many CTAs as fit on the GPU at once (one per SM: 132 on the H200, fewer
when there are fewer launch positions) and makes each of them walk the output tiles, one after
another, with its ring running on from one tile into the next. The facts of the walk:

  - it goes over rung 06's launch positions: the tile grid (grid_m x grid_n tiles of C) rounded
    up to whole super tiles of super_m x super_n tiles, super tiles n-fastest and tiles
    n-fastest inside each (exercise 06's decode);
  - a position of a partial edge super tile that falls outside the grid is a hole: no tile;
  - the CTAs share the positions out round-robin, in launch order: the first position to CTA 0,
    the next to CTA 1, ..., the (num_ctas + 1)-th to CTA 0 again, holes included, so that
    neighbouring CTAs compute neighbouring tiles at the same time (the L2 reuse of rung 06);
  - a CTA skips its holes; it does not first compact the tiles into a list without holes.

Write the walk, with `cta` for the CTA's index and `num_ctas` for the grid's size:

    persistent_tiles(cta, num_ctas, grid_m, grid_n, super_m, super_n)
        -> the (bid_m, bid_n) tiles CTA `cta` computes, in the order it computes them
           (an empty list when all its positions are holes or it has none)

Extra question: the kernel ends when its busiest CTA does. How many tiles does the busiest CTA of
the grid compute?
Optional: the checker checks it once it no longer raises NotImplementedError, and says so.

Check it:  hgemm-course check ex11_persistent
  (checks ./ex11_persistent.py, else ./exercises/ex11_persistent.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex11_persistent --path my_ex11.py
  or in a notebook:  from hgemm_course.check import check; check("ex11", persistent_tiles)
                     (busiest_cta_tiles next to it)
"""
from __future__ import annotations


def persistent_tiles(cta: int, num_ctas: int, grid_m: int, grid_n: int, super_m: int,
                     super_n: int) -> list[tuple[int, int]]:
    """The (bid_m, bid_n) tiles CTA ``cta`` of a ``num_ctas``-CTA persistent grid computes, in order."""
    supers_n = -(-grid_n // super_n)                                # super tiles per super-tile row
    positions = -(-grid_m // super_m) * supers_n * super_m * super_n
    tiles = []
    for t in range(cta, positions, num_ctas):                       # t = blockIdx.x; t += gridDim.x
        sb, inner = divmod(t, super_m * super_n)                    # which super tile, which tile in it
        bid_m = sb // supers_n * super_m + inner // super_n         # m slow, n fast: between super tiles
        bid_n = sb % supers_n * super_n + inner % super_n           # and inside them
        if bid_m < grid_m and bid_n < grid_n:                       # a hole of a partial edge super tile
            tiles.append((bid_m, bid_n))
    return tiles


def busiest_cta_tiles(num_ctas: int, grid_m: int, grid_n: int, super_m: int, super_n: int) -> int:
    """The most tiles any CTA of a ``num_ctas``-CTA persistent grid computes."""
    return max(len(persistent_tiles(cta, num_ctas, grid_m, grid_n, super_m, super_n)) for cta in range(num_ctas))
