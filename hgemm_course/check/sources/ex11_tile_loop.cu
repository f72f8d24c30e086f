// Exercise 11, kernel: rung 11's persistent tile loop (hgemm_course/library/kernels/k11_persistent.cu).
//
// This file is the rung-11 kernel with its two tile loops cut out (the producer's and the consumers'),
// plus one optional extra question at its end. The grid holds only as many CTAs as fit on the GPU at once, in
// clusters of CLUSTER_M CTAs; the output tiles outnumber them, so each cluster computes many tiles,
// one after another, and its full/empty ring runs on from one tile into the next.
//
//   launch positions   `tiles` positions in rung 06's super-tile order over the grid of cluster tiles
//                      (grid_cm x grid_n); whole super tiles, so the edge ones include positions
//                      outside the grid, which decode (tile_of) past grid_cm or grid_n
//   blockIdx.x         this CTA; cluster = blockIdx.x / CLUSTER_M, clusters = gridDim.x / CLUSTER_M
//   the ring           the producer loads and the consumers compute the same slices in the same order,
//                      so their two walks over the tiles must be the same
//
// Check it:  hgemm-course check ex11_tile_loop
//   (checks ./ex11_tile_loop.cu, else ./exercises/ex11_tile_loop.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex11_tile_loop --path my_ex11.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex11_tile_loop"))
// The checker compiles the file for the GPU here if it runs rung 11 (else for the recorded H200) and
// runs your loops on the CPU for many grid and cluster counts against rung 11's order (every tile
// once, holes skipped); on such a GPU it also runs your kernel and compares C.
// INSERT kernels/k11_persistent.cu

// ---- extra question: the last round --------------------------------------------------------------
// With `ctas` persistent CTAs walking `tiles` tiles (no holes) round-robin, the kernel's time is that of
// its busiest CTA, and the last round may leave CTAs idle. The checker evaluates this on the CPU.
// BEGIN SOLUTION
// EXERCISE: // TODO: how many CTAs compute a tile in the last round (tiles >= 1, ctas >= 1).
// EXERCISE: __host__ __device__ constexpr int last_round_busy_ctas(int tiles, int ctas) {
// EXERCISE:     return 0;
// EXERCISE: }
__host__ __device__ constexpr int last_round_busy_ctas(int tiles, int ctas) {
    return tiles - (cdiv(tiles, ctas) - 1) * ctas;
}
// END SOLUTION
