"""Exercise 05: the 128-byte XOR swizzle.

A row of a 64-half fp16 tile is 128 bytes: eight 16-byte chunks, which between them cover
all 32 four-byte banks of shared memory once (physical chunk p = banks 4p to 4p+3).
ldmatrix reads the same chunk from 8 consecutive rows at once. Stored as is, chunk c of
rows 0-7 sits in the same 4 banks: an 8-way bank conflict, 8 times slower.

Padding each row by 16 bytes fixes it by shifting row r by r chunks, at the price of shared
memory and of TMA (which cannot pad). The swizzle moves chunks within the row instead:
store logical chunk c of row r at physical chunk

    c XOR (r mod 8)

Each row gets a different permutation of its 8 chunks, 8 consecutive rows put a given
logical chunk in 8 different places, and it is exactly what TMA's SWIZZLE_128B mode writes.

Check it:  hgemm-course check ex05_swizzle
  (checks ./ex05_swizzle.py, else ./exercises/ex05_swizzle.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex05_swizzle --path my_ex05.py
  or in a notebook:  from hgemm_course.check import check; check("ex05", swizzle_128b, draw=True)
"""


def swizzle_128b(row: int, chunk: int) -> int:
    """The physical 16-byte chunk (0-7) where logical ``chunk`` (0-7) of ``row`` is stored."""
    # BEGIN SOLUTION
    return chunk ^ (row % 8)
    # END SOLUTION
