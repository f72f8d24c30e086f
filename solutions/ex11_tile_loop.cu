// Exercise 11, kernel: rung 11's persistent tile loop (hgemm_course/library/kernels/k11_persistent.cu).
//
// This file is the rung-11 kernel with its two tile loops cut out (the producer's and the consumers'),
// plus one optional extra question at its end. The grid holds only as many CTAs as fit on the GPU at once, in
// clusters of CLUSTER_M CTAs; the output tiles outnumber them, so each cluster computes many tiles,
// one after another, and its full/empty ring runs on from one tile into the next.
//
//   launch positions   `tiles` positions in rung 06's super-tile order over the grid of cluster tiles
//                      (grid_cm x grid_n); whole super tiles, so the edge ones include positions
//                      outside the grid, which decode (tile_of) past grid_cm or grid_n
//   blockIdx.x         this CTA; cluster = blockIdx.x / CLUSTER_M, clusters = gridDim.x / CLUSTER_M
//   the ring           the producer loads and the consumers compute the same slices in the same order,
//                      so their two walks over the tiles must be the same
//
// Check it:  hgemm-course check ex11_tile_loop
//   (checks ./ex11_tile_loop.cu, else ./exercises/ex11_tile_loop.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex11_tile_loop --path my_ex11.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex11_tile_loop"))
// The checker compiles the file for the GPU here if it runs rung 11 (else for the recorded H200) and
// runs your loops on the CPU for many grid and cluster counts against rung 11's order (every tile
// once, holes skipped); on such a GPU it also runs your kernel and compares C.
// Rung 11: rung 10's producer and consumer warpgroups, made persistent. The grid holds only as many
// CTAs as fit on the GPU at once; each walks the output tiles t = blockIdx.x, + gridDim.x, ... in
// rung 06's super-tile order, and its full/empty ring runs on across tiles: the k-slice counter is
// never reset, so the producer loads the next tile's first slices while the consumers still compute,
// and the parities carry over. The epilogue writes each consumer's rows of the tile, one 64-column
// panel at a time, to a shared-memory panel buffer with stmatrix, and one thread stores the panel
// with TMA (cp.async.bulk.tensor, shared -> global), which clips the M and N tails. Two panel buffers
// per consumer take turns: a panel is written while the one before it is still being stored, and a
// buffer is overwritten only once its previous store has read it. (A whole-tile C buffer would take
// 64 KiB, the ring's fourth stage; the two panels take 32 KiB.) The epilogue runs late, under the
// tensor cores: a consumer packs a finished tile's sums to fp16 pairs in registers and stores them
// during the next tile, one panel after each of its first slices' wgmma is issued, while those run.
// With CLUSTER_M = 2 the CTAs come in clusters of two that compute vertically adjacent tiles of one
// column of C, so they read the same k-slices of B: each loads half of the slice's 64-column panels and
// multicasts them into both CTAs' rings, and a consumer frees a stage on both CTAs' empty barriers.
#include "cluster.cuh"
#include "common.cuh"
#include "fence.cuh"
#include "mbarrier.cuh"
#include "setmaxnreg.cuh"
#include "stmatrix.cuh"
#include "swizzle.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

// (bid_m, bid_n) of launch position t in rung 06's order: super tiles of SUPER_M x SUPER_N tiles,
// m slow and n fast both between and inside them. Positions past the tile grid's edge (the edge
// super tiles are not full) decode to bid_m >= grid_m or bid_n >= grid_n.
template <int SUPER_M, int SUPER_N>
__host__ __device__ constexpr int2 tile_of(int t, int grid_m, int grid_n) {
    const int sb = t / (SUPER_M * SUPER_N);           // which super tile
    const int in_sb = t % (SUPER_M * SUPER_N);        // which tile inside it
    const int sb_m = sb / cdiv(grid_n, SUPER_N);      // super tiles: m slow,
    const int sb_n = sb % cdiv(grid_n, SUPER_N);      //              n fast
    return {sb_m * SUPER_M + in_sb / SUPER_N,         // tile row of C: m slow inside,
            sb_n * SUPER_N + in_sb % SUPER_N};        // tile column of C: n fast inside
}

// The shared memory of rung 11: rung 10's ring (TmaRing, common.cuh) with each consumer's C panel buffers
// between B's stages and the mbarriers.
template <int BM, int BN, int BK, int STAGES, int CONSUMERS>
struct RingAndPanels {
    static constexpr int C_ROWS = BM / CONSUMERS;     // rows of C one consumer computes and stores
    static constexpr int C_BUFFERS = BN / 64 < 2 ? BN / 64 : 2; // panel buffers per consumer, taking turns
    static_assert(BM * BK * 2 % SMEM_ALIGN == 0 && BK * BN * 2 % SMEM_ALIGN == 0 && C_ROWS * 128 % SMEM_ALIGN == 0,
                  "every stage of A and of B and every C panel starts on a 1024-byte boundary");
    alignas(SMEM_ALIGN) half a[STAGES][BM * BK];    // (BM, BK) halves per stage, swizzled
    alignas(SMEM_ALIGN) half b[STAGES][BK * BN];    // BN / 64 panels of (BK, 64) halves per stage, swizzled
    alignas(SMEM_ALIGN) half c[CONSUMERS][C_BUFFERS][C_ROWS * 64]; // (C_ROWS, 64) halves per panel, swizzled
    unsigned long long full[STAGES];                // mbarriers (one 64-bit word each): the stage's bytes have landed
    unsigned long long empty[STAGES];               // mbarriers: every consumer warp is done with the stage
};

// Two fp32 accumulators as one register of two halves (lo in the low 16 bits), as stmatrix stores them.
__device__ __forceinline__ unsigned half2_bits(float lo, float hi) {
    const half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
}

// C (M, N) = A (M, K) @ B (K, N), fp16 in and out, fp32 accumulation, all row-major.
// A CTA computes (BM, BN) tiles of C with CONSUMERS consumer warpgroups (2; or 1, the H800 post's first
// version "1p1c"), each BM / 64 / CONSUMERS wgmma products of (64, BN) on its own BM / CONSUMERS rows;
// the K loop walks BK-wide slices through a STAGES-deep TMA + mbarrier ring that the producer
// warpgroup fills. The persistent 1-D grid of clusters walks the
// launch positions of rung 06 over a grid of (CLUSTER_M x BM, BN) cluster tiles, super tiles of
// SUPER_M / CLUSTER_M x SUPER_N of them; CTA r of a cluster computes row r of its cluster tile.
// setmaxnreg sets each producer thread to PRODUCER_REGS registers (one thread issues TMA, no
// accumulators) and each consumer thread to CONSUMER_REGS (up to 128 accumulators + addresses).
template <int BM, int BN, int BK, int STAGES, int SUPER_M, int SUPER_N, int CLUSTER_M, int CONSUMERS,
          int PRODUCER_REGS, int CONSUMER_REGS>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(128 * (1 + CONSUMERS), 1)
k11_persistent(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K,
        const __grid_constant__ TensorMap tmap_a,  // A (M, K): boxes of (BM, BK), SWIZZLE_128B
        const __grid_constant__ TensorMap tmap_b,  // B (K, N): boxes of (BK, 64), SWIZZLE_128B
        const __grid_constant__ TensorMap tmap_c) { // C (M, N): boxes of (BM / CONSUMERS, 64), SWIZZLE_128B
    const CtaClock cta_clock;  // the timing build logs this CTA's start and end (cta_clock.cuh)
    constexpr int THREADS = 128 * (1 + CONSUMERS);    // the producer warpgroup, then the consumers
    constexpr int LAUNCH_REGS = 65536 / THREADS / 8 * 8; // 168: each thread's registers at entry, by the launch bound
    constexpr int FRAG_M = BM / 64 / CONSUMERS;       // m64 wgmma products per k16 step, per consumer
    constexpr int FRAG_N = BN / 8;                    // n8 column blocks of each product
    constexpr int B_PANEL = BK * 128;                 // bytes of one (BK, 64) panel of B
    using Smem = RingAndPanels<BM, BN, BK, STAGES, CONSUMERS>;
    constexpr int C_ROWS = Smem::C_ROWS;              // rows of C one consumer computes and stores
    constexpr int C_BUFFERS = Smem::C_BUFFERS;        // panel buffers per consumer, taking turns
    static_assert(BK == 64, "a stage row of A is one 128-byte swizzle row: BK = 64 halves");
    static_assert(BM % (64 * CONSUMERS) == 0 && BN % 64 == 0,
                  "whole m64 products per consumer and whole 64-column panels of B");
    static_assert(STAGES >= 3, "one stage is read by wgmma in flight, one is waited for, one or more load");
    static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
    static_assert(PRODUCER_REGS + CONSUMERS * CONSUMER_REGS <= (1 + CONSUMERS) * LAUNCH_REGS,
                  "setmaxnreg.inc only takes what setmaxnreg.dec gave back to the CTA's pool");
    static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && SUPER_M % CLUSTER_M == 0 && (BN / 64) % CLUSTER_M == 0,
                  "clusters of 1 or 2 CTAs along M, whole cluster tiles per super tile, B's panels split evenly");

    extern __shared__ __align__(1024) unsigned char smem[];
    auto& ring = aligned_smem<Smem>(smem);            // the stages, the C panel buffers and their mbarriers

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid % 128 / 32;                  // warp of the warpgroup: rows 16 * warp.. of each product
    const int warpgroup = tid / 128;                  // 0: the producer; 1, 2: the consumers

    const int grid_m = cdiv(M, BM);
    const int grid_n = cdiv(N, BN);
    const int grid_cm = cdiv(grid_m, CLUSTER_M);      // rows of cluster tiles
    constexpr int SUPER_CM = SUPER_M / CLUSTER_M;     // rows of cluster tiles per super tile
    const int tiles = cdiv(grid_cm, SUPER_CM) * cdiv(grid_n, SUPER_N) * SUPER_CM * SUPER_N; // launch positions
    const int k_tiles = cdiv(K, BK);
    const int rank = CLUSTER_M > 1 ? cluster_ctarank() : 0; // this CTA's row in the cluster tile
    const int cluster = blockIdx.x / CLUSTER_M;       // clusters walk the positions; both CTAs of one
    const int clusters = gridDim.x / CLUSTER_M;       // take the same positions, so their rings stay in step

    // One k-slice into one stage, asked for by one thread: the (BM, BK) box of A and BN / 64
    // (BK, 64) boxes of B, all counted on the stage's full barrier. Boxes reaching past M, N
    // or K arrive zero-filled, so the tails add nothing to the sums. In a cluster, this CTA
    // loads only the panels p = rank, rank + CLUSTER_M, .. of B and multicasts them to both CTAs
    // (each full barrier still expects the whole slice: the other half comes from the partner).
    auto load_tile = [&](int stage, int kt, int m0, int n0) {
        const int k0 = kt * BK;
        const unsigned a_stage = smem_u32(ring.a[stage]);   // (BM, BK) halves
        const unsigned b_stage = smem_u32(ring.b[stage]);   // (BK, BN) halves
        const unsigned full = smem_u32(&ring.full[stage]);
        mbar_arrive_expect_tx(full, sizeof(ring.a[stage]) + sizeof(ring.b[stage]));
        tma_load_2d(a_stage, &tmap_a, k0, m0, full);
#pragma unroll
        for (int p = rank; p < BN / 64; p += CLUSTER_M) {
            if constexpr (CLUSTER_M == 1) {
                tma_load_2d(b_stage + p * B_PANEL, &tmap_b, n0 + p * 64, k0, full);
            } else {
                tma_load_2d_multicast(b_stage + p * B_PANEL, &tmap_b, n0 + p * 64, k0, full, (1 << CLUSTER_M) - 1);
            }
        }
    };

    // A consumer warp is done with a stage: one arrival on its empty barrier in every CTA of the
    // cluster, since every CTA's producer writes into this CTA's stage (B's multicast halves);
    // lane r of the warp arrives at CTA r's barrier, so the arrivals go out side by side.
    auto release_stage = [&](int stage) {
        if constexpr (CLUSTER_M == 1) {
            if (lane == 0) mbar_arrive(smem_u32(&ring.empty[stage]));
        } else {
            if (lane < CLUSTER_M) mbar_arrive_cluster(smem_u32(&ring.empty[stage]), lane);
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
        tma_prefetch_descriptor(&tmap_c);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&ring.full[s]), 1);
            mbar_init(smem_u32(&ring.empty[s]), CLUSTER_M * (THREADS - 128) / 32);
        }
        fence_mbarrier_init();
    }
    if constexpr (CLUSTER_M == 1) {
        __syncthreads();
    } else {                                          // the partner's barriers are set up before any
        cluster_arrive();                             // multicast or remote arrival reaches them
        cluster_wait();
    }

    if (warpgroup == 0) {
        // ---- producer: one thread keeps the ring full, the warpgroup's registers go back ----
        warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            int it = 0;                               // k-slices loaded by this CTA so far, over all its tiles
            for (int t = cluster; t < tiles; t += clusters) {
                const int2 tile = tile_of<SUPER_CM, SUPER_N>(t, grid_cm, grid_n);
                if (tile.x >= grid_cm || tile.y >= grid_n) continue;  // the edge super tiles are not full
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    if (it >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[it % STAGES]), (it / STAGES - 1) % 2);
                    load_tile(it % STAGES, kt, (tile.x * CLUSTER_M + rank) * BM, tile.y * BN);
                }
            }
        }
    } else {
        // ---- consumers: wait for slice it, compute this warpgroup's half, free slice it - 1 ----
        warpgroup_reg_alloc<CONSUMER_REGS>();
        const int consumer = warpgroup - 1;           // rows consumer * C_ROWS.. of the tile
        const bool storer = tid % 128 == 0;           // the thread that issues this consumer's TMA stores
        float acc[FRAG_M][FRAG_N][4];                 // (C_ROWS, BN) fp32 accumulators of the warpgroup
        unsigned packed[FRAG_M][FRAG_N][2];           // the last finished tile's rows, as fp16 pairs
        int2 packed_at = {-1, -1};                    // its (m0, n0); m0 < 0: nothing is waiting to be stored

        // ---- epilogue: the packed fp16 rows -> C, panel by panel through the panel buffers -----
        // The panels p for which now(p) holds; once the last has gone, nothing is waiting.
        auto store_packed = [&](auto now) {
#pragma unroll
            for (int p = 0; p < BN / 64; ++p) {       // the 64-column panel p of this consumer's rows
                if (!now(p)) continue;
                const unsigned panel = smem_u32(ring.c[consumer][p % C_BUFFERS]); // (C_ROWS, 64) halves
                if (storer) tma_store_wait_read<C_BUFFERS - 1>(); // the store that last read this buffer is done
                named_barrier_sync(1 + consumer, 128); // ... and this warpgroup knows it
#pragma unroll
                for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                    for (int j = p * 8; j < p * 8 + 8; j += 2) {
                        // A 16x16 piece: rows 16 * warp.. of product i, columns 8 j..; lane gives row
                        // lane % 8 of 8x8 tile lane / 8 (tiles: rows +0 / +8, then columns +0 / +8).
                        const int row = i * 64 + warp * 16 + (lane / 8 % 2) * 8 + lane % 8;
                        const int chunk = j % 8 + lane / 16;   // 16-byte chunk of the row in the panel
                        stmatrix_x4(panel + swizzle_128b(row, chunk), packed[i][j][0], packed[i][j][1],
                                    packed[i][j + 1][0], packed[i][j + 1][1]);
                    }
                }
                fence_proxy_async_shared_cta();       // the stmatrix writes are visible to the TMA store
                named_barrier_sync(1 + consumer, 128); // every warp of the warpgroup has written its rows
                if (storer) {
                    tma_store_2d(&tmap_c, panel, packed_at.y + p * 64, packed_at.x + consumer * C_ROWS);
                    tma_store_commit();
                }
            }
            if (now(BN / 64 - 1)) packed_at.x = -1;
        };

        int it = 0;                                   // k-slices consumed by this CTA so far, over all its tiles
        for (int t = cluster; t < tiles; t += clusters) {
            const int2 tile = tile_of<SUPER_CM, SUPER_N>(t, grid_cm, grid_n);
            if (tile.x >= grid_cm || tile.y >= grid_n) continue;  // the edge super tiles are not full
            const int m0 = (tile.x * CLUSTER_M + rank) * BM;  // past M when grid_m is odd: A arrives as zeros,
            const int n0 = tile.y * BN;                   // and TMA stores nothing of that tile
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) {
                    acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
                }
            }

            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                mbar_wait_parity(smem_u32(&ring.full[it % STAGES]), (it / STAGES) % 2);

                const unsigned a_stage = smem_u32(ring.a[it % STAGES]);   // (BM, BK) halves
                const unsigned b_stage = smem_u32(ring.b[it % STAGES]);   // (BK, BN) halves
                wgmma_fence();                        // the accumulators are settled before wgmma reads them
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
                    for (int i = 0; i < FRAG_M; ++i) {
                        wgmma_m64nNk16<BN, WgmmaMajor::K, WgmmaMajor::MN>(
                            acc[i], desc_a(a_stage, consumer * FRAG_M + i, kk), desc_b(b_stage, kk), /*scale_d=*/true);
                    }
                }
                wgmma_commit_group();
                if (packed_at.x >= 0) {                // the last tile's C, a panel under each slice's wgmma
                    store_packed([&](int p) { return p == kt || (p > kt && kt == k_tiles - 1); });
                }
                wgmma_wait_group<1>();                // slice it - 1's products are done; slice it's run on
                __syncwarp();
                if (kt > 0) release_stage((it - 1) % STAGES);
            }
            wgmma_wait_group<0>();                    // the tile's last slice's products
            __syncwarp();
            release_stage((it - 1) % STAGES);          // the producer runs on into the next tile

#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {       // fp32 sums -> fp16 pairs, stored under the next tile
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) {
                    packed[i][j][0] = half2_bits(acc[i][j][0], acc[i][j][1]);
                    packed[i][j][1] = half2_bits(acc[i][j][2], acc[i][j][3]);
                }
            }
            packed_at = {m0, n0};
        }
        if (packed_at.x >= 0) store_packed([](int) { return true; }); // the last tile: no next one to hide under
        if (storer) tma_store_wait_read<0>();         // the CTA's shared memory outlives the last stores' reads
    }
    if constexpr (CLUSTER_M > 1) {                    // neither CTA leaves while the other may still
        __syncwarp();                                 // multicast into it or arrive on its barriers
        cluster_arrive();
        cluster_wait();
    }
}

// ---- extra question: the last round --------------------------------------------------------------
// With `ctas` persistent CTAs walking `tiles` tiles (no holes) round-robin, the kernel's time is that of
// its busiest CTA, and the last round may leave CTAs idle. The checker evaluates this on the CPU.
__host__ __device__ constexpr int last_round_busy_ctas(int tiles, int ctas) {
    return tiles - (cdiv(tiles, ctas) - 1) * ctas;
}
