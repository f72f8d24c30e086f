// mbarrier.cuh: shared-memory barriers that count thread arrivals and bytes of
// asynchronous copies, with a phase bit that flips each time a phase completes.
// PTX ISA: "Parallel Synchronization and Communication Instructions: mbarrier".
#pragma once

// Sets the barrier's expected arrival count for each phase; the current phase is 0.
__device__ __forceinline__ void mbar_init(unsigned bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

// One arrival of this thread on the current phase.
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// One arrival that also announces `bytes` more bytes of asynchronous copies (the
// transaction count); the phase completes when the arrivals and the bytes have all come.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// Spins until the phase with parity `parity` has completed (try_wait suspends the thread
// for a while between polls, so the loop does not hammer the barrier).
__device__ __forceinline__ void mbar_wait_parity(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
