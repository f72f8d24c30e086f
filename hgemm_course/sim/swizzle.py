"""Shared-memory address maps: where the logical (row, byte column) of a tile lands.

A 16-byte *chunk* is the unit every copy and ``ldmatrix`` row moves, so the
swizzles permute chunks and never split one.

TMA's ``CU_TENSOR_MAP_SWIZZLE_32B/64B/128B`` modes are CUTLASS's
``Swizzle<B, 4, 3>`` on the shared-memory byte address, with B = 1, 2, 3::

    physical = address ^ (((address >> 7) & (2**B - 1)) << 4)

that is, the chunk bits [4, 4+B) are XORed with the bits [7, 7+B) that count
128-byte segments. TMA swizzles a box whose inner dimension is the span
(32, 64 or 128 bytes), so rows are ``span`` bytes apart and, in chunks:

- 128B: ``chunk ^ (row % 8)``                      (8 chunks per row)
- 64B:  ``chunk ^ ((row // 2) % 4)``               (4 chunks per row)
- 32B:  ``chunk ^ ((row // 4) % 2)``               (2 chunks per row)

The hardware applies this to the absolute address, so the pattern is only the
one above when the tile starts on a 1024-byte boundary (TMA requires that for
128B swizzle); every function here assumes such a base.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHUNK_BYTES = 16
SWIZZLE_SPANS = {"swizzle32": 32, "swizzle64": 64, "swizzle128": 128}
LAYOUTS = ("linear", "padded", *SWIZZLE_SPANS)


def swizzle_128b(row, chunk):
    """Physical 16-byte chunk of logical ``chunk`` (0..7) in a 128-byte row: ``chunk ^ (row % 8)``."""
    return chunk ^ (row % 8)


def swizzle(row, chunk, span_bytes):
    """Physical chunk of logical ``chunk`` in row ``row`` of a TMA box swizzled with span 32, 64 or 128 bytes.

    Rows are ``span_bytes`` apart, as in a TMA box whose inner dimension is the span;
    ``swizzle(row, chunk, 128) == swizzle_128b(row, chunk)``.
    """
    if span_bytes not in (32, 64, 128):
        raise ValueError(f"span_bytes={span_bytes} is not a TMA swizzle span: use 32, 64 or 128")
    chunks = span_bytes // CHUNK_BYTES
    return chunk ^ ((row * span_bytes // 128) % chunks)


def swizzle_address(address, span_bytes):
    """CUTLASS ``Swizzle<B,4,3>`` on a byte address (TMA's SWIZZLE_<span_bytes>B) for a 1024-byte aligned base."""
    mask = span_bytes // CHUNK_BYTES - 1
    return address ^ (((address >> 7) & mask) << 4)


def tile_byte_offset(row, col_byte, *, layout="swizzle128", row_bytes=128, pad_bytes=16, tile_rows=64):
    """Physical byte offset of logical (``row``, ``col_byte``) in a tile with ``row_bytes`` of data per row.

    - ``"linear"``: rows ``row_bytes`` apart.
    - ``"padded"``: rows ``row_bytes + pad_bytes`` apart (rungs 03/04 pad by 8 halfs = 16 bytes).
    - ``"swizzle32" | "swizzle64" | "swizzle128"``: what TMA writes. A row wider than the
      span is loaded as several boxes, so the tile is stored as column panels ``span`` bytes
      wide and ``tile_rows`` rows tall, one after the other; each panel is swizzled.

    Works on ints and on numpy arrays alike (arrays give an int64 array).
    """
    row = np.asarray(row, dtype=np.int64)
    col_byte = np.asarray(col_byte, dtype=np.int64)
    if layout == "linear":
        offset = row * row_bytes + col_byte
    elif layout == "padded":
        offset = row * (row_bytes + pad_bytes) + col_byte
    elif layout in SWIZZLE_SPANS:
        span = SWIZZLE_SPANS[layout]
        if row_bytes % span:
            raise ValueError(f"row_bytes={row_bytes} is not a multiple of the {span}-byte swizzle span: "
                             f"pad the tile to {(row_bytes + span - 1) // span * span} bytes per row")
        panel, in_panel = np.divmod(col_byte, span)
        offset = swizzle_address(panel * (tile_rows * span) + row * span + in_panel, span)
    else:
        raise ValueError(f"layout={layout!r} is not one of {', '.join(LAYOUTS)}")
    return int(offset) if offset.ndim == 0 else offset


@dataclass(frozen=True)
class TileLayout:
    """A shared-memory tile's layout: the keyword arguments of :func:`tile_byte_offset`, held together."""

    kind: str = "swizzle128"
    row_bytes: int = 128
    pad_bytes: int = 16
    tile_rows: int = 64

    def __post_init__(self):
        if self.kind not in LAYOUTS:
            raise ValueError(f"layout kind {self.kind!r} is not one of {', '.join(LAYOUTS)}")

    def offset(self, row, col_byte):
        """Physical byte offset of logical (row, col_byte); see :func:`tile_byte_offset`."""
        return tile_byte_offset(row, col_byte, layout=self.kind, row_bytes=self.row_bytes,
                                pad_bytes=self.pad_bytes, tile_rows=self.tile_rows)

    @property
    def size_bytes(self) -> int:
        """Bytes of shared memory the tile occupies."""
        pitch = self.row_bytes + (self.pad_bytes if self.kind == "padded" else 0)
        return self.tile_rows * pitch


def chunk_map(rows=8, chunks=8, *, layout="swizzle128", row_bytes=128, pad_bytes=16, tile_rows=64):
    """Physical 16-byte chunk index (offset // 16) of each logical (row, chunk): an int array (rows, chunks)."""
    r, c = np.meshgrid(np.arange(rows), np.arange(chunks), indexing="ij")
    return tile_byte_offset(r, c * CHUNK_BYTES, layout=layout, row_bytes=row_bytes,
                            pad_bytes=pad_bytes, tile_rows=tile_rows) // CHUNK_BYTES
