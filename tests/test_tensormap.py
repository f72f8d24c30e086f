"""TMA's rules, checked before the driver sees a tensor map (no GPU needed)."""
from __future__ import annotations

import numpy as np
import pytest

from hgemm_course.library.tensormap import TENSOR_MAP_DTYPE, TileMap2D, check, for_matrix


def good(**change) -> TileMap2D:
    fields = dict(address=0x7F0000000000, rows=4096, cols=4096, row_stride=4096 * 2, box_rows=128, box_cols=64)
    fields.update(change)
    return TileMap2D(**fields)


def test_a_course_map_passes():
    check(good())
    check(good(rows=257, cols=136, row_stride=136 * 2, box_rows=64))    # tails: TMA clips them


@pytest.mark.parametrize("change, words", [
    ({"address": 0x7F0000000008}, "16-byte aligned"),
    ({"cols": 1000 + 4, "row_stride": 1004 * 2}, "not a multiple of 16"),
    ({"row_stride": 4096}, "cover a row"),
    ({"box_rows": 512}, "1..256"),
    ({"box_rows": 0}, "1..256"),
    ({"box_cols": 300, "swizzle": 0}, "1..256"),
    ({"box_cols": 12, "swizzle": 0}, "multiple of 16"),
    ({"box_cols": 128}, "exceeds the 128-byte swizzle span"),
    ({"box_cols": 64, "swizzle": 64}, "exceeds the 64-byte swizzle span"),
    ({"swizzle": 96}, "32, 64 or 128"),
    ({"l2_promotion": 512}, "64, 128 or 256"),
    ({"element_strides": (1, 2)}, "element strides of 1"),
    ({"rows": 0}, r"1\.\.2\^32"),
])
def test_each_broken_rule_is_named(change, words):
    with pytest.raises(ValueError, match=words):
        check(good(**change))


def test_a_64_byte_box_under_128b_swizzle_is_legal_but_wrong_for_our_kernels():
    """The seed's BK=32 crash: the CUDA docs allow an inner box of 64 bytes under SWIZZLE_128B
    (at most 128, a multiple of 16), so the message says legal, and why the kernels refuse it."""
    narrow = good(box_cols=32)
    with pytest.raises(ValueError) as info:
        check(narrow)
    text = str(info.value)
    assert "legal" in text and "wrong for this course's kernels" in text and "BK=32" in text
    check(narrow, box_fills_swizzle_span=False)          # the driver's rules alone accept it
    check(good(box_cols=32, swizzle=64))                 # and with a 64-byte swizzle it fills the span


def test_unswizzled_maps_take_any_16_byte_multiple():
    check(good(box_cols=8, swizzle=0))
    check(good(box_cols=256, swizzle=0))


class FakeMatrix:
    """Enough of a CuPy array for for_matrix: dtype, shape, strides and data.ptr."""

    def __init__(self, rows, cols, dtype=np.float16, strides=None):
        self.dtype, self.ndim, self.shape = np.dtype(dtype), 2, (rows, cols)
        self.strides = strides or (cols * self.dtype.itemsize, self.dtype.itemsize)
        self.data = type("Mem", (), {"ptr": 0x7F0000000000})()


def test_for_matrix_reads_the_layout_of_the_array():
    m = for_matrix(FakeMatrix(1000, 1024), 128, 64)
    assert (m.rows, m.cols, m.row_stride, m.box_rows, m.box_cols) == (1000, 1024, 2048, 128, 64)
    check(m)
    with pytest.raises(ValueError, match="float16"):
        for_matrix(FakeMatrix(8, 8, dtype=np.float32), 8, 8)
    with pytest.raises(ValueError, match="dense inner dimension"):
        for_matrix(FakeMatrix(8, 8, strides=(32, 4)), 8, 8)


def test_the_map_is_a_128_byte_scalar():
    assert TENSOR_MAP_DTYPE.itemsize == 128
    assert isinstance(np.zeros(1, dtype=TENSOR_MAP_DTYPE)[0], np.void)


def test_odd_row_stride_of_an_aligned_width_names_the_stride_fix():
    from hgemm_course.library.tensormap import TileMap2D, check

    with pytest.raises(ValueError, match="use a row stride of 2016 bytes"):
        check(TileMap2D(address=0, rows=64, cols=1000, row_stride=2008, box_rows=64, box_cols=64))


def test_tensor_maps_are_the_operand_boxes_of_the_tma_rungs(monkeypatch):
    """A in (bm, bk) boxes, B in (bk, 64) boxes (one 128-byte swizzled panel); encoded once per buffer and shape."""
    from types import SimpleNamespace

    from hgemm_course.library import tensormap

    encoded = []
    monkeypatch.setattr(tensormap, "encode", lambda m: encoded.append(m) or m)
    tensormap._tensor_maps.cache_clear()
    a = SimpleNamespace(data=SimpleNamespace(ptr=0x10000), shape=(300, 200))
    b = SimpleNamespace(data=SimpleNamespace(ptr=0x20000), shape=(200, 136))
    try:
        maps = tensormap.tensor_maps(a, b, 128, 64)
        assert maps == (TileMap2D(0x10000, 300, 200, 400, 128, 64), TileMap2D(0x20000, 200, 136, 272, 64, 64))
        assert tensormap.tensor_maps(a, b, 128, 64) == maps and len(encoded) == 2
    finally:
        tensormap._tensor_maps.cache_clear()
