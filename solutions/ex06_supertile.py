"""Exercise 06: super tiles, a launch order that keeps L2 warm.

The GPU launches CTAs in the order of their linear block index, and the CTAs resident at the
same time share the 60 MB L2 of the H200. If block i computes C tile (i // grid_n, i % grid_n)
(row-major), the resident CTAs span a few whole rows of C tiles and between them load almost
every B tile: L2 cannot keep them. Grouping the C tiles into super tiles of super_m x super_n
tiles makes neighbours in launch order neighbours in C, so they share A and B tiles in L2.

Rung 06's order, in words:
  - the grid of grid_m x grid_n tiles is covered by whole super tiles of super_m x super_n
    tiles, as many as it takes in each direction; the super tiles are launched one after the
    other, row by row of super tiles, n fastest;
  - inside a super tile its super_m * super_n blocks run row by row, n fastest;
  - the launch has a slot for every position of every super tile. Where super_m does not
    divide grid_m (or super_n grid_n), the edge super tiles stick out of the grid, and a slot
    outside the grid returns (-1, -1): that CTA exits at once.

Write the decode from a launch slot to its tile.

Extra question: the inverse. A profiler names a slow tile (bid_m, bid_n): in which launch slot
did its CTA start?
Optional: the checker checks it once it no longer raises NotImplementedError, and says so.

Check it:  hgemm-course check ex06_supertile
  (checks ./ex06_supertile.py, else ./exercises/ex06_supertile.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex06_supertile --path my_ex06.py
  or in a notebook:  from hgemm_course.check import check; check("ex06", supertile_decode, draw=True)
                     (supertile_slot next to it)
"""


def supertile_decode(block_id: int, grid_m: int, grid_n: int, super_m: int,
                     super_n: int) -> tuple[int, int]:
    """The C tile (bid_m, bid_n) that launch slot ``block_id`` computes, or (-1, -1) when the
    slot falls outside the ``grid_m`` x ``grid_n`` grid of tiles."""
    size = super_m * super_n
    across = -(-grid_n // super_n)  # super tiles per row of super tiles: ceil(grid_n / super_n)
    sb, inner = divmod(block_id, size)
    sb_m, sb_n = divmod(sb, across)
    bid_m = sb_m * super_m + inner // super_n
    bid_n = sb_n * super_n + inner % super_n
    if bid_m >= grid_m or bid_n >= grid_n:
        return -1, -1
    return bid_m, bid_n


def supertile_slot(bid_m: int, bid_n: int, grid_m: int, grid_n: int, super_m: int, super_n: int) -> int:
    """The launch slot (block_id) whose CTA computes tile (``bid_m``, ``bid_n``) of the ``grid_m`` x
    ``grid_n`` grid in rung 06's order: the inverse of supertile_decode."""
    across = -(-grid_n // super_n)
    super_tile = bid_m // super_m * across + bid_n // super_n
    return super_tile * super_m * super_n + bid_m % super_m * super_n + bid_n % super_n
