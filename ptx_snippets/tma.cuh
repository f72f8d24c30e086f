// tma.cuh: the Tensor Memory Accelerator, Hopper's bulk tensor copy engine.
// PTX ISA: "Data Movement and Conversion Instructions: cp.async.bulk.tensor",
// "cp.async.bulk.commit_group", "cp.async.bulk.wait_group" and "prefetch.tensormap".
#pragma once

// The 128-byte opaque tensor map that cuTensorMapEncodeTiled writes on the host. It is
// passed by value as a `const __grid_constant__` kernel parameter, so it stays in the
// parameter space and its generic address is valid for cp.async.bulk.tensor.
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

// The copy engine reads the box at element coordinates (x = inner dimension, y = outer) from
// global memory into shared memory, swizzled and zero-filled out of bounds as the map says,
// and adds the bytes it wrote to the transaction count of the mbarrier at `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned smem_dst, const TensorMap* map, int x, int y, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar)
        : "memory");
}

// Fetches the tensor map into the TMA unit's descriptor cache ahead of its first use.
__device__ __forceinline__ void tma_prefetch_descriptor(const TensorMap* map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// The other direction: the copy engine writes the box at element coordinates (x, y) of the map's
// global tensor from shared memory at smem_src (laid out, swizzled, as the map says), dropping
// the elements that fall outside the tensor. Completion is tracked by bulk async-groups of the
// issuing thread, not by an mbarrier. Shared-memory writes of the generic proxy must be made
// visible to it first (fence_proxy_async_shared_cta, fence.cuh).
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, unsigned smem_src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(x), "r"(y), "r"(smem_src)
                 : "memory");
}

// Closes the bulk async-group of this thread's TMA stores issued since the last commit.
__device__ __forceinline__ void tma_store_commit() {
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// Waits until at most N of this thread's committed store groups are still reading their shared
// memory source (.read): the buffer may then be overwritten, though the global writes may not
// have landed yet.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// tma_load_2d to every CTA of the cluster named in the 16-bit cta_mask at once: the box is read from
// global memory (and L2) once and lands at the same shared-memory offset in each of those CTAs, each
// counting its bytes on its own mbarrier at offset bar. Needs a cluster launch (cluster.cuh).
__device__ __forceinline__ void tma_load_2d_multicast(unsigned smem_dst, const TensorMap* map, int x, int y,
                                                      unsigned bar, unsigned short cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar), "h"(cta_mask)
        : "memory");
}
