"""stretch: a record's figures from one stretch of launches."""
import pytest

from hgemm_course.course import stretch


def test_a_stretch_row_takes_time_cycles_and_clock_from_the_same_launches():
    clocks = [{"cycles": c, "ns": n, "ghz": 0.0} for c, n in ((1_000_000, 500_000), (1_100_000, 600_000),
                                                               (1_200_000, 700_000))]
    r = {"rung": "04", "M": 4096, "N": 4096, "K": 4096, "launch_clocks": clocks, "paired": True, "pct_cublas": 0.0,
         "samples_ms": [1.0, 2.0, 1.0], "cublas_samples_ms": [0.5, 0.5, 0.6]}
    s = stretch.stretch_row(r)
    assert s["ms"] == 0.6 and s["mcycles"] == 1.1 and s["ghz"] == pytest.approx(1.1 / 0.6)
    assert s["tflops"] == pytest.approx(2 * 4096**3 / 0.6e-3 / 1e12)
    assert s["pct"] == 50.0 and s["pct_p10"] < 50.0 < s["pct_p90"]
    assert stretch.stretch_row({**r, "launch_clocks": []}) is None
