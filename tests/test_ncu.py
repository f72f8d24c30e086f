"""hgemm_course.measurement.ncu reads Nsight Compute's CSV details page (the recorded H200 profiles of rung 11 and of
cuBLAS's own kernel give the figures chapter 11 and README quote, cycles = duration x SM clock) and its raw
page (one row per kernel, metric names as columns), in base units."""
from __future__ import annotations

import pytest

from hgemm_course.measurement import ncu
from hgemm_course.library.paths import results_dir

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


# ----------------------------------------------------------------------------- --page raw

# What `ncu --csv --page raw --log-file` writes: ncu's own lines, a header row (fixed columns, then metric
# names), a units row, one row per kernel; thousands separators; ncu's automatic units where it scaled.
RAW = "\n".join([
    "==WARNING== Note: Running with unmodified GPU clocks.",
    "==PROF== Connected to process 1187 (/usr/bin/python3.12)",
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","dram__bytes_read.sum","gpu__time_duration.sum","launch__registers_per_thread",'
    '"launch__cluster_scheduling_policy","sm__cycles_elapsed.avg.per_second","smsp__inst_executed_op_ldsm.sum"',
    '"","","","","","","","","","","","Mbyte","usecond","register/thread","","cycle/nsecond","inst"',
    '"0","1187","python3.12","127.0.0.1","void k05_swizzle<256, 128, 64, 64, 64, 4>(const __half *, '
    'const __half *, __half *, int, int, int)","1","7","(256, 1, 1)","(16, 8, 1)","0","9.0",'
    '"1,234.5","2,169.53","228","PolicySpread","1.59","1,048,576"',
    '"1","1187","python3.12","127.0.0.1","cupy_multiply","1","7","(128, 1, 1)","(32, 1, 1)","0","9.0",'
    '"n/a","3.2","16","PolicySpread","1.59","0"',
    "==PROF== Disconnected from process 1187",
])


# The same page as hgemm_course.measurement.model_checks reads it (ncu's automatic units: msecond, %; n/a cells).
RAW_FIXED = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
             '"Grid Size","Device","CC"')
RAW_CSV = "\n".join([
    "==PROF== Connected to process 872 (/usr/bin/python3.12)",
    '==PROF== Profiling "k05_swizzle": 0%....50%....100% - 9 passes',
    RAW_FIXED + ',"dram__bytes_read.sum","gpu__time_duration.sum",'
            '"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","lts__t_sector_hit_rate.pct",'
            '"smsp__sass_inst_executed_op_ldsm.sum"',
    '"","","","","","","","","","","","Mbyte","msecond","","%","inst"',
    '"0","872","python3.12","127.0.0.1","void k05_swizzle<256, 128, 64, 64, 64, 4>(const __half *, const __half *, '
    '__half *, int, int, int)","1","7","(256, 1, 1)","(16, 8, 1)","0","9.0",'
    '"2,151.68","3.19","1,192","80.93","1,048,576"',
    '"1","872","python3.12","127.0.0.1","cupy_multiply","1","7","(128, 1, 1)","(32, 1, 1)","0","9.0","n/a","0.01","0",'
    '"","12"',
    "==PROF== Disconnected from process 872",
])


def test_raw_csv_rows_come_back_in_base_units():
    swizzle, other = ncu.parse_raw(RAW_CSV)
    assert swizzle["kernel"] == "k05_swizzle" and other["kernel"] == "cupy_multiply"
    m = swizzle["metrics"]
    assert m["dram__bytes_read.sum"] == pytest.approx(2151.68e6)
    assert m["gpu__time_duration.sum"] == pytest.approx(3.19e6)          # nanoseconds
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 1192
    assert m["lts__t_sector_hit_rate.pct"] == 80.93
    assert m["smsp__sass_inst_executed_op_ldsm.sum"] == 1048576
    assert other["metrics"]["dram__bytes_read.sum"] is None and other["metrics"]["lts__t_sector_hit_rate.pct"] is None
    assert "Kernel Name" not in m                                         # only metric columns


def test_raw_page_gives_one_row_per_kernel_in_base_units():
    swizzle, other = ncu.parse_raw(RAW)
    assert swizzle["id"] == "0" and swizzle["kernel"] == "k05_swizzle"
    assert swizzle["name"].startswith("void k05_swizzle<256, 128, 64, 64, 64, 4>(")
    m = swizzle["metrics"]
    assert m["dram__bytes_read.sum"] == pytest.approx(1234.5e6)              # Mbyte -> bytes
    assert m["gpu__time_duration.sum"] == pytest.approx(2169530.0)           # usecond -> ns
    assert m["sm__cycles_elapsed.avg.per_second"] == pytest.approx(1.59e9)   # cycle/nsecond -> per second
    assert m["smsp__inst_executed_op_ldsm.sum"] == 1048576                   # thousands separators
    assert m["launch__registers_per_thread"] == 228 and m["launch__cluster_scheduling_policy"] is None
    assert "Kernel Name" not in m and "Block Size" not in m                 # metric columns only
    assert other["kernel"] == "cupy_multiply" and other["metrics"]["dram__bytes_read.sum"] is None


def test_raw_page_from_a_file(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text(RAW)
    assert [r["kernel"] for r in ncu.read_raw(path)] == ["k05_swizzle", "cupy_multiply"]


def test_raw_page_without_a_kernel_says_what_ncu_said():
    with pytest.raises(ValueError, match="--csv --page raw.*ncu said: ==ERROR== Failed to find metric foo__bar.sum"):
        ncu.parse_raw("==PROF== Connected to process 1\n==ERROR== Failed to find metric foo__bar.sum\n")


@pytest.mark.parametrize("value, unit, base", [
    (2.5, "Gbyte", 2.5e9), (3.0, "Kbyte", 3e3), (7.0, "byte", 7.0), (2.0, "usecond", 2e3), (1.5, "msecond", 1.5e6),
    (40.0, "nsecond", 40.0), (40.0, "ns", 40.0), (81.0, "%", 81.0), (5.0, "Ksector", 5e3), (None, "byte", None),
    (1.5, "Ghz", 1.5e9), (1.59, "cycle/nsecond", 1.59e9), (1.59e9, "cycle/second", 1.59e9), (4.0, "Tbyte/s", 4e12),
    (2.0, "Kbyte/block", 2e3), (228.0, "register/thread", 228.0), (1.5, "inst/cycle", 1.5),
])
def test_units_scale_to_base_units(value, unit, base):
    assert ncu.to_base_unit(value, unit) == (pytest.approx(base) if base else base)


@pytest.mark.parametrize("text, number", [("16,825,856", 16825856.0), ("80.15", 80.15), ("n/a", None), ("", None),
                                          ("PolicySpread", None)])
def test_numbers_as_ncu_prints_them(text, number):
    assert ncu.parse_number(text) == number


def test_ncu_is_found_through_the_environment_first(tmp_path, monkeypatch):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("NCU", str(fake))
    assert ncu.find_ncu() == str(fake)
    monkeypatch.setenv("NCU", str(tmp_path / "missing"))
    monkeypatch.setenv("PATH", str(tmp_path))
    found = ncu.find_ncu()                          # None, unless a toolkit's ncu is installed here
    assert found is None or found == "/usr/local/cuda/bin/ncu" or found.startswith("/opt/nvidia/nsight-compute/")


def test_recorded_h200_raw_page_of_the_linear_layout():
    """Rung 04 without padding on the H200: every ldmatrix.x4 costs 32 wavefronts (8-way conflicts on each of
    its 4 matrices), and the launch statistics come on the raw page without being asked for."""
    (row,) = ncu.read_raw(results_dir() / "ncu" / "linear_probe_h200_20261129T1822.csv")
    m = row["metrics"]
    assert row["kernel"] == "k04_linear"
    wavefronts = m["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"]
    assert wavefronts == 32 * m["smsp__sass_inst_executed_op_ldsm.sum"]
    assert m["launch__grid_size"] == 128 and m["launch__block_size"] == 256 and m["launch__registers_per_thread"] == 223
