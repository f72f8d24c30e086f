import pytest

from hgemm_course.measurement.roofline import gemm_floor


def test_square_fp16_gemm_counts():
    f = gemm_floor(4096, 4096, 4096, peak_tflops=700.0, bandwidth_gbs=4000.0)
    assert f["flops"] == 2 * 4096**3
    assert f["bytes"] == 3 * 2 * 4096**2
    assert f["intensity"] == pytest.approx(4096 / 3)
    assert f["compute_ms"] == pytest.approx(2 * 4096**3 / 700e12 * 1e3)
    assert f["bound"] == "compute" and f["floor_ms"] == f["compute_ms"]


def test_skinny_gemm_is_memory_bound():
    f = gemm_floor(8192, 8, 8192, peak_tflops=700.0, bandwidth_gbs=4000.0)
    assert f["bound"] == "memory" and f["intensity"] < f["ridge"]
