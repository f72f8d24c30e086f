// mma_sync.cuh: warp-synchronous tensor-core matrix multiply-accumulate from registers.
// PTX ISA: "Warp-level matrix multiply-accumulate instructions: mma", shape .m16n8k16.
#pragma once

// The warp's tensor cores compute D = A (16x16 f16, row) * B (16x8 f16, col) + D (16x8 f32).
// Per lane: a = 4 registers of 2 halves, b = 2 registers of 2 halves, d = 4 floats at
// rows lane/4 and lane/4 + 8, columns 2*(lane%4) and 2*(lane%4) + 1.
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    // BEGIN SOLUTION
    // EXERCISE: // TODO: one inline-asm statement: the warp-wide mma of shape m16n8k16, A row-major and B column-major
    // EXERCISE: // f16, C and D f32, that adds A @ B to the accumulators d in place (d is read as C and written as D).
    // EXERCISE: // PTX ISA: "Warp-level matrix multiply-accumulate instructions: mma", its "Matrix Fragments for
    // EXERCISE: // mma.m16n8k16 with floating point type"; constraints: CUDA's "Inline PTX Assembly in CUDA".
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    // END SOLUTION
}
