"""Exercise 04: which address each lane gives ldmatrix.

mma.sync.m16n8k16 takes its operands as fragments spread over the 32 lanes of a warp, and
``ldmatrix.sync.aligned.m8n8.x4.shared.b16`` loads four 8x8 matrices of 16-bit elements from
shared memory in one instruction. The hardware facts (PTX ISA, "ldmatrix" and "Matrix
Fragments for mma.m16n8k16 with floating point type"):

  ldmatrix    each row of an 8x8 matrix is one 16-byte chunk (8 halves), and each lane supplies
              the address of one row: lane 8 * j + i the address of row i of matrix j. Every
              lane l then receives, in its register j, elements (row l // 4, columns 2 (l % 4)
              and 2 (l % 4) + 1) of matrix j. The .x2 form loads two matrices: lanes 0-15
              supply addresses; the addresses of lanes 16-31 are not used, but must be valid.
  mma A       (16x16, row-major, rows m, columns k) lane l holds, as pairs of halves,
              a0: A[l // 4][2 (l % 4) .. +1]        a1: A[l // 4 + 8][2 (l % 4) .. +1]
              a2: A[l // 4][8 + 2 (l % 4) .. +1]    a3: A[l // 4 + 8][8 + 2 (l % 4) .. +1]
  mma B       (16x8, rows k, columns n) lane l holds
              b0: B[2 (l % 4) .. +1][l // 4]        b1: B[8 + 2 (l % 4) .. +1][l // 4]

The kernel keeps the A tile row-major in shared memory: 16 rows of 32 bytes, two chunks per row
(chunk 0 is k 0-7, chunk 1 is k 8-15). One ldmatrix.x4 must leave a0..a3 in registers 0-3.

Extra question: a B fragment kept transposed in shared memory, 8 rows n of 16 k (two chunks per
row, chunk 0 is k 0-7), loaded with one ldmatrix.x2 into b0 and b1. Which (row, chunk) does each
of lanes 0-15 supply? (Lanes 16-31: any valid row and chunk.)
Optional: the checker checks it once it no longer raises NotImplementedError, and says so.

Check it:  hgemm-course check ex04_ldmatrix
  (checks ./ex04_ldmatrix.py, else ./exercises/ex04_ldmatrix.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex04_ldmatrix --path my_ex04.py
  or in a notebook:  from hgemm_course.check import check; check("ex04", ldmatrix_x4_src_row)
                     (ldmatrix_x2_b_src_row next to it)
"""


def ldmatrix_x4_src_row(lane: int) -> tuple[int, int]:
    """The (row, chunk) of the 16x16 A tile whose address ``lane`` (0-31) supplies:
    row 0-15, chunk 0 (k 0-7) or 1 (k 8-15)."""
    # BEGIN SOLUTION
    # TODO: match the matrices ldmatrix delivers to the registers a0..a3 mma expects.
    raise NotImplementedError("match the matrices ldmatrix delivers to the registers a0..a3 mma expects")
    # END SOLUTION


def ldmatrix_x2_b_src_row(lane: int) -> tuple[int, int]:
    """The (row n, chunk) of the transposed 8x16 B tile whose address ``lane`` (0-31) supplies to
    ldmatrix.x2 for b0 and b1: row 0-7, chunk 0 (k 0-7) or 1 (k 8-15)."""
    # BEGIN SOLUTION
    # TODO: which matrix must land in b0 and which in b1, and which lanes supply their rows?
    raise NotImplementedError("which matrix must land in b0 and which in b1, and which lanes supply their rows?")
    # END SOLUTION
