"""The CPU side of the model checks: hgemm_course.measurement.model_checks, the profile target it has ncu run
(``python -m hgemm_course.measurement.profile_target``) and scripts/h200_model_checks.sh (run against a stand-in for ncu)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from hgemm_course.measurement import model_checks as cm
from hgemm_course.library.ladder import r03_wmma, r05_swizzle, r06_supertile
from hgemm_course.library.paths import REPO_ROOT
from hgemm_course.measurement.profile_target import target_main
from hgemm_course.sim import cta_order, ctas_per_sm, l2_model, main_loop_bank_conflicts

SCRIPTS = Path(REPO_ROOT) / "scripts"

# The fixed columns of what `ncu --csv --page raw --log-file` writes, for the stand-in ncu below
# (tests/test_ncu.py parses whole pages).
FIXED = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
         '"Device","CC"')


# ----------------------------------------------------------------------------- matching ncu's rows to kernels

def test_a_row_matches_its_instantiation_or_its_base_name():
    row = {"kernel": "k05_swizzle",       # as ncu.parse_raw gives it
           "name": "void k05_swizzle<256, 128, 64, 64, 64, 4>(const __half *, const __half *, __half *, int, int, int)"}
    assert cm._same_kernel(row, "k05_swizzle<256,128,64,64,64,4>")
    assert not cm._same_kernel(row, "k05_swizzle<128,256,64,64,64,4>")
    assert cm._same_kernel({"name": "k05_swizzle", "kernel": "k05_swizzle"}, "k05_swizzle<128,256,64,64,64,4>")


# ----------------------------------------------------------------------------- the plan

def test_plan_lines_round_trip_and_cover_rungs_03_to_07_and_the_orders():
    configs = cm.plan(256, 1024)
    assert [cm.Config.from_line(c.line()) for c in configs] == configs
    assert [c.rung for c in configs if c.kind == "banks"] == ["03", "04", "05", "06", "07"]
    orders = {cm.order_name(c): c.super_mn for c in configs if c.kind == "l2"}
    grid_m, grid_n = -(-1024 // r06_supertile.TILES.bm), -(-1024 // r06_supertile.TILES.bn)
    assert orders["row_major"] == (1, grid_n) and orders["col_major"] == (grid_m, 1)
    assert (min(r06_supertile.SUPER[0], grid_m), min(r06_supertile.SUPER[1], grid_n)) in orders.values()
    assert len(orders) >= 3 and len(set(orders.values())) == len(orders)


def test_kernel_facts_are_read_from_the_sources():
    assert cm.kernel_facts("03")["layout"] == "padded" and cm.kernel_facts("03")["pad_halfs"] == r03_wmma.PAD
    assert cm.kernel_facts("03")["epilogue_through_smem"]
    assert cm.kernel_facts("05")["layout"] == "swizzle128" and cm.kernel_facts("05")["stores"] == "cp.async"
    assert cm.kernel_facts("07")["stores"] == "tma"
    assert cm.kernel_facts("01") is None


# ----------------------------------------------------------------------------- the models

def test_bank_model_is_sim_banks_with_the_rungs_own_tiles():
    t = r05_swizzle.TILES
    direct = main_loop_bank_conflicts(t.bm, t.bn, t.bk, t.bm // t.wm, t.bn // t.wn, layout="swizzle128",
                                      M=256, N=512, K=128)["per_kernel"]
    model = cm.bank_model(cm.Config("x", "banks", "05", 256, 512, 128))
    assert model["ldmatrix"]["wavefronts"] == (direct["A ldmatrix.x4"]["wavefronts"]
                                               + direct["B ldmatrix.x4.trans"]["wavefronts"])
    assert model["cp.async"]["requests"] == direct["A cp.async 16B"]["requests"] + direct["B cp.async 16B"]["requests"]
    assert cm.bank_model(cm.Config("x", "banks", "07", 256, 512, 128))["cp.async"]["wavefronts"] == 0   # TMA


def test_bank_records_agree_on_equal_counts_and_flag_what_is_not_comparable():
    model = cm.bank_model(cm.Config("x", "banks", "03", 256, 256, 128))
    metrics = {"smsp__sass_inst_executed_op_ldsm.sum": model["ldmatrix"]["requests"],
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 17.0,
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum": 3.0}
    records = {r["counter"]: r for r in cm.bank_records(cm.Config("x", "banks", "03", 256, 256, 128), metrics)}
    assert records["smsp__sass_inst_executed_op_ldsm.sum"]["agree"] is True
    assert records["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]["agree"] is None   # epilogue in smem
    ldgsts = records["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"]
    assert ldgsts["agree"] is False and ldgsts["difference"] == -3


def test_l2_record_runs_sim_l2_for_exactly_that_launch():
    size, shape = 1024, (2, 2)
    t = r06_supertile.TILES
    kernel = r06_supertile.kernel(super_mn=shape)
    res = kernel.compile().resources_of(kernel.name_expression)
    in_flight = 132 * ctas_per_sm(kernel.threads, res.registers, kernel.smem_bytes + res.smem_static)
    order = cta_order("supertile", -(-size // t.bm), -(-size // t.bn), super_m=2, super_n=2)
    direct = l2_model(size, size, size, t.bm, t.bn, t.bk, order, ctas_in_flight=in_flight)
    config = cm.Config(f"l2_r06_{size}_super_2x2", "l2", "06", size, size, size, shape)
    metrics = {"lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum": 900.0,
               "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum": 100.0, "lts__t_sector_hit_rate.pct": 70.0}
    r = cm.l2_record(config, metrics, l2_bytes=60 * 2**20, sm_count=132)
    assert r["model"] == pytest.approx(100 * direct.hit_rate, abs=1e-3)
    assert r["hardware"] == 90.0 and r["config"]["ctas_in_flight"] == in_flight and r["config"]["order"] == "super_2x2"
    assert r["agree"] == (abs(r["model"] - 90.0) <= 5)


def test_ranking_ignores_near_ties_and_catches_flips():
    def row(order, model, hw):
        return {"config": {"order": order}, "model": model, "hardware": hw}

    same = cm.ranking_record([row("a", 90, 80), row("b", 85, 75), row("c", 85.5, 74.6)], tol=1.0)
    assert same["agree"] and same["model"] == ["a", "c", "b"]
    flipped = cm.ranking_record([row("a", 90, 70), row("b", 85, 75)], tol=1.0)
    assert not flipped["agree"] and flipped["difference"] == [("a", "b")]


# ----------------------------------------------------------------------------- compare() end to end

def write_csv(path, kernel, metrics):
    names = list(metrics)
    path.write_text("\n".join([
        FIXED + "," + ",".join(f'"{m}"' for m in names),
        ",".join(['""'] * 11 + ['""'] * len(names)),
        f'"0","1","python3","host","void {kernel}(const __half *)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0",'
        + ",".join(f'"{v:,}"' if isinstance(v, int) else f'"{v}"' for v in metrics.values()),
    ]) + "\n")


def test_compare_writes_both_runs_with_the_ncu_machines_provenance(tmp_path, capsys):
    ncu = tmp_path / "ncu"
    ncu.mkdir()
    configs = [c for c in cm.plan(256, 1024) if c.rung in ("05", "06")]
    (ncu / "plan.tsv").write_text("\n".join(c.line() for c in configs) + "\n")
    (ncu / "doctor.json").write_text(json.dumps({"gpu": {"name": "NVIDIA H200", "arch": "sm_90a", "sm_count": 132,
                                                         "l2_bytes": 60 * 2**20}, "driver_version": "13.0"}))
    (ncu / "nvidia_smi.csv").write_text("NVIDIA H200, 580.159.04\n")
    for c in configs:
        expr = c.kernel.replace(",", ", ")
        if c.kind == "banks":
            m = cm.bank_model(c)
            write_csv(ncu / f"{c.name}.csv", expr, {
                "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum": m["ldmatrix"]["bank_conflicts"],
                "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum": m["ldmatrix"]["wavefronts"],
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": m["cp.async"]["wavefronts"]})
        else:
            r = cm.l2_record(c, {}, l2_bytes=60 * 2**20, sm_count=132)
            write_csv(ncu / f"{c.name}.csv", expr, {"lts__t_sector_hit_rate.pct": r["model"] + 1.0,
                                                   "dram__bytes_read.sum": r["model_dram_bytes"]})
    out = tmp_path / "results"
    assert cm.main(["--ncu-dir", str(ncu), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "DISAGREE" not in printed and "ranking" in printed
    banks_json = sorted(out.glob("model_banks_nvidia-h200_*.json"))
    l2_json = sorted(out.glob("model_l2_nvidia-h200_*.json"))
    assert len(banks_json) == len(l2_json) == 1
    data = json.loads(l2_json[0].read_text())
    assert data["provenance"]["gpu"] == "NVIDIA H200" and data["provenance"]["driver_release"] == "580.159.04"
    assert {"config", "model", "hardware", "difference", "agree"} <= set(data["records"][0])


def test_compare_refuses_csvs_of_other_tiles(tmp_path):
    (config,) = [c for c in cm.plan(256, 1024) if c.rung == "05"]
    (tmp_path / "plan.tsv").write_text(config.line().replace(config.kernel, "k05_swizzle<1,2,3,4,5,6>") + "\n")
    with pytest.raises(SystemExit, match="tiles changed"):
        cm.main(["--ncu-dir", str(tmp_path)])


# ----------------------------------------------------------------------------- the profile target

@pytest.mark.parametrize("argv, message", [
    (["--rung", "99"], "No rung '99'"),
    (["--rung", "01"], "Numba kernel"),
    (["--rung", "05", "--super", "2", "2"], "no super tiles"),
    (["--rung", "06", "--super", "0", "2"], "at least one tile"),
    (["--rung", "05", "--mnk", "100", "100", "100"], "multiple of 8"),
    (["--rung", "05", "--size", "0"], "at least 1"),
    (["--rung", "05", "--launches", "0"], "at least once"),
    (["--rung", "05", "--size", "64", "--mnk", "64", "64", "64"], "not allowed with"),
    ([], "--rung"),
])
def test_profile_target_refuses_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        target_main(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_profile_target_dry_run_names_the_kernel_it_would_launch(capsys):
    assert target_main(["--rung", "06", "--size", "8192", "--super", "4", "8", "--dry-run"]) == 0
    expected = r06_supertile.kernel_for(8192, 8192, 8192, super_mn=(4, 8)).name_expression   # whole tiles: no guards
    assert expected in capsys.readouterr().out


# ----------------------------------------------------------------------------- h200_model_checks.sh

FAKE_NCU = r'''#!/usr/bin/env python3
"""Stands in for ncu: checks the options, runs the program with --dry-run, writes a raw CSV."""
import re, subprocess, sys
args = sys.argv[1:]
if args in (["--version"], ["--query-metrics"]):
    print("Version 2025.3.1.0" if args == ["--version"] else "dram__bytes_read   # of bytes read from DRAM")
    sys.exit(0)
VALUED = {"--clock-control", "--cache-control", "--page", "--print-units", "-k", "--launch-skip", "--launch-count",
          "--metrics", "--log-file"}
opts, i = {}, 0
while args[i].startswith("-"):
    if args[i] in VALUED:
        opts[args[i]], i = args[i + 1], i + 2
    else:
        assert args[i] == "--csv", args[i]
        i += 1
assert opts["--clock-control"] == "none" and opts["--page"] == "raw", opts
metrics = opts["--metrics"].split(",")
log = open(opts["--log-file"], "w")
if any("sass_l1tex" in m for m in metrics):               # a name this "version" lacks
    log.write("==ERROR== Failed to find metric\n")
    sys.exit(1)
kernel = "cupy_multiply"
if "hgemm_course.measurement.profile_target" in args[i:]:
    run = subprocess.run(args[i:] + ["--dry-run"], capture_output=True, text=True)
    print(run.stdout + run.stderr)
    if run.returncode:
        sys.exit(run.returncode)
    kernel = re.search(r"(k0\d_\w+<[^>]*>)", run.stdout).group(1)
    assert re.match(opts["-k"].removeprefix("regex:"), kernel) and opts["--launch-skip"] == "1"
q = lambda xs: ",".join(f'"{x}"' for x in xs)
log.write(q(["ID", "Kernel Name"] + metrics) + "\n" + q(["", ""] + ["%"] * len(metrics)) + "\n"
          + q(["0", f"void {kernel}(const __half *)"] + ["1,000"] * len(metrics)) + "\n")
'''


@pytest.mark.slow
def test_the_shell_script_runs_end_to_end_against_a_stand_in_ncu(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU)
    fake.chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "NCU": str(fake), "STEPS": "banks l2 compare", "BANK_SIZE": "256",
           "L2_SIZE": "1024", "PYTHONPATH": str(REPO_ROOT), "KEEP_NCU_DIR": "1"}
    run = subprocess.run(["bash", str(SCRIPTS / "h200_model_checks.sh")], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    log = run.stdout + run.stderr
    assert "not offered by this ncu" in log                     # the sass_l1tex probes failed and were left out
    plan = (out / "ncu" / "plan.tsv").read_text().splitlines()
    for line in plan:
        name = line.split()[0]
        assert (out / "ncu" / f"{name}.csv").read_text().startswith('"ID"'), log
    assert (out / "ncu.tgz").is_file() and list(out.glob("model_banks_*.json")) and list(out.glob("model_l2_*.json"))
    assert "h200_model_checks.sh finished" in log
