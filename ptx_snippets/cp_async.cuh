// cp_async.cuh: asynchronous global -> shared copies that bypass the registers (sm_80+).
// PTX ISA: "Data Movement and Conversion Instructions: cp.async", "cp.async.commit_group",
// "cp.async.wait_group".
#pragma once

// The SM copies 16 bytes from global to shared memory without passing through registers,
// caching in L2 only (.cg). Both addresses must be 16-byte aligned.
__device__ __forceinline__ void cp_async_16(unsigned smem_addr, const void* gmem_ptr) {
    // BEGIN SOLUTION
    // EXERCISE: // TODO: one inline-asm statement: the asynchronous copy of 16 bytes from global memory at gmem_ptr
    // EXERCISE: // (a 64-bit generic address) to shared memory at smem_addr (32-bit, in the shared window), cached in L2
    // EXERCISE: // only. PTX ISA: "Data Movement and Conversion Instructions: cp.async"; constraints for a 32-bit and a
    // EXERCISE: // 64-bit input: CUDA's "Inline PTX Assembly in CUDA".
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem_ptr));
    // END SOLUTION
}

// The same copy reading only src_bytes (0..16) and filling the rest of the 16 bytes with
// zeros: src_bytes = 0 writes 16 zero bytes and reads nothing (the tail of a tile).
__device__ __forceinline__ void cp_async_16_zfill(unsigned smem_addr, const void* gmem_ptr, int src_bytes) {
    // BEGIN SOLUTION
    // EXERCISE: // TODO: one inline-asm statement: the same copy, told that only src_bytes of the source are to be read
    // EXERCISE: // (the rest of the 16 bytes filled with zeros). PTX ISA: "cp.async", its optional src-size operand.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem_ptr),
                 "r"(src_bytes));
    // END SOLUTION
}

// Closes the group of this thread's cp.async issued since the last commit.
__device__ __forceinline__ void cp_async_commit_group() {
    // BEGIN SOLUTION
    // EXERCISE: // TODO: one inline-asm statement that closes this thread's pending copies into a group. PTX ISA:
    // EXERCISE: // "cp.async.commit_group".
    asm volatile("cp.async.commit_group;\n" ::);
    // END SOLUTION
}

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
    // BEGIN SOLUTION
    // EXERCISE: // TODO: one inline-asm statement that waits until at most N of this thread's groups are in flight;
    // EXERCISE: // N is a compile-time constant, and the instruction takes it as an immediate. PTX ISA:
    // EXERCISE: // "cp.async.wait_group"; an immediate operand's constraint: CUDA's "Inline PTX Assembly in CUDA".
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
    // END SOLUTION
}
