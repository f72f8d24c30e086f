"""Rung 01 kernel: one thread per output element. Imported on first launch (after NUMBA_ENABLE_CUDASIM is settled).

The idea: map threadIdx.x to the column of C, so the 32 threads of a warp read
32 neighbouring elements of a row of B and write 32 neighbouring elements of C:
each of those warp-wide accesses is one or two 32-byte sectors (coalesced).
"""
from numba import cuda, float32
from numba.core.types import float16

BLOCK_X, BLOCK_Y = 32, 8     # threads: x runs along a row of C (the coalesced axis)


# Copied into both kernels by Numba itself, so that they compile to PTX with no GPU present.
@cuda.jit(device=True, inline="always")
def naive_gemm_body(a, b, c):
    """What every thread of naive_gemm runs, and of its timing build (hgemm_course.library.cta_clock.numba_timing_kernel)."""
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x     # fast axis -> columns
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += float32(a[row, k]) * float32(b[k, col])         # b[k, col]: a warp reads one row segment
        c[row, col] = float16(acc)


@cuda.jit
def naive_gemm(a, b, c):
    naive_gemm_body(a, b, c)
