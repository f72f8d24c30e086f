// flag.cuh: flags in global memory that one CTA raises and another waits for, with the ordering
// that makes the data written before the flag visible to the CTA that saw it.
// PTX ISA: "Memory Consistency Model" (release and acquire patterns) and "ld", "st", "membar/fence".
#pragma once

// Orders this thread's earlier memory accesses before its later ones for every thread of the GPU:
// the data a CTA wrote is in place before any thread of the CTA raises the flag that announces it.
__device__ __forceinline__ void fence_acq_rel_gpu() {
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
}

// Writes `value` to the flag with release semantics at GPU scope: a thread that reads this value
// with flag_acquire_gpu also sees every write ordered before this one.
__device__ __forceinline__ void flag_release_gpu(unsigned* flag, unsigned value) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(value) : "memory");
}

// Reads the flag with acquire semantics at GPU scope (the other half of flag_release_gpu).
__device__ __forceinline__ unsigned flag_acquire_gpu(const unsigned* flag) {
    unsigned value;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
    return value;
}

