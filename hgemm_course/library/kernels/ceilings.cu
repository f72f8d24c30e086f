// ceilings.cu: the microbenchmarks of the ceiling chain (`hgemm-course ceilings`). Their loops
// touch no global memory, so each runs at the roof it measures: the FP32 CUDA cores, and
// mma.sync at a GEMM rung's warps and warp tiles, fed from registers or by ldmatrix. Every
// result is summed into one float per thread and stored, so the compiler cannot drop the work.
#include "common.cuh"
#include "ldmatrix.cuh"
#include "mma_sync.cuh"
#include "swizzle.cuh"

// ---- FP32 CUDA cores ------------------------------------------------------------------------
// CTAS_PER_SM CTAs of THREADS threads fill an SM; each thread runs CHAINS independent FMA
// chains, so a scheduler always has an FMA whose operands are ready and the FMA pipes never wait.
template <int THREADS, int CTAS_PER_SM, int CHAINS>
__global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
fma_peak(float* __restrict__ out, float a, float b, int iterations) {
    float x[CHAINS];                                  // CHAINS running values of this thread
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = static_cast<float>(threadIdx.x + c);
    // Unrolled so that the loop's own instructions take about 1% of the issue slots.
#pragma unroll 32
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = fmaf(x[c], a, b);
    }
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) sum += x[c];
    out[blockIdx.x * THREADS + threadIdx.x] = sum;
}

// ---- mma.sync at a rung's warp tile -----------------------------------------------------------
// Where a warp's fragments come from each k-step: loaded once and kept in registers (the
// issue peak of mma.sync), or read again from shared memory with ldmatrix, as rung 05 does.
enum class Feed { registers, ldmatrix };

// One CTA of WARPS warps per SM, each warp a (WM, WN) fp32 accumulator tile, runs k_slices
// BK-wide k-slices of rung 05's inner loop: no global traffic and no barrier, only the
// fragments and the mma.sync. Every warp reads the same swizzled A (WM, BK) and B (BK, 64)
// tiles: shared memory serves each warp's ldmatrix on its own, so the bytes it moves per flop
// are those of the GEMM. Thread 0 records the CTA's clock cycles, so the SM clock during the
// run is known.
template <int WARPS, int WM, int WN, int BK, Feed FEED>
__global__ void __launch_bounds__(WARPS * 32, 1)
mma_bound(float* __restrict__ out, long long* __restrict__ cycles, int k_slices) {
    constexpr int THREADS = WARPS * 32;
    constexpr int FRAG_M = WM / 16;                   // m16 fragments per warp
    constexpr int FRAG_N = WN / 8;                    // n8 fragments per warp
    static_assert(BK * 2 == 128, "A and B rows must be 128 bytes, the row of the 128-byte swizzle");
    static_assert(WM % 16 == 0 && WN % 16 == 0 && WN <= 64, "B fragments come in pairs from one 64-column panel");

    __shared__ __align__(128) half a_tile[WM * BK];   // (WM, BK) halves, swizzled
    __shared__ __align__(128) half b_tile[BK * 64];   // (BK, 64) halves, swizzled: one panel of B
    // Small nonzero halves: the tensor cores draw power, and so set the clock, by the data they
    // multiply, and zeros would flatter the figure; these keep the fp32 sums finite over any run.
    unsigned char* a_bytes = reinterpret_cast<unsigned char*>(a_tile);
    unsigned char* b_bytes = reinterpret_cast<unsigned char*>(b_tile);
    for (int e = threadIdx.x; e < WM * BK; e += THREADS) {
        const int row = e / BK, col = e % BK;
        *reinterpret_cast<half*>(a_bytes + swizzle_128b(row, col / 8) + col % 8 * 2) =
            __float2half(static_cast<float>((row + col) % 7 - 3) / 64.0f);
    }
    for (int e = threadIdx.x; e < BK * 64; e += THREADS) {
        const int row = e / 64, col = e % 64;
        *reinterpret_cast<half*>(b_bytes + swizzle_128b(row, col / 8) + col % 8 * 2) =
            __float2half(static_cast<float>((row * 3 + col) % 5 - 2) / 64.0f);
    }
    __syncthreads();

    // This lane's ldmatrix row, as in rung 05: A row lane % 16 at k-chunk lane / 16, and B k-row
    // lane % 16 at n-chunk lane / 16 (the same offset in both tiles); an XOR moves it along k or n.
    const int lane = threadIdx.x % 32;
    const unsigned a_smem = smem_u32(a_tile);
    const unsigned b_smem = smem_u32(b_tile);
    const unsigned lane_row = swizzle_128b(lane % 16, lane / 16);

    unsigned a_frag[FRAG_M][4];                       // FRAG_M x (16, 16) halves of A
    unsigned b_frag[FRAG_N][2];                       // FRAG_N x (16, 8) halves of B
    auto load_fragments = [&](int kk) {
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i) {
            ldmatrix_x4(a_frag[i][0], a_frag[i][1], a_frag[i][2], a_frag[i][3],
                        a_smem + (lane_row ^ (kk * 32)) + i * 16 * 128);
        }
#pragma unroll
        for (int j = 0; j < FRAG_N / 2; ++j) {
            ldmatrix_x4_trans(b_frag[2 * j][0], b_frag[2 * j][1], b_frag[2 * j + 1][0], b_frag[2 * j + 1][1],
                              b_smem + (lane_row ^ (j * 32)) + kk * 16 * 128);
        }
    };

    float acc[FRAG_M][FRAG_N][4] = {};                // (WM, WN) fp32 accumulators of this warp
    if constexpr (FEED == Feed::registers) load_fragments(0);
    const long long start = clock64();

    // ---- main loop: rung 05's k-slice, BK / 16 k-steps of FRAG_M x FRAG_N mma.sync ------------
    // Two k-steps per pass, so ptxas can load the second's fragments during the first's mma.sync
    // (fragment double buffering: 22 more registers at 16 warps of 64x32); unrolling all four
    // hoists every load and spills past the 128 registers a thread of 16 warps may have.
    for (int slice = 0; slice < k_slices; ++slice) {
#pragma unroll 2
        for (int kk = 0; kk < BK / 16; ++kk) {
            if constexpr (FEED == Feed::ldmatrix) load_fragments(kk);
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) {
                    mma_m16n8k16(acc[i][j], a_frag[i], b_frag[j]);
                }
            }
        }
    }

    // ---- epilogue: the CTA's slowest warp ends the cycle count; one sum per thread -----------
    __syncthreads();
    if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - start;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            sum += acc[i][j][0] + acc[i][j][1] + acc[i][j][2] + acc[i][j][3];
        }
    }
    out[blockIdx.x * THREADS + threadIdx.x] = sum;
}
