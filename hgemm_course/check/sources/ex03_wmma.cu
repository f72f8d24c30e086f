// Exercise 03: the tensor-core step of rung 03 (hgemm_course/library/kernels/k03_wmma.cu).
//
// This file is the whole rung-03 kernel with the heart of its main loop cut out. For each
// 16-wide k-step kk of the slice in shared memory, a warp must load its FRAG_M fragments of A
// and FRAG_N fragments of B with wmma::load_matrix_sync and multiply every pair into its
// FRAG_M x FRAG_N accumulators with wmma::mma_sync. Fill in the marked region (the lines
// between BEGIN SOLUTION and END SOLUTION).
//
//   wmma::load_matrix_sync(fragment, pointer to the fragment's top-left element, leading dimension)
//   wmma::mma_sync(d, a, b, c)                  // d = a @ b + c, one 16x16x16 product
//
// The leading dimension is the distance between rows in elements: the shared rows are padded,
// so A rows are A_LD halves apart and B rows B_LD halves apart, not BK and BN.
//
// Check it:  hgemm-course check ex03_wmma
//   (checks ./ex03_wmma.cu, else ./exercises/ex03_wmma.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex03_wmma --path my_ex03.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex03"))
// The checker compiles the file for the GPU here if it runs rung 03 (else for the recorded H200) and
// inspects the PTX, then plays your region on the CPU through a model of the fragments (which rows
// and columns each acc[i][j] adds up); on such a GPU it also runs your kernel and compares C, else it
// could not check it.
// INSERT kernels/k03_wmma.cu; solve 1
