// Exercise 10, kernel: rung 10's producer and the consumers' release (hgemm_course/library/kernels/k10_warp_specialized.cu).
//
// This file is the rung-10 kernel with three regions cut out, plus one optional extra question at its end.
// Warpgroup 0 produces: one of its threads asks TMA for every k-slice. Warpgroups 1 and 2 consume:
// they wait for a slice, multiply it with wgmma and free its stage. The hardware facts:
//
//   setmaxnreg.dec / .inc   (setmaxnreg.cuh) a warpgroup gives registers back to the CTA's pool or
//                           takes them from it; .sync.aligned, so all 128 threads execute it together
//   mbarrier phases         a barrier completes phase 0, 1, 2, ... each time its expected arrivals
//                           (and, for full[s], TMA's bytes) are in; mbar_wait_parity(bar, p) returns
//                           once the latest completed phase has parity p
//   wgmma.wait_group N      returns once at most N committed wgmma groups are still running; a group
//                           still running may still read its stage
//
// Check it:  hgemm-course check ex10_producer
//   (checks ./ex10_producer.cu, else ./exercises/ex10_producer.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex10_producer --path my_ex10.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex10_producer"))
// The checker compiles the file for the GPU here if it runs rung 10 (else for the recorded H200),
// inspects the PTX and runs your regions on the CPU with stand-ins that record every setmaxnreg, wait,
// load and arrival, played through a model of the ring; on such a GPU it also runs your kernel.
// Rung 10: rung 09's TMA ring and wgmma, with the warpgroups specialized by role. One producer
// warpgroup owns the ring: one elected thread issues every TMA load, and the warpgroup hands most
// of its registers back (setmaxnreg.dec). Two consumer warpgroups take them (setmaxnreg.inc) and
// each multiplies its own half of the output tile (the H800 post's "1p2c"). No thread both loads and
// computes: the producer waits on empty barriers and fills full ones, the consumers wait on full
// barriers and free stages, so the loads of slice kt + STAGES - 1 run while slice kt is computed.
#include "common.cuh"
#include "fence.cuh"
#include "mbarrier.cuh"
#include "setmaxnreg.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

// C (M, N) = A (M, K) @ B (K, N), fp16 in and out, fp32 accumulation, all row-major.
// A CTA computes a (BM, BN) tile of C with two consumer warpgroups, each BM / 128 wgmma products
// of (64, BN) on its own BM / 2 rows; the K loop walks BK-wide slices through a STAGES-deep TMA +
// mbarrier ring that the producer warpgroup fills. The 1-D grid
// holds cdiv(grid_m, SUPER_M) * cdiv(grid_n, SUPER_N) super tiles of SUPER_M * SUPER_N CTAs.
// setmaxnreg sets each producer thread to PRODUCER_REGS registers (one thread issues TMA, no
// accumulators) and each consumer thread to CONSUMER_REGS (up to 128 accumulators + addresses).
template <int BM, int BN, int BK, int STAGES, int SUPER_M, int SUPER_N, int PRODUCER_REGS, int CONSUMER_REGS>
__global__ void __launch_bounds__(384, 1)
k10_warp_specialized(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K,
        const __grid_constant__ TensorMap tmap_a,  // A (M, K): boxes of (BM, BK), SWIZZLE_128B
        const __grid_constant__ TensorMap tmap_b) { // B (K, N): boxes of (BK, 64), SWIZZLE_128B
    const CtaClock cta_clock;  // the timing build logs this CTA's start and end (cta_clock.cuh)
    constexpr int CONSUMERS = 2;                      // consumer warpgroups, one half of the tile each
    constexpr int THREADS = 128 * (1 + CONSUMERS);    // the producer warpgroup, then the consumers
    constexpr int LAUNCH_REGS = 65536 / THREADS / 8 * 8; // 168: each thread's registers at entry, by the launch bound
    constexpr int FRAG_M = BM / 64 / CONSUMERS;       // m64 wgmma products per k16 step, per consumer
    constexpr int FRAG_N = BN / 8;                    // n8 column blocks of each product
    constexpr int B_PANEL = BK * 128;                 // bytes of one (BK, 64) panel of B
    static_assert(BK == 64, "a stage row of A is one 128-byte swizzle row: BK = 64 halves");
    static_assert(BM % (64 * CONSUMERS) == 0 && BN % 64 == 0,
                  "whole m64 products per consumer and whole 64-column panels of B");
    static_assert(STAGES >= 3, "one stage is read by wgmma in flight, one is waited for, one or more load");
    static_assert(PRODUCER_REGS + CONSUMERS * CONSUMER_REGS <= (1 + CONSUMERS) * LAUNCH_REGS,
                  "setmaxnreg.inc only takes what setmaxnreg.dec gave back to the CTA's pool");

    extern __shared__ __align__(1024) unsigned char smem[];
    auto& ring = aligned_smem<TmaRing<BM, BN, BK, STAGES>>(smem); // the stages and their mbarriers (common.cuh)

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid % 128 / 32;                  // warp of the warpgroup: rows 16 * warp.. of each product
    const int warpgroup = tid / 128;                  // 0: the producer; 1, 2: the consumers

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

    // Shared-memory descriptors of a stage's operands (wgmma.cuh), the swizzle being TMA's own.
    // A (BM, BK) is K-major: 128-byte rows along K, 8-row atoms 1024 bytes apart along M; a k16
    // step moves the start 32 bytes along the rows, product i starts 64 rows (8192 bytes) down.
    // B (BK, BN) is row-major, so N is contiguous: MN-major, wgmma's "transposed" B. Its 8-k-row
    // atoms lie 1024 bytes apart along K (the stride offset), its 64-column panels B_PANEL bytes
    // apart along N (the leading offset); a k16 step moves the start 16 rows = 2048 bytes down.
    auto desc_a = [&](unsigned a_stage, int i, int kk) {
        return wgmma_desc_128b(a_stage + i * 64 * 128 + kk * 32, WGMMA_KMAJOR_LBO_UNUSED, WGMMA_SWIZZLE_ATOM_BYTES);
    };
    auto desc_b = [&](unsigned b_stage, int kk) {
        return wgmma_desc_128b(b_stage + kk * 16 * 128, B_PANEL, WGMMA_SWIZZLE_ATOM_BYTES);
    };

    // ---- prologue: set up the barriers --------------------------------------------------
    if (tid == 0) {
        tma_prefetch_descriptor(&tmap_a);
        tma_prefetch_descriptor(&tmap_b);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&ring.full[s]), 1);
            mbar_init(smem_u32(&ring.empty[s]), (THREADS - 128) / 32);
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    if (warpgroup == 0) {
        // ---- producer: one thread keeps the ring full, the warpgroup's registers go back ----
        warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            for (int kt = 0; kt < k_tiles; ++kt) {
                if (kt >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[kt % STAGES]), (kt / STAGES - 1) % 2);
                load_tile(kt % STAGES, kt);
            }
        }
    } else {
        // ---- consumers: wait for slice kt, compute this warpgroup's half, free slice kt - 1 ----
        warpgroup_reg_alloc<CONSUMER_REGS>();
        const int consumer = warpgroup - 1;           // rows consumer * BM / 2.. of the tile
        float acc[FRAG_M][FRAG_N][4] = {};            // (BM / 2, BN) fp32 accumulators of the warpgroup

        for (int kt = 0; kt < k_tiles; ++kt) {
            mbar_wait_parity(smem_u32(&ring.full[kt % STAGES]), (kt / STAGES) % 2);

            const unsigned a_stage = smem_u32(ring.a[kt % STAGES]);   // (BM, BK) halves
            const unsigned b_stage = smem_u32(ring.b[kt % STAGES]);   // (BK, BN) halves
            wgmma_fence();                            // the accumulators are settled before wgmma reads them
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
                for (int i = 0; i < FRAG_M; ++i) {
                    wgmma_m64nNk16<BN, WgmmaMajor::K, WgmmaMajor::MN>(
                        acc[i], desc_a(a_stage, consumer * FRAG_M + i, kk), desc_b(b_stage, kk), /*scale_d=*/true);
                }
            }
            wgmma_commit_group();
            wgmma_wait_group<1>();                    // slice kt - 1's products are done; slice kt's run on
            __syncwarp();
            if (kt > 0 && lane == 0) mbar_arrive(smem_u32(&ring.empty[(kt - 1) % STAGES]));
        }
        wgmma_wait_group<0>();                        // the last slice's products

        // ---- epilogue: fp32 accumulators -> fp16 pairs, straight from registers to C -----
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) {
                const int row = m0 + (consumer * FRAG_M + i) * 64 + warp * 16 + lane / 4;
                const int col = n0 + j * 8 + (lane % 4) * 2;
                store_pair_guarded(C, M, N, row, col, acc[i][j][0], acc[i][j][1]);
                store_pair_guarded(C, M, N, row + 8, col, acc[i][j][2], acc[i][j][3]);
            }
        }
    }
}

// ---- extra question: a consumer that keeps more groups in flight ---------------------------------
// A consumer that ends every iteration with wgmma_wait_group<in_flight> (in_flight >= 0) keeps up to
// in_flight slices' products running. The checker evaluates this function on the CPU.
__host__ __device__ constexpr int released_stage(int kt, int stages, int in_flight) {
    return kt >= in_flight ? (kt - in_flight) % stages : -1;
}
