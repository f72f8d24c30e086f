"""Tensor maps for TMA: ``cuTensorMapEncodeTiled`` for 2-D fp16 matrices, with TMA's rules
checked first so a mistake is a sentence, not an illegal-address crash inside a kernel.

The map goes to a kernel by value as a ``const __grid_constant__`` parameter: a 64-byte
aligned 128-byte struct (``TensorMap`` in ``ptx_snippets/tma.cuh``). From Python it is a
numpy structured scalar of 128 bytes, which CuPy passes through unchanged.

The checks need no GPU; encoding needs the CUDA driver.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

FP16_BYTES = 2
SWIZZLE_SPANS = (0, 32, 64, 128)        # bytes; 0 means no swizzle
L2_PROMOTIONS = (0, 64, 128, 256)       # bytes; 0 means none
# Tensor maps kept per buffer and shape: the bench rotates up to 32 input sets a shape, and a map's
# encoding is host work a short kernel's timing would otherwise include (timing.warmup_launches).
MAPS_CACHED = 512
TENSOR_MAP_DTYPE = np.dtype([("opaque", np.uint64, (16,))])   # 128 bytes, as cuTensorMapEncodeTiled writes it


@dataclass(frozen=True)
class TileMap2D:
    """What one 2-D fp16 tensor map describes: a row-major (rows, cols) matrix at ``address``
    with ``row_stride`` bytes between rows, read in boxes of (box_rows, box_cols) elements."""

    address: int
    rows: int
    cols: int
    row_stride: int
    box_rows: int
    box_cols: int
    swizzle: int = 128
    l2_promotion: int = 256
    element_strides: tuple[int, int] = (1, 1)

    @property
    def box_inner_bytes(self) -> int:
        return self.box_cols * FP16_BYTES


def check(m: TileMap2D, *, box_fills_swizzle_span: bool = True) -> None:
    """Raise ValueError naming the first TMA rule ``m`` breaks.

    The driver's rules (cuTensorMapEncodeTiled's documentation) come first. Then one rule of
    this course: with ``box_fills_swizzle_span`` the box's inner extent must equal the swizzle
    span, because the kernels address shared memory as rows of exactly that many bytes.
    """
    if m.address % 16:
        raise ValueError(f"The base address {m.address:#x} is not 16-byte aligned: TMA reads global memory "
                         "from 16-byte aligned addresses. Allocate the matrix with cupy (256-byte aligned) "
                         "or offset it by a multiple of 8 halves.")
    for name, value in (("rows", m.rows), ("cols", m.cols)):
        if not 1 <= value <= 2**32:
            raise ValueError(f"{name}={value}: every global dimension of a tensor map must be in 1..2^32.")
    if m.row_stride % 16:
        fix = (f"pad {m.cols} columns to {-(-m.cols // 8) * 8}" if m.cols % 8
               else f"use a row stride of {-(-m.row_stride // 16) * 16} bytes")
        raise ValueError(f"The row stride is {m.row_stride} bytes, not a multiple of 16: TMA needs 16-byte row "
                         f"strides, so an fp16 row must hold a multiple of 8 elements ({fix}).")
    if m.row_stride < m.cols * FP16_BYTES or m.row_stride >= 2**40:
        raise ValueError(f"The row stride of {m.row_stride} bytes must cover a row ({m.cols} halves = "
                         f"{m.cols * FP16_BYTES} bytes) and be under 2^40.")
    for name, value in (("box_rows", m.box_rows), ("box_cols", m.box_cols)):
        if not 1 <= value <= 256:
            raise ValueError(f"{name}={value}: every box dimension of a tensor map must be in 1..256 elements.")
    if m.box_inner_bytes % 16:
        raise ValueError(f"The box's inner extent is {m.box_cols} halves = {m.box_inner_bytes} bytes, not a "
                         "multiple of 16: TMA moves whole 16-byte chunks; use a multiple of 8 columns.")
    if tuple(m.element_strides) != (1, 1):
        raise ValueError(f"element_strides={m.element_strides}: the course's maps read every element "
                         "(element strides of 1); strided boxes are not what the kernels expect.")
    if m.swizzle not in SWIZZLE_SPANS:
        raise ValueError(f"swizzle={m.swizzle}: TMA swizzles over 32, 64 or 128 bytes (or 0 for none).")
    if m.l2_promotion not in L2_PROMOTIONS:
        raise ValueError(f"l2_promotion={m.l2_promotion}: TMA promotes L2 fills to 64, 128 or 256 bytes (or 0).")
    if m.swizzle and m.box_inner_bytes > m.swizzle:
        raise ValueError(f"The box's inner extent of {m.box_inner_bytes} bytes exceeds the {m.swizzle}-byte swizzle "
                         f"span: with SWIZZLE_{m.swizzle}B a box row may be at most {m.swizzle} bytes "
                         f"({m.swizzle // FP16_BYTES} halves). Load a wider tile as several boxes.")
    if box_fills_swizzle_span and m.swizzle and m.box_inner_bytes != m.swizzle:
        raise ValueError(
            f"The box's inner extent is {m.box_inner_bytes} bytes under SWIZZLE_{m.swizzle}B. The driver accepts "
            f"this (the CUDA documentation only asks for a multiple of 16 bytes, at most {m.swizzle}), so it is "
            f"legal, but it is wrong for this course's kernels: they read each box as rows of exactly "
            f"{m.swizzle} bytes, chunk c at c ^ (row % 8), and TMA would pack {m.box_inner_bytes}-byte rows "
            f"instead. This is the RTX 5080 HGEMM post's BK=32 failure (a 64-byte box under 128B swizzle crashed on an RTX "
            f"5080). Use box_cols={m.swizzle // FP16_BYTES}, or a {m.box_inner_bytes}-byte swizzle mode.")


def encode(m: TileMap2D, *, box_fills_swizzle_span: bool = True) -> np.void:
    """Check ``m``, then encode it with the driver; returns the 128-byte map as a numpy scalar."""
    check(m, box_fills_swizzle_span=box_fills_swizzle_span)
    from cuda.bindings import driver

    swizzle = {0: driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
               32: driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B,
               64: driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B,
               128: driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B}[m.swizzle]
    promotion = {0: driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
                 64: driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
                 128: driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                 256: driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B}[m.l2_promotion]
    (err,) = driver.cuInit(0)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuInit failed ({err.name}): encoding a tensor map needs the CUDA driver and a GPU.")
    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, m.address,
        [driver.cuuint64_t(m.cols), driver.cuuint64_t(m.rows)],   # dimension 0 is the innermost (contiguous) one
        [driver.cuuint64_t(m.row_stride)],                        # byte strides of dimensions 1.. (0 is dense)
        [driver.cuuint32_t(m.box_cols), driver.cuuint32_t(m.box_rows)],
        [driver.cuuint32_t(s) for s in m.element_strides],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, promotion,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)   # out of bounds reads as zeros
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled refused {m} ({err.name}) although it passed the checks.")
    return np.frombuffer(np.array(tmap.opaque, dtype=np.uint64).tobytes(), dtype=TENSOR_MAP_DTYPE)[0]


def for_matrix(x, box_rows: int, box_cols: int, **kwargs) -> TileMap2D:
    """The map of a row-major fp16 CuPy matrix ``x``, read in (box_rows, box_cols) boxes."""
    if x.dtype != np.float16 or x.ndim != 2:
        raise ValueError(f"Expected a 2-D float16 matrix, got {x.ndim}-D {x.dtype}.")
    if x.strides[1] != FP16_BYTES:
        raise ValueError(f"The matrix's columns are {x.strides[1]} bytes apart: TMA needs a dense inner "
                         "dimension; make it row-major contiguous (cupy.ascontiguousarray).")
    return TileMap2D(address=x.data.ptr, rows=x.shape[0], cols=x.shape[1], row_stride=x.strides[0],
                     box_rows=box_rows, box_cols=box_cols, **kwargs)


def tensor_maps(a, b, bm: int, bk: int) -> tuple[np.void, np.void]:
    """The maps the TMA rungs (07, 09-11) load their operands through: A (M, K) in (bm, bk) boxes and
    B (K, N) in (bk, 64) boxes, one 128-byte swizzled panel each. Encoded once per buffer and shape, so
    repeated launches on the same arrays skip the driver call."""
    return _tensor_maps(a.data.ptr, *a.shape, b.data.ptr, b.shape[1], bm, bk)


@lru_cache(maxsize=MAPS_CACHED)
def _tensor_maps(a_ptr: int, M: int, K: int, b_ptr: int, N: int, bm: int, bk: int) -> tuple[np.void, np.void]:
    return (encode(TileMap2D(a_ptr, M, K, K * FP16_BYTES, bm, bk)),
            encode(TileMap2D(b_ptr, K, N, N * FP16_BYTES, bk, 64)))
