// wgmma_peak.cu: the tensor cores' peak through wgmma (sm_90a), the compute roof of the roofline
// (`hgemm-course ceilings`). WARPGROUPS warpgroups per CTA, one CTA per SM, each multiply the same
// (64, 64) A tile by a (64, N) B tile held in shared memory, over and over: no global memory, no
// barrier in the loop, only wgmma.mma_async in groups of one k-slice with one group left in flight,
// as rungs 09-12 run them. Every result is summed into one float per thread and stored, so the
// compiler cannot drop the work; thread 0 records the CTA's cycles, so the clock is known.
#include "common.cuh"
#include "fence.cuh"
#include "wgmma.cuh"

constexpr int PEAK_BK = 64;                           // halves per k-slice: one 128-byte swizzled row of A

template <int WARPGROUPS, int N>
__global__ void __launch_bounds__(128 * WARPGROUPS, 1)
wgmma_peak(float* __restrict__ out, long long* __restrict__ cycles, int k_slices) {
    constexpr int THREADS = 128 * WARPGROUPS;
    static_assert(N % 64 == 0, "B is N / 64 panels of 64 columns");
    __shared__ __align__(1024) half a_tile[64 * PEAK_BK];   // (64, 64) halves, K-major, 128B-swizzled
    __shared__ __align__(1024) half b_tile[PEAK_BK * N];    // N / 64 panels of (64, 64) halves, MN-major
    // Small nonzero halves: the tensor cores draw power, and so set the clock, by the data they
    // multiply; any placement will do, since only the rate is measured.
    for (int e = threadIdx.x; e < 64 * PEAK_BK; e += THREADS) {
        a_tile[e] = __float2half(static_cast<float>(e % 7 - 3) / 64.0f);
    }
    for (int e = threadIdx.x; e < PEAK_BK * N; e += THREADS) {
        b_tile[e] = __float2half(static_cast<float>((e * 3) % 5 - 2) / 64.0f);
    }
    fence_proxy_async_shared_cta();                   // the stores above, before wgmma reads (async proxy)
    __syncthreads();

    const unsigned a_smem = smem_u32(a_tile);
    const unsigned b_smem = smem_u32(b_tile);
    float d[N / 8][4] = {};                           // this warpgroup's (64, N) fp32 accumulators
    const long long start = clock64();
    for (int slice = 0; slice < k_slices; ++slice) {
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < PEAK_BK / 16; ++kk) {   // as rung 09: A moves 32 bytes per k16, B 16 k-rows
            wgmma_m64nNk16<N, WgmmaMajor::K, WgmmaMajor::MN>(
                d, wgmma_desc_128b(a_smem + kk * 32, 16, 1024),
                wgmma_desc_128b(b_smem + kk * 16 * 128, PEAK_BK * 64 * 2, 1024), true);
        }
        wgmma_commit_group();
        wgmma_wait_group<1>();
    }
    wgmma_wait_group<0>();
    __syncthreads();
    if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - start;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < N / 8; ++j) sum += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    out[blockIdx.x * THREADS + threadIdx.x] = sum;
}
