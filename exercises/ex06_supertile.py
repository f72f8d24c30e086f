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
    # BEGIN SOLUTION
    # TODO: which super tile, which block inside it, and where both are; a slot outside the grid is (-1, -1).
    raise NotImplementedError("which super tile, which block inside it, where both are; outside the grid: (-1, -1)")
    # END SOLUTION


def supertile_slot(bid_m: int, bid_n: int, grid_m: int, grid_n: int, super_m: int, super_n: int) -> int:
    """The launch slot (block_id) whose CTA computes tile (``bid_m``, ``bid_n``) of the ``grid_m`` x
    ``grid_n`` grid in rung 06's order: the inverse of supertile_decode."""
    # BEGIN SOLUTION
    # TODO: count the slots launched before this tile's super tile, then before it inside it.
    raise NotImplementedError("count the slots before this tile's super tile, then before it inside it")
    # END SOLUTION
