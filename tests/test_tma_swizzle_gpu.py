"""TMA's SWIZZLE_128B and SWIZZLE_64B against sim.swizzle: load one box, read shared memory back byte for byte.

Element (r, c) of a 64x64 matrix holds the 16-bit code ``r * 64 + c`` (the map's type is fp16, but
TMA moves bits, so the codes come back unchanged). One TMA load puts a box into a 1024-byte
aligned shared buffer; the kernel copies the buffer out in address order, and every 16-byte
chunk must sit where the simulator's formula puts it. The compile check needs no GPU.
"""
import numpy as np
import pytest

from hgemm_course import sim
from hgemm_course.library import tensormap
from hgemm_course.library.build import compile_cuda

ROWS = COLS = 64
BOX_BYTES_MAX = 64 * 128

SOURCE = r"""
#include "common.cuh"
#include "fence.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"

// One TMA load of the box whose top-left element is (column x, row y) into a 1024-byte aligned
// shared buffer (TMA's swizzle repeats every 1024 bytes of shared address), then the buffer's
// first box_bytes bytes copied to `out` in address order.
extern "C" __global__ void tma_box_bytes(unsigned char* out, int x, int y, int box_bytes,
                                         const __grid_constant__ TensorMap map) {
    __shared__ __align__(128) unsigned char buffer[BOX_BYTES_MAX + 1024];   // the box, after alignment slack
    __shared__ __align__(8) unsigned long long full;                        // mbarrier: the box has landed
    const unsigned base = (smem_u32(buffer) + 1023) & ~1023u;
    const unsigned bar = smem_u32(&full);
    if (threadIdx.x == 0) {
        mbar_init(bar, 1);
        fence_mbarrier_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        mbar_arrive_expect_tx(bar, box_bytes);
        tma_load_2d(base, &map, x, y, bar);
    }
    mbar_wait_parity(bar, 0);
    const unsigned char* box = buffer + (base - smem_u32(buffer));
    for (int i = threadIdx.x; i < box_bytes; i += blockDim.x) out[i] = box[i];
}
"""


def compiled():
    return compile_cuda(SOURCE, arch="sm_90a", options=(f"-DBOX_BYTES_MAX={BOX_BYTES_MAX}",))


def test_the_tma_box_kernel_compiles_for_sm90a_without_a_gpu():
    module = compiled()
    assert "cp.async.bulk.tensor.2d" in module.ptx and "mbarrier.try_wait.parity" in module.ptx
    assert module.resources_of("tma_box_bytes").spills == 0


def expected_bytes(codes, span, box_rows, row0, col0, where):
    """The box as shared memory should hold it: logical chunk c of box row r at chunk where(r, c)."""
    chunks = span // 16
    out = np.zeros((box_rows, chunks, 8), np.uint16)   # (row, physical 16-byte chunk, element)
    for r in range(box_rows):
        for c in range(chunks):
            out[r, where(r, c)] = codes[row0 + r, col0 + 8 * c: col0 + 8 * c + 8]
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("span, box_rows, row0, col0", [
    (128, 64, 0, 0), (128, 8, 0, 0), (128, 16, 3, 0),    # 128B: rows 128 bytes apart, chunk ^ (row % 8)
    (64, 64, 0, 0), (64, 8, 5, 32),                      # 64B: rows 64 bytes apart, chunk ^ ((row // 2) % 4)
])
def test_tma_puts_every_chunk_where_sim_swizzle_says(span, box_rows, row0, col0):
    import cupy

    codes = (np.arange(ROWS)[:, None] * COLS + np.arange(COLS)[None, :]).astype(np.uint16)
    matrix = cupy.asarray(codes).view(cupy.float16)
    box_cols = span // 2
    tmap = tensormap.encode(tensormap.for_matrix(matrix, box_rows, box_cols, swizzle=span))
    box_bytes = box_rows * span
    out = cupy.zeros(box_bytes, dtype=cupy.uint8)
    compiled().function("tma_box_bytes")((1,), (128,), (out, np.int32(col0), np.int32(row0), np.int32(box_bytes),
                                                        tmap))
    cupy.cuda.runtime.deviceSynchronize()
    got = out.get().view(np.uint16).reshape(box_rows, span // 16, 8)

    formulas = {"sim.swizzle": lambda r, c: sim.swizzle(r, c, span)}
    if span == 128:
        formulas["sim.swizzle_128b"] = sim.swizzle_128b
    for name, where in formulas.items():
        want = expected_bytes(codes, span, box_rows, row0, col0, where)
        if not np.array_equal(got, want):
            r, p = map(int, np.argwhere((got != want).any(axis=2))[0])
            held = divmod(int(got[r, p, 0]), COLS)
            raise AssertionError(
                f"SWIZZLE_{span}B, box of {box_rows} rows from (row {row0}, col {col0}): shared row {r} chunk {p} "
                f"holds element (row, col) = {held}, but {name} puts logical chunk "
                f"{(held[1] - col0) // 8} of row {r} at chunk {where(r, (held[1] - col0) // 8)}")
