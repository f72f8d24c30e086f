// setmaxnreg.cuh: moving registers between the warpgroups of a CTA (sm_90a). The CTA starts
// with one register budget per thread (the launch bound's); a warpgroup that needs few hands
// registers back to the CTA's pool, one that holds large accumulators takes them from it.
// PTX ISA: "Miscellaneous Instructions: setmaxnreg" (setmaxnreg.inc / .dec.sync.aligned.u32).
// Rules: all four warps of a warpgroup execute the same setmaxnreg; the count is a multiple of 8
// in [24, 256]; ptxas honours it only when the kernel has a register cap at entry
// (__launch_bounds__(threads, 1)), and otherwise warns (C7508) and ignores it.
#pragma once

// Lowers this warpgroup's per-thread register maximum to N; the freed registers go to the
// CTA's pool for setmaxnreg.inc of other warpgroups.
template <int N>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// Raises this warpgroup's per-thread register maximum to N, blocking until the CTA's pool has
// the registers; their contents are undefined until written.
template <int N>
__device__ __forceinline__ void warpgroup_reg_alloc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
