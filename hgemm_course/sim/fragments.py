"""mma.sync.m16n8k16 (f16 inputs, f32 accumulate) and ldmatrix, emulated on numpy arrays.

Fragment layouts, from the PTX ISA section "Matrix Fragments for mma.m16n8k16 with
floating point type", with ``group = lane // 4`` and ``thread_in_group = lane % 4``:

- A (16 x 16, row major), 4 .f16x2 registers a0..a7 per lane::

      row = group + 8 * ((i // 2) % 2)          (a0,a1,a4,a5: group; a2,a3,a6,a7: group + 8)
      col = 2 * thread_in_group + (i % 2) + 8 * (i // 4)

- B (16 x 8, K x N), 2 .f16x2 registers b0..b3 per lane::

      k = 2 * thread_in_group + (i % 2) + 8 * (i // 2),   n = group

- C and D (16 x 8, f32), 4 registers c0..c3 per lane::

      row = group + 8 * (i // 2),   col = 2 * thread_in_group + (i % 2)

ldmatrix (PTX ISA "ldmatrix"): for each 8x8 b16 matrix j, lanes ``8j..8j+7`` supply the
addresses of its rows 0..7 (16 bytes each), and every lane receives register ``j``
holding row ``lane // 4``, columns ``2 * (lane % 4)`` and ``+1``; with ``.trans`` the
matrix is transposed on the way, so the lane receives column ``lane // 4``, rows
``2 * (lane % 4)`` and ``+1`` of what is stored.

Registers are numpy arrays indexed by lane first: ldmatrix gives (32, matrices, 2) float16,
A fragments are (32, 4, 2), B fragments (32, 2, 2), C/D fragments (32, 4) float32.
"""
from __future__ import annotations

import numpy as np

WARP_SIZE = 32


def a_fragment_coords():
    """(row, col) of A element a_i held by each lane: int array (32 lanes, 8 elements, 2)."""
    lane, i = np.meshgrid(np.arange(WARP_SIZE), np.arange(8), indexing="ij")
    group, thread_in_group = lane // 4, lane % 4
    return np.stack([group + 8 * ((i // 2) % 2), 2 * thread_in_group + i % 2 + 8 * (i // 4)], axis=-1)


def b_fragment_coords():
    """(k, n) of B element b_i held by each lane: int array (32 lanes, 4 elements, 2)."""
    lane, i = np.meshgrid(np.arange(WARP_SIZE), np.arange(4), indexing="ij")
    group, thread_in_group = lane // 4, lane % 4
    return np.stack([2 * thread_in_group + i % 2 + 8 * (i // 2), group], axis=-1)


def c_fragment_coords():
    """(row, col) of C/D element c_i held by each lane: int array (32 lanes, 4 elements, 2)."""
    lane, i = np.meshgrid(np.arange(WARP_SIZE), np.arange(4), indexing="ij")
    group, thread_in_group = lane // 4, lane % 4
    return np.stack([group + 8 * (i // 2), 2 * thread_in_group + i % 2], axis=-1)


def fragment_owner(coords, shape):
    """Which lane holds each element of a matrix of ``shape``, from a ``*_fragment_coords()`` array."""
    owner = np.full(shape, -1, np.int64)
    lanes = np.broadcast_to(np.arange(WARP_SIZE)[:, None], coords.shape[:2])
    owner[coords[..., 0], coords[..., 1]] = lanes
    return owner


def _gather(matrix, coords):
    return np.asarray(matrix)[coords[..., 0], coords[..., 1]]


def a_regs_from_matrix(a):
    """The A fragments (32, 4, 2) float16 a warp must hold for a 16 x 16 matrix ``a``."""
    return _gather(np.asarray(a, np.float16), a_fragment_coords()).reshape(WARP_SIZE, 4, 2)


def b_regs_from_matrix(b):
    """The B fragments (32, 2, 2) float16 a warp must hold for a 16 x 8 (K x N) matrix ``b``."""
    return _gather(np.asarray(b, np.float16), b_fragment_coords()).reshape(WARP_SIZE, 2, 2)


def c_regs_from_matrix(c):
    """The C fragments (32, 4) float32 of a 16 x 8 matrix ``c``."""
    return _gather(np.asarray(c, np.float32), c_fragment_coords())


def _scatter(regs, coords, shape, dtype):
    out = np.zeros(shape, dtype)
    out[coords[..., 0], coords[..., 1]] = np.asarray(regs).reshape(coords.shape[:2])
    return out


def a_matrix_from_regs(a_regs):
    """The 16 x 16 A matrix a warp's A fragments (32, 4, 2) hold."""
    return _scatter(a_regs, a_fragment_coords(), (16, 16), np.float16)


def b_matrix_from_regs(b_regs):
    """The 16 x 8 B matrix a warp's B fragments (32, 2, 2) hold."""
    return _scatter(b_regs, b_fragment_coords(), (16, 8), np.float16)


def c_matrix_from_regs(c_regs):
    """The 16 x 8 C/D matrix a warp's accumulator fragments (32, 4) hold."""
    return _scatter(c_regs, c_fragment_coords(), (16, 8), np.float32)


def mma_m16n8k16(a_regs, b_regs, c_regs):
    """``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``: per-lane D = A @ B + C, products summed in f32."""
    a = a_matrix_from_regs(a_regs).astype(np.float32)
    b = b_matrix_from_regs(b_regs).astype(np.float32)
    d = a @ b + c_matrix_from_regs(c_regs)
    return c_regs_from_matrix(d)


def ldmatrix(smem, lane_addrs, num_matrices=4, *, trans=False):
    """Registers ``ldmatrix.sync.aligned.m8n8.x{num_matrices}[.trans].shared.b16`` gives each lane.

    ``smem``: shared memory as any numpy array (read as its raw bytes, as float16);
    ``lane_addrs``: the byte address each lane supplies (lanes ``8j..8j+7`` give the rows of
    matrix j; lanes beyond ``8 * num_matrices`` are ignored). Returns float16 (32, num_matrices, 2).
    """
    if num_matrices not in (1, 2, 4):
        raise ValueError(f"ldmatrix loads 1, 2 or 4 matrices, not {num_matrices}")
    halfs = np.ascontiguousarray(smem).view(np.uint8).reshape(-1).view(np.float16)
    addrs = np.asarray(lane_addrs, dtype=np.int64)[: 8 * num_matrices]
    if addrs.size < 8 * num_matrices:
        raise ValueError(f"ldmatrix.x{num_matrices} needs {8 * num_matrices} lane addresses, got {addrs.size}")
    for lane, addr in enumerate(addrs):
        if addr % 16 or addr < 0 or addr + 16 > 2 * halfs.size:
            raise ValueError(f"lane {lane} supplies address {addr}: ldmatrix rows must be 16-byte aligned "
                             f"and inside the {2 * halfs.size}-byte shared memory")
    rows = halfs[(addrs // 2)[:, None] + np.arange(8)].reshape(num_matrices, 8, 8)  # (matrix, row, col)
    if trans:
        rows = rows.transpose(0, 2, 1)
    lane = np.arange(WARP_SIZE)
    row = (lane // 4)[:, None]                          # (32, 1)
    col = 2 * (lane % 4)[:, None] + np.arange(2)        # (32, 2)
    regs = rows[:, row, col]                            # (matrix, 32, 2)
    return regs.transpose(1, 0, 2)


def ldmatrix_x4_src_row_reference(lane):
    """(row, chunk) of a 16 x 16 fp16 A tile whose address lane ``lane`` gives ``ldmatrix.x4`` for the
    m16n8k16 A fragment: matrices 0-3 = (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
    (rows 8-15, k 8-15), so lane l gives row ``l % 16``, chunk ``l // 16``."""
    if not 0 <= lane < WARP_SIZE:
        raise ValueError(f"lane={lane} is not a lane of a warp (0..31)")
    return lane % 16, lane // 16
