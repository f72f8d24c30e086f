// Exercise 03, kernel: rung 03's copies (hgemm_course/library/kernels/k03_wmma.cu and ptx_snippets/cp_async.cuh).
//
// This file is the rung-03 kernel with its copy header, cp_async.cuh, written into it, and the PTX cut out:
// the inline-asm statements of cp_async_16, cp_async_16_zfill, cp_async_commit_group and cp_async_wait_group
// (the instruction, its operands and their constraints), and the ring's bookkeeping at the top of the K loop
// that uses them. Fill in the five marked regions (BEGIN SOLUTION .. END SOLUTION). The facts you need:
//
//   inline asm   asm volatile("instruction %0, ...;" :: inputs); %n is the n-th operand; a constraint names the
//                kind: "r" a 32-bit register, "l" a 64-bit one, "n" an immediate the compiler writes into the
//                instruction. CUDA's "Inline PTX Assembly in CUDA" has the rest.
//   cp.async     a thread's copies run in the background until it waits for them; it closes the copies issued
//                since the last close into a group, and waits until at most N of its groups are still in
//                flight. A wait covers this thread's copies only. PTX ISA: "Data Movement and Conversion
//                Instructions: cp.async", "cp.async.commit_group", "cp.async.wait_group".
//   the ring     slice kt of K lives in stage kt % STAGES; the prologue copies slices 0 .. STAGES - 2, one
//                group each, and the compute of slice kt reads stage kt % STAGES right after your region.
//
// Check it:  hgemm-course check ex03_cp_async
//   (checks ./ex03_cp_async.cu, else ./exercises/ex03_cp_async.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex03_cp_async --path my_ex03.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex03_cp_async"))
// The checker compiles the file for the GPU here if it runs rung 03 (else for the recorded H200), reads the PTX
// your four functions compile to (which operand each argument becomes), then plays your bookkeeping through a
// model of the ring: which groups each wait leaves in flight, what each stage holds when it is read and
// refilled. On such a GPU it also runs your kernel and compares C, else it could not check it.
// Rung 03: tensor cores through nvcuda::wmma. A CTA stages (BM, BK) slices of A and (BK, BN)
// slices of B in shared memory with cp.async (a STAGES-deep ring; 2 is double buffering),
// rows padded by 8 halves (16 bytes) so the 8 rows of every tensor-core load fall in 8
// different bank groups; each warp multiplies 16x16x16 fragments with wmma::mma_sync.
#include "common.cuh"
// cp_async.cuh: asynchronous global -> shared copies that bypass the registers (sm_80+).
// PTX ISA: "Data Movement and Conversion Instructions: cp.async", "cp.async.commit_group",
// "cp.async.wait_group".

// The SM copies 16 bytes from global to shared memory without passing through registers,
// caching in L2 only (.cg). Both addresses must be 16-byte aligned.
__device__ __forceinline__ void cp_async_16(unsigned smem_addr, const void* gmem_ptr) {
    // BEGIN SOLUTION
    // TODO: one inline-asm statement: the asynchronous copy of 16 bytes from global memory at gmem_ptr
    // (a 64-bit generic address) to shared memory at smem_addr (32-bit, in the shared window), cached in L2
    // only. PTX ISA: "Data Movement and Conversion Instructions: cp.async"; constraints for a 32-bit and a
    // 64-bit input: CUDA's "Inline PTX Assembly in CUDA".
    // END SOLUTION
}

// The same copy reading only src_bytes (0..16) and filling the rest of the 16 bytes with
// zeros: src_bytes = 0 writes 16 zero bytes and reads nothing (the tail of a tile).
__device__ __forceinline__ void cp_async_16_zfill(unsigned smem_addr, const void* gmem_ptr, int src_bytes) {
    // BEGIN SOLUTION
    // TODO: one inline-asm statement: the same copy, told that only src_bytes of the source are to be read
    // (the rest of the 16 bytes filled with zeros). PTX ISA: "cp.async", its optional src-size operand.
    // END SOLUTION
}

// Closes the group of this thread's cp.async issued since the last commit.
__device__ __forceinline__ void cp_async_commit_group() {
    // BEGIN SOLUTION
    // TODO: one inline-asm statement that closes this thread's pending copies into a group. PTX ISA:
    // "cp.async.commit_group".
    // END SOLUTION
}

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
    // BEGIN SOLUTION
    // TODO: one inline-asm statement that waits until at most N of this thread's groups are in flight;
    // N is a compile-time constant, and the instruction takes it as an immediate. PTX ISA:
    // "cp.async.wait_group"; an immediate operand's constraint: CUDA's "Inline PTX Assembly in CUDA".
    // END SOLUTION
}
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
        // BEGIN SOLUTION
        // TODO: the ring's bookkeeping before slice kt is computed from stage kt % STAGES. Wait, with
        // cp_async_wait_group<N>, until this thread's copies of slice kt have landed: the prologue committed
        // STAGES - 1 groups, one per slice, and every iteration commits one more. Then make every thread's
        // copies visible to all, and every warp done reading the stage slice kt - 1 used, before slice
        // kt + STAGES - 1 (while there is one: load_tile(stage, slice)) is copied into it; close the
        // iteration's copies into its group.
        // END SOLUTION

        // The slice's (BM, BK) and (BK, BN) stages as wmma's generic pointers, offset in 32 bits like the copies'
        // addresses (ring.a[kt % STAGES] would scale the index in 64 bits and schedule the loop differently).
        const half* a_tile = reinterpret_cast<const half*>(reinterpret_cast<unsigned char*>(ring.a) + (kt % STAGES) * A_STAGE);
        const half* b_tile = reinterpret_cast<const half*>(reinterpret_cast<unsigned char*>(ring.b) + (kt % STAGES) * B_STAGE);
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a_frag[FRAG_M]; // FRAG_M x (16, 16) halves of A
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b_frag[FRAG_N]; // FRAG_N x (16, 16) halves of B
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
                wmma::load_matrix_sync(a_frag[i], a_tile + (warp_m * WM + i * 16) * A_LD + kk * 16, A_LD);
            }
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) {
                wmma::load_matrix_sync(b_frag[j], b_tile + kk * 16 * B_LD + warp_n * WN + j * 16, B_LD);
            }
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) {
                    wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
                }
            }
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
