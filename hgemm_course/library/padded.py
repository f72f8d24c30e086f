"""What ``gemm()`` keeps for shapes off the TMA rungs' multiples (N or K not a multiple of 8: TMA needs rows of
16-byte multiples), so that such a call pays for its bytes and not for a fixed cost.

Without a rung named, ``gemm()`` runs such a product on zero-padded operands (api._gemm_padded), N and K that are
off the rung's multiple rounded up to whole 64-wide k-slices and tile columns (:func:`shape`). Making the operands
anew on every call (``cupy.zeros`` and slice copies for A and B, a copy of C's corner out) cost the H200 about
100-120 us a call more than the aligned neighbour shape took, most of it CuPy's host work and new pointers that
missed the tensor maps cached per pointer (results/logs/padded_vs_aligned_h200_20261204T0238.txt). Here instead:

- :func:`buffers`: the padded A (Mp, Kp), B (Kp, Np) and C (Mp, Np) of one shape, made once with ``cupy.zeros``
  and kept per (GPU, stream, shape): at most ``PADDED_CACHED`` sets, the least recently used dropped first. A
  call writes only their interiors, so their zero borders stay zero; an operand whose own shape is already the
  padded one is used as it is (A where only N is off, C where only K is). Per stream, because a stream's launches
  run in order (the next call's copies into A and B wait for this call's GEMM to have read them) while another
  stream's do not. A set holds its stream, so the stream's handle cannot be destroyed and handed to a new stream
  while launches made for it are kept;
- :func:`copy_corners`: the copies into and out of them, one launch of ``kernels/copy_corners.cu`` each (A and B
  together), returned as :class:`~hgemm_course.library.ladder.packed.PackedLaunch` es for ``gemm(out=)`` to keep;
- :func:`as_graph`: ``gemm(out=)``'s three kept launches (copies in, the kernel, the copy out) as one CUDA graph,
  so that a call costs the host one launch, as an aligned shape's call does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np

from .ladder.packed import PackedLaunch

SOURCE = "copy_corners.cu"
THREADS = 256               # copy_corners.cu: 8 warps, one per row of a band
BAND_ROWS = 8               # rows a CTA copies, one per warp
COLS_PER_CTA = 256          # columns of each row a CTA copies: 32 lanes x PER_LANE (8)
MAX_GRID_Y = 65535          # CUDA's limit on gridDim.y; the kernel walks further bands in steps of the grid
PADDED_CACHED = 8           # buffer sets kept (one per GPU, stream and shape)
# N or K off the rung's multiple goes up to a multiple of this, not of 8: the kernel then meets no tail on it. On
# the H200 the kernel on such a shape took 0.81-0.92 of its time on the 8-padded one at 1001-2047, level at 4095
# (results/logs/padded_vs_aligned_h200_20261204T0238.txt, padded64), for no more bytes copied.
PAD_MULTIPLE = 64


def shape(rung, M: int, N: int, K: int) -> tuple[int, int, int]:
    """The shape ``gemm()`` runs a product off ``rung``'s multiples on: M as the rung needs it, and N and K where
    they are off the rung's multiple rounded up to ``PAD_MULTIPLE`` (an aligned one stays, so that its operand is
    used as it is)."""
    Mp, Np, Kp = rung.padded_shape(M, N, K)
    up = lambda v: -(-v // PAD_MULTIPLE) * PAD_MULTIPLE      # noqa: E731
    return Mp, N if Np == N else up(N), K if Kp == K else up(K)


@dataclass
class Buffers:
    """The zero-bordered operands of one shape on one GPU and stream: fp16 CuPy arrays A (Mp, Kp), B (Kp, Np) and
    C (Mp, Np), each None where the operand's own shape is already the padded one (it is then used as it is)."""

    a: object | None
    b: object | None
    c: object | None
    stream: object                  # the CuPy stream they are used on, held while they are kept
    kept: dict = field(default_factory=dict)    # gemm(out=)'s kept launches that use them, by api._again_key


_buffers: dict[tuple, Buffers] = {}


def buffers(M: int, N: int, K: int, padded: tuple[int, int, int],
            dropped: Callable[[Buffers], None] = lambda _: None) -> Buffers:
    """The kept buffers of an M x N x K product padded to ``padded`` (Mp, Np, Kp) on the current GPU and stream,
    made on first use; ``dropped`` is called with each set the cache drops to make room. Keyed by the own shape
    too: a buffer of K = 1003 holds A in columns 1001 and 1002, which a product of K = 1001 padded to the same
    1024 needs zero."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    key = (cupy.cuda.runtime.getDevice(), stream.ptr, M, N, K, *padded)
    found = _buffers.pop(key, None)         # taken out and put back last: the most recently used
    if found is None:
        while len(_buffers) >= PADDED_CACHED:
            dropped(_buffers.pop(next(iter(_buffers))))
        Mp, Np, Kp = padded

        def zeros(shape: tuple[int, int], own: tuple[int, int]):
            return None if shape == own else cupy.zeros(shape, cupy.float16)

        found = Buffers(zeros((Mp, Kp), (M, K)), zeros((Kp, Np), (K, N)), zeros((Mp, Np), (M, N)), stream)
    _buffers[key] = found
    return found


def corner_grid(copies: list[tuple[int, int]]) -> tuple[int, int]:
    """copy_corners.cu's grid for copies of these (rows, cols) corners: along x the widest corner's columns in
    COLS_PER_CTA, along y every copy's bands of BAND_ROWS rows, up to MAX_GRID_Y."""
    bands = sum(-(-rows // BAND_ROWS) for rows, _ in copies)
    return -(-max(cols for _, cols in copies) // COLS_PER_CTA), max(1, min(bands, MAX_GRID_Y))


def copy_corners(pairs: list[tuple[object, object]], keep: bool) -> PackedLaunch | None:
    """Copy each (src, dst) pair of fp16 CuPy matrices (one or two) over the corner they share, their smaller
    rows and columns, in one launch on the current stream; returns the same launch again as a
    :class:`PackedLaunch` where ``keep`` (None otherwise). It holds the matrices' pointers, not the arrays."""
    args, corners = [], []
    for src, dst in pairs:
        rows, cols = min(src.shape[0], dst.shape[0]), min(src.shape[1], dst.shape[1])
        args += [np.uint64(src.data.ptr), np.uint64(dst.data.ptr), np.int64(src.shape[1]), np.int64(dst.shape[1]),
                 np.int32(rows), np.int32(cols)]
        corners.append((rows, cols))
    if len(pairs) == 1:                     # the kernel's second copy: none
        args += [np.uint64(0), np.uint64(0), np.int64(0), np.int64(0), np.int32(0), np.int32(0)]
    fn, grid = _function(pairs[0][0].device.id), corner_grid(corners)
    fn(grid, (THREADS,), tuple(args))
    return PackedLaunch(fn, grid, (THREADS,), args) if keep else None


@lru_cache(maxsize=None)
def _function(device_id: int):
    """copy_corners, compiled once and loaded once per GPU (``device_id``: the current one while it loads)."""
    from .build import compile_cuda

    return compile_cuda(SOURCE, name_expressions=("copy_corners",)).function("copy_corners")


def as_graph(launches: tuple, stream) -> Callable[[], None] | None:
    """``launches`` (PackedLaunches, run in this order) captured once into a CUDA graph, and a call of no arguments
    that launches the graph on ``stream`` (a CuPy stream, theirs): one driver call instead of one per launch. On the
    H200 a 1001 x 1003 x 1005 gemm(out=) kept as a graph took the host 5.0 us a call, below the GPU's 16.3 us,
    against 16.5 us for the three launches one after another (results/logs/padded_vs_aligned_h200_20261204T0231.txt).
    None where a launch is no PackedLaunch (rung 12's takes a new epoch on every call, which a graph would
    freeze) or the capture is refused. Captured on a stream of this GPU's own, since the legacy default stream
    cannot capture; a graph runs on any stream."""
    if not all(isinstance(launch, PackedLaunch) for launch in launches):
        return None
    import cupy

    capture = _capture_stream(cupy.cuda.runtime.getDevice())
    try:
        with capture:
            capture.begin_capture()
            try:
                for launch in launches:
                    PackedLaunch(launch.fn, launch.grid, launch.block, launch.args, launch.shared_mem, capture.ptr)()
            finally:
                graph = capture.end_capture()
    except RuntimeError:                # CuPy's CUDA errors: launched one after another instead
        return None
    return lambda: graph.launch(stream)


@lru_cache(maxsize=None)
def _capture_stream(device_id: int):
    """The stream :func:`as_graph` captures on, one per GPU (``device_id``: the current one)."""
    import cupy

    return cupy.cuda.Stream(non_blocking=True)
