"""Exercise 02, the register block: the outer products of one k-slice, as a Numba CUDA device function.

Rung 02's CTA of THREADS_Y x THREADS_X = 16 x 16 threads computes a BM x BN = 64 x 64 tile of C. For each
k-slice it stages a BM x BK slice of A (a_tile) and a BK x BN slice of B (b_tile) in shared memory; then every
thread adds the slice's share to its own TM x TN = 4 x 4 block of C, which it keeps in registers (acc):

  for each kk of the BK-wide slice, load this thread's TM values of column kk of a_tile and TN values of
  row kk of b_tile into registers (a_frag, b_frag), then add their outer product into acc.

The ownership rule: thread (ty, tx) owns rows ty + THREADS_Y * i of a_tile (i = 0 .. TM-1) and columns
tx + THREADS_X * j of b_tile (j = 0 .. TN-1); acc[i, j] is its element of C at its row i and column j.

Write the body of outer_products. The checker runs it in a kernel of its own, built like rung 02's, for every
thread of the block on random tiles, under the Numba CUDA simulator; then compiles that kernel for the GPU with
Numba (acc and the frags must stay in registers) and, where a GPU is here, runs it there too.

Check it:  hgemm-course check ex02_outer_product
  (checks ./ex02_outer_product.py, else ./exercises/ex02_outer_product.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex02_outer_product --path my_ex02_outer_product.py
  or in a notebook:  from hgemm_course.check import check; print(check("ex02_outer_product"))
"""
from numba import cuda

from hgemm_course.library.ladder.k02_tiled import BK, THREADS_X, THREADS_Y, TM, TN  # noqa: F401  (yours to use)


@cuda.jit(device=True)
def outer_products(a_tile, b_tile, acc, a_frag, b_frag, ty, tx):
    """Add one k-slice's outer products into the acc of thread (ty, tx) (in rung 02, ``cuda.threadIdx.y`` and ``.x``;
    use ty and tx: the checker's simulator runs each thread on its own).

    a_tile (BM, BK) and b_tile (BK, BN): the slice in shared memory, float32, read by the whole block.
    acc (TM, TN): this thread's block of C, float32 registers, holding the sum of the k-slices before this one.
    a_frag (TM,) and b_frag (TN,): float32 registers for this thread's values of a_tile and b_tile, not loaded yet."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: for each kk, the thread's values of column kk of a_tile and row kk of b_tile into the frags, then their outer product into acc
    # EXERCISE: raise NotImplementedError("for each kk, the thread's values of column kk of a_tile and row kk of b_tile into the frags, then their outer product into acc")
    for kk in range(BK):
        for i in range(TM):
            a_frag[i] = a_tile[ty + i * THREADS_Y, kk]
        for j in range(TN):
            b_frag[j] = b_tile[kk, tx + j * THREADS_X]
        for i in range(TM):
            for j in range(TN):
                acc[i, j] += a_frag[i] * b_frag[j]
    # END SOLUTION
