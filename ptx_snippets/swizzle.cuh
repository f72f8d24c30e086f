// swizzle.cuh: the 128-byte XOR swizzle of a shared-memory tile whose rows are 128 bytes.
// The same layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B (CUDA Driver API,
// cuTensorMapEncodeTiled; PTX ISA "Tensor Memory: shared memory swizzling modes").
#pragma once

// Byte offset of the 16-byte chunk `chunk` (0..7) of row `row`: the physical chunk is
// chunk ^ (row % 8), so the 8 rows an ldmatrix phase reads hit 8 different chunks and
// cover all 32 banks; no byte of padding is spent.
__device__ __forceinline__ int swizzle_128b(int row, int chunk) {
    return row * 128 + ((chunk ^ (row & 7)) << 4);
}
