"""hgemm_course.ncu reads Nsight Compute's CSV details page: the recorded H200 profiles of rung 11 and of
cuBLAS's own kernel give the figures chapter 11 and README quote (cycles = duration x SM clock)."""
from __future__ import annotations

import pytest

from hgemm_course import ncu
from hgemm_course.paths import results_dir

RECORDED = results_dir() / "ncu" / "2026-12-01"


@pytest.mark.parametrize("name, kernel", [("ncu_r11_c2_4096.csv", "k11_persistent<128, 256, 64, 4, 16, 2, 2>"),
                                          ("ncu_r11_c1_8192.csv", "k11_persistent<128, 256, 64, 4, 16, 2, 1>"),
                                          ("ncu_cublas_4096.csv", "nvjet_sm90_hsh_256x128_64x4_1x2")])
def test_reads_one_kernel_and_its_units(name, kernel):
    s = ncu.kernel_summary(RECORDED / name)
    assert kernel in s["kernel"]
    assert 1e4 < s["duration_ns"] < 1e7                      # ns, not us or ms
    assert 1.0e9 < s["sm_hz"] < 2.0e9                         # Hz: the H200 runs 1.4-1.98 GHz
    assert s["cycles"] == pytest.approx(s["duration_ns"] * 1e-9 * s["sm_hz"])
    assert 0 < s["tensor_active_pct"] <= 100 and 0 < s["l2_hit_pct"] <= 100
    assert s["grid"] == 132 and s["block"] == 384 and s["registers"] == 168


def test_rung_11_and_cublas_take_the_same_cycles_at_4096():
    """The clock-free comparison the chapter makes: within 1% of each other at 4096^3, both keeping the
    tensor pipe busy 94-96% of their active cycles, while their wall-clock durations differ by 5%."""
    ours, theirs = (ncu.kernel_summary(RECORDED / f) for f in ("ncu_r11_c2_4096.csv", "ncu_cublas_4096.csv"))
    assert ours["cycles"] == pytest.approx(theirs["cycles"], rel=0.01)
    assert ours["duration_ns"] / theirs["duration_ns"] > 1.04
    assert 94 < ours["tensor_active_pct"] < 96 and 94 < theirs["tensor_active_pct"] < 96
    # every wgmma of rung 11 is m64n256k16: 4096^3 / (64 * 256 * 16) of them, counted once per warp of the
    # warpgroup that issues it (ncu counts warp-level instructions)
    assert ours["wgmma_instructions"] == 4096 ** 3 // (64 * 256 * 16) * 4


def test_table_has_a_column_per_kernel():
    table = ncu.format_summaries({"a": ncu.kernel_summary(RECORDED / "ncu_r11_c2_8192.csv"),
                                  "b": ncu.kernel_summary(RECORDED / "ncu_cublas_8192.csv")})
    lines = table.splitlines()
    assert lines[0].split() == ["a", "b"]
    cycles = lines[1].split()[-2:]
    assert cycles == ["2,169,534", "2,210,767"]
    assert "132 x 384, 2" in table


def test_refuses_a_csv_without_a_kernel(tmp_path):
    log_only = tmp_path / "empty.csv"
    log_only.write_text("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")
    with pytest.raises(ValueError, match="no profiled kernel"):
        ncu.read_details(log_only)
    two = tmp_path / "two.csv"
    two.write_text('"Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
                   '"k1","Duration","ns","1"\n"k2","Duration","ns","2"\n')
    with pytest.raises(ValueError, match="2 kernels profiled"):
        ncu.read_details(two)
