// common.cuh: the few helpers every tensor-core kernel of the ladder shares. Kernels include
// this header and never copy its functions.
#pragma once
#include <cuda_fp16.h>
#include "cta_clock.cuh"

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

// ---- the dynamic shared memory of the TMA rungs (07, 09-11) ------------------------------------------
// A kernel declares its shared memory as one struct and indexes it; the launcher asks for
// SMEM_ALIGN + sizeof(struct) bytes and checks that figure at compile time (launch_smem_bytes).

// TMA's 128-byte swizzle repeats every 8 rows of 128 bytes, so a swizzled tile must start on a 1024-byte
// boundary of the shared window, which the start of dynamic shared memory is not guaranteed to be.
constexpr int SMEM_ALIGN = 1024;

// The dynamic shared memory as a T that starts at its first 1024-byte boundary (the launcher's SMEM_ALIGN
// bytes of slack cover the skip).
template <typename T>
__device__ __forceinline__ T& aligned_smem(unsigned char* smem) {
    return *reinterpret_cast<T*>(smem + (0u - smem_u32(smem)) % SMEM_ALIGN);
}

// The ring of rungs 07, 09 and 10: STAGES k-slices of A and B as TMA writes them (128B-swizzled) and a
// full and an empty mbarrier per stage.
template <int BM, int BN, int BK, int STAGES>
struct TmaRing {
    static_assert(BM * BK * 2 % SMEM_ALIGN == 0 && BK * BN * 2 % SMEM_ALIGN == 0,
                  "every stage of A and of B starts on a 1024-byte boundary");
    alignas(SMEM_ALIGN) half a[STAGES][BM * BK];    // (BM, BK) halves per stage, swizzled
    alignas(SMEM_ALIGN) half b[STAGES][BK * BN];    // BN / 64 panels of (BK, 64) halves per stage, swizzled
    unsigned long long full[STAGES];                // mbarriers (one 64-bit word each): the stage's bytes have landed
    unsigned long long empty[STAGES];               // mbarriers: every consumer warp is done with the stage
};

// Instantiated by the launcher (ladder/nvrtc_kernel.py) with the dynamic shared memory it launches with:
// compiling fails when that is not exactly the kernel's layout plus the alignment slack.
template <typename Layout, int LAUNCH_BYTES>
struct SmemCheck {
    static_assert(SMEM_ALIGN + sizeof(Layout) == LAUNCH_BYTES,
                  "the launcher's smem_bytes is not SMEM_ALIGN + sizeof(the kernel's shared-memory struct)");
    static constexpr int bytes = LAUNCH_BYTES;
};
template <typename Layout, int LAUNCH_BYTES>
__device__ const int launch_smem_bytes = SmemCheck<Layout, LAUNCH_BYTES>::bytes;

// ---- the dynamic shared memory of the cp.async rungs (03-06) -----------------------------------------
// Their 16-byte cp.async chunks need no more alignment than dynamic shared memory always has, so the
// launcher asks for exactly sizeof(struct) and checks that figure at compile time (launch_smem_bytes_exact).

// The shared memory of a kernel that needs no alignment beyond the start of dynamic shared memory, as a T.
template <typename T>
__device__ __forceinline__ T& smem_as(unsigned char* smem) {
    return *reinterpret_cast<T*>(smem);
}

// The ring of rungs 03 and 04: STAGES k-slices of A and B, every row padded by PAD halves so the 8 rows
// of a tensor-core load start in 8 different groups of 4 banks.
template <int BM, int BN, int BK, int STAGES, int PAD>
struct PaddedStages {
    enum : int {                                    // (an enum: constants that take no device memory)
        A_LD = BK + PAD,                            // halves per padded A row
        B_LD = BN + PAD,                            // halves per padded B row
    };
    half a[STAGES][BM * A_LD];                      // (BM, BK) halves per stage, rows padded to A_LD
    half b[STAGES][BK * B_LD];                      // (BK, BN) halves per stage, rows padded to B_LD
};

// The ring of rungs 05 and 06: the same k-slices without padding, every 128-byte row 128B-swizzled.
template <int BM, int BN, int BK, int STAGES>
struct SwizzledStages {
    half a[STAGES][BM * BK];                        // (BM, BK) halves per stage, swizzled
    half b[STAGES][BK * BN];                        // BN / 64 panels of (BK, 64) halves per stage, swizzled
};

// launch_smem_bytes for these structs: compiling fails when the launcher's figure is not exactly the layout.
template <typename Layout, int LAUNCH_BYTES>
struct SmemCheckExact {
    static_assert(sizeof(Layout) == LAUNCH_BYTES,
                  "the launcher's smem_bytes is not sizeof(the kernel's shared-memory struct)");
    static constexpr int bytes = LAUNCH_BYTES;
};
template <typename Layout, int LAUNCH_BYTES>
__device__ const int launch_smem_bytes_exact = SmemCheckExact<Layout, LAUNCH_BYTES>::bytes;
