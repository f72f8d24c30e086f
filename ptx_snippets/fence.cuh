// fence.cuh: ordering between the generic proxy (ordinary loads and stores) and the async
// proxy (TMA, wgmma), making fresh mbarriers visible, and named barriers for part of a CTA.
// PTX ISA: "Parallel Synchronization and Communication Instructions: membar/fence" and
// "bar, barrier".
#pragma once

// Orders this thread's earlier shared-memory accesses of the generic proxy before later
// accesses of the async proxy (TMA reads or writes of the same bytes).
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Makes the mbarrier.init writes of this thread visible to the async proxy and to the
// other threads of the cluster before they use the barriers.
__device__ __forceinline__ void fence_mbarrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Waits until `threads` threads (a multiple of 32, whole warps) have arrived at named barrier `id`
// (1..15; 0 is __syncthreads'), ordering their shared-memory accesses: one warpgroup can meet
// without stopping the warpgroups that do not take part.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
