// cp_async.cuh: asynchronous global -> shared copies that bypass the registers (sm_80+).
// PTX ISA: "Data Movement and Conversion Instructions: cp.async", "cp.async.commit_group",
// "cp.async.wait_group".
#pragma once

// The SM copies 16 bytes from global to shared memory without passing through registers,
// caching in L2 only (.cg). Both addresses must be 16-byte aligned.
__device__ __forceinline__ void cp_async_16(unsigned smem_addr, const void* gmem_ptr) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem_ptr));
}

// The same copy reading only src_bytes (0..16) and filling the rest of the 16 bytes with
// zeros: src_bytes = 0 writes 16 zero bytes and reads nothing (the tail of a tile).
__device__ __forceinline__ void cp_async_16_zfill(unsigned smem_addr, const void* gmem_ptr, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem_ptr),
                 "r"(src_bytes));
}

// Closes the group of this thread's cp.async issued since the last commit.
__device__ __forceinline__ void cp_async_commit_group() {
    asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
