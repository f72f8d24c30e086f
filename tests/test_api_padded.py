"""gemm() on shapes off the TMA rungs' multiples (api._gemm_padded, hgemm_course/library/padded.py): the kept zero-bordered
buffers and their bound, the copy kernel's grid against a NumPy twin of its index map (on the CPU), and on the GPU C
right call after call, on two streams, from NumPy, and after the buffers were dropped."""
import sys
import types

import numpy as np
import pytest

import hgemm_course
from hgemm_course.library import api, padded
from hgemm_course.library.build import compile_cuda

# Shapes with N or K off a multiple of 8: both off, only K off (C written in place), only N off (A used as it
# is), tails of every tile, one row, and sizes of each class the issue timed.
RAGGED = [(1001, 1003, 1005), (777, 1001, 1113), (5, 8, 3), (1, 7, 9), (77, 1001, 999), (1000, 4096, 1001),
          (768, 1500, 1024), (130, 9, 4095), (2047, 2049, 2051)]


# ---- the kept buffers, with a fake CuPy ------------------------------------------------------------------------

@pytest.fixture
def fake_cupy(monkeypatch):
    """A CuPy of one GPU whose current stream the test sets, and whose zeros are NumPy arrays."""
    streams = {"now": types.SimpleNamespace(ptr=0)}
    fake = types.SimpleNamespace(
        float16=np.float16, zeros=np.zeros,
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0),
                                   get_current_stream=lambda: streams["now"]))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(padded, "_buffers", {})
    return streams


def test_buffers_are_zero_where_padded_and_absent_where_the_operand_fits(fake_cupy):
    both = padded.buffers(1001, 1003, 1005, (1001, 1008, 1008))
    assert both.a.shape == (1001, 1008) and both.b.shape == (1008, 1008) and both.c.shape == (1001, 1008)
    assert not both.a.any() and not both.b.any() and not both.c.any()
    only_k = padded.buffers(1000, 4096, 1001, (1000, 4096, 1008))
    assert only_k.c is None and only_k.a.shape == (1000, 1008) and only_k.b.shape == (1008, 4096)
    only_n = padded.buffers(768, 1500, 1024, (768, 1504, 1024))
    assert only_n.a is None and only_n.b.shape == (1024, 1504) and only_n.c.shape == (768, 1504)


def test_buffers_are_kept_per_shape_stream_and_own_shape(fake_cupy):
    first = padded.buffers(1001, 1003, 1005, (1001, 1008, 1008))
    assert padded.buffers(1001, 1003, 1005, (1001, 1008, 1008)) is first
    assert padded.buffers(1001, 1003, 1003, (1001, 1008, 1008)) is not first     # same padding, other interior
    fake_cupy["now"] = types.SimpleNamespace(ptr=42)
    on_other_stream = padded.buffers(1001, 1003, 1005, (1001, 1008, 1008))
    assert on_other_stream is not first and on_other_stream.stream is fake_cupy["now"]
    assert first.stream.ptr == 0                  # each set holds the stream it was made on


def test_buffers_are_bounded_least_recently_used_first(fake_cupy, monkeypatch):
    monkeypatch.setattr(padded, "PADDED_CACHED", 3)
    dropped = []
    made = [padded.buffers(9, 9, K, (9, 16, 16), dropped.append) for K in (1, 2, 3)]
    assert padded.buffers(9, 9, 1, (9, 16, 16), dropped.append) is made[0]     # K=1 used again: K=2 is oldest
    padded.buffers(9, 9, 4, (9, 16, 16), dropped.append)
    assert len(padded._buffers) == 3 and dropped == [made[1]]
    assert padded.buffers(9, 9, 1, (9, 16, 16), dropped.append) is made[0]


def test_dropped_buffers_take_their_kept_launches_with_them(monkeypatch):
    kept, other = (lambda: None), (lambda: None)
    monkeypatch.setattr(api, "_again", {"mine": kept, "replaced": other, "theirs": other})
    dropped = padded.Buffers(None, None, None, None, kept={"mine": kept, "replaced": kept})
    api._forget_padded(dropped)
    assert api._again == {"replaced": other, "theirs": other}    # a key kept anew since stays


def test_only_packed_launches_become_a_graph():
    """Rung 12's kept launch takes a new epoch each call: a graph would freeze it, so it stays a launch of its own."""
    from hgemm_course.library.ladder.packed import PackedLaunch

    packed = PackedLaunch(lambda *_: None, (1,), (32,), (), stream=0)
    assert padded.as_graph((packed, lambda: None, packed), None) is None


# ---- the copy kernel's grid, against a NumPy twin of copy_corners.cu's index map -------------------------------

def twin_copy_corners(copies, grid):
    """What copy_corners.cu writes, read off its index arithmetic: for each copy (src, dst, rows, cols) the count
    of writes to each element of dst. Every (block, warp, lane) of the grid walks its bands as the kernel does."""
    writes = [np.zeros(dst.shape, np.int64) for _, dst, _, _ in copies]
    bands0 = -(-copies[0][2] // padded.BAND_ROWS)
    bands = bands0 + sum(-(-rows // padded.BAND_ROWS) for _, _, rows, _ in copies[1:])
    warp, lane = np.divmod(np.arange(padded.THREADS), 32)
    for bx in range(grid[0]):
        col = bx * padded.COLS_PER_CTA + lane
        for by in range(grid[1]):
            for band in range(by, bands, grid[1]):
                i = 0 if band < bands0 else 1
                src, dst, rows, cols = copies[i]
                row = (band - (0 if i == 0 else bands0)) * padded.BAND_ROWS + warp
                for j in range(padded.COLS_PER_CTA // 32):
                    ok = (row < rows) & (col + 32 * j < cols)
                    np.add.at(writes[i], (row[ok], col[ok] + 32 * j), 1)
                    dst[row[ok], col[ok] + 32 * j] = src[row[ok], col[ok] + 32 * j]
    return writes


@pytest.mark.parametrize("a_shape, b_shape, max_grid_y", [((1001, 1005), (1005, 1003), 65535),
                                                           ((3, 2), (2, 700), 65535), ((70, 9), (9, 30), 3),
                                                           ((1, 1), (1, 1), 65535)])
def test_the_grid_copies_every_corner_element_once_and_nothing_else(monkeypatch, a_shape, b_shape, max_grid_y):
    monkeypatch.setattr(padded, "MAX_GRID_Y", max_grid_y)       # 3: bands past the grid's rows, walked in steps
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    a_p = np.zeros((a_shape[0], -(-a_shape[1] // 8) * 8))
    b_p = np.zeros((-(-b_shape[0] // 8) * 8, -(-b_shape[1] // 8) * 8))
    copies = [(a, a_p, *a_shape), (b, b_p, *b_shape)]
    writes = twin_copy_corners(copies, padded.corner_grid([a_shape, b_shape]))
    for (src, dst, rows, cols), w in zip(copies, writes):
        assert (w[:rows, :cols] == 1).all() and w.sum() == rows * cols
        assert np.array_equal(dst[:rows, :cols], src) and not dst[rows:].any() and not dst[:, cols:].any()


def test_the_copy_kernel_compiles_without_local_memory():
    resources = compile_cuda(padded.SOURCE, name_expressions=("copy_corners",), arch="sm_90a").resources_of(
        "copy_corners")
    assert resources.stack_frame == 0 and resources.spill_stores == 0 and resources.spill_loads == 0


# ---- on the GPU ---------------------------------------------------------------------------------------------

def _inputs(M, N, K, seed, cupy):
    rng = np.random.default_rng(seed)
    a = cupy.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float16))
    b = cupy.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float16))
    return a, b, a.astype(cupy.float32) @ b.astype(cupy.float32)


def _right(c, reference, K, seed=-1):
    from hgemm_course.measurement import verification

    return verification.compare(c, reference, K=K, seed=seed).passed


def _borders_are_zero(kept, M, N, K):
    return all(x is None or not bool(x[rows:].any()) and not bool(x[:, cols:].any())
               for x, rows, cols in ((kept.a, M, K), (kept.b, K, N)))


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K", RAGGED)
def test_padded_gemm_is_right_call_after_call(M, N, K):
    """Into a poisoned out, several calls with new data in the same arrays (the kept launches, after the first),
    then into new arrays, and from NumPy: C right against an FP32 reference each time, the borders still zero."""
    import cupy

    a, b, _ = _inputs(M, N, K, 0, cupy)
    out = cupy.empty((M, N), cupy.float16)
    for call in range(4):
        a2, b2, reference = _inputs(M, N, K, call + 1, cupy)
        a[...], b[...] = a2, b2
        out.fill(cupy.nan)
        assert hgemm_course.gemm(a, b, out=out) is out
        assert _right(out, reference, K, call), (M, N, K, call)
        assert api._again_key(a, b, out, None) in api._again
    for call in range(2):
        a, b, reference = _inputs(M, N, K, 10 + call, cupy)
        assert _right(hgemm_course.gemm(a, b), reference, K, call), (M, N, K, "new", call)
    c = hgemm_course.gemm(a.get(), b.get())
    assert isinstance(c, np.ndarray) and _right(c, reference, K)
    kept = padded.buffers(M, N, K, padded.shape(api._rung(None), M, N, K))
    assert _borders_are_zero(kept, M, N, K)


@pytest.mark.gpu
def test_a_kept_padded_call_is_one_graph_on_rung_11():
    """Where the plan runs rung 11 (its kept launch a PackedLaunch), gemm(out=) keeps the padded call as one CUDA
    graph (padded.as_graph), which writes C right on the next calls."""
    import cupy

    M, N, K = 1001, 1003, 1005
    a, b, reference = _inputs(M, N, K, 5, cupy)
    out = cupy.full((M, N), cupy.nan, cupy.float16)
    hgemm_course.gemm(a, b, out=out)
    assert api._again[api._again_key(a, b, out, None)].__qualname__.startswith("as_graph")
    for _ in range(2):
        out.fill(cupy.nan)
        hgemm_course.gemm(a, b, out=out)
        assert _right(out, reference, K)


@pytest.mark.gpu
def test_padded_gemm_on_two_streams_keeps_apart():
    """Two streams, the same shape, other data on each, calls interleaved with no sync between them: each stream has
    buffers of its own, and each C is right."""
    import cupy

    M, N, K = 1001, 1003, 1005
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
    outs = []
    for s in streams:
        with s:
            outs.append(cupy.empty((M, N), cupy.float16))
    operands = [tuple(cupy.empty(shape, cupy.float16) for shape in ((M, K), (K, N))) for _ in streams]
    for round_ in range(3):
        references = []
        for i, s in enumerate(streams):
            with s:
                a2, b2, reference = _inputs(M, N, K, 100 * round_ + i, cupy)
                operands[i][0][...], operands[i][1][...] = a2, b2
                references.append(reference)
                outs[i].fill(cupy.nan)
        for _ in range(2):                        # twice each, interleaved: the second through the kept launch
            for i, s in enumerate(streams):
                with s:
                    hgemm_course.gemm(*operands[i], out=outs[i])
        for i, s in enumerate(streams):
            s.synchronize()
            assert _right(outs[i], references[i], K), (round_, i)
    shape = padded.shape(api._rung(None), M, N, K)
    kept = []
    for s in streams:
        with s:
            kept.append(padded.buffers(M, N, K, shape))
    assert kept[0].a.data.ptr != kept[1].a.data.ptr and kept[0].c.data.ptr != kept[1].c.data.ptr


@pytest.mark.gpu
def test_a_kept_padded_launch_goes_with_its_dropped_buffers(monkeypatch):
    """With room for one set of buffers, a second shape drops the first's, and its kept launch with them: the next
    call of the first shape makes new buffers and is right."""
    import cupy

    monkeypatch.setattr(padded, "PADDED_CACHED", 1)
    shapes = ((301, 203, 105), (77, 1001, 999))
    operands = {}
    for M, N, K in shapes:
        a, b, reference = _inputs(M, N, K, M, cupy)
        operands[M] = (a, b, cupy.full((M, N), cupy.nan, cupy.float16), reference)
        hgemm_course.gemm(*operands[M][:2], out=operands[M][2])
    a, b, out, reference = operands[301]
    assert api._again_key(a, b, out, None) not in api._again
    out.fill(cupy.nan)
    assert _right(hgemm_course.gemm(a, b, out=out), reference, 105)
    assert len(padded._buffers) == 1


def test_a_ragged_n_or_k_is_padded_to_whole_64_wide_tiles_and_an_aligned_one_stays():
    from hgemm_course.library.plan import planned_rung

    r = planned_rung()
    assert padded.shape(r, 1001, 1003, 1005) == (1001, 1024, 1024)
    assert padded.shape(r, 768, 1500, 1504) == (768, 1536, 1504)      # K on the rung's multiple: A is used as it is
    assert padded.shape(r, 777, 1000, 1113) == (777, 1000, 1152)
    assert padded.shape(r, 64, 128, 192) == (64, 128, 192)
