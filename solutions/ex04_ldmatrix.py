"""Exercise 04: which address each lane gives ldmatrix.x4.

mma.sync.m16n8k16 takes its A operand as a 16x16 fp16 fragment spread over the 32 lanes
of a warp. ``ldmatrix.sync.aligned.m8n8.x4.shared.b16`` loads it from shared memory in one
instruction: it reads four 8x8 matrices, each row of a matrix being one 16-byte chunk
(8 halfs), and every lane supplies the address of one row:

    lanes  0- 7: rows of matrix 0       matrix 0 = rows 0-7,  k 0-7   (chunk 0)
    lanes  8-15: rows of matrix 1       matrix 1 = rows 8-15, k 0-7   (chunk 0)
    lanes 16-23: rows of matrix 2       matrix 2 = rows 0-7,  k 8-15  (chunk 1)
    lanes 24-31: rows of matrix 3       matrix 3 = rows 8-15, k 8-15  (chunk 1)

Lane 8 * j + i supplies row i of matrix j. Matrix j lands in register j of every lane, which
is exactly the a0..a3 order mma.sync expects (PTX ISA, "Matrix Fragments for mma.m16n8k16").

Check it:  hgemm-course check ex04_ldmatrix
  (checks ./ex04_ldmatrix.py, else ./exercises/ex04_ldmatrix.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex04_ldmatrix --path my_ex04.py
  or in a notebook:  from hgemm_course.check import check; check("ex04", ldmatrix_x4_src_row)
"""


def ldmatrix_x4_src_row(lane: int) -> tuple[int, int]:
    """The (row, chunk) of the 16x16 A tile whose address ``lane`` (0-31) supplies:
    row 0-15, chunk 0 (k 0-7) or 1 (k 8-15)."""
    # BEGIN SOLUTION
    return lane % 16, lane // 16
    # END SOLUTION
