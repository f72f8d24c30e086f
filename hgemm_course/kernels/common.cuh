// common.cuh: the few helpers every tensor-core kernel of the ladder shares. Kernels include
// this header and never copy its functions.
#pragma once
#include <cuda_fp16.h>

// ceil(a / b) for positive integers: the number of b-sized tiles that cover a.
__host__ __device__ constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }

// The 32-bit shared-window address of a pointer into shared memory, the form that cp.async,
// ldmatrix, mbarrier and TMA take.
__device__ __forceinline__ unsigned smem_u32(const void* ptr) {
    return static_cast<unsigned>(__cvta_generic_to_shared(ptr));
}

// Writes C[row, col] and C[row, col + 1] as one half2, converted from the two FP32
// accumulators, when the pair lies inside the M x N matrix. The launchers require N % 8 == 0,
// so col is even, the pair is either wholly inside or wholly outside, and the 4-byte store
// is aligned.
__device__ __forceinline__ void store_pair_guarded(half* C, int M, int N, int row, int col, float v0, float v1) {
    if (row < M && col < N) {
        *reinterpret_cast<half2*>(C + static_cast<size_t>(row) * N + col) = __floats2half2_rn(v0, v1);
    }
}
