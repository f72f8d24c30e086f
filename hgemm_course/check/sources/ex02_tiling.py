"""Exercise 02: copying a tile into shared memory, every thread doing its share.

The tiled kernel stages a tile_rows x tile_cols tile of A (or B) in shared memory before
using it. All ``threads`` threads of the block copy it together, ``vec`` halfs at a time
(vec = 8 is one 16-byte load). Number the tile's vectors in row-major order:

    vector v = row * (tile_cols // vec) + col // vec

Two rules make the copy right and fast:
  1. every element is copied exactly once, by some thread;
  2. coalesced: at each step, thread t takes the vector right after thread t-1's, so the
     32 lanes of a warp read one contiguous run of memory.

Which vectors does thread tid copy, in which order, and where does each start: its (row, col)
in the tile?

Check it:  hgemm-course check ex02_tiling
  (checks ./ex02_tiling.py, else ./exercises/ex02_tiling.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex02_tiling --path my_ex02.py
  or in a notebook:  from hgemm_course.check import check; check("ex02", tile_load_coords)
"""


def tile_load_coords(tid: int, threads: int, tile_rows: int, tile_cols: int,
                     vec: int) -> list[tuple[int, int]]:
    """The (row, col) starts of the ``vec``-wide loads thread ``tid`` (of ``threads``) makes
    to copy a ``tile_rows`` x ``tile_cols`` tile, in the order it makes them."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: which vectors satisfy both rules for thread tid, and where does each start?
    # EXERCISE: raise NotImplementedError("which vectors satisfy both rules for thread tid, and where does each start?")
    per_row = tile_cols // vec  # vectors in one row of the tile
    return [(v // per_row, (v % per_row) * vec) for v in range(tid, tile_rows * per_row, threads)]
    # END SOLUTION
