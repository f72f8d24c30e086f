// Exercise 05, kernel: rung 05's swizzled shared-memory addresses (hgemm_course/library/kernels/k05_swizzle.cu).
//
// This file is the rung-05 kernel with the addresses of its shared-memory tiles cut out: where the
// cp.async copies store each 16-byte chunk of A and B, and where each lane points ldmatrix, plus one
// optional extra question at its end. The stubs store and read the tiles unswizzled (plain row-major): the
// kernel is right, and slow. The hardware facts:
//
//   banks        shared memory has 32 banks of 4 bytes; a 128-byte row of halves covers each bank once,
//                and a warp-wide access costs one wavefront per 4-byte word a bank must deliver
//   ldmatrix     (ldmatrix.cuh) each lane supplies the address of one 16-byte row of an 8x8 matrix;
//                the 8 rows of one matrix are read in one phase, so they must sit in 8 different
//                groups of 4 banks to take one wavefront
//   swizzle      swizzle_128b(row, chunk) (swizzle.cuh) is the byte offset of logical 16-byte chunk
//                `chunk` (0-7) of row `row` in a tile of 128-byte rows stored with the XOR swizzle that
//                TMA's SWIZZLE_128B writes; chapter 05 derives it (exercise ex05_swizzle)
//
// Fill in the four marked regions. Every address the stores write must be the one the loads read.
//
// Check it:  hgemm-course check ex05_swizzle_kernel
//   (checks ./ex05_swizzle_kernel.cu, else ./exercises/ex05_swizzle_kernel.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex05_swizzle_kernel --path my_ex05.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex05_swizzle_kernel"))
// The checker compiles the file for the GPU here if it runs rung 05 (else for the recorded H200),
// inspects the PTX and runs your regions on the CPU for every thread: each ldmatrix must read the chunk
// the mma needs, from where a copy stored it, and the bank model counts the wavefronts of every copy
// and ldmatrix; on such a GPU it also runs your kernel and compares C, else it could not check it.
// INSERT kernels/k05_swizzle.cu

// ---- extra question: TMA's 32-byte swizzle -------------------------------------------------------
// A tile of 32-byte rows (16 halves: two chunks) stored by TMA with SWIZZLE_32B: its pattern repeats
// every 256 bytes and XORs the chunk bit (address bit 4) with a higher address bit. The checker
// evaluates this function on the CPU.
// BEGIN SOLUTION
// EXERCISE: // TODO: the byte offset of logical chunk `chunk` (0 or 1) of row `row` in such a tile.
// EXERCISE: __host__ __device__ constexpr int swizzle_32b(int row, int chunk) {
// EXERCISE:     return row * 32 + chunk * 16;
// EXERCISE: }
__host__ __device__ constexpr int swizzle_32b(int row, int chunk) {
    return row * 32 + ((chunk ^ (row / 4 % 2)) << 4);
}
// END SOLUTION
