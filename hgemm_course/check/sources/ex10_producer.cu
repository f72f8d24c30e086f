// Exercise 10, kernel: rung 10's producer and the consumers' release (hgemm_course/library/kernels/k10_warp_specialized.cu).
//
// This file is the rung-10 kernel with three regions cut out, plus one optional extra question at its end.
// Warpgroup 0 produces: one of its threads asks TMA for every k-slice. Warpgroups 1 and 2 consume:
// they wait for a slice, multiply it with wgmma and free its stage. The hardware facts:
//
//   setmaxnreg.dec / .inc   (setmaxnreg.cuh) a warpgroup gives registers back to the CTA's pool or
//                           takes them from it; .sync.aligned, so all 128 threads execute it together
//   mbarrier phases         a barrier completes phase 0, 1, 2, ... each time its expected arrivals
//                           (and, for full[s], TMA's bytes) are in; mbar_wait_parity(bar, p) returns
//                           once the latest completed phase has parity p
//   wgmma.wait_group N      returns once at most N committed wgmma groups are still running; a group
//                           still running may still read its stage
//
// Check it:  hgemm-course check ex10_producer
//   (checks ./ex10_producer.cu, else ./exercises/ex10_producer.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex10_producer --path my_ex10.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex10_producer"))
// The checker compiles the file for the GPU here if it runs rung 10 (else for the recorded H200),
// inspects the PTX and runs your regions on the CPU with stand-ins that record every setmaxnreg, wait,
// load and arrival, played through a model of the ring; on such a GPU it also runs your kernel.
// INSERT kernels/k10_warp_specialized.cu

// ---- extra question: a consumer that keeps more groups in flight ---------------------------------
// A consumer that ends every iteration with wgmma_wait_group<in_flight> (in_flight >= 0) keeps up to
// in_flight slices' products running. The checker evaluates this function on the CPU.
// BEGIN SOLUTION
// EXERCISE: // TODO: the stage this consumer may release at the end of iteration kt of a ring of `stages`
// EXERCISE: //       stages, or -1 when it may release none.
// EXERCISE: __host__ __device__ constexpr int released_stage(int kt, int stages, int in_flight) {
// EXERCISE:     return -1;
// EXERCISE: }
__host__ __device__ constexpr int released_stage(int kt, int stages, int in_flight) {
    return kt >= in_flight ? (kt - in_flight) % stages : -1;
}
// END SOLUTION
