"""Exercise 05: the 128-byte XOR swizzle.

The hardware facts:
  - shared memory has 32 banks of 4 bytes: byte address a is in bank (a // 4) % 32, and a
    warp-wide access costs one wavefront per distinct 4-byte word a bank must deliver;
  - a row of a 64-half fp16 tile is 128 bytes: eight 16-byte chunks that between them cover
    all 32 banks once (physical chunk p holds banks 4p to 4p+3);
  - one ldmatrix phase reads the same logical chunk (the same 8 values of k) from 8 consecutive
    rows of the tile; stored as is, those 8 chunks all sit in the same 4 banks;
  - TMA's SWIZZLE_128B mode, which rung 07 on uses to fill the same tiles, moves the 16-byte
    chunks of each 128-byte row only within that row, with a pattern that repeats every 8 rows
    (1024 bytes) and is an XOR of address bits (PTX ISA, "Tensor-map swizzling modes").

Padding each row by 16 bytes avoids the conflicts, at the price of shared memory and of TMA
(which cannot pad). Find instead a map from (row, logical chunk) to the physical chunk in the
same row that stores it: a permutation of the 8 chunks of every row, under which any 8
consecutive rows put a given logical chunk in 8 different physical chunks, and that agrees with
TMA's SWIZZLE_128B, so that the kernel's ldmatrix reads what TMA wrote.

Extra question: SWIZZLE_64B, for tiles whose rows are 64 bytes (4 chunks; a 32-half row). Its
pattern repeats every 512 bytes and again XORs address bits 4-5 (the chunk) with higher
address bits. Which physical chunk (0-3) stores logical chunk c of row r? Mind that 8 rows
of 64 bytes no longer span 8 different 128-byte lines of banks.
Optional: the checker checks it once it no longer raises NotImplementedError, and says so.

Check it:  hgemm-course check ex05_swizzle
  (checks ./ex05_swizzle.py, else ./exercises/ex05_swizzle.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex05_swizzle --path my_ex05.py
  or in a notebook:  from hgemm_course.check import check; check("ex05", swizzle_128b, draw=True)
                     (swizzle_64b next to it)
"""


def swizzle_128b(row: int, chunk: int) -> int:
    """The physical 16-byte chunk (0-7) where logical ``chunk`` (0-7) of ``row`` is stored."""
    # BEGIN SOLUTION
    # TODO: a permutation of each row's chunks that spreads any 8 consecutive rows over all 8 chunks.
    raise NotImplementedError("a permutation of each row's chunks that spreads 8 consecutive rows over 8 chunks")
    # END SOLUTION


def swizzle_64b(row: int, chunk: int) -> int:
    """The physical 16-byte chunk (0-3) where logical ``chunk`` (0-3) of ``row`` is stored by TMA's
    SWIZZLE_64B, in a tile of 64-byte rows."""
    # BEGIN SOLUTION
    # TODO: which address bits above the chunk change every 512 bytes, in units of 64-byte rows?
    raise NotImplementedError("which address bits above the chunk repeat every 512 bytes?")
    # END SOLUTION
