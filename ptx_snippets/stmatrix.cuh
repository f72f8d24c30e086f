// stmatrix.cuh: a warp stores 8x8 tiles of 16-bit elements from registers to shared memory, the
// inverse of ldmatrix. Register i of every lane holds two elements of tile i in the mma.sync / wgmma
// accumulator layout (row lane / 4, columns 2 (lane % 4) and + 1); lane l gives the address of one
// 16-byte row: lanes 0-7 the rows of tile 0, 8-15 of tile 1, 16-23 of tile 2, 24-31 of tile 3.
// PTX ISA: "Warp-level matrix store instruction: stmatrix" (sm_90).
#pragma once

// Four 8x8 tiles (rows from all 32 lanes): a 16x16 piece of an accumulator, converted to halves.
__device__ __forceinline__ void stmatrix_x4(unsigned smem_addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}

// The transposing form: each 8x8 tile is written transposed, so a fragment of a row-major tile
// lands as its column-major (N, M) image.
__device__ __forceinline__ void stmatrix_x4_trans(unsigned smem_addr, unsigned r0, unsigned r1, unsigned r2,
                                                  unsigned r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr),
                 "r"(r0), "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
