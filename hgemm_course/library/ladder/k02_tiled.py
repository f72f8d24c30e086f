"""Rung 02 kernel: shared-memory tiles and 2-D register blocking. Imported on first launch (after NUMBA_ENABLE_CUDASIM is settled).

The idea: a CTA of 16x16 threads computes a BM x BN = 64x64 tile of C. Each
k-step it stages a BM x BK slice of A and a BK x BN slice of B in shared memory
(every element read from global memory once per CTA instead of once per thread),
and each thread keeps a TM x TN = 4x4 block of C in registers, so one value
loaded from shared memory feeds 4 multiply-adds instead of 1.
"""
from numba import cuda, float32
from numba.core.types import float16

BM, BN, BK = 64, 64, 16      # CTA tile of C, and the k-slice staged per step
TM, TN = 4, 4                # outputs per thread (register block)
THREADS_X, THREADS_Y = BN // TN, BM // TM     # 16 x 16 threads
THREADS = THREADS_X * THREADS_Y


# Copied into both kernels by Numba itself, so that they compile to PTX with no GPU present.
@cuda.jit(device=True, inline="always")
def tiled_gemm_body(a, b, c):
    """What every thread of tiled_gemm runs, and of its timing build (hgemm_course.library.cta_clock.numba_timing_kernel)."""
    M, K = a.shape
    N = b.shape[1]
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tid = ty * THREADS_X + tx
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    a_tile = cuda.shared.array((BM, BK), float32)     # (BM, BK) slice of A, fp32
    b_tile = cuda.shared.array((BK, BN), float32)     # (BK, BN) slice of B, fp32
    acc = cuda.local.array((TM, TN), float32)         # (TM, TN) outputs of this thread
    a_frag = cuda.local.array(TM, float32)            # (TM,) column of a_tile
    b_frag = cuda.local.array(TN, float32)            # (TN,) row of b_tile
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = 0.0

    for k0 in range(0, K, BK):
        # ---- stage the k-slice: consecutive threads take consecutive elements of a row (coalesced);
        #      elements past the matrix edge (M, N or K tails) are zero so they add nothing
        for idx in range(tid, BM * BK, THREADS):
            r, kk = idx // BK, idx % BK
            inside = row0 + r < M and k0 + kk < K
            a_tile[r, kk] = float32(a[row0 + r, k0 + kk]) if inside else float32(0.0)
        for idx in range(tid, BK * BN, THREADS):
            kk, cc = idx // BN, idx % BN
            inside = k0 + kk < K and col0 + cc < N
            b_tile[kk, cc] = float32(b[k0 + kk, col0 + cc]) if inside else float32(0.0)
        cuda.syncthreads()

        # ---- outer products from shared memory: thread (ty, tx) owns rows ty + 16 i, cols tx + 16 j
        for kk in range(BK):
            for i in range(TM):
                a_frag[i] = a_tile[ty + i * THREADS_Y, kk]
            for j in range(TN):
                b_frag[j] = b_tile[kk, tx + j * THREADS_X]
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] += a_frag[i] * b_frag[j]
        cuda.syncthreads()

    for i in range(TM):
        for j in range(TN):
            r, cc = row0 + ty + i * THREADS_Y, col0 + tx + j * THREADS_X
            if r < M and cc < N:
                c[r, cc] = float16(acc[i, j])


@cuda.jit
def tiled_gemm(a, b, c):
    tiled_gemm_body(a, b, c)
