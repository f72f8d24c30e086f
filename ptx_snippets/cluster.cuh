// cluster.cuh: thread block clusters (sm_90): CTAs launched together on one GPC that can reach each
// other's shared memory (distributed shared memory) and meet at a cluster-wide barrier.
// PTX ISA: "Special Registers: %cluster_ctarank", "Parallel Synchronization and Communication
// Instructions: barrier.cluster", "Data Movement and Conversion Instructions: mapa" and "mbarrier".
// Rung 11 uses them with clusters of two CTAs that share B's k-slices by multicast (cluster_m=2).
#pragma once

// This CTA's rank in its cluster, 0 .. cluster size - 1.
__device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return rank;
}

// This thread's arrival at the cluster barrier, releasing its earlier memory accesses to the cluster;
// every thread of every CTA of the cluster arrives (.aligned: the whole warp executes it together).
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}

// Waits until every thread of the cluster has arrived, acquiring what they released.
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The shared::cluster address of the variable at shared::cta address smem_addr in CTA `cta` of the cluster.
__device__ __forceinline__ unsigned cluster_map_shared(unsigned smem_addr, unsigned cta) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr), "r"(cta));
    return remote;
}

// One arrival on the mbarrier at shared::cta address bar of CTA `cta` of the cluster (a consumer
// telling every CTA whose multicast filled its stage that the stage is free again). The arrival has
// the default semantics (release at CTA scope), as CUTLASS's cluster barriers do: what it publishes
// is that this CTA's wgmma reads of the stage are over, and those completed before the arrival.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned cta) {
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" ::"r"(bar),
        "r"(cta)
        : "memory");
}
