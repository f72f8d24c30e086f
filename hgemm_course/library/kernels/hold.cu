// A one-thread kernel that holds its stream until the host releases it, for timing short kernels.
// Launching a GEMM from Python takes the host 10-30 us; a kernel that runs for less finds the GPU idle,
// and the CUDA event before it fires while the host is still preparing the launch, so the event pair
// counts host time as the kernel's. Queued behind this kernel, every timed launch is already waiting
// when the host lets go, and the launches run back to back as the events measure them.
#include "timer.cuh"

// Waits until the host has written `ticket` (or a later one) to `release`, a word of host memory mapped
// into the GPU's address space, or until `timeout_ns` have passed; a hold that timed out writes 1 to
// `timed_out`, which the host reads once the stream has drained.
extern "C" __global__ void hold_stream(const volatile unsigned* release, unsigned ticket, unsigned* timed_out,
                                       unsigned long long timeout_ns) {
    const unsigned long long start = globaltimer_ns();
    while (*release < ticket) {
        if (globaltimer_ns() - start > timeout_ns) {
            *timed_out = 1;
            return;
        }
        sleep_ns(2000);     // each read of host memory crosses to the CPU: no need to ask more often
    }
}
