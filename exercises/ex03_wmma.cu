// Exercise 03: the tensor-core step of rung 03 (hgemm_course/library/kernels/k03_wmma.cu).
//
// This file is the whole rung-03 kernel with the heart of its main loop cut out. For each
// 16-wide k-step kk of the slice in shared memory, a warp must load its FRAG_M fragments of A
// and FRAG_N fragments of B with wmma::load_matrix_sync and multiply every pair into its
// FRAG_M x FRAG_N accumulators with wmma::mma_sync. Fill in the marked region (the lines
// between BEGIN SOLUTION and END SOLUTION).
//
//   wmma::load_matrix_sync(fragment, pointer to the fragment's top-left element, leading dimension)
//   wmma::mma_sync(d, a, b, c)                  // d = a @ b + c, one 16x16x16 product
//
// The leading dimension is the distance between rows in elements: the shared rows are padded,
// so A rows are A_LD halves apart and B rows B_LD halves apart, not BK and BN.
//
// Check it:  hgemm-course check ex03_wmma
//   (checks ./ex03_wmma.cu, else ./exercises/ex03_wmma.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex03_wmma --path my_ex03.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex03"))
// The checker compiles the file for the GPU here if it runs rung 03 (else for the recorded H200) and
// inspects the PTX, then plays your region on the CPU through a model of the fragments (which rows
// and columns each acc[i][j] adds up); on such a GPU it also runs your kernel and compares C, else it
// could not check it.
// Rung 03: tensor cores through nvcuda::wmma. A CTA stages (BM, BK) slices of A and (BK, BN)
// slices of B in shared memory with cp.async (a STAGES-deep ring; 2 is double buffering),
// rows padded by 8 halves (16 bytes) so the 8 rows of every tensor-core load fall in 8
// different bank groups; each warp multiplies 16x16x16 fragments with wmma::mma_sync.
#include "common.cuh"
#include "cp_async.cuh"
#include <mma.h>

using namespace nvcuda;

// C (M, N) = A (M, K) @ B (K, N), fp16 in and out, fp32 accumulation, all row-major.
// A CTA computes a (BM, BN) tile of C with (BM / WM) x (BN / WN) warps, each a (WM, WN)
// sub-tile; the K loop walks BK-wide slices through a STAGES-deep cp.async ring.
template <int BM, int BN, int BK, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
k03_wmma(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K) {
    const CtaClock cta_clock;  // the timing build logs this CTA's start and end (cta_clock.cuh)
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int WARPS_N = BN / WN;
    constexpr int FRAG_M = WM / 16;                   // m16 fragments per warp
    constexpr int FRAG_N = WN / 16;                   // n16 fragments per warp
    using Ring = PaddedStages<BM, BN, BK, STAGES, 8>; // rows padded by 8 halves to A_LD, B_LD (common.cuh)
    constexpr int A_LD = Ring::A_LD;                  // halves per padded A row
    constexpr int B_LD = Ring::B_LD;                  // halves per padded B row
    constexpr int A_STAGE = sizeof(Ring::a[0]);       // bytes of one A stage
    constexpr int B_STAGE = sizeof(Ring::b[0]);       // bytes of one B stage

    extern __shared__ __align__(128) unsigned char smem[];
    auto& ring = smem_as<Ring>(smem);                 // the STAGES k-slices of A and B

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int warp_m = warp / WARPS_N;
    const int warp_n = warp % WARPS_N;

    const int bid_m = blockIdx.y;                     // tile row of C
    const int bid_n = blockIdx.x;                     // tile column of C
    const int m0 = bid_m * BM;
    const int n0 = bid_n * BN;
    const int k_tiles = cdiv(K, BK);

    // One k-slice into one stage: every thread copies 16-byte chunks; chunks past M, N or K
    // are zero-filled so the tails add nothing to the sums.
    auto load_tile = [&](int stage, int kt) {
        const int k0 = kt * BK;
        const unsigned a_stage = smem_u32(ring.a) + stage * A_STAGE;   // (BM, BK) halves
        const unsigned b_stage = smem_u32(ring.b) + stage * B_STAGE;   // (BK, BN) halves
#pragma unroll
        for (int it = 0; it < BM * BK / 8 / THREADS; ++it) {
            const int idx = it * THREADS + tid;
            const int row = idx / (BK / 8);
            const int chunk = idx % (BK / 8);
            const bool inside = m0 + row < M && k0 + chunk * 8 < K;
            const half* src = inside ? A + static_cast<size_t>(m0 + row) * K + k0 + chunk * 8 : A;
            cp_async_16_zfill(a_stage + (row * A_LD + chunk * 8) * 2, src, inside ? 16 : 0);
        }
#pragma unroll
        for (int it = 0; it < BK * BN / 8 / THREADS; ++it) {
            const int idx = it * THREADS + tid;
            const int row = idx / (BN / 8);
            const int chunk = idx % (BN / 8);
            const bool inside = k0 + row < K && n0 + chunk * 8 < N;
            const half* src = inside ? B + static_cast<size_t>(k0 + row) * N + n0 + chunk * 8 : B;
            cp_async_16_zfill(b_stage + (row * B_LD + chunk * 8) * 2, src, inside ? 16 : 0);
        }
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FRAG_M][FRAG_N]; // (WM, WN) fp32 accumulators of this warp
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            wmma::fill_fragment(acc[i][j], 0.0f);
        }
    }

    // ---- prologue: fill STAGES - 1 stages --------------------------------------------------
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load_tile(s, s);
        cp_async_commit_group();
    }

    // ---- main loop: wait for slice kt, refill the stage freed last iteration, compute ----
    for (int kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait_group<STAGES - 2>();
        __syncthreads();
        const int next = kt + STAGES - 1;
        if (next < k_tiles) load_tile(next % STAGES, next);
        cp_async_commit_group();

        // The slice's (BM, BK) and (BK, BN) stages as wmma's generic pointers, offset in 32 bits like the copies'
        // addresses (ring.a[kt % STAGES] would scale the index in 64 bits and schedule the loop differently).
        const half* a_tile = reinterpret_cast<const half*>(reinterpret_cast<unsigned char*>(ring.a) + (kt % STAGES) * A_STAGE);
        const half* b_tile = reinterpret_cast<const half*>(reinterpret_cast<unsigned char*>(ring.b) + (kt % STAGES) * B_STAGE);
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a_frag[FRAG_M]; // FRAG_M x (16, 16) halves of A
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b_frag[FRAG_N]; // FRAG_N x (16, 16) halves of B
// BEGIN SOLUTION
// TODO: load a_frag[i] (rows warp_m * WM + 16 i, k 16 kk of a_tile) and b_frag[j] (k rows 16 kk,
//       columns warp_n * WN + 16 j of b_tile) with wmma::load_matrix_sync, leading dimensions
//       A_LD and B_LD, then wmma::mma_sync every pair (i, j) into acc[i][j].
// END SOLUTION
        }
    }

    // ---- epilogue: a fragment's layout is opaque, so each warp parks one (16, 16) fp32
    // fragment at a time in shared memory and writes it to C as fp16 pairs -----------------
    cp_async_wait_group<0>();
    __syncthreads();
    static_assert(THREADS / 32 * 16 * 16 * sizeof(float) <= sizeof(Ring), "every warp parks in the drained ring");
    float* park = reinterpret_cast<float*>(&ring) + warp * 16 * 16;  // (16, 16) floats of this warp
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            wmma::store_matrix_sync(park, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            const int row = m0 + warp_m * WM + i * 16 + lane / 2;
            const int col = n0 + warp_n * WN + j * 16 + (lane % 2) * 8;
#pragma unroll
            for (int q = 0; q < 8; q += 2) {
                store_pair_guarded(C, M, N, row, col + q, park[(lane / 2) * 16 + (lane % 2) * 8 + q],
                                   park[(lane / 2) * 16 + (lane % 2) * 8 + q + 1]);
            }
            __syncwarp();
        }
    }
}
