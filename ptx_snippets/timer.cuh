// timer.cuh: the GPU's nanosecond clock, and a pause that lets a waiting warp give up its issue slots.
// PTX ISA: "Special Registers: %globaltimer" and "nanosleep".
#pragma once

// Nanoseconds on the GPU's global timer: one clock for every SM, unlike %clock64, which counts one
// SM's cycles and so moves with the clock the SM runs at.
__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns));
    return ns;
}

// Suspends the warp for about `ns` nanoseconds (at most 1 ms); the hardware may wake it earlier.
__device__ __forceinline__ void sleep_ns(unsigned ns) {
    asm volatile("nanosleep.u32 %0;\n" ::"r"(ns));
}
