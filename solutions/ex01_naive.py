"""Exercise 01: one thread per element of C, and which element it is.

The naive kernel launches a 2-D grid of 2-D blocks and gives each thread one element of
C = A @ B (row-major fp16, FP32 accumulation):

    C[row, col] = sum over k of A[row, k] * B[k, col]

A warp is 32 threads with consecutive threadIdx.x: x is the fast axis. At every k the 32
threads of a warp load together, and global memory serves them in 32-byte sectors, so
which index threadIdx.x feeds decides the cost:

    x -> col   B[k, col]: 32 consecutive halfs of one row = 64 bytes = 2 sectors;
               A[row, k]: one address for the whole warp (a broadcast), 1 sector.
    x -> row   A[row, k]: 32 rows = 32 sectors, each used for 2 of its 32 bytes.

Write the mapping with x -> col. Indices come as (x, y) pairs, like CUDA's dim3.

Check it:  hgemm-course check ex01_naive
  (checks ./ex01_naive.py, else ./exercises/ex01_naive.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex01_naive --path my_ex01.py
  or in a notebook:  from hgemm_course.check import check; check("ex01", naive_thread_output)
"""


def naive_thread_output(block_idx: tuple[int, int], block_dim: tuple[int, int],
                        thread_idx: tuple[int, int]) -> tuple[int, int]:
    """The (row, col) of C that thread ``thread_idx`` = (threadIdx.x, threadIdx.y) of block
    ``block_idx`` = (blockIdx.x, blockIdx.y) computes; ``block_dim`` = (blockDim.x, blockDim.y)."""
    row = block_idx[1] * block_dim[1] + thread_idx[1]
    col = block_idx[0] * block_dim[0] + thread_idx[0]
    return row, col
