import argparse
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import HAS_GPU
from hgemm_course.library import device
from hgemm_course.course.cli import build_parser, main
from hgemm_course.measurement.commands import SIM_SHAPE
from hgemm_course.measurement.shapes import parse_size, shapes_text
from hgemm_course.course.tour import NEXT_STEPS


def run_cli(*args, env_extra=None, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "hgemm_course.course.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def test_list_json_has_one_object_per_rung(capsys):
    assert main(["list", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert [r["rung"] for r in items][:2] == ["01", "02"]


def test_doctor_json(capsys):
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "packages" in report and "warnings" in report


def test_diff_shows_only_the_rungs_sources(capsys):
    assert main(["diff", "01", "02"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- k01_naive.py\n+++ k02_tiled.py")
    assert "+    a_tile = cuda.shared.array" in out


def test_results_json_reads_a_results_folder(tmp_path, capsys):
    from hgemm_course.measurement.bench import BenchRecord
    from hgemm_course.measurement.records import write_run

    write_run([BenchRecord("02", 2048, 2048, 2048, 1.0, 17.2, 0.1, 171.8, 10.0, [1.0] * 20, [0.1] * 20)],
              folder=tmp_path)
    assert main(["results", "--json", "--dir", str(tmp_path)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert {"rung", "M", "N", "K", "tflops", "cublas_tflops", "pct_cublas", "gpu", "date"} <= set(row)
    assert row["rung"] == "02" and row["pct_cublas"] == 10.0


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU answer")
def test_bench_without_a_gpu_fails_cleanly(tmp_path):
    out = run_cli("bench", "02", "--sizes", "256", cwd=tmp_path)
    assert out.returncode == 2
    assert "Benchmarking needs an NVIDIA GPU" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.skipif(HAS_GPU, reason="the CPU tour; the GPU tour runs in scripts/h200.sh")
def test_tour_without_a_gpu_compiles_and_simulates():
    out = run_cli("tour")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "hgemm-course doctor" in text
    assert "== Every CUDA kernel compiled for the sm_90a target (H100, H200), each sized for it" in text
    assert "rung 01 48x40x72: ok" in text and "rung 02 48x40x72: ok" in text and "(simulated)" in text
    assert "Recorded H200 results" in text
    assert text.rstrip().endswith(NEXT_STEPS)
    recorded = text.split("== Recorded H200 results")[1].split(NEXT_STEPS)[0].strip().splitlines()[1:]  # less the title
    assert len(recorded) <= 20 and any(line.startswith("The top rung, ") for line in recorded), recorded
    assert "`hgemm-course results`" in recorded[-1]
    assert len(text.splitlines()) < 80                 # a screenful or two, not every recorded row


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU answer")
def test_tune_without_a_gpu_refuses_in_one_line(capsys):
    code, out, err = exit_code(["tune", "11"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("hgemm-course tune: Tuning rung 11 needs an NVIDIA GPU"), err


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU answer")
@pytest.mark.parametrize("command", ["tour", "bench"])
def test_record_without_an_h200_is_refused_before_anything_runs(command, capsys):
    code, out, err = exit_code([command, "--record"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"hgemm-course {command}: --record writes the course's recorded")


def test_next_steps_name_a_real_chapter_and_exercise():
    from hgemm_course.check import ALL_EXERCISES
    from hgemm_course.library.paths import REPO_ROOT

    assert "`jupyter lab chapters/`" in NEXT_STEPS and "chapter 00" in NEXT_STEPS
    assert (REPO_ROOT / "chapters" / "00_setup.ipynb").is_file()
    (exercise,) = re.findall(r"`hgemm-course check (\w+)`", NEXT_STEPS)
    assert exercise in ALL_EXERCISES


# ---------------------------------------------------------------- refusals: one line, exit 2, no traceback


def exit_code(argv, capsys):
    """main()'s exit status (argparse's refusals exit through SystemExit), its stdout and stderr."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, message", [
    (["verify", "99"], "verify: No rung '99'. The ladder has: 01, 02"),
    (["verify", "01", "--sizes", "0"], "'0': give n (for n x n x n) or MxNxK, each at least 1"),
    (["verify", "01", "--sizes", "10x"], "'10x': give n (for n x n x n) or MxNxK"),
    (["verify", "01", "--sizes", "-5"], "'-5': give n (for n x n x n) or MxNxK, each at least 1"),
    (["verify", "01", "--sizes", "12x13"], "'12x13': give n"),
    (["verify", "05", "--sizes", "1001"], "N=1001 is not a multiple of 8: rung 05 (swizzle) needs N % 8 == 0"),
    (["verify", "01", "--seed", "-1"], "'-1': give a whole number of at least 0"),
    (["bench", "99", "--sizes", "256"], "bench: No rung '99'"),
    (["bench", "05", "--repeats", "5"], "'5': give a whole number of at least 20"),
    (["tune", "11", "--dry-run", "--consumers", "0"], "consumers=0: tiles, stages, super tiles, clusters and "
                                                      "consumers are counts of at least 1"),
    (["tune", "10", "--dry-run", "--consumers", "1"], "--consumers: rung 10 has no such axis"),
    (["tune", "05", "--dry-run", "--supers", "8x4"], "--supers: rung 05 has no such axis"),
    (["tune", "11", "--dry-run", "--clusters", "4"], "clusters=4: rung 11's kernel() refuses every configuration "
                                                     "with it"),
    (["tune", "11", "--dry-run", "--tiles", "0x64"], "'0x64': both sides must be at least 1"),
    (["tune", "11", "--dry-run", "--tiles", "96x256"], "tile 96x256: rung 11's kernel() refuses every configuration"),
    (["tune", "09", "--dry-run", "--tiles", "128x96"], "bn=96: one wgmma covers the whole tile width"),
    (["tune", "11", "--dry-run", "--stages", "2"], "stages=2: wgmma still reads the previous stage"),
    (["tune", "07", "--dry-run", "--stages", "15"], "15 stages need 739328 bytes of shared memory"),
    (["tune", "11", "--dry-run", "--supers", "0x2"], "'0x2': both sides must be at least 1"),
    (["tune", "11", "--dry-run", "--sizes", "0"], "'0': give n"),
    (["tune", "11", "--dry-run", "--repeats", "0"], "'0': give a whole number of at least 20"),
    (["diff", "01", "99"], "diff: No rung '99'"),
    (["diff", "01", "02", "-U", "-1"], "'-1': give a whole number of at least 0"),
    (["profile", "99", "--dry-run"], "profile: No rung '99'"),
    (["profile", "05", "--size", "0", "--dry-run"], "'0': give a whole number of at least 1"),
    (["viz", "nope"], "invalid choice: 'nope' (choose from 'swizzle', 'banks'"),
])
def test_a_refusal_is_one_line_naming_the_fix_with_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                     # nothing a refused command might create lands in the checkout
    code, out, err = exit_code(argv, capsys)
    assert code == 2
    assert out == "" and "Traceback" not in err
    *usage, line = err.splitlines()
    assert line.startswith(f"hgemm-course {argv[0]}: ") and message in line, err
    assert all(u.startswith(("usage:", " ")) for u in usage), err   # before argparse's error: only its usage


def test_tune_refuses_before_planning(monkeypatch, capsys):
    """--dry-run with a bad axis value: refused before any configuration is planned."""
    from hgemm_course.measurement import tune

    monkeypatch.setattr(tune, "plan", lambda *a: pytest.fail("planned a sweep with a refused axis"))
    code, _, err = exit_code(["tune", "11", "--dry-run", "--consumers", "0"], capsys)
    assert code == 2 and "consumers=0" in err


def test_sizes_parse_to_three_dimensions():
    assert parse_size("4096") == (4096, 4096, 4096)
    assert parse_size("1000x1000x64") == parse_size("1000*1000*64") == (1000, 1000, 64)
    assert shapes_text([(1024, 1024, 1024), (257, 136, 72)]) == "1024 257x136x72"


# ---------------------------------------------------------------- viz


def test_viz_help_lists_every_figure_with_a_line(capsys):
    from hgemm_course.viz import FIGURES

    code, out, _ = exit_code(["viz", "--help"], capsys)
    assert code == 0
    listed = dict(re.findall(r"^  (\S+)  +(\S.*)$", out.split("figures:\n")[1], flags=re.M))
    assert list(listed) == list(FIGURES)
    for name, fn in FIGURES.items():       # the whole first paragraph, where it wraps in the source too
        assert listed[name] == " ".join(inspect.getdoc(fn).split("\n\n")[0].split()).replace("``", "")
        assert listed[name].endswith("."), name


def test_viz_writes_into_the_current_folder_and_says_where(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["viz", "swizzle"]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'swizzle.png'}\n"
    assert (tmp_path / "swizzle.png").stat().st_size > 0


@pytest.mark.parametrize("out, message", [
    ("missing/x.png", "does not exist; create it"),
    ("x.foo", "x.foo: end --out with a type matplotlib writes"),
])
def test_viz_refuses_a_bad_out_before_drawing(out, message, tmp_path, monkeypatch, capsys):
    from hgemm_course import viz

    monkeypatch.setitem(viz.FIGURES, "swizzle", lambda: pytest.fail("drew a figure it cannot write"))
    code, stdout, err = exit_code(["viz", "swizzle", "--out", str(tmp_path / out)], capsys)
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and err.startswith("hgemm-course viz: ") and message in err


def test_viz_never_writes_into_the_package(capsys):
    from hgemm_course.library.paths import PACKAGE_DIR

    code, _, err = exit_code(["viz", "swizzle", "--out", str(PACKAGE_DIR / "swizzle.png")], capsys)
    assert code == 2 and "a folder of your own" in err
    assert not (PACKAGE_DIR / "swizzle.png").exists()


# ---------------------------------------------------------------- help


def test_every_argument_has_help_and_every_option_with_a_value_states_its_default():
    from hgemm_course.viz import FIGURES

    (commands,) = [a for a in build_parser(FIGURES)._actions if isinstance(a, argparse._SubParsersAction)]
    for name, parser in commands.choices.items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.dest}: no help"
            if action.option_strings and action.nargs != 0:          # a flag (nargs 0) is off unless given
                assert "default" in action.help, f"{name} {action.option_strings[0]}: help states no default"


def test_top_level_help_ends_with_examples(capsys):
    code, out, _ = exit_code(["--help"], capsys)
    assert code == 0
    examples = out.split("examples:\n")[1].splitlines()
    commands = [line.split("  ")[1].strip() for line in examples]
    assert commands == ["hgemm-course tour", "hgemm-course verify 05 --sizes 1000x1000x64",
                        "hgemm-course bench 05 11 --sizes 4096", "hgemm-course viz swizzle",
                        "hgemm-course check ex05_swizzle --path my_ex05.py", "hgemm-course diff 05 06",
                        "hgemm-course plan 3072x3072x16384", "hgemm-course book --out site"]


def test_list_aligns_its_columns(capsys):
    from hgemm_course import rungs

    assert main(["list"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split() == ["rung", "slug", "needs", "title"]
    assert len({line.index(r["title"]) for line, r in zip(lines, rungs())} | {header.index("title")}) == 1
    assert len({line.index(r["needs"]) for line, r in zip(lines, rungs())} | {header.index("needs")}) == 1


# ---------------------------------------------------------------- without a GPU: the simulator


def test_simulator_default_is_small_with_tails():
    from hgemm_course.library.ladder.k02_tiled import BK, BM, BN

    M, N, K = SIM_SHAPE
    assert M % BM and N % BN and K % BK and K > BK      # rung 02's tiles: tails everywhere, more than one k-step
    assert M * N * K <= 64 ** 3                          # a few seconds in the simulator


def test_the_no_gpu_hint_is_a_command_that_runs_as_typed(monkeypatch):
    """require_gpu's hint names a command; run as typed, it verifies rungs 01-02 in the simulator on the
    small default shape (a few seconds on two cores)."""
    monkeypatch.setattr(device, "probe_gpu", lambda: (None, "no driver here", None))
    with pytest.raises(RuntimeError) as exc:
        device.require_gpu("Verifying rung 01")
    (command,) = re.findall(r"`(NUMBA_ENABLE_CUDASIM=1 hgemm-course [^`]+)`", str(exc.value))
    setting, _, args = command.partition(" hgemm-course ")
    out = run_cli(*args.split(), env_extra=dict([setting.split("=")]))
    assert out.returncode == 0, out.stderr
    shape = shapes_text([SIM_SHAPE])
    verdicts = [line.partition("  ")[0] for line in out.stdout.splitlines()]   # "rung 01 48x40x72: ok  rel. error ..."
    assert verdicts == [f"rung 01 {shape}: ok", f"rung 02 {shape}: ok"]


LONG_NAME = "x" * 300


@pytest.mark.parametrize("argv", [["check", "ex05", "--path", LONG_NAME], ["results", "--dir", LONG_NAME],
                                  ["profiles", "--dir", LONG_NAME], ["book", "--out", LONG_NAME],
                                  ["plan", LONG_NAME], ["bench", "--shapes", LONG_NAME]])
def test_a_name_too_long_for_any_file_is_refused_in_one_line(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:               # argparse's refusal of a value: its usage, then one line
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert "(300 characters)" in err or "(305 characters)" in err or f"({len(str(tmp_path)) + 301} characters)" in err


def test_numba_disable_jit_runs_plan_and_check():
    env = {"NUMBA_DISABLE_JIT": "1"}
    plan = run_cli("plan", "1024", env_extra=env)
    assert plan.returncode == 0 and "Traceback" not in plan.stderr, plan.stderr
    checked = run_cli("check", "ex05", "--path", "solutions/ex05_swizzle.py", env_extra=env,
                      cwd=os.path.dirname(os.path.dirname(__file__)))
    assert checked.returncode == 0 and "Traceback" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_number_of_numba_threads_that_is_none_is_refused_in_one_line(value):
    out = run_cli("check", "ex05", "--path", "solutions/ex05_swizzle.py", env_extra={"NUMBA_NUM_THREADS": value},
                  cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.returncode == 2 and "Traceback" not in out.stdout + out.stderr, out.stderr
    assert out.stdout == "" and out.stderr.count("\n") == 1 and "NUMBA_NUM_THREADS" in out.stderr


def test_a_bogus_matplotlib_backend_is_refused_in_one_line():
    out = run_cli("viz", "roofline", env_extra={"MPLBACKEND": "bogus"})
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and "MPLBACKEND" in out.stderr


def test_sass_reads_a_rung_as_built_for_another_target(capsys):
    from hgemm_course.course.cli import main

    assert main(["sass", "04", "--arch", "sm_80", "--size", "4096"]) == 0
    assert capsys.readouterr().out.startswith("k04_mma_sync<128, 256, 64, 64, 64, 3, true>: main loop of ")
    assert main(["sass", "04", "--arch", "sm_7"]) == 2
    assert "No target 'sm_7'" in capsys.readouterr().err
