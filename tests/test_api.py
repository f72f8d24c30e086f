import numpy as np
import pytest

import hgemm_course
from hgemm_course import device
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

    from hgemm_course import ladder

    picky = replace(ladder.get("01"), multiple_k=64)
    monkeypatch.setattr(ladder, "get", lambda r: picky)
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
    assert "NUMBA_ENABLE_CUDASIM=1" in str(info.value)


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
