// tma.cuh: the Tensor Memory Accelerator, Hopper's bulk tensor copy engine.
// PTX ISA: "Data Movement and Conversion Instructions: cp.async.bulk.tensor" and
// "prefetch.tensormap".
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
