// Rung 12: rung 11 with its last waves divided by K (stream-K). Rung 11 hands out whole tiles, so when
// the tiles are not a multiple of the clusters that run at once, its last wave runs part-empty. Here
// the first dp_tiles tiles still go out whole, a wave at a time (data-parallel); the K-slices of the
// tiles after them are divided evenly among the clusters, so a cluster's range of slices may start and
// end inside a tile. A CTA that computed a tile's later slices but not its first stores nothing to C: it
// writes its fp32 partial sums to its own slot of a workspace in global memory and raises its flag. The
// CTA that computed the tile's first slices, which come last in its range, waits for the flags of the
// CTAs after it that share the tile, adds their partial sums, and stores the tile as rung 11 does. A
// range starts inside a tile at most once, so one slot per CTA and consumer is enough; a flag holds the
// launch's epoch, so flags from earlier launches need no clearing.
// Split-K apart (APART): where a tile is cut into many pieces, its owner would add them one after
// another. Instead every CTA writes each piece it computed to a slot of its own (two per CTA: its range's
// first piece and its last) and raises the slot's flag; once its own pieces are out, each CTA that holds a
// piece of a split tile adds its share of that tile's fragments (a fragment: one n8 column block of one m64
// product), every piece of them, and stores them to C. The adding is spread over all the CTAs of the tile, so
// none adds the pieces one after another, and it needs no second kernel. The launcher sizes the grid to a
// whole number of CTAs per tile, so the pieces of all tiles start at about the same K and tiles that share
// rows of A or columns of B read them from the L2 at about the same time.
// As in rung 11: rung 10's producer and consumer warpgroups, made persistent. The grid holds only as many
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
#include "flag.cuh"
#include "mbarrier.cuh"
#include "setmaxnreg.cuh"
#include "stmatrix.cuh"
#include "swizzle.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

// (bid_m, bid_n) of tile t in rung 06's order, numbered without gaps: super tiles of SUPER_M x SUPER_N
// tiles, m slow and n fast both between and inside them, the edge super tiles cut to the grid. (Rung 11
// skips the positions past the grid's edge; stream-K divides the slices of tiles that all exist.)
template <int SUPER_M, int SUPER_N>
__host__ __device__ constexpr int2 tile_of(int t, int grid_m, int grid_n) {
    const int sb_m = t / (SUPER_M * grid_n);          // which row of super tiles (SUPER_M x grid_n tiles each)
    const int rows = grid_m - sb_m * SUPER_M < SUPER_M ? grid_m - sb_m * SUPER_M : SUPER_M; // fewer in the last
    const int in_row = t % (SUPER_M * grid_n);        // which tile of that row of super tiles
    const int sb_n = in_row / (rows * SUPER_N);       // which super tile of the row: n fast
    const int cols = grid_n - sb_n * SUPER_N < SUPER_N ? grid_n - sb_n * SUPER_N : SUPER_N; // fewer in the last
    const int in_sb = in_row % (rows * SUPER_N);      // which tile inside it
    return {sb_m * SUPER_M + in_sb / cols,            // tile row of C: m slow inside,
            sb_n * SUPER_N + in_sb % cols};           // tile column of C: n fast inside
}

// Slices [k_begin, k_end) of tile `tile`: one piece of a cluster's work.
struct Segment {
    int tile, k_begin, k_end;
};

// Who computes what. Unit u (a cluster) first takes the whole tiles u, u + units, .. below dp_tiles, then
// its share of the K-slices of the tiles from dp_tiles on, numbered tile by tile: units take contiguous
// ranges of them, of equal length but for the first (slices % units) units, which take one more.
struct StreamK {
    int tiles, k_tiles, dp_tiles, units;

    __device__ int dp_count(int u) const { return u < dp_tiles ? cdiv(dp_tiles - u, units) : 0; }
    __device__ int sk_begin(int u) const {           // unit u's first stream-K slice; sk_begin(units) = all
        const int slices = (tiles - dp_tiles) * k_tiles;
        return u * (slices / units) + (u < slices % units ? u : slices % units);
    }
    __device__ int unit_of(int slice) const {        // the unit whose stream-K range holds this slice
        const int slices = (tiles - dp_tiles) * k_tiles;
        const int q = slices / units, r = slices % units;  // the first r units take q + 1 slices
        return slice < r * (q + 1) ? slice / (q + 1) : r + (slice - r * (q + 1)) / q;
    }
    // Unit u's s-th segment in order, or tile -1 past its last.
    __device__ Segment segment(int u, int s) const {
        if (s < dp_count(u)) return {u + s * units, 0, k_tiles};
        const int begin = sk_begin(u), end = sk_begin(u + 1);
        const int tile = begin / k_tiles + s - dp_count(u);  // counted from dp_tiles
        if (tile * k_tiles >= end) return {-1, 0, 0};
        const int k_begin = tile * k_tiles > begin ? 0 : begin - tile * k_tiles;
        const int k_end = end - tile * k_tiles < k_tiles ? end - tile * k_tiles : k_tiles;
        return {dp_tiles + tile, k_begin, k_end};
    }
};

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

// An owner's wait for the flag of a later unit that computed part of its tile. That unit raises the flag
// only once it runs, and it runs only if every unit of the grid is resident at once: the launcher sizes the
// grid to the occupancy API's count and refuses more (r12_streamk.require_co_resident), but the API cannot
// see SMs that other work holds (a kernel on another stream, another MPS client, a green context). So the
// wait is bounded: 2^30 polls, over 100 s at 100 ns a poll (an L2 round trip takes longer), ten times what
// the largest fp16 product that fits in the H200's 141 GB takes, then trap: the launch fails instead of hanging.
constexpr unsigned MAX_FLAG_POLLS = 1u << 30;
// Out of line: a trap inlined into split-K apart's adding made ptxas spill 1 KiB of the 128 x 256 tiles' registers.
__device__ __noinline__ void stop_waiting() { __trap(); }
__device__ __forceinline__ void wait_for_partial_sums(const unsigned* flag, unsigned epoch) {
    for (unsigned polls = 1; flag_acquire_gpu(flag) != epoch; ++polls) {
        if (polls == MAX_FLAG_POLLS) stop_waiting();
    }
}

// Two fp32 accumulators as one register of two halves (lo in the low 16 bits), as stmatrix stores them.
__device__ __forceinline__ unsigned half2_bits(float lo, float hi) {
    const half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
}

// sum += piece(u) + .. + piece(u + BATCH - 1), every piece loaded before the first is added
template <int BATCH, typename Piece>
__device__ __forceinline__ void add_pieces(float4& sum, const Piece& piece, int u) {
    float4 part[BATCH];
#pragma unroll
    for (int v = 0; v < BATCH; ++v) part[v] = piece(u + v);
#pragma unroll
    for (int v = 0; v < BATCH; ++v) {
        sum.x += part[v].x;
        sum.y += part[v].y;
        sum.z += part[v].z;
        sum.w += part[v].w;
    }
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
// APART: split-K apart (the header's last paragraph) instead of the owners' fix-up.
template <int BM, int BN, int BK, int STAGES, int SUPER_M, int SUPER_N, int CLUSTER_M, int CONSUMERS,
          int PRODUCER_REGS, int CONSUMER_REGS, bool APART>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(128 * (1 + CONSUMERS), 1)
k12_streamk(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K,
        const __grid_constant__ TensorMap tmap_a,  // A (M, K): boxes of (BM, BK), SWIZZLE_128B
        const __grid_constant__ TensorMap tmap_b,  // B (K, N): boxes of (BK, 64), SWIZZLE_128B
        const __grid_constant__ TensorMap tmap_c,  // C (M, N): boxes of (BM / CONSUMERS, 64), SWIZZLE_128B
        float4* __restrict__ workspace,            // per CTA and consumer: (C_ROWS, BN) fp32 partial sums
        unsigned* __restrict__ flags,              // per CTA and consumer: the epoch once its partial sums are in
        int dp_tiles, unsigned epoch) {            // tiles that go out whole; this launch's flag value (never 0)
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
    static_assert(!APART || CLUSTER_M == 1, "split-K apart runs without clusters: a unit is one CTA");

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
    const int tiles = grid_cm * grid_n;               // cluster tiles
    const int k_tiles = cdiv(K, BK);
    const int rank = CLUSTER_M > 1 ? cluster_ctarank() : 0; // this CTA's row in the cluster tile
    const int cluster = blockIdx.x / CLUSTER_M;       // clusters walk the positions; both CTAs of one
    const int clusters = gridDim.x / CLUSTER_M;       // take the same positions, so their rings stay in step
    const StreamK work{tiles, k_tiles, dp_tiles, clusters};

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

    // ---- split-K apart: the slots, and the adding of the split tiles ----------------------
    // Slot of unit u's piece: its range's first piece (second = 0) or a later one, per consumer (CLUSTER_M = 1).
    auto apart_slot = [&](int u, bool second, int consumer) { return (u * 2 + second) * CONSUMERS + consumer; };
    // Once this unit's pieces are all out: for each split tile it holds a piece of, consumer warpgroup w of the
    // tile's units (counted from its first unit) adds fragments w, w + workers, .. of the tile, every unit's
    // piece of each, and stores them to C. Every unit's pieces are out before it waits, and every unit is
    // resident at once (the launcher's grid), so the waits end.
    auto add_split_tiles = [&](int consumer) {
        constexpr int FRAGMENTS = CONSUMERS * FRAG_M * FRAG_N;    // n8 column blocks of every product of a tile
        constexpr int SLOT = FRAG_M * FRAG_N * 128;               // float4s of one consumer's piece
        int s = 0;
        for (Segment seg = work.segment(cluster, 0); seg.tile >= 0; seg = work.segment(cluster, ++s)) {
            if (seg.k_begin == 0 && seg.k_end == k_tiles) continue;   // computed whole and stored
            const int sk_tile = seg.tile - dp_tiles;
            const int first = work.unit_of(sk_tile * k_tiles), last = work.unit_of((sk_tile + 1) * k_tiles - 1);
            const int workers = (last - first + 1) * CONSUMERS;
            const int worker = (cluster - first) * CONSUMERS + consumer;
            if (worker >= FRAGMENTS) continue;        // more warpgroups than fragments: none for this one
            // a unit's piece of this tile is its first (slot 0) unless its range began in an earlier tile
            auto slot_of = [&](int u, int c) { return apart_slot(u, work.sk_begin(u) < sk_tile * k_tiles, c); };
            for (int w = tid % 128; w < workers; w += 128) {   // every piece's flag, a few per thread
                wait_for_partial_sums(&flags[slot_of(first + w / CONSUMERS, w % CONSUMERS)], epoch);
            }
            named_barrier_sync(1 + consumer, 128);    // every flag of the tile has been seen
            const int2 tile = tile_of<SUPER_CM, SUPER_N>(seg.tile, grid_cm, grid_n);
            for (int f = worker; f < FRAGMENTS; f += workers) {
                const int c = f / (FRAG_M * FRAG_N), i = f / FRAG_N % FRAG_M, j = f % FRAG_N;
                auto piece = [&](int u) {              // unit u's sums of this fragment, this thread's float4
                    return __ldcg(&workspace[slot_of(u, c) * SLOT + (i * FRAG_N + j) * 128 + tid % 128]);
                };
                float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                int u = first;                        // eight loads in flight, not one round trip per piece
                for (; u + 8 <= last + 1; u += 8) add_pieces<8>(sum, piece, u);
                for (; u <= last; ++u) add_pieces<1>(sum, piece, u);
                // wgmma's accumulator layout: warp w, lane l hold rows 16 w + l / 4 and + 8, columns 8 j + 2 (l % 4), + 1
                const int row = tile.x * BM + c * C_ROWS + i * 64 + warp * 16 + lane / 4;
                const int col = tile.y * BN + j * 8 + lane % 4 * 2;  // N is a multiple of 8: col < N keeps col + 1 < N
                if (col < N) {
                    if (row < M) *reinterpret_cast<half2*>(&C[(size_t)row * N + col]) = __floats2half2_rn(sum.x, sum.y);
                    if (row + 8 < M) {
                        *reinterpret_cast<half2*>(&C[(size_t)(row + 8) * N + col]) = __floats2half2_rn(sum.z, sum.w);
                    }
                }
            }
        }
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
            int s = 0;                                // segments loaded so far
            for (Segment seg = work.segment(cluster, 0); seg.tile >= 0; seg = work.segment(cluster, ++s)) {
                const int2 tile = tile_of<SUPER_CM, SUPER_N>(seg.tile, grid_cm, grid_n);
                for (int kt = seg.k_begin; kt < seg.k_end; ++kt, ++it) {
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
        int s = 0;                                    // segments consumed so far
        for (Segment seg = work.segment(cluster, 0); seg.tile >= 0; seg = work.segment(cluster, ++s)) {
            const int2 tile = tile_of<SUPER_CM, SUPER_N>(seg.tile, grid_cm, grid_n);
            const int m0 = (tile.x * CLUSTER_M + rank) * BM;  // past M when grid_m is odd: A arrives as zeros,
            const int n0 = tile.y * BN;                   // and TMA stores nothing of that tile
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) {
                    acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
                }
            }

            for (int kt = 0; kt < seg.k_end - seg.k_begin; ++kt, ++it) {  // from 0: a loop from k_begin made
                                                      // ptxas serialize the wgmma (C7515)
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
                    store_packed([&](int p) { return p == kt || (p > kt && kt == seg.k_end - seg.k_begin - 1); });
                }
                wgmma_wait_group<1>();                // slice it - 1's products are done; slice it's run on
                __syncwarp();
                if (kt > 0) release_stage((it - 1) % STAGES);
            }
            wgmma_wait_group<0>();                    // the tile's last slice's products
            __syncwarp();
            release_stage((it - 1) % STAGES);          // the producer runs on into the next tile

            // ---- stream-K fix-up: a tile's later slices go to the CTA of its first ones ---------
            auto write_partials = [&](int slot_index) { // this thread's column of one slot
                float4* const slot = workspace + slot_index * (FRAG_M * FRAG_N * 128) + tid % 128;
#pragma unroll
                for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                    for (int j = 0; j < FRAG_N; ++j) {  // thread-minor: each warp writes 512 contiguous bytes
                        __stcg(&slot[(i * FRAG_N + j) * 128],
                               make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]));
                    }
                }
            };
            auto hand_over = [&](int slot_index) {    // the sums to a slot, then its flag up
                write_partials(slot_index);
                fence_acq_rel_gpu();                  // the sums are in place before the flag goes up
                named_barrier_sync(1 + consumer, 128);
                if (storer) flag_release_gpu(&flags[slot_index], epoch);
            };
            if constexpr (APART) {
                if (seg.k_begin > 0 || seg.k_end < k_tiles) {  // a piece: added after the loop, by its tile's CTAs
                    hand_over(apart_slot(cluster, s > work.dp_count(cluster), consumer));
                    continue;
                }
            }
            if (seg.k_begin > 0) {                    // not the tile's first slices: hand the sums over
                hand_over(blockIdx.x * CONSUMERS + consumer);
                continue;
            }
            // The tile's first slices, which come last in this unit's range: the later ones are in the slots
            // of the units after this one whose slices begin before the tile ends.
            const int tile_end = (seg.tile - dp_tiles + 1) * k_tiles;  // past the tile's last slice
            for (int u = cluster + 1; seg.k_end < k_tiles && work.sk_begin(u) < tile_end; ++u) {
                if (work.sk_begin(u) == work.sk_begin(u + 1)) continue;  // unit u has no slices
                const int from = (u * CLUSTER_M + rank) * CONSUMERS + consumer;  // the same rows in unit u
                if (storer) wait_for_partial_sums(&flags[from], epoch);
                named_barrier_sync(1 + consumer, 128);  // the storer has seen the flag
                const float4* slot = workspace + from * (FRAG_M * FRAG_N * 128) + tid % 128;  // this thread's column
#pragma unroll
                for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                    for (int j = 0; j < FRAG_N; ++j) {
                        const float4 part = __ldcg(&slot[(i * FRAG_N + j) * 128]);
                        acc[i][j][0] += part.x;
                        acc[i][j][1] += part.y;
                        acc[i][j][2] += part.z;
                        acc[i][j][3] += part.w;
                    }
                }
            }

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
        if constexpr (APART) add_split_tiles(consumer);
        if (storer) tma_store_wait_read<0>();         // the CTA's shared memory outlives the last stores' reads
    }
    if constexpr (CLUSTER_M > 1) {                    // neither CTA leaves while the other may still
        __syncwarp();                                 // multicast into it or arrive on its barriers
        cluster_arrive();
        cluster_wait();
    }
}
