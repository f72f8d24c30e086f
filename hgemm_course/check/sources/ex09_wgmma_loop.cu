// Exercise 09, kernel: rung 09's wgmma main loop (hgemm_course/library/kernels/k09_wgmma.cu).
//
// This file is the rung-09 kernel with two regions cut out, plus one optional extra question at its end.
// wgmma.mma_async is issued by a whole warpgroup (128 threads) and is asynchronous: it returns
// before its products are done, and meanwhile the tensor cores read A and B from shared memory
// through 64-bit descriptors and accumulate into the warpgroup's registers. Three instructions
// order it (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"):
//
//   wgmma.fence          the warpgroup's earlier accesses to the accumulator registers (and to the
//                        shared memory wgmma reads) are ordered before the wgmma.mma_async after it
//   wgmma.commit_group   the wgmma.mma_async issued since the last commit become one group
//   wgmma.wait_group N   returns once at most N committed groups are still running
//
// A group still running may read its stage, so a stage is refilled only after the group that read
// it has finished. A descriptor (wgmma.cuh) holds a start address, a leading and a stride byte
// offset and the swizzle mode; for a 128B-swizzled operand the hardware swizzles the final
// addresses itself, so moving inside a tile moves only the start address.
//
// Check it:  hgemm-course check ex09_wgmma_loop
//   (checks ./ex09_wgmma_loop.cu, else ./exercises/ex09_wgmma_loop.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex09_wgmma_loop --path my_ex09.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex09_wgmma_loop"))
// The checker compiles the file for the GPU here if it runs rung 09 (else for the recorded H200),
// inspects the PTX and runs your regions on the CPU with stand-ins for wgmma that record each
// descriptor, fence, commit and wait; on such a GPU it also runs your kernel and compares C.
// INSERT kernels/k09_wgmma.cu

// ---- extra question: the descriptor of A in a 64-byte swizzle ------------------------------------
// A rung with BK = 32 would have TMA store A's (BM, 32) stage with SWIZZLE_64B: rows of 64 bytes, the
// swizzle pattern repeating every 8 rows, swizzle mode 2 in the descriptor (wgmma.cuh lists the fields;
// wgmma_desc_128b writes mode 1 only). The checker evaluates this function on the CPU.
// BEGIN SOLUTION
// EXERCISE: // TODO: the descriptor of A for product i (rows 64 i ..) at k16 step kk of a SWIZZLE_64B stage
// EXERCISE: //       that starts at a_stage (1024-byte aligned).
// EXERCISE: __host__ __device__ constexpr unsigned long long desc_a_swizzle_64b(unsigned a_stage, int i, int kk) {
// EXERCISE:     return 0;
// EXERCISE: }
__host__ __device__ constexpr unsigned long long desc_a_swizzle_64b(unsigned a_stage, int i, int kk) {
    return (wgmma_desc_field(a_stage + i * 64 * 64 + kk * 32) << WGMMA_DESC_START_SHIFT) |
           (wgmma_desc_field(WGMMA_KMAJOR_LBO_UNUSED) << WGMMA_DESC_LBO_SHIFT) |
           (wgmma_desc_field(8 * 64) << WGMMA_DESC_SBO_SHIFT) | (2ull << WGMMA_DESC_SWIZZLE_SHIFT);
}
// END SOLUTION
