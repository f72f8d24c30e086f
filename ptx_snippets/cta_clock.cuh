// cta_clock.cuh: each CTA's start and end, in its SM's cycles (%clock64) and in nanoseconds
// (%globaltimer), for the timing build of a kernel. A kernel declares `const CtaClock cta_clock;` as
// its first statement. In the plain build CtaClock is empty and the line compiles to nothing; the
// timing build (compiled with HGEMM_CTA_CLOCK defined, by hgemm_course/library/cta_clock.py) logs each CTA.
// PTX ISA: "Special Registers: %clock64, %globaltimer, %smid".
//
// Why: a launch's time moves with the clock the SM runs at, which the power limit lowers by what the
// kernel draws; its cycles do not. Read on the SM itself, cycles over nanoseconds is that clock.
#pragma once
#include "timer.cuh"

#ifdef HGEMM_CTA_CLOCK
#if !defined(HGEMM_CTA_CLOCK_SLOTS) || !defined(HGEMM_CTA_CLOCK_CAPACITY) || !defined(HGEMM_CTA_CLOCK_ENTRY_BYTES)
#error "the timing build takes its log's size from hgemm_course/library/cta_clock.py (-DHGEMM_CTA_CLOCK_SLOTS=...)"
#endif

// One CTA of one launch: the host reads these as hgemm_course.library.cta_clock.ENTRY.
struct CtaClockEntry {
    unsigned long long start_cycles;  // %clock64 of the SM, as the CTA's first thread begins
    unsigned long long end_cycles;    // %clock64 as the CTA's last warp ends (the latest of its warps)
    unsigned long long start_ns;      // %globaltimer at the start: one clock for every SM
    unsigned long long end_ns;        // %globaltimer at the end
    unsigned smid;                    // the SM that ran the CTA
    unsigned launch;                  // which launch since the host last zeroed cta_clock_started
};

static_assert(sizeof(CtaClockEntry) == HGEMM_CTA_CLOCK_ENTRY_BYTES, "hgemm_course.library.cta_clock.ENTRY reads another layout");

// The last HGEMM_CTA_CLOCK_SLOTS launches, a row each (launch i in row i % SLOTS), so that launches
// queued back to back, as the benchmark runs them, each keep their own record.
__device__ CtaClockEntry cta_clock_log[HGEMM_CTA_CLOCK_SLOTS][HGEMM_CTA_CLOCK_CAPACITY];
// CTAs started since the host zeroed it: CTA number / CTAs per launch is the launch's number, because
// launches on one stream start in order.
__device__ unsigned cta_clock_started;
// The row each CTA of the running launch writes (the next launch on the stream starts after this one ends).
__device__ unsigned cta_clock_row_of[HGEMM_CTA_CLOCK_CAPACITY];

// The SM's cycle counter: each SM counts its own cycles, at the clock it runs at.
__device__ __forceinline__ unsigned long long clock64_now() {
    unsigned long long cycles;
    asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(cycles)::"memory");  // memory: no store moves across it
    return cycles;
}

// The SM the calling thread runs on.
__device__ __forceinline__ unsigned smid_now() {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(id));
    return id;
}

// The CTA's number in its grid, x fastest.
__device__ __forceinline__ unsigned linear_cta() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

struct CtaClock {
    // The first thread claims the CTA's row and stamps the start; the barrier orders its reset of the
    // end stamps before any warp's atomicMax on them.
    __device__ CtaClock() {
        if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0 && linear_cta() < HGEMM_CTA_CLOCK_CAPACITY) {
            const unsigned ctas = gridDim.x * gridDim.y * gridDim.z;
            const unsigned launch = atomicAdd(&cta_clock_started, 1u) / ctas;
            cta_clock_row_of[linear_cta()] = launch % HGEMM_CTA_CLOCK_SLOTS;
            CtaClockEntry& entry = cta_clock_log[launch % HGEMM_CTA_CLOCK_SLOTS][linear_cta()];
            entry.launch = launch;
            entry.smid = smid_now();
            entry.end_cycles = 0;
            entry.end_ns = 0;
            entry.start_ns = globaltimer_ns();
            entry.start_cycles = clock64_now();
        }
        __syncthreads();
    }
    // Every warp's first lane stamps its end; the latest stamp is the CTA's end. The row is found again
    // through cta_clock_row_of, so that the kernel keeps no register for it between the two.
    __device__ ~CtaClock() {
        const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        if (thread % 32 == 0 && linear_cta() < HGEMM_CTA_CLOCK_CAPACITY) {
            const unsigned long long cycles = clock64_now();
            const unsigned long long ns = globaltimer_ns();
            CtaClockEntry& entry = cta_clock_log[cta_clock_row_of[linear_cta()]][linear_cta()];
            atomicMax(&entry.end_cycles, cycles);
            atomicMax(&entry.end_ns, ns);
        }
    }
};
#else
// The plain build: nothing is logged, nothing is stored.
struct CtaClock {
    __device__ CtaClock() {}
};
#endif
