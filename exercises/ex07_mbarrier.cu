// Exercise 07: the full/empty mbarrier ring of rung 07 (hgemm_course/library/kernels/k07_tma.cu).
//
// This file is the rung-07 kernel in the form chapter 07 first teaches (one fragment buffer)
// with the top of its main loop cut out. The ring (TmaRing, kernels/common.cuh) has STAGES
// stages; slice kt of K lives in stage kt % STAGES. Each stage has two mbarriers:
//
//   ring.full[s]    completes a phase when the TMA bytes of the slice in stage s have landed
//   ring.empty[s]   completes a phase when all THREADS / 32 warps have finished reading stage s
//
// The mbar_* functions take a barrier's shared-memory address: smem_u32(&ring.full[s]).
// A barrier's phases are numbered 0, 1, 2, ...; mbar_wait_parity(bar, p) returns once the
// most recent phase with parity p (0 or 1) has completed. Stage s is filled and emptied once per
// round of the ring, so slice kt is the (kt / STAGES)-th use of its stage.
//
// Fill in the two marked regions (BEGIN SOLUTION .. END SOLUTION): thread 0 refills the stage freed last iteration with slice
// next = kt + STAGES - 1 (load_tile(stage, slice)), waiting first, from the second round of the
// ring on, until every warp has left that stage; then every thread waits until slice kt has landed.
//
// Check it:  hgemm-course check ex07_mbarrier
//   (checks ./ex07_mbarrier.cu, else ./exercises/ex07_mbarrier.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex07_mbarrier --path my_ex07.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex07"))
// The checker compiles the file for the GPU here if it runs rung 07 (else for the recorded H200),
// inspects the PTX and plays your waits through a model of the ring; on such a GPU it also runs your
// kernel (a hang is stopped by a timeout) and compares C, else it could not check it.
// Rung 07: rung 06 with the loads handed to the Tensor Memory Accelerator. One thread asks
// the copy engine for each k-slice (one box of A, BN / 64 boxes of B); the engine swizzles
// exactly like swizzle_128b, zero-fills past M, N and K, and reports the bytes on the
// stage's full mbarrier. Warps free a stage by arriving on its empty mbarrier, so the
// __syncthreads of the K loop are gone. The compute and the epilogue are rung 06's.
#include "common.cuh"
#include "fence.cuh"
#include "ldmatrix.cuh"
#include "mbarrier.cuh"
#include "mma_sync.cuh"
#include "swizzle.cuh"
#include "tma.cuh"

// C (M, N) = A (M, K) @ B (K, N), fp16 in and out, fp32 accumulation, all row-major.
// A CTA computes a (BM, BN) tile of C with (BM / WM) x (BN / WN) warps, each a (WM, WN)
// sub-tile; the K loop walks BK-wide slices through a STAGES-deep TMA + mbarrier ring. The 1-D grid
// holds cdiv(grid_m, SUPER_M) * cdiv(grid_n, SUPER_N) super tiles of SUPER_M * SUPER_N CTAs.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int SUPER_M, int SUPER_N>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
k07_tma(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K,
        const __grid_constant__ TensorMap tmap_a,  // A (M, K): boxes of (BM, BK), SWIZZLE_128B
        const __grid_constant__ TensorMap tmap_b) { // B (K, N): boxes of (BK, 64), SWIZZLE_128B
    const CtaClock cta_clock;  // the timing build logs this CTA's start and end (cta_clock.cuh)
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int WARPS_N = BN / WN;
    constexpr int FRAG_M = WM / 16;                   // m16 fragments per warp
    constexpr int FRAG_N = WN / 8;                    // n8 fragments per warp
    constexpr int B_PANEL = BK * 128;                 // bytes of one (BK, 64) panel of B

    extern __shared__ __align__(1024) unsigned char smem[];
    auto& ring = aligned_smem<TmaRing<BM, BN, BK, STAGES>>(smem); // the stages and their mbarriers (common.cuh)

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int warp_m = warp / WARPS_N;
    const int warp_n = warp % WARPS_N;

    const int grid_m = cdiv(M, BM);
    const int grid_n = cdiv(N, BN);
    const int sb = blockIdx.x / (SUPER_M * SUPER_N);  // which super tile
    const int in_sb = blockIdx.x % (SUPER_M * SUPER_N); // which tile inside it
    const int sb_m = sb / cdiv(grid_n, SUPER_N);      // super tiles: m slow,
    const int sb_n = sb % cdiv(grid_n, SUPER_N);      //              n fast
    const int bid_m = sb_m * SUPER_M + in_sb / SUPER_N; // tile row of C: m slow inside,
    const int bid_n = sb_n * SUPER_N + in_sb % SUPER_N; // tile column of C: n fast inside
    if (bid_m >= grid_m || bid_n >= grid_n) return;   // the edge super tiles are not full
    const int m0 = bid_m * BM;
    const int n0 = bid_n * BN;
    const int k_tiles = cdiv(K, BK);

    // One k-slice into one stage, asked for by one thread: the (BM, BK) box of A and BN / 64
    // (BK, 64) boxes of B, all counted on the stage's full barrier. Boxes reaching past M, N
    // or K arrive zero-filled, so the tails add nothing to the sums.
    auto load_tile = [&](int stage, int kt) {
        const int k0 = kt * BK;
        const unsigned a_stage = smem_u32(ring.a[stage]);   // (BM, BK) halves
        const unsigned b_stage = smem_u32(ring.b[stage]);   // (BK, BN) halves
        const unsigned full = smem_u32(&ring.full[stage]);
        mbar_arrive_expect_tx(full, sizeof(ring.a[stage]) + sizeof(ring.b[stage]));
        tma_load_2d(a_stage, &tmap_a, k0, m0, full);
#pragma unroll
        for (int p = 0; p < BN / 64; ++p) {
            tma_load_2d(b_stage + p * B_PANEL, &tmap_b, n0 + p * 64, k0, full);
        }
    };

    // ldmatrix row addresses of this lane, relative to a stage: A rows lane % 16 at k-chunk
    // lane / 16; B k-rows lane % 16 at n-chunk lane / 16. Swizzled once here: moving 16 rows
    // keeps row % 8, and moving 16 halves (2 chunks) along a row is an XOR with 32 bytes.
    const unsigned a_lane = swizzle_128b(warp_m * WM + lane % 16, lane / 16);
    const unsigned b_lane = (warp_n * WN / 64) * B_PANEL + swizzle_128b(lane % 16, (warp_n * WN % 64) / 8 + lane / 16);

    float acc[FRAG_M][FRAG_N][4] = {};                // (WM, WN) fp32 accumulators of this warp

    // ---- prologue: set up the barriers, fill STAGES - 1 stages ----------------------------
    if (tid == 0) {
        tma_prefetch_descriptor(&tmap_a);
        tma_prefetch_descriptor(&tmap_b);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&ring.full[s]), 1);
            mbar_init(smem_u32(&ring.empty[s]), THREADS / 32);
        }
        fence_mbarrier_init();
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < k_tiles) load_tile(s, s);
        }
    }
    __syncthreads();

    // ---- main loop: refill the stage freed last iteration, wait for slice kt, compute ----
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int next = kt + STAGES - 1;
        // BEGIN SOLUTION
        // TODO: if tid == 0 and next < k_tiles: from the second round on (next >= STAGES), wait on the
        //       empty barrier of stage next % STAGES for the phase its warps completed in the previous
        //       round, then load_tile(next % STAGES, next).
        // END SOLUTION
        __syncwarp();                                 // warp 0 whole again before its warp-wide ldmatrix
        // BEGIN SOLUTION
        // TODO: Every thread waits on the full barrier of stage kt % STAGES until slice kt has landed:
        //       which phase of that barrier does its landing complete, and what is that phase's parity?
        // END SOLUTION

        const unsigned a_stage = smem_u32(ring.a[kt % STAGES]);   // (BM, BK) halves
        const unsigned b_stage = smem_u32(ring.b[kt % STAGES]);   // (BK, BN) halves
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            unsigned a_frag[FRAG_M][4];               // FRAG_M x (16, 16) halves of A
            unsigned b_frag[FRAG_N][2];               // FRAG_N x (16, 8) halves of B
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
                ldmatrix_x4(a_frag[i][0], a_frag[i][1], a_frag[i][2], a_frag[i][3],
                            a_stage + (a_lane ^ (kk * 32)) + i * 16 * 128);
            }
#pragma unroll
            for (int j = 0; j < FRAG_N / 2; ++j) {
                ldmatrix_x4_trans(b_frag[2 * j][0], b_frag[2 * j][1], b_frag[2 * j + 1][0], b_frag[2 * j + 1][1],
                                  b_stage + (b_lane ^ (j * 32)) + kk * 16 * 128);
            }
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) {
                    mma_m16n8k16(acc[i][j], a_frag[i], b_frag[j]);
                }
            }
        }
        fence_proxy_async_shared_cta();               // this warp's reads ordered before the TMA's next writes
        __syncwarp();
        if (lane == 0) mbar_arrive(smem_u32(&ring.empty[kt % STAGES]));
    }

    // ---- epilogue: fp32 accumulators -> fp16 pairs, straight from registers to C ---------
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int row = m0 + warp_m * WM + i * 16 + lane / 4;
            const int col = n0 + warp_n * WN + j * 8 + (lane % 4) * 2;
            store_pair_guarded(C, M, N, row, col, acc[i][j][0], acc[i][j][1]);
            store_pair_guarded(C, M, N, row + 8, col, acc[i][j][2], acc[i][j][3]);
        }
    }
}
