import numpy as np
import pytest

import hgemm_course
from hgemm_course.library import device
from conftest import HAS_GPU


def _ab(M=24, N=16, K=40, dtype=np.float16):
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, (M, K)).astype(dtype), rng.uniform(-1, 1, (K, N)).astype(dtype)


def test_rungs_lists_ids_chapters_and_needs():
    items = hgemm_course.rungs()
    first = items[0]
    assert first["rung"] == "01" and first["chapter"] == "chapters/01_naive.ipynb"
    assert first["cudasim"] is True and first["needs"] == "any CUDA GPU"
    assert all({"rung", "title", "needs", "cudasim", "arch"} <= set(r) for r in items)


def test_wrong_dtype_names_the_conversion():
    a, b = _ab(dtype=np.float32)
    with pytest.raises(TypeError, match=r"float32.*astype\(np.float16\)"):
        hgemm_course.gemm(a, b, rung="01")


def test_not_2d():
    a, b = _ab()
    with pytest.raises(ValueError, match="3-D.*2-D matrix"):
        hgemm_course.gemm(a[None], b, rung="01")


def test_inner_dimensions_differ():
    a, b = _ab()
    with pytest.raises(ValueError, match=r"Inner dimensions differ: a is 24x40, b is 39x16"):
        hgemm_course.gemm(a, b[1:], rung="01")


def test_not_contiguous():
    a, b = _ab(K=16)
    with pytest.raises(ValueError, match="not C-contiguous"):
        hgemm_course.gemm(a, b.T.copy().T, rung="01")


def test_not_an_array():
    _, b = _ab()
    with pytest.raises(TypeError, match="NumPy or CuPy array"):
        hgemm_course.gemm([[1.0]], b, rung="01")


def test_size_the_rung_cannot_do(monkeypatch):
    from dataclasses import replace

    from hgemm_course.library import api, ladder

    picky = replace(ladder.get("01"), multiple_k=64)
    monkeypatch.setattr(api, "_rung", lambda r: picky)
    a, b = _ab(K=40)
    with pytest.raises(ValueError, match="K=40 is not a multiple of 64"):
        hgemm_course.gemm(a, b, rung="01")


@pytest.mark.skipif(HAS_GPU, reason="checks the answer on a machine without a GPU")
def test_no_gpu_for_a_gpu_only_rung(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    a, b = _ab()
    with pytest.raises(hgemm_course.NoGPUError, match="needs any CUDA GPU; this machine has none") as info:
        hgemm_course.gemm(a, b, rung="02")
    assert isinstance(info.value, ValueError)
    assert "`NUMBA_ENABLE_CUDASIM=1 python your_script.py`" in str(info.value)


def test_gemm_runs_rung_02_under_the_simulator():
    if not device.cudasim_enabled():
        pytest.skip("the simulator is off (a GPU is present)")
    a, b = _ab(M=33, N=20, K=24)
    c = hgemm_course.gemm(a, b, rung="02")
    assert isinstance(c, np.ndarray) and c.dtype == np.float16 and c.shape == (33, 20)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-3


@pytest.mark.gpu
def test_gemm_on_the_gpu_keeps_the_array_kind():
    import cupy

    a, b = _ab(M=256, N=128, K=64)
    c_host = hgemm_course.gemm(a, b, rung="02")
    c_dev = hgemm_course.gemm(cupy.asarray(a), cupy.asarray(b), rung="02")
    assert isinstance(c_host, np.ndarray) and isinstance(c_dev, cupy.ndarray)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.linalg.norm(c_host - ref) / np.linalg.norm(ref) < 1e-3


def _cudasim_only():
    if not device.cudasim_enabled():
        pytest.skip("the simulator is off (a GPU is present)")


def test_out_receives_c_and_is_returned():
    _cudasim_only()
    a, b = _ab(M=33, N=20, K=24)
    out = np.full((33, 20), np.nan, np.float16)
    c = hgemm_course.gemm(a, b, rung="02", out=out)
    assert c is out and not np.isnan(out).any()
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-3


@pytest.mark.parametrize("bad, message", [
    (np.empty((24, 17), np.float16), r"shape \(24, 16\); got float16 \(24, 17\)"),
    (np.empty((24, 16), np.float32), r"float16 array of shape \(24, 16\); got float32"),
    (np.empty((16, 24), np.float16).T, "not contiguous"),
])
def test_a_wrong_out_is_refused_with_the_fix(bad, message):
    a, b = _ab()
    with pytest.raises(ValueError, match=message):
        hgemm_course.gemm(a, b, rung="01", out=bad)


def test_out_must_be_the_same_kind_as_the_inputs():
    a, b = _ab()
    with pytest.raises(TypeError, match="out must be a NumPy array like a and b, not a list"):
        hgemm_course.gemm(a, b, rung="01", out=[[0.0]])


def test_the_default_rung_is_the_top_one_this_machine_runs():
    from hgemm_course.library import api

    api._rung.cache_clear()
    expected = "02" if device.cudasim_enabled() or not device.has_gpu() else None
    chosen = api._rung(None).id
    if expected:
        assert chosen == expected
    else:
        assert chosen == ("11" if device.probe_gpu()[0].compute_capability >= (9, 0) else "02")


def test_a_shape_passes_the_rules_of_the_rung_asked_for(monkeypatch):
    """The per-shape memo of passed checks must not let one rung's pass stand for another's rules."""
    from dataclasses import replace

    from hgemm_course.library import api, ladder

    _cudasim_only()
    a, b = _ab(K=40)
    hgemm_course.gemm(a, b, rung="01")
    monkeypatch.setattr(api, "_rung", lambda r: replace(ladder.get("01"), multiple_k=64))
    with pytest.raises(ValueError, match="K=40 is not a multiple of 64"):
        hgemm_course.gemm(a, b, rung="01")


def test_version_comes_from_the_installed_metadata():
    from importlib.metadata import version

    assert hgemm_course.__version__ == version("hgemm-course")


@pytest.mark.gpu
def test_gemm_writes_every_element_of_out_on_the_current_stream():
    """No fill before the kernel: out starts as NaN and must come back whole, on a non-default stream."""
    import cupy

    rng = np.random.default_rng(3)
    for rung, (M, N, K) in (("05", (385, 264, 136)), ("11", (1000, 776, 520)), ("11", (2048, 2048, 1024))):
        a = cupy.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float16))
        b = cupy.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float16))
        ref = a.astype(cupy.float32) @ b.astype(cupy.float32)
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            out = cupy.full((M, N), cupy.nan, cupy.float16)
            c = hgemm_course.gemm(a, b, rung, out=out)
            fresh = hgemm_course.gemm(a, b, rung)
        stream.synchronize()
        assert c is out and not bool(cupy.isnan(out).any())
        for got in (out, fresh):
            assert float(cupy.linalg.norm(got.astype(cupy.float32) - ref) / cupy.linalg.norm(ref)) < 1e-3


@pytest.mark.gpu
def test_gemm_numpy_in_numpy_out_with_out():
    a, b = _ab(M=256, N=264, K=72)
    out = np.full((256, 264), np.nan, np.float16)
    assert hgemm_course.gemm(a, b, out=out) is out
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-3


@pytest.mark.gpu
def test_gemm_runs_on_the_gpu_its_operands_live_on():
    """Operands on the second GPU: with the first one current, C comes back right and on the operands' GPU,
    which stays current for nobody but the call; and on a stream of the second GPU. Every tensor-core path
    gemm() takes: rung 05, rung 11, the plan (rung 12 at 3072^3) and rung 12, each also loaded on GPU 0."""
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs (the H200 x2 machine)")
    rng = np.random.default_rng(4)
    for rung, (M, N, K) in (("05", (385, 264, 136)), ("11", (1000, 776, 520)), (None, (3072, 3072, 3072)),
                            ("12", (2304, 4608, 1024))):
        with cupy.cuda.Device(0):
            ones = cupy.ones((M, K), cupy.float16)
            hgemm_course.gemm(ones, cupy.ones((K, N), cupy.float16), rung)   # the kernels loaded on GPU 0 first
        with cupy.cuda.Device(1):
            a = cupy.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float16))
            b = cupy.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float16))
            ref = a.astype(cupy.float32) @ b.astype(cupy.float32)
        with cupy.cuda.Device(0):                        # the other GPU current, as a caller may leave it
            c = hgemm_course.gemm(a, b, rung)
            assert c.device.id == 1 and cupy.cuda.runtime.getDevice() == 0
        with cupy.cuda.Device(1):
            stream = cupy.cuda.Stream(non_blocking=True)
            with stream:
                on_stream = hgemm_course.gemm(a, b, rung)
            stream.synchronize()
            for got in (c, on_stream):
                err = float(cupy.linalg.norm(got.astype(cupy.float32) - ref) / cupy.linalg.norm(ref))
                assert err < 1e-3, (rung, M, N, K, err)


def _relative_error(got, ref):
    import cupy

    return float(cupy.linalg.norm(got.astype(cupy.float32) - ref) / cupy.linalg.norm(ref))


@pytest.mark.gpu
def test_gemm_out_launched_again_stays_right():
    """gemm(out=) repeated on the same operands runs the launch it kept (api._launch_again), and C is right on
    every call, C poisoned in between: for rung 11, the plan's rung 12 (a new workspace epoch each call: a
    launch that reused one would let owners read partial sums before they are written), and rung 12 itself."""
    import cupy

    from hgemm_course.library import api

    rng = np.random.default_rng(7)
    for rung, (M, N, K) in (("11", (1000, 776, 520)), (None, (3072, 3072, 3072)), ("12", (2304, 4608, 1024)),
                            (None, (16, 4096, 4096)), ("07", (385, 264, 136))):
        a = cupy.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float16))
        b = cupy.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float16))
        out = cupy.empty((M, N), cupy.float16)
        ref = a.astype(cupy.float32) @ b.astype(cupy.float32)
        for call in range(4):
            out.fill(cupy.nan)
            assert hgemm_course.gemm(a, b, rung, out=out) is out
            assert _relative_error(out, ref) < 1e-3, (rung, M, N, K, call)
        assert api._again_key(a, b, out, rung) in api._again
        b2 = cupy.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float16))     # new B, same shapes
        out.fill(cupy.nan)
        hgemm_course.gemm(a, b2, rung, out=out)
        assert _relative_error(out, a.astype(cupy.float32) @ b2.astype(cupy.float32)) < 1e-3


@pytest.mark.gpu
def test_gemm_out_checks_what_a_kept_launch_cannot_see():
    """A kept launch is found by pointers and shapes: a view of the same memory with another dtype or layout
    must meet the full checks, not the kept launch."""
    import cupy

    a = cupy.ones((256, 256), cupy.float16)
    b = cupy.ones((256, 256), cupy.float16)
    out = cupy.empty((256, 256), cupy.float16)
    hgemm_course.gemm(a, b, out=out)
    hgemm_course.gemm(a, b, out=out)
    with pytest.raises(ValueError, match="C-contiguous"):
        hgemm_course.gemm(a.T, b, out=out)            # same pointer and shape, column-major
    with pytest.raises(TypeError, match="dtype"):
        hgemm_course.gemm(a.view(cupy.int16), b, out=out)
    with pytest.raises(ValueError, match="float16"):
        hgemm_course.gemm(a, b, out=out.view(cupy.int16))


def test_a_shape_off_the_default_rungs_multiples_is_padded_not_refused():
    """Rung 11 (the default on Hopper) needs N and K multiples of 8; gemm() without a rung pads to them."""
    from hgemm_course.library.ladder import get

    assert get("11").padded_shape(768, 1500, 1001) == (768, 1504, 1008)
    assert get("11").padded_shape(16, 4096, 4096) == (16, 4096, 4096)
    with pytest.raises(ValueError, match="Pad the matrix to N=1504"):
        hgemm_course.gemm(np.ones((8, 16), np.float16), np.ones((16, 1500), np.float16), "11")


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K", [(768, 1500, 1500), (77, 1001, 999), (5, 8, 3), (1000, 4096, 1001)])
def test_gemm_pads_a_shape_off_the_multiples_and_is_right(M, N, K):
    """N or K off the multiples of 8: C right against an FP32 reference, into a new array, into a poisoned out, and
    from NumPy operands."""
    import cupy

    from hgemm_course.measurement import verification

    a, b, seed = verification.random_inputs(M, N, K, xp=cupy)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    assert verification.compare(hgemm_course.gemm(a, b), reference, K=K, seed=seed).passed
    out = cupy.full((M, N), cupy.nan, cupy.float16)
    assert hgemm_course.gemm(a, b, out=out) is out
    assert verification.compare(out, reference, K=K, seed=seed).passed
    c = hgemm_course.gemm(a.get(), b.get())
    assert isinstance(c, np.ndarray) and verification.compare(c, reference, K=K, seed=seed).passed
