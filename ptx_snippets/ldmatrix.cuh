// ldmatrix.cuh: a warp loads 8x8 tiles of 16-bit elements from shared memory straight into
// the register layout of mma.sync fragments. Lane l gives the address of one 16-byte row:
// lanes 0-7 the rows of tile 0, 8-15 of tile 1, 16-23 of tile 2, 24-31 of tile 3.
// PTX ISA: "Warp-level matrix load instruction: ldmatrix".
#pragma once

// Four 8x8 tiles (rows from all 32 lanes): a whole 16x16 A fragment of mma.m16n8k16.
__device__ __forceinline__ void ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                            unsigned smem_addr) {
    // BEGIN SOLUTION
    // EXERCISE: // TODO: one inline-asm statement: the warp loads four 8x8 matrices of 16-bit elements from shared
    // EXERCISE: // memory, matrix j into rj; this lane's row address is smem_addr, a 32-bit address in the shared
    // EXERCISE: // window. PTX ISA: "Warp-level matrix load instruction: ldmatrix"; operands and constraints: CUDA's
    // EXERCISE: // "Inline PTX Assembly in CUDA" (r0-r3 are written, smem_addr is read).
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr));
    // END SOLUTION
}

// Four 8x8 tiles, each arriving transposed, so a row-major (K, N) tile in shared memory becomes the
// column-major B fragment that mma.sync wants: the B fragments of two n8 tiles.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                                  unsigned smem_addr) {
    // BEGIN SOLUTION
    // EXERCISE: // TODO: one inline-asm statement: as ldmatrix_x4, but each matrix arrives transposed (lane l gets
    // EXERCISE: // column l / 4 of it, not row l / 4). PTX ISA: "Warp-level matrix load instruction: ldmatrix".
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr));
    // END SOLUTION
}
