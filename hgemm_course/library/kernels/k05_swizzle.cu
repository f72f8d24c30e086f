// Rung 05: rung 04 with the padding replaced by the 128-byte XOR swizzle. Every shared row
// is 128 bytes (BK = 64 halves of A; B is stored as BN / 64 panels of 64 columns), its 16-byte
// chunks permuted by an XOR with the row (swizzle.cuh), and the ldmatrix addresses are computed
// once and then moved along k by XOR, along m or n by addition: no byte of padding, no bank conflict.
#include "common.cuh"
#include "cp_async.cuh"
#include "ldmatrix.cuh"
#include "mma_sync.cuh"
#include "swizzle.cuh"

// C (M, N) = A (M, K) @ B (K, N), fp16 in and out, fp32 accumulation, all row-major.
// A CTA computes a (BM, BN) tile of C with (BM / WM) x (BN / WN) warps, each a (WM, WN)
// sub-tile; the K loop walks BK-wide slices through a STAGES-deep cp.async ring.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool WHOLE_TILES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
k05_swizzle(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K) {
    const CtaClock cta_clock;  // the timing build logs this CTA's start and end (cta_clock.cuh)
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int WARPS_N = BN / WN;
    constexpr int FRAG_M = WM / 16;                   // m16 fragments per warp
    constexpr int FRAG_N = WN / 8;                    // n8 fragments per warp
    constexpr int K_STEPS = BK / 16;                  // mma k-steps per slice
    constexpr int COPY_PARTS = K_STEPS - 1;           // pieces a slice's copies are issued in
    static_assert(K_STEPS % 2 == 0, "BK must be a multiple of 32: the two fragment buffers alternate k-steps");
    using Ring = SwizzledStages<BM, BN, BK, STAGES>;  // 128-byte rows, swizzled (common.cuh)
    constexpr int B_PANEL = BK * 128;                 // bytes of one (BK, 64) panel of B
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
    const half* a_tile = A + static_cast<size_t>(m0) * K; // the BM rows of A this CTA reads
    const half* b_tile = B + n0;                      // the BN columns of B this CTA reads

    // The 16-byte chunks this thread copies of every k-slice: one pass of the THREADS threads
    // covers A_PASS whole rows of A (B_PASS of B), so the thread's chunks sit in one column,
    // A_PASS rows apart. Their row, column and first source address are worked out here, once:
    // in the loop a copy's address is this one plus whole passes and the slice's k offset, and
    // no index arithmetic competes with the mma.sync for issue slots.
    constexpr int A_PASS = THREADS / (BK / 8);        // rows of A one pass of the threads copies
    constexpr int B_PASS = THREADS / (BN / 8);        // rows of B one pass copies
    static_assert(THREADS % (BK / 8) == 0 && THREADS % (BN / 8) == 0 && BM % A_PASS == 0 && BK % B_PASS == 0,
                  "a pass of the threads copies whole rows, and every thread as many chunks");
    const int a_row = tid / (BK / 8), a_chunk = tid % (BK / 8);   // this thread's first chunk of A
    const int b_row = tid / (BN / 8), b_chunk = tid % (BN / 8);   // and of B
    const half* a_first = a_tile + static_cast<size_t>(a_row) * K + a_chunk * 8;
    const half* b_first = b_tile + static_cast<size_t>(b_row) * N + b_chunk * 8;
    // ints: a CTA's rows of A span BM * K halves, a slice of B BK * N, both below 2^31 (the launcher checks)
    const int a_step = A_PASS * K;                    // halves from one of its chunks of A to the next
    const int b_step = B_PASS * N;                    // and of B

    // Piece `part` of one k-slice into one stage: every thread copies every COPY_PARTS-th of its
    // chunks, so a slice's copies can ride along the k-steps of the slice being computed
    // instead of leaving in one burst. Chunks past M, N or K are zero-filled so the tails add
    // nothing to the sums; when M, N and K are whole tiles (WHOLE_TILES) there are no tails, and
    // the copies go out without the guards.
    auto load_tile = [&](int stage, int kt, int part) {
        const int k0 = kt * BK;
        const unsigned a_stage = smem_u32(ring.a) + stage * A_STAGE;   // (BM, BK) halves
        const unsigned b_stage = smem_u32(ring.b) + stage * B_STAGE;   // (BK, BN) halves
        const half* a_src = a_first + k0;             // the thread's first chunk of slice kt, in A
        const half* b_src = b_first + static_cast<size_t>(k0) * N;     // and in B
#pragma unroll
        for (int it = part; it < BM / A_PASS; it += COPY_PARTS) {
            const int row = a_row + it * A_PASS;
            const int chunk = a_chunk;
            const bool inside = WHOLE_TILES || (m0 + row < M && k0 + chunk * 8 < K);
            const half* src = inside ? a_src + it * a_step : A;
            // BEGIN SOLUTION
            // EXERCISE: // TODO: where chunk (row, chunk) of A goes in the (BM, BK) stage: one 128-byte row per row of A (BK = 64
            // EXERCISE: // halves), its 8 chunks placed so that the ldmatrix reads below hit no bank twice (swizzle.cuh).
            // EXERCISE: cp_async_16_zfill(a_stage + row * 128 + chunk * 16, src, inside ? 16 : 0);
            cp_async_16_zfill(a_stage + swizzle_128b(row, chunk), src, inside ? 16 : 0);
            // END SOLUTION
        }
#pragma unroll
        for (int it = part; it < BK / B_PASS; it += COPY_PARTS) {
            const int row = b_row + it * B_PASS;
            const int chunk = b_chunk;
            const bool inside = WHOLE_TILES || (k0 + row < K && n0 + chunk * 8 < N);
            const half* src = inside ? b_src + it * b_step : B;
            // BEGIN SOLUTION
            // EXERCISE: // TODO: where chunk (row, chunk) of B goes in the (BK, BN) stage. A row of B is BN halves, longer than
            // EXERCISE: // one 128-byte swizzle row: the stage holds B as BN / 64 panels of (BK, 64) halves, B_PANEL bytes each.
            // EXERCISE: cp_async_16_zfill(b_stage + row * BN * 2 + chunk * 16, src, inside ? 16 : 0);
            cp_async_16_zfill(b_stage + (chunk / 8) * B_PANEL + swizzle_128b(row, chunk % 8), src, inside ? 16 : 0);
            // END SOLUTION
        }
    };

    // BEGIN SOLUTION
    // EXERCISE: // TODO: this lane's ldmatrix row address, relative to a stage, for k-step 0 and fragment 0 of its warp:
    // EXERCISE: // for A (ldmatrix_x4) row warp_m * WM + lane % 16 at k-chunk lane / 16; for B (ldmatrix_x4_trans) k-row
    // EXERCISE: // lane % 16 at the n-chunk (warp_n * WN) / 8 + lane / 16 of the stage, in the layout the stores above write.
    // EXERCISE: const unsigned a_lane = (warp_m * WM + lane % 16) * 128 + (lane / 16) * 16;
    // EXERCISE: const unsigned b_lane = (lane % 16) * BN * 2 + ((warp_n * WN) / 8 + lane / 16) * 16;
    // EXERCISE:
    // ldmatrix row addresses of this lane, relative to a stage: A rows lane % 16 at k-chunk
    // lane / 16; B k-rows lane % 16 at n-chunk lane / 16. Swizzled once here: moving 16 rows
    // keeps row % 8, and moving 16 halves (2 chunks) along a row is an XOR with 32 bytes.
    const unsigned a_lane = swizzle_128b(warp_m * WM + lane % 16, lane / 16);
    const unsigned b_lane = (warp_n * WN / 64) * B_PANEL + swizzle_128b(lane % 16, (warp_n * WN % 64) / 8 + lane / 16);

    // END SOLUTION
    float acc[FRAG_M][FRAG_N][4] = {};                // (WM, WN) fp32 accumulators of this warp
    unsigned a_frag[2][FRAG_M][4];                    // 2 buffers x FRAG_M x (16, 16) halves of A
    unsigned b_frag[2][FRAG_N][2];                    // 2 buffers x FRAG_N x (16, 8) halves of B

    // The fragments of k-step kk of the slice in `stage`, into fragment buffer `buf`.
    auto load_fragments = [&](int buf, int stage, int kk) {
        const unsigned a_stage = smem_u32(ring.a) + stage * A_STAGE;   // (BM, BK) halves
        const unsigned b_stage = smem_u32(ring.b) + stage * B_STAGE;   // (BK, BN) halves
        // BEGIN SOLUTION
        // EXERCISE: // TODO: fragment i of A at k-step kk starts 16 i rows and 2 kk chunks from the lane's address; the B
        // EXERCISE: // fragment pair j starts 16 kk k-rows and 2 j chunks from it. Which of these moves keeps a row's
        // EXERCISE: // swizzle pattern, and what does a move of whole chunks along a swizzled row do to the address?
        // EXERCISE: #pragma unroll
        // EXERCISE: for (int i = 0; i < FRAG_M; ++i) {
        // EXERCISE:     ldmatrix_x4(a_frag[buf][i][0], a_frag[buf][i][1], a_frag[buf][i][2], a_frag[buf][i][3],
        // EXERCISE:                 a_stage + a_lane + kk * 32 + i * 16 * 128);
        // EXERCISE: }
        // EXERCISE: #pragma unroll
        // EXERCISE: for (int j = 0; j < FRAG_N / 2; ++j) {
        // EXERCISE:     ldmatrix_x4_trans(b_frag[buf][2 * j][0], b_frag[buf][2 * j][1], b_frag[buf][2 * j + 1][0],
        // EXERCISE:                       b_frag[buf][2 * j + 1][1], b_stage + b_lane + j * 32 + kk * 16 * 128);
        // EXERCISE: }
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i) {
            ldmatrix_x4(a_frag[buf][i][0], a_frag[buf][i][1], a_frag[buf][i][2], a_frag[buf][i][3],
                        a_stage + (a_lane ^ (kk * 32)) + i * 16 * 128);
        }
#pragma unroll
        for (int j = 0; j < FRAG_N / 2; ++j) {
            ldmatrix_x4_trans(b_frag[buf][2 * j][0], b_frag[buf][2 * j][1], b_frag[buf][2 * j + 1][0],
                              b_frag[buf][2 * j + 1][1], b_stage + (b_lane ^ (j * 32)) + kk * 16 * 128);
        }
        // END SOLUTION
    };

    // ---- prologue: fill STAGES - 1 stages, then load the first k-step's fragments ----------
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) {
#pragma unroll
            for (int part = 0; part < COPY_PARTS; ++part) load_tile(s, s, part);
        }
        cp_async_commit_group();
    }
    cp_async_wait_group<STAGES - 2>();
    __syncthreads();
    load_fragments(0, 0, 0);

    // ---- main loop: the mma of k-step kk run on one fragment buffer while the other receives
    //      k-step kk + 1 (at the last k-step: the next slice's first), and the copies of slice
    //      kt + STAGES - 1 go out in pieces into the stage that slice kt - 1 left --------------
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int next = kt + STAGES - 1;
#pragma unroll
        for (int kk = 0; kk < K_STEPS; ++kk) {
            if (kk < K_STEPS - 1) {
                load_fragments((kk + 1) % 2, kt % STAGES, kk + 1);
                if (next < k_tiles) load_tile(next % STAGES, next, kk);
            } else {
                cp_async_commit_group();
                cp_async_wait_group<STAGES - 2>();    // slice kt + 1 has landed (this thread's part)
                __syncthreads();                      // every thread's part, and slice kt is read out
                if (kt + 1 < k_tiles) load_fragments(0, (kt + 1) % STAGES, 0);
            }
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) {
                    mma_m16n8k16(acc[i][j], a_frag[kk % 2][i], b_frag[kk % 2][j]);
                }
            }
        }
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
