// Exercise 04, kernel: rung 04's PTX (hgemm_course/library/kernels/k04_mma_sync.cu, ptx_snippets/ldmatrix.cuh and mma_sync.cuh).
//
// This file is the rung-04 kernel with its two PTX headers, ldmatrix.cuh and mma_sync.cuh, written into it, and
// the PTX cut out: the inline-asm statements of ldmatrix_x4, ldmatrix_x4_trans and mma_m16n8k16 (the
// instruction, its operands and their constraints), and the double-buffered k-step of the main loop that calls
// them. Fill in the four marked regions (BEGIN SOLUTION .. END SOLUTION). The facts you need:
//
//   inline asm   asm volatile("instruction %0, ...;" : outputs : inputs); %n is the n-th operand, the outputs
//                counted first; a constraint names the register kind ("r" 32-bit integer, "f" 32-bit float,
//                "l" 64-bit integer) and whether the operand is written ("=") or read and written ("+").
//                CUDA's "Inline PTX Assembly in CUDA" has the rest.
//   ldmatrix     lane 8 j + i supplies the address of row i of matrix j; lane l then receives, in its
//                register j, row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of matrix j (with .trans: of
//                matrix j transposed). PTX ISA: "Warp-level matrix load instruction: ldmatrix".
//   mma A, B     the registers a0..a3 and b0, b1 of the m16n8k16 fragments: PTX ISA, "Matrix Fragments for
//                mma.m16n8k16 with floating point type" (and ex04_ldmatrix, which matches them to ldmatrix).
//   the kernel   the lanes point ldmatrix_x4 at rows lane % 16, k-chunk lane / 16 of a warp's 16 rows of A, and
//                ldmatrix_x4_trans at k-rows lane % 16, n-chunk lane / 16 of 16 columns of B (row-major in
//                shared memory); a_frag[buf][i] and b_frag[buf][j] are the fragments the mma of acc[i][j] reads.
//
// Check it:  hgemm-course check ex04_mma_sync
//   (checks ./ex04_mma_sync.cu, else ./exercises/ex04_mma_sync.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex04_mma_sync --path my_ex04.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex04_mma_sync"))
// The checker compiles the file for the GPU here if it runs rung 04 (else for the recorded H200), reads the PTX
// your three functions compile to (which register each argument becomes) and plays them through a model of
// ldmatrix and mma.sync on the CPU; then it plays your k-step through a model of the ring and the two fragment
// buffers for every k-step of a few slices. On such a GPU it also runs your kernel and compares C, else it
// could not check it.
// INSERT kernels/k04_mma_sync.cu; inline ldmatrix.cuh mma_sync.cuh
