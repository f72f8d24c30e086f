"""Exercise 11: the tiles one CTA of rung 11's persistent grid computes.

Rung 11 launches only as many CTAs as fit on the GPU at once (one per SM: 132 on the H200, fewer
when there are fewer launch positions) and makes each of them walk the output tiles. The walk
goes over rung 06's launch positions: the tile grid (grid_m x grid_n tiles of C) rounded up to
whole super tiles of super_m x super_n tiles, super tiles n-fastest and tiles n-fastest inside
each (exercise 06's decode). From hgemm_course/kernels/k11_persistent.cu, both warpgroups:

    const int tiles = cdiv(grid_m, SUPER_M) * cdiv(grid_n, SUPER_N) * SUPER_M * SUPER_N; // launch positions
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int2 tile = tile_of<SUPER_M, SUPER_N>(t, grid_m, grid_n);
        if (tile.x >= grid_m || tile.y >= grid_n) continue;   // the edge super tiles are not full
        ... the main loop and the epilogue of tile (tile.x, tile.y) ...
    }

So the kernel walks the launch positions *with* their holes (the positions of partial edge super
tiles that fall outside the grid) and skips a hole when it meets one; it does not first compact
the tiles into a list without holes. CTA b's i-th position is b + i * gridDim.x, whether or not
the positions before it were holes, so CTAs that meet more holes compute fewer tiles.

Write the walk, with `cta` for blockIdx.x and `num_ctas` for gridDim.x:

    persistent_tiles(cta, num_ctas, grid_m, grid_n, super_m, super_n)
        -> the (bid_m, bid_n) tiles CTA `cta` computes, in the order it computes them
           (an empty list when all its positions are holes or it has none)

Check it:  hgemm-course check ex11_persistent
  (checks ./ex11_persistent.py, else ./exercises/ex11_persistent.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex11_persistent --path my_ex11.py
  or in a notebook:  from hgemm_course.check import check; check("ex11", persistent_tiles)
"""
from __future__ import annotations


def persistent_tiles(cta: int, num_ctas: int, grid_m: int, grid_n: int, super_m: int,
                     super_n: int) -> list[tuple[int, int]]:
    """The (bid_m, bid_n) tiles CTA ``cta`` of a ``num_ctas``-CTA persistent grid computes, in order."""
    # BEGIN SOLUTION
    # TODO: for t = cta, cta + num_ctas, ... below the launch positions: decode t as exercise 06 does,
    # keep it when it is inside the grid (a hole of an edge super tile is skipped, not compacted away).
    raise NotImplementedError("t = cta, cta + num_ctas, ... over the launch positions; decode each; skip the holes")
    # END SOLUTION
