"""hgemm_course.measurement.profile: the ncu command, the record built from ncu's raw CSV, the recorded profiles and
`hgemm-course profile` / `profiles` on a machine without a GPU (ncu stood in for by a script)."""
from __future__ import annotations

import json
import re
import sys
import tarfile

import pytest

from conftest import HAS_GPU
from hgemm_course.measurement import ncu, profile, profile_target
from hgemm_course.course.cli import main
from hgemm_course.measurement.verification import VerificationError
from hgemm_course.library.paths import results_dir

# `ncu --query-metrics` as the H200's ncu 2025.3.1 printed it (scripts/h200_model_checks.sh kept it)
MODEL_CHECKS = results_dir() / "ncu" / "model_checks_20261129T1745.tgz"

STALLS = {"long_scoreboard": 3.8, "barrier": 2.1, "mio_throttle": 1.2, "selected": 1.0, "short_scoreboard": 0.9,
          "math_pipe_throttle": 0.6, "wait": 0.4}
# the value of each metric in the synthetic CSV, as ncu prints it (thousands separators), and its unit
VALUES = {
    ncu.SM_CLOCK: ("1,590,000,000", "hz"),
    ncu.TENSOR_PIPE_ACTIVE: ("57.3", "%"),
    "sm__inst_executed_pipe_tensor_op_hmma.sum": ("33,554,432", "inst"),
    "smsp__issue_active.avg.pct_of_peak_sustained_active": ("41.2", "%"),
    "dram__bytes_read.sum": ("1,234.5", "Mbyte"),
    "dram__bytes_write.sum": ("134,217,728", "byte"),
    "lts__t_sector_hit_rate.pct": ("71.04", "%"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("12.4", "%"),
    "sm__warps_active.avg.per_cycle_active": ("7.94", "warp"),
    "gpu__time_duration.sum": ("2,100,000", "ns"),
    "smsp__inst_executed_op_ldsm.sum": ("1,048,576", "inst"),
    "smsp__inst_executed_op_ldgsts.sum": ("393,216", "inst"),
    ncu.SMEM_METRICS["ldsm"]["wavefronts"]: ("4,194,304", ""),
    ncu.SMEM_METRICS["all"]["bank_conflicts"]: ("18,923", ""),
    **{ncu.STALL_METRIC.format(reason): (str(value), "") for reason, value in STALLS.items()},
}
LAUNCH = {"launch__registers_per_thread": ("228", "register/thread"), "launch__grid_size": ("128", ""),
          "launch__block_size": ("256", ""), "launch__shared_mem_per_block_dynamic": ("196,608", "byte/block")}
KERNEL = "void k05_swizzle<256, 128, 64, 64, 64, 4>(const __half *, const __half *, __half *, int, int, int)"


def raw_csv(values=VALUES, metrics=ncu.METRICS) -> str:
    """ncu's --page raw layout: ncu's own lines, header, units, one kernel row; metrics not in ``values`` are 0."""
    columns = {**{m: values.get(m, ("0", "")) for m in metrics}, **LAUNCH}
    quote = lambda cells: ",".join(f'"{c}"' for c in cells)          # noqa: E731
    return "\n".join([
        "==PROF== Connected to process 1187 (/usr/bin/python3.12)",
        quote(["ID", "Process ID", "Kernel Name", "Block Size", *columns]),
        quote(["", "", "", "", *(unit for _, unit in columns.values())]),
        quote(["0", "1187", KERNEL, "(256, 1, 1)", *(value for value, _ in columns.values())]),
        "==PROF== Disconnected from process 1187",
    ]) + "\n"


def record_from(text: str = None) -> dict:
    (row,) = ncu.parse_raw(text or raw_csv())
    return profile.profile_record(row, rung="05", M=8192, N=8192, K=8192, variant="default")


# ----------------------------------------------------------------------------- the metrics asked for

def recorded_metric_types() -> dict[str, str]:
    """{base name: Counter | Ratio | Throughput} of every metric the H200's ncu listed."""
    with tarfile.open(MODEL_CHECKS) as tar:
        text = tar.extractfile("ncu/query_metrics.txt").read().decode()
    rows = (line.split() for line in text.splitlines())
    return {f[0]: f[1] for f in rows if len(f) >= 2 and re.fullmatch(r"[a-z0-9]+__\w+", f[0])}


def test_every_metric_asked_for_is_one_the_h200s_ncu_offers_with_a_suffix_of_its_type():
    types = recorded_metric_types()
    suffixes = {"Counter": {"sum", "avg", "min", "max"}, "Ratio": {"ratio", "pct", "max_rate"},
                "Throughput": {"avg", "min", "max", "sum"}}
    for metric in ncu.METRICS:
        base, first_suffix = metric.split(".")[:2]
        assert base in types, f"{metric}: the H200's ncu lists no {base} (see ncu/query_metrics.txt in {MODEL_CHECKS})"
        assert first_suffix in suffixes[types[base]], f"{metric}: a {types[base]} takes .{suffixes[types[base]]}"
    assert len(set(ncu.METRICS)) == len(ncu.METRICS)


def test_launch_statistics_come_on_the_raw_page_unasked():
    """The H200 run of rung 04's linear variant asked for shared-memory counters only."""
    (row,) = ncu.read_raw(results_dir() / "ncu" / "linear_probe_h200_20261129T1822.csv")
    assert set(ncu.LAUNCH_METRICS.values()) <= set(row["metrics"])


# ----------------------------------------------------------------------------- the record

def test_record_holds_the_figures_in_base_units():
    r = record_from()
    assert (r["rung"], r["M"], r["N"], r["K"], r["variant"], r["kernel"]) == ("05", 8192, 8192, 8192, "default", KERNEL)
    assert r["tensor_pipe_active_pct"] == 57.3 and r["issue_active_pct"] == 41.2
    assert r["dram_read_bytes"] == pytest.approx(1234.5e6) and r["dram_write_bytes"] == 134217728
    assert r["dram_bytes"] == pytest.approx(1234.5e6 + 134217728)
    assert r["l2_hit_pct"] == 71.04 and r["achieved_occupancy_pct"] == 12.4 and r["warps_per_sm"] == 7.94
    assert (r["registers"], r["grid"], r["block"], r["smem_dynamic"]) == (228, 128, 256, 196608)
    assert r["sm_clock_mhz"] == 1590 and r["duration_ns"] == 2.1e6
    assert r["cycles"] == pytest.approx(2.1e6 * 1e-9 * 1.59e9)
    assert r["stalls"]["long_scoreboard"] == 3.8 and set(r["stalls"]) == set(ncu.STALL_REASONS)


def test_shared_memory_is_kept_for_the_instruction_kinds_the_kernel_runs():
    smem = record_from()["smem"]
    assert set(smem) == {"ldsm", "ldgsts", "all"}              # no LDS, STS, STSM or HGMMA in rung 05
    assert smem["ldsm"] == {"wavefronts": 4194304, "bank_conflicts": 0, "instructions": 1048576}
    assert smem["all"]["bank_conflicts"] == 18923


def test_top_stalls_are_largest_first_as_shares_of_the_stalled_warps():
    top = record_from()["top_stalls"]
    assert [s["reason"] for s in top] == ["long_scoreboard", "barrier", "mio_throttle", "short_scoreboard",
                                          "math_pipe_throttle"]
    stalled = sum(v for k, v in STALLS.items() if k != "selected")            # the issuing warp is not stalled
    assert top[0]["share_pct"] == pytest.approx(100 * 3.8 / stalled) and top[0]["warps_per_issue"] == 3.8
    shares = profile.top_stalls(STALLS, n=len(STALLS))
    assert sum(s["share_pct"] for s in shares) == pytest.approx(100) and "selected" not in {s["reason"] for s in shares}


def test_a_csv_missing_a_requested_metric_records_nothing():
    with pytest.raises(profile.NcuFailed, match="no column for .*gpu__time_duration.sum"):
        record_from(raw_csv(metrics=[m for m in ncu.METRICS if m != "gpu__time_duration.sum"]))


# ----------------------------------------------------------------------------- the launch and the ncu command

def test_ncu_profiles_the_second_launch_at_the_cards_own_clocks():
    rung, overrides, kernel = profile_target.launch_config("11", 4096, 4096, 1024, super_mn=(16, 2), cluster_m=2)
    command = profile.ncu_command("ncu", rung, 4096, 4096, 1024, overrides, kernel, "raw.csv")
    text = " ".join(command)
    assert "--clock-control none" in text and "--csv --page raw" in text
    assert "-k regex:^k11_persistent --launch-skip 1 --launch-count 1 --log-file raw.csv" in text
    assert text.endswith("-m hgemm_course.measurement.profile_target --rung 11 --mnk 4096 4096 1024 --super 16 2 --cluster 2")
    assert command[command.index("--metrics") + 1] == ",".join(ncu.METRICS)
    assert profile_target.variant_label(overrides) == "super 16x2, cluster 2" and profile_target.variant_label({}) == "default"


@pytest.mark.parametrize("rung, kwargs, message", [
    ("01", {}, "Numba kernel"), ("05", {"super_mn": (2, 2)}, "no super tiles"), ("06", {"cluster_m": 2}, "no clusters"),
    ("05", {"K": 100}, "multiple of 8"), ("99", {}, "No rung"),
])
def test_launch_config_refuses_with_the_fix(rung, kwargs, message):
    shape = {"M": 256, "N": 256, "K": 256}
    shape.update({k: kwargs.pop(k) for k in list(kwargs) if k in shape})
    with pytest.raises(ValueError, match=message):
        profile_target.launch_config(rung, shape["M"], shape["N"], shape["K"], **kwargs)


def test_the_launch_target_checks_its_arguments_without_a_gpu(capsys):
    assert profile_target.target_main(["--rung", "06", "--mnk", "4096", "2048", "1024", "--super", "4", "8", "--dry-run"]) == 0
    assert "k06_supertile<256, 128, 64, 64, 64, 4, 4, 8, true> M=4096 N=2048 K=1024" in capsys.readouterr().out


# ----------------------------------------------------------------------------- run_profile over a stand-in ncu

FAKE_NCU = f'''#!{sys.executable}
"""Stands in for ncu: --version, or writes CSV_TEXT to --log-file and prints what the launch target would."""
import os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.1.0 (build 36398880) (public-release)")
    sys.exit(0)
mode = os.environ["FAKE_NCU_MODE"]
log = args[args.index("--log-file") + 1]
if mode == "bad-metric":
    open(log, "w").write("==ERROR== Failed to find metric sm__nope.sum\\n")
    sys.exit(1)
open(log, "w").write(open(os.environ["FAKE_NCU_CSV"]).read())
if mode == "wrong":
    print("rung 05 {profile_target.WRONG_C}: the profile of this launch is not worth reading", file=sys.stderr)
    sys.exit(1)
print("{profile_target.VERIFIED}")
'''


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    path = tmp_path / "ncu"
    path.write_text(FAKE_NCU)
    path.chmod(0o755)
    (tmp_path / "raw.csv").write_text(raw_csv())
    monkeypatch.setenv("FAKE_NCU_CSV", str(tmp_path / "raw.csv"))
    return str(path)


def test_a_verified_profile_is_recorded_with_ncus_csv_apart(fake_ncu, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    out = tmp_path / "profiles"
    path = profile.run_profile("05", 8192, 8192, 8192, folder=out, ncu_path=fake_ncu)
    assert path.parent == out and path.name.startswith("profile_")
    assert profile.raw_csv(path) == out / "ncu" / path.with_suffix(".csv").name     # apart from the records
    assert profile.raw_csv(path).read_text() == raw_csv()
    assert profile.raw_csv(results_dir() / "profiles" / path.name) == results_dir() / "ncu" / "profiles" / \
        path.with_suffix(".csv").name
    data = json.loads(path.read_text())
    assert data["provenance"]["ncu"].startswith("Version 2025.3.1") and "--clock-control none" in \
        data["provenance"]["ncu_command"]
    (record,) = data["records"]
    assert record["tensor_pipe_active_pct"] == 57.3 and record["variant"] == "default" and "date" in record


@pytest.mark.parametrize("mode, error, message", [
    ("wrong", VerificationError, "rung 05 computed a wrong C.*Nothing was recorded"),
    ("bad-metric", profile.NcuFailed, "ncu exited 1 .*==ERROR== Failed to find metric sm__nope.sum"),
])
def test_a_wrong_c_or_a_rejected_metric_records_nothing(fake_ncu, tmp_path, monkeypatch, mode, error, message):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    with pytest.raises(error, match=message):
        profile.run_profile("05", 8192, 8192, 8192, folder=tmp_path / "profiles", ncu_path=fake_ncu)
    assert not (tmp_path / "profiles").exists()


# ----------------------------------------------------------------------------- the records read back

@pytest.fixture
def recorded(tmp_path):
    """Two runs of rung 05 (the newer must win) and one of rung 06 with a super tile."""
    from hgemm_course.measurement.records import write_run

    older = {**record_from(), "tensor_pipe_active_pct": 50.0}
    newer = record_from()
    other = {**record_from(), "rung": "06", "variant": "super 16x2"}
    for record, stamp in ((older, "2026-12-01T10:00:00+00:00"), (newer, "2026-12-02T10:00:00+00:00"),
                          (other, "2026-12-02T11:00:00+00:00")):
        write_run([record], kind="profile", folder=tmp_path, extra={"date": stamp, "gpu": "NVIDIA H200"})
    return tmp_path


def test_load_profiles_keeps_the_newest_per_rung_shape_and_variant(recorded):
    records = profile.load_profiles(recorded)
    assert [(r["rung"], r["variant"]) for r in records] == [("05", "default"), ("06", "super 16x2")]
    assert records[0]["tensor_pipe_active_pct"] == 57.3 and records[0]["file"].startswith("profile_nvidia-h200_")
    assert profile.recorded_profile("5", folder=recorded) == records[0]
    assert profile.recorded_profile("06", variant="super 16x2", folder=recorded) == records[1]
    assert profile.recorded_profile("06", folder=recorded) is None
    assert profile.recorded_profile("05", 4096, folder=recorded) is None


def test_describe_says_where_the_cycles_went_and_that_it_is_recorded(recorded):
    text = profile.describe(profile.recorded_profile("05", folder=recorded))
    assert re.match(r"RECORDED \(profile_nvidia-h200_20261202T100000_\w+\.json, NVIDIA H200, 2026-12-02\)", text)
    assert "tensor pipe active 57.3% of active cycles; issue slots 41%" in text
    assert "long_scoreboard 42%, barrier 23%, mio_throttle 13%" in text
    assert "DRAM 1,234 MB read, 134 MB written; L2 hit 71%; 7.9 warps/SM achieved (12.4%); SM clock 1,590 MHz" in text


def test_table_has_a_row_per_profile(recorded):
    lines = profile.format_profiles(profile.load_profiles(recorded)).splitlines()
    assert lines[0].split()[:4] == ["rung", "shape", "variant", "tensor%"]
    assert lines[1].split()[:5] == ["05", "8192x8192x8192", "default", "57.3", "41.2"]
    assert "long_scoreboard 42, barrier 23, mio_throttle 13" in lines[1] and "1,369" in lines[1]
    assert lines[2].split()[:4] == ["06", "8192x8192x8192", "super", "16x2"]


# ----------------------------------------------------------------------------- the command line

def test_profiles_json_reads_a_folder_and_filters_by_rung(recorded, capsys):
    assert main(["profiles", "--json", "--dir", str(recorded), "6"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["rung"] == "06" and record["top_stalls"][0]["reason"] == "long_scoreboard"
    assert main(["profiles", "--dir", str(recorded)]) == 0
    assert "8192x8192x8192" in capsys.readouterr().out


def test_profiles_with_nothing_recorded_says_so_in_one_line(tmp_path, capsys):
    assert main(["profiles", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("No recorded profiles in") and out.count("\n") == 1


def test_profile_dry_run_prints_the_ncu_command(capsys):
    assert main(["profile", "05", "--size", "4096", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "--clock-control none" in out and "'regex:^k05_swizzle'" in out
    assert out.rstrip().endswith("-m hgemm_course.measurement.profile_target --rung 05 --mnk 4096 4096 4096")


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU answer")
def test_profile_without_a_gpu_refuses_in_one_line(capsys, tmp_path):
    assert main(["profile", "05", "--out-dir", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "needs an NVIDIA GPU" in captured.err and "Profile on a GPU machine" in captured.err
    assert not any(tmp_path.iterdir())


# ----------------------------------------------------------------------------- cuBLAS, and cycles against it

def test_cublas_is_profiled_like_a_rung_its_gemm_kernel_found_by_name(capsys):
    target, overrides, kernel = profile_target.launch_config("cuBLAS", 4096, 4096, 4096)
    assert target.id == "cublas" and overrides == {} and kernel is None
    text = " ".join(profile.ncu_command("ncu", target, 4096, 4096, 4096, overrides, kernel, "raw.csv"))
    assert "--clock-control none" in text and "-k regex:nvjet|gemm|cutlass --launch-skip 1 --launch-count 1" in text
    assert text.endswith("-m hgemm_course.measurement.profile_target --rung cublas --mnk 4096 4096 4096")
    with pytest.raises(ValueError, match="cuBLAS through cupy.matmul picks its own tiles"):
        profile_target.launch_config("cublas", 4096, 4096, 4096, super_mn=(16, 2))
    assert profile_target.target_main(["--rung", "cublas", "--size", "1000", "--dry-run"]) == 0
    assert "cuBLAS through cupy.matmul M=1000 N=1000 K=1000" in capsys.readouterr().out


@pytest.mark.parametrize("name, regex, slug", [("cublaslt", "nvjet|gemm|cutlass", "cuBLASLt through torch.matmul"),
                                               ("plan", "^k1[12]_(persistent|streamk)", "gemm()'s plan")])
def test_cublaslt_and_the_plan_are_profiled_as_whole_launches_their_kernel_found_by_name(capsys, name, regex, slug):
    target, overrides, kernel = profile_target.launch_config(name.upper(), 256, 256, 65536)
    assert target.id == name and overrides == {} and kernel is None
    assert profile_target.rung_id(name.upper()) == name
    text = " ".join(profile.ncu_command("ncu", target, 256, 256, 65536, overrides, kernel, "raw.csv"))
    assert f"-k regex:{regex} --launch-skip 1" in text and text.endswith(f"--rung {name} --mnk 256 256 65536")
    with pytest.raises(ValueError, match="picks its own tiles"):
        profile_target.launch_config(name, 256, 256, 65536, tiles=(64, 64))
    assert profile_target.target_main(["--rung", name, "--mnk", "256", "256", "65536", "--dry-run"]) == 0
    assert f"{slug} M=256 N=256 K=65536" in capsys.readouterr().out


def test_cycle_ratios_set_each_rung_against_cublas_at_the_same_shape(tmp_path, capsys):
    from hgemm_course.measurement.records import write_run

    base = record_from()          # 2.1 ms at 1590 MHz: 3,339,000 cycles
    for rung, duration in (("05", 2_100_000), ("cublas", 1_050_000), ("07", 1_400_000)):
        write_run([{**base, "rung": rung, "duration_ns": duration, "cycles": duration * 1.59}], kind="profile",
                  folder=tmp_path, extra={"gpu": "NVIDIA H200"})
    write_run([{**base, "rung": "06", "M": 4096, "N": 4096, "K": 4096}], kind="profile", folder=tmp_path,
              extra={"gpu": "NVIDIA H200"})
    rows = profile.cycle_ratios(8192, folder=tmp_path)
    assert [(r["rung"], round(r["pct_cublas_cycles"], 1)) for r in rows] == [("05", 50.0), ("07", 75.0)]
    assert profile.cycle_ratios(4096, folder=tmp_path) == []          # no cuBLAS profile at 4096
    assert "run `hgemm-course profile cublas" in profile.format_cycle_ratios([])
    assert main(["profiles", "--dir", str(tmp_path), "05", "cublas"]) == 0
    out = capsys.readouterr().out
    assert "against cuBLAS in SM cycles" in out and re.search(r"\n05\s+3,339,000\s+1,669,500\s+50\.0%", out)
    assert "\n07 " not in out.split("against cuBLAS")[1]


def test_a_profile_can_take_another_cta_tile():
    rung, overrides, kernel = profile_target.launch_config("05", 8192, 8192, 8192, tiles=(128, 256))
    assert (overrides["tiles"].bm, overrides["tiles"].bn, overrides["tiles"].stages) == (128, 256, 4)
    assert "k05_swizzle<128, 256, 64, 64, 64, 4, true>" == kernel.name_expression
    assert profile_target.variant_label(overrides) == "tiles 128x256"
    command = profile.ncu_command("ncu", rung, 8192, 8192, 8192, overrides, kernel, "raw.csv")
    assert command[-3:] == ["--tiles", "128", "256"]
    with pytest.raises(ValueError, match="drop --tiles, --super and --cluster"):
        profile_target.launch_config("cublas", 8192, 8192, 8192, tiles=(128, 256))


def test_before_and_after_pairs_the_same_launches_of_an_ablation(tmp_path):
    from hgemm_course.measurement.records import write_run

    base = record_from()
    for side, cycles in (("before", {"11": 1000.0, "12": 800.0}), ("after", {"11": 975.0, "10": 500.0})):
        for rung, n in cycles.items():
            write_run([{**base, "rung": rung, "cycles": n, "tensor_pipe_active_pct": n / 11}], kind="profile",
                      folder=tmp_path / side, extra={"gpu": "NVIDIA H200"})
    rows = profile.before_and_after(tmp_path)
    assert [(r["rung"], r["cycles_before"], r["cycles_after"], round(r["change_pct"], 2)) for r in rows] == \
        [("11", 1000.0, 975.0, -2.5)]                    # rung 12 has no after, rung 10 no before
    table = profile.format_before_and_after(rows)
    assert re.search(r"\n11\s+8192x8192x8192 default\s+1,000\s+975\s+-2\.5%\s+90\.9 / 88\.6$", table), table
