// Exercise 04, kernel: rung 04's PTX (hgemm_course/library/kernels/k04_mma_sync.cu, ptx_snippets/ldmatrix.cuh and mma_sync.cuh).
//
// This file is the rung-04 kernel with its two PTX headers, ldmatrix.cuh and mma_sync.cuh, written into it, and
// the PTX cut out: the inline-asm statements of ldmatrix_x4, ldmatrix_x4_trans and mma_m16n8k16 (the
// instruction, its operands and their constraints), and the double-buffered k-step of the main loop that calls
// them. Fill in the four marked regions (BEGIN SOLUTION .. END SOLUTION). The facts you need:
//
//   inline asm   asm volatile("instruction %0, ...;" : outputs : inputs); %n is the n-th operand, the outputs
//                counted first; a constraint names the register kind ("r" 32-bit integer, "f" 32-bit float,
//                "l" 64-bit integer) and whether the operand is written ("=") or read and written ("+").
//                CUDA's "Inline PTX Assembly in CUDA" has the rest.
//   ldmatrix     lane 8 j + i supplies the address of row i of matrix j; lane l then receives, in its
//                register j, row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of matrix j (with .trans: of
//                matrix j transposed). PTX ISA: "Warp-level matrix load instruction: ldmatrix".
//   mma A, B     the registers a0..a3 and b0, b1 of the m16n8k16 fragments: PTX ISA, "Matrix Fragments for
//                mma.m16n8k16 with floating point type" (and ex04_ldmatrix, which matches them to ldmatrix).
//   the kernel   the lanes point ldmatrix_x4 at rows lane % 16, k-chunk lane / 16 of a warp's 16 rows of A, and
//                ldmatrix_x4_trans at k-rows lane % 16, n-chunk lane / 16 of 16 columns of B (row-major in
//                shared memory); a_frag[buf][i] and b_frag[buf][j] are the fragments the mma of acc[i][j] reads.
//
// Check it:  hgemm-course check ex04_mma_sync
//   (checks ./ex04_mma_sync.cu, else ./exercises/ex04_mma_sync.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex04_mma_sync --path my_ex04.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex04_mma_sync"))
// The checker compiles the file for the GPU here if it runs rung 04 (else for the recorded H200), reads the PTX
// your three functions compile to (which register each argument becomes) and plays them through a model of
// ldmatrix and mma.sync on the CPU; then it plays your k-step through a model of the ring and the two fragment
// buffers for every k-step of a few slices. On such a GPU it also runs your kernel and compares C, else it
// could not check it.
// Rung 04: the tiling of rung 03 with nvcuda::wmma replaced by the instructions it compiles
// to, written out: ldmatrix (shared -> fragment registers) and mma.sync.m16n8k16. The shared
// tiles are still padded, so every ldmatrix row lands in its own group of 4 banks. Written
// out, the instructions can be fed the way mma.sync needs: the fragments of the next k-step
// load while this k-step's mma run (two fragment buffers), the next slice's cp.async copies
// are spread over the k-steps instead of leaving in one burst, and each thread works out its
// copy addresses once, before the k-loop; when M, N and K are whole tiles, a second
// instantiation copies without the tail guards.
#include "common.cuh"
#include "cp_async.cuh"
// ldmatrix.cuh: a warp loads 8x8 tiles of 16-bit elements from shared memory straight into
// the register layout of mma.sync fragments. Lane l gives the address of one 16-byte row:
// lanes 0-7 the rows of tile 0, 8-15 of tile 1, 16-23 of tile 2, 24-31 of tile 3.
// PTX ISA: "Warp-level matrix load instruction: ldmatrix".

// Four 8x8 tiles (rows from all 32 lanes): a whole 16x16 A fragment of mma.m16n8k16.
__device__ __forceinline__ void ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                            unsigned smem_addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr));
}

// Four 8x8 tiles, each arriving transposed, so a row-major (K, N) tile in shared memory becomes the
// column-major B fragment that mma.sync wants: the B fragments of two n8 tiles.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                                  unsigned smem_addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr));
}
// mma_sync.cuh: warp-synchronous tensor-core matrix multiply-accumulate from registers.
// PTX ISA: "Warp-level matrix multiply-accumulate instructions: mma", shape .m16n8k16.

// The warp's tensor cores compute D = A (16x16 f16, row) * B (16x8 f16, col) + D (16x8 f32).
// Per lane: a = 4 registers of 2 halves, b = 2 registers of 2 halves, d = 4 floats at
// rows lane/4 and lane/4 + 8, columns 2*(lane%4) and 2*(lane%4) + 1.
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// C (M, N) = A (M, K) @ B (K, N), fp16 in and out, fp32 accumulation, all row-major.
// A CTA computes a (BM, BN) tile of C with (BM / WM) x (BN / WN) warps, each a (WM, WN)
// sub-tile; the K loop walks BK-wide slices through a STAGES-deep cp.async ring.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool WHOLE_TILES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
k04_mma_sync(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K) {
    const CtaClock cta_clock;  // the timing build logs this CTA's start and end (cta_clock.cuh)
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int WARPS_N = BN / WN;
    constexpr int FRAG_M = WM / 16;                   // m16 fragments per warp
    constexpr int FRAG_N = WN / 8;                    // n8 fragments per warp
    constexpr int K_STEPS = BK / 16;                  // mma k-steps per slice
    constexpr int COPY_PARTS = K_STEPS - 1;           // pieces a slice's copies are issued in
    static_assert(K_STEPS % 2 == 0, "BK must be a multiple of 32: the two fragment buffers alternate k-steps");
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
            cp_async_16_zfill(a_stage + (row * A_LD + chunk * 8) * 2, src, inside ? 16 : 0);
        }
#pragma unroll
        for (int it = part; it < BK / B_PASS; it += COPY_PARTS) {
            const int row = b_row + it * B_PASS;
            const int chunk = b_chunk;
            const bool inside = WHOLE_TILES || (k0 + row < K && n0 + chunk * 8 < N);
            const half* src = inside ? b_src + it * b_step : B;
            cp_async_16_zfill(b_stage + (row * B_LD + chunk * 8) * 2, src, inside ? 16 : 0);
        }
    };

    // ldmatrix row addresses of this lane, relative to a stage: A rows lane % 16 at k-chunk
    // lane / 16; B k-rows lane % 16 at n-chunk lane / 16.
    const unsigned a_lane = ((warp_m * WM + lane % 16) * A_LD + (lane / 16) * 8) * 2;
    const unsigned b_lane = ((lane % 16) * B_LD + warp_n * WN + (lane / 16) * 8) * 2;

    float acc[FRAG_M][FRAG_N][4] = {};                // (WM, WN) fp32 accumulators of this warp
    unsigned a_frag[2][FRAG_M][4];                    // 2 buffers x FRAG_M x (16, 16) halves of A
    unsigned b_frag[2][FRAG_N][2];                    // 2 buffers x FRAG_N x (16, 8) halves of B

    // The fragments of k-step kk of the slice in `stage`, into fragment buffer `buf`.
    auto load_fragments = [&](int buf, int stage, int kk) {
        const unsigned a_stage = smem_u32(ring.a) + stage * A_STAGE;   // (BM, BK) halves
        const unsigned b_stage = smem_u32(ring.b) + stage * B_STAGE;   // (BK, BN) halves
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i) {
            ldmatrix_x4(a_frag[buf][i][0], a_frag[buf][i][1], a_frag[buf][i][2], a_frag[buf][i][3],
                        a_stage + a_lane + i * 16 * A_LD * 2 + kk * 32);
        }
#pragma unroll
        for (int j = 0; j < FRAG_N / 2; ++j) {
            ldmatrix_x4_trans(b_frag[buf][2 * j][0], b_frag[buf][2 * j][1], b_frag[buf][2 * j + 1][0],
                              b_frag[buf][2 * j + 1][1], b_stage + b_lane + kk * 16 * B_LD * 2 + j * 32);
        }
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
