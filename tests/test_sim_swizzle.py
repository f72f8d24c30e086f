"""Swizzle and tile address maps, against CUTLASS's Swizzle<B,4,3> written bit by bit."""
import numpy as np
import pytest

from hgemm_course.sim.swizzle import (
    LAYOUTS, TileLayout, chunk_map, swizzle, swizzle_128b, swizzle_address, tile_byte_offset)


def slow_cutlass_swizzle(offset, bits, base=4, shift=3):
    """cute::Swizzle<bits, base, shift>::apply, one bit at a time."""
    out = offset
    for i in range(bits):
        if (offset >> (base + shift + i)) & 1:
            out ^= 1 << (base + i)
    return out


def test_128b_is_chunk_xor_row():
    for row in range(32):
        for chunk in range(8):
            assert swizzle_128b(row, chunk) == chunk ^ (row % 8) == swizzle(row, chunk, 128)


@pytest.mark.parametrize("span, rule", [
    (32, lambda r, c: c ^ ((r // 4) % 2)), (64, lambda r, c: c ^ ((r // 2) % 4)), (128, lambda r, c: c ^ (r % 8))])
def test_tma_spans_in_chunks(span, rule):
    for row in range(64):
        for chunk in range(span // 16):
            assert swizzle(row, chunk, span) == rule(row, chunk)
            # the chunk rule is the byte-address swizzle of a box with span-byte rows
            assert swizzle_address(row * span + 16 * chunk, span) == row * span + 16 * swizzle(row, chunk, span)


@pytest.mark.parametrize("span, bits", [(32, 1), (64, 2), (128, 3)])
def test_address_swizzle_matches_cutlass(span, bits):
    for offset in np.random.default_rng(span).integers(0, 1 << 20, 2000):
        assert swizzle_address(int(offset), span) == slow_cutlass_swizzle(int(offset), bits)


def test_bad_span():
    with pytest.raises(ValueError, match="32, 64 or 128"):
        swizzle(0, 0, 16)


def test_linear_and_padded():
    assert tile_byte_offset(3, 10, layout="linear", row_bytes=64) == 3 * 64 + 10
    assert tile_byte_offset(3, 10, layout="padded", row_bytes=64, pad_bytes=16) == 3 * 80 + 10


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("row_bytes", [128, 256])
def test_every_layout_is_one_to_one(layout, row_bytes):
    rows, cols = np.meshgrid(np.arange(64), np.arange(0, row_bytes, 2), indexing="ij")
    offsets = tile_byte_offset(rows, cols, layout=layout, row_bytes=row_bytes, tile_rows=64)
    assert len(np.unique(offsets)) == offsets.size
    assert offsets.max() < TileLayout(layout, row_bytes=row_bytes, tile_rows=64).size_bytes


def test_wide_swizzled_rows_are_panels():
    # a 128-half-wide tile: columns 64..127 live in a second panel of 128-byte rows, tile_rows rows down
    kw = {"layout": "swizzle128", "row_bytes": 256, "tile_rows": 32}
    assert tile_byte_offset(5, 128 + 16 * 2, **kw) == 32 * 128 + 5 * 128 + 16 * (2 ^ 5)
    assert tile_byte_offset(5, 16 * 2, **kw) == 5 * 128 + 16 * (2 ^ 5)


def test_swizzle128_byte_offsets_in_chunk():
    for row in range(16):
        for col in range(0, 128, 2):
            assert tile_byte_offset(row, col) == row * 128 + 16 * swizzle_128b(row, col // 16) + col % 16


def test_chunk_map_logical_vs_physical():
    physical = chunk_map()
    assert physical[3].tolist() == [3 * 8 + (c ^ 3) for c in range(8)]
    # every logical chunk column lands in 8 different physical chunk columns
    assert all(len(set(physical[:, c] % 8)) == 8 for c in range(8))


def test_errors_name_the_fix():
    with pytest.raises(ValueError, match="not one of"):
        tile_byte_offset(0, 0, layout="diagonal")
    with pytest.raises(ValueError, match="multiple of the 128-byte swizzle span"):
        tile_byte_offset(0, 0, layout="swizzle128", row_bytes=64)
    with pytest.raises(ValueError):
        TileLayout("diagonal")
