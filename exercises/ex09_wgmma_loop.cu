// Exercise 09, kernel: rung 09's wgmma main loop (hgemm_course/library/kernels/k09_wgmma.cu).
//
// This file is the rung-09 kernel with two regions cut out, plus one optional extra question at its end.
// wgmma.mma_async is issued by a whole warpgroup (128 threads) and is asynchronous: it returns
// before its products are done, and meanwhile the tensor cores read A and B from shared memory
// through 64-bit descriptors and accumulate into the warpgroup's registers. Three instructions
// order it (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"):
//
//   wgmma.fence          the warpgroup's earlier accesses to the accumulator registers (and to the
//                        shared memory wgmma reads) are ordered before the wgmma.mma_async after it
//   wgmma.commit_group   the wgmma.mma_async issued since the last commit become one group
//   wgmma.wait_group N   returns once at most N committed groups are still running
//
// A group still running may read its stage, so a stage is refilled only after the group that read
// it has finished. A descriptor (wgmma.cuh) holds a start address, a leading and a stride byte
// offset and the swizzle mode; for a 128B-swizzled operand the hardware swizzles the final
// addresses itself, so moving inside a tile moves only the start address.
//
// Check it:  hgemm-course check ex09_wgmma_loop
//   (checks ./ex09_wgmma_loop.cu, else ./exercises/ex09_wgmma_loop.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex09_wgmma_loop --path my_ex09.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex09_wgmma_loop"))
// The checker compiles the file for the GPU here if it runs rung 09 (else for the recorded H200),
// inspects the PTX and runs your regions on the CPU with stand-ins for wgmma that record each
// descriptor, fence, commit and wait; on such a GPU it also runs your kernel and compares C.
// Rung 09: rung 07's TMA ring feeding Hopper's warpgroup MMA. The CTA is one warpgroup (four
// warps) that issues wgmma.mma_async: the tensor cores read A and B straight from the swizzled
// stages through 64-bit shared-memory descriptors, so ldmatrix, the B transpose and the per-warp
// fragments are gone, and one instruction multiplies 64 x BN x 16. wgmma is asynchronous: slice
// kt's products are still running while the warpgroup waits for slice kt + 1, so a stage is
// freed one slice later than in rung 07 and the ring runs STAGES - 2 slices ahead.
#include "common.cuh"
#include "fence.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

// C (M, N) = A (M, K) @ B (K, N), fp16 in and out, fp32 accumulation, all row-major.
// A CTA computes a (BM, BN) tile of C with one warpgroup, BM / 64 wgmma products of (64, BN)
// each; the K loop walks BK-wide slices through a STAGES-deep TMA + mbarrier ring. The 1-D grid
// holds cdiv(grid_m, SUPER_M) * cdiv(grid_n, SUPER_N) super tiles of SUPER_M * SUPER_N CTAs.
template <int BM, int BN, int BK, int STAGES, int SUPER_M, int SUPER_N>
__global__ void __launch_bounds__(128, 1)
k09_wgmma(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K,
        const __grid_constant__ TensorMap tmap_a,  // A (M, K): boxes of (BM, BK), SWIZZLE_128B
        const __grid_constant__ TensorMap tmap_b) { // B (K, N): boxes of (BK, 64), SWIZZLE_128B
    const CtaClock cta_clock;  // the timing build logs this CTA's start and end (cta_clock.cuh)
    constexpr int THREADS = 128;                      // one warpgroup
    constexpr int FRAG_M = BM / 64;                   // m64 wgmma products per k16 step
    constexpr int FRAG_N = BN / 8;                    // n8 column blocks of each product
    constexpr int B_PANEL = BK * 128;                 // bytes of one (BK, 64) panel of B
    static_assert(BK == 64, "a stage row of A is one 128-byte swizzle row: BK = 64 halves");
    static_assert(BM % 64 == 0 && BN % 64 == 0, "whole m64 products and whole 64-column panels of B");
    static_assert(STAGES >= 3, "one stage is read by wgmma in flight, one is waited for, one or more load");

    extern __shared__ __align__(1024) unsigned char smem[];
    auto& ring = aligned_smem<TmaRing<BM, BN, BK, STAGES>>(smem); // the stages and their mbarriers (common.cuh)

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;                        // warp of the warpgroup: rows 16 * warp.. of each product

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

    // BEGIN SOLUTION
    // TODO: the shared-memory descriptors of a stage's operands, for the products below.
    //   desc_a(a_stage, i, kk): A's rows 64 i .. 64 i + 63 (product i), k16 step kk of the slice;
    //   desc_b(b_stage, kk):    B's k-rows 16 kk .. 16 kk + 15, all BN columns.
    // TMA stored both as 128B-swizzled (BK = 64 halves = 128 bytes per row): A (BM, BK) row-major, so
    // K-major; B (BK, BN) as BN / 64 panels of (BK, 64) halves, B_PANEL bytes each, so MN-major.
    // wgmma_desc_128b(start, leading offset, stride offset) (wgmma.cuh) encodes one; the swizzle
    // repeats every WGMMA_SWIZZLE_ATOM_BYTES (8 rows of 128 bytes) and the hardware applies it to
    // the final addresses, so a step inside a tile only moves the start. Work out, in bytes, where
    // each product and each k16 step starts and how far apart the atoms and the panels lie.
    auto desc_a = [&](unsigned a_stage, int i, int kk) { return 0ull; };
    auto desc_b = [&](unsigned b_stage, int kk) { return 0ull; };
    // END SOLUTION

    float acc[FRAG_M][FRAG_N][4] = {};                // (BM, BN) fp32 accumulators of the warpgroup

    // ---- prologue: set up the barriers, fill STAGES - 2 stages ----------------------------
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
        for (int s = 0; s < STAGES - 2; ++s) {
            if (s < k_tiles) load_tile(s, s);
        }
    }
    __syncthreads();

    // ---- main loop: refill the stage freed last iteration, wait for slice kt, compute ----
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int next = kt + STAGES - 2;
        if (tid == 0 && next < k_tiles) {
            if (next >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[next % STAGES]), (next / STAGES - 1) % 2);
            load_tile(next % STAGES, next);
        }
        __syncwarp();                                 // warp 0 whole again before its warpgroup-wide wgmma
        mbar_wait_parity(smem_u32(&ring.full[kt % STAGES]), (kt / STAGES) % 2);

        const unsigned a_stage = smem_u32(ring.a[kt % STAGES]);   // (BM, BK) halves
        const unsigned b_stage = smem_u32(ring.b[kt % STAGES]);   // (BK, BN) halves
        // BEGIN SOLUTION
        // TODO: multiply slice kt: BK / 16 k16 steps of FRAG_M products (64, BN) each,
        //   wgmma_m64nNk16<BN, WgmmaMajor::K, WgmmaMajor::MN>(acc[i], desc_a(..), desc_b(..), scale_d),
        // issued asynchronously by the whole warpgroup. Before the first product the warpgroup's earlier
        // accesses to the accumulators must be ordered before wgmma's; the products of the slice
        // form one group. The code after this region frees slice kt - 1's stage: leave the loop with
        // as much work in flight as that allows, no more (wgmma.cuh: wgmma_fence, wgmma_commit_group,
        // wgmma_wait_group<N>).
        // END SOLUTION
        __syncwarp();
        if (kt > 0 && lane == 0) mbar_arrive(smem_u32(&ring.empty[(kt - 1) % STAGES]));
    }
    wgmma_wait_group<0>();                            // the last slice's products

    // ---- epilogue: fp32 accumulators -> fp16 pairs, straight from registers to C ---------
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int row = m0 + i * 64 + warp * 16 + lane / 4;
            const int col = n0 + j * 8 + (lane % 4) * 2;
            store_pair_guarded(C, M, N, row, col, acc[i][j][0], acc[i][j][1]);
            store_pair_guarded(C, M, N, row + 8, col, acc[i][j][2], acc[i][j][3]);
        }
    }
}

// ---- extra question: the descriptor of A in a 64-byte swizzle ------------------------------------
// A rung with BK = 32 would have TMA store A's (BM, 32) stage with SWIZZLE_64B: rows of 64 bytes, the
// swizzle pattern repeating every 8 rows, swizzle mode 2 in the descriptor (wgmma.cuh lists the fields;
// wgmma_desc_128b writes mode 1 only). The checker evaluates this function on the CPU.
// BEGIN SOLUTION
// TODO: the descriptor of A for product i (rows 64 i ..) at k16 step kk of a SWIZZLE_64B stage
//       that starts at a_stage (1024-byte aligned).
__host__ __device__ constexpr unsigned long long desc_a_swizzle_64b(unsigned a_stage, int i, int kk) {
    return 0;
}
// END SOLUTION
