// fence.cuh: ordering between the generic proxy (ordinary loads and stores) and the async
// proxy (TMA, wgmma), and making fresh mbarriers visible.
// PTX ISA: "Parallel Synchronization and Communication Instructions: membar/fence".
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
