"""Exercise 06: super tiles, a launch order that keeps L2 warm.

The GPU launches CTAs in order of their linear block index. If block i computes C tile
(i // grid_n, i % grid_n) (row-major), the CTAs resident together span a few whole rows
of C tiles, and they load almost every B tile: L2 cannot keep them. Grouping the C tiles
into super tiles of super_m x super_n makes neighbours in launch order neighbours in C,
so they share A and B tiles in L2.

The order: super tiles are numbered row-major over a ceil(grid_m / super_m) x
ceil(grid_n / super_n) grid of super tiles (n fastest), and the blocks inside a super
tile row-major too (n fastest). For block_id:

    size  = super_m * super_n                 blocks per super tile
    sb    = block_id // size                  which super tile
    inner = block_id %  size                  which block inside it
    super tile sb is at (sb // ceil(grid_n / super_n), sb % ceil(grid_n / super_n))
    the block is at    (sb_m * super_m + inner // super_n, sb_n * super_n + inner % super_n)

Super tiles at the bottom and right edges may stick out of the grid when super_m does
not divide grid_m (or super_n grid_n); the launch has a slot for every position of every
super tile, and a slot outside the grid returns (-1, -1): that CTA exits at once.

Check it:  hgemm-course check ex06_supertile
  (checks ./ex06_supertile.py, else ./exercises/ex06_supertile.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex06_supertile --path my_ex06.py
  or in a notebook:  from hgemm_course.check import check; check("ex06", supertile_decode, draw=True)
"""


def supertile_decode(block_id: int, grid_m: int, grid_n: int, super_m: int,
                     super_n: int) -> tuple[int, int]:
    """The C tile (bid_m, bid_n) that launch slot ``block_id`` computes, or (-1, -1) when the
    slot falls outside the ``grid_m`` x ``grid_n`` grid of tiles."""
    # BEGIN SOLUTION
    # TODO: follow the decode in the docstring; a slot outside the grid returns (-1, -1).
    raise NotImplementedError("follow the decode in the docstring; a slot outside the grid returns (-1, -1)")
    # END SOLUTION
