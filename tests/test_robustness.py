"""Attacks on the commands' inputs and outputs, each test named for what it stops: malformed and planted run
files, special files in results/, missing folders and files, sizes past every model's bounds, a full disk,
odd arguments to gemm(), a damaged Numba cache, and a book built from a checkout whose exercises are solved."""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import hgemm_course
from hgemm_course.course import book, book_pages, book_results, book_site
from hgemm_course.library import paths
from hgemm_course.measurement import profile, records
from hgemm_course.check.generate import render, sources
from hgemm_course.course.cli import SIM_MAX_MACS, SIM_MAX_OUTPUTS, main
from hgemm_course.library.paths import results_dir

RECORDED = results_dir()
NEWEST_BENCH = max(RECORDED.glob("bench_nvidia-h200_*.json"))
NEWEST_PROFILE = max((RECORDED / "profiles").glob("profile_nvidia-h200_*.json"))
NEWEST_CEILINGS = max(RECORDED.glob("ceilings_nvidia-h200_*.json"))
LATER = "20991231T000000"                # named after every recorded run, so a planted one would be the newest


def _memory_cap():
    """In the child: at most 16 GiB of address space, so a reader of /dev/zero fails instead of taking the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))


def run_cli(*args, stdout=subprocess.PIPE, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"} | (env_extra or {})
    return subprocess.run([sys.executable, "-m", "hgemm_course.course.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=120, preexec_fn=_memory_cap)


def _run(path: Path, records, provenance=None) -> Path:
    prov = provenance or json.loads(NEWEST_BENCH.read_text())["provenance"]
    path.write_text(json.dumps({"provenance": {**prov, "date": "2099-12-31T00:00:00+00:00"}, "records": records}))
    return path


def _special_files(folder: Path, kind: str) -> list[Path]:
    """A FIFO, a folder and a link to /dev/zero, each named like a run."""
    fifo, folder_run, zero = (folder / f"{kind}_nvidia-h200_{LATER}_{tag}.json" for tag in ("fifo00", "dir000", "zero00"))
    os.mkfifo(fifo)
    folder_run.mkdir()
    zero.symlink_to("/dev/zero")
    return [fifo, folder_run, zero]


@pytest.fixture
def attacked(tmp_path, monkeypatch):
    """A copy of the recorded results/ with malformed runs planted among the real ones: each reader must name
    and skip them. Returns (the folder, the planted files that must be named)."""
    folder = tmp_path / "results"
    (folder / "profiles").mkdir(parents=True)
    for path in [*RECORDED.glob("*.json"), *RECORDED.glob("*.png")]:
        shutil.copy(path, folder / path.name)
    for path in (RECORDED / "profiles").glob("*.json"):
        shutil.copy(path, folder / "profiles" / path.name)
    monkeypatch.setattr(records, "results_dir", lambda: folder)
    monkeypatch.setattr(profile, "results_dir", lambda: folder)
    bench = json.loads(NEWEST_BENCH.read_text())["records"]
    prof = json.loads(NEWEST_PROFILE.read_text())
    ceilings = json.loads(NEWEST_CEILINGS.read_text())
    planted = [
        _run(folder / f"bench_nvidia-h200_{LATER}_text00.json",
             [{**bench[0], "tflops": "12"}, {**bench[1], "M": "8192"}, {**bench[2], "samples_ms": ["1"]}]),
        _run(folder / f"bench_nvidia-h200_{LATER}_list00.json", [1]),
        _run(folder / "profiles" / f"profile_nvidia-h200_{LATER}_text00.json",
             [{**prof["records"][0], "tensor_pipe_active_pct": "97.5"}], prof["provenance"]),
        _run(folder / "profiles" / f"profile_nvidia-h200_{LATER}_list00.json", [1], prof["provenance"]),
        _run(folder / f"ceilings_nvidia-h200_{LATER}_text00.json", [{**ceilings["records"][0], "cublas_tflops": "755"}],
             ceilings["provenance"]),
    ]
    return folder, planted


def _named_once_each(caught, planted):
    said = [str(w.message) for w in caught]
    assert all(len(line.splitlines()) == 1 for line in said)
    missing = [path.name for path in planted if not any(str(path) in line for line in said)]
    assert not missing, f"not named: {missing}; said: {said}"


def test_malformed_records_are_named_and_skipped_by_results_readme_viz_and_book(attacked, tmp_path, monkeypatch,
                                                                                 capsys):
    folder, planted = attacked
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{records.README_BEGIN}\nold\n{records.README_END}\n")
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)
    bench_files = [p for p in planted if p.parent == folder and p.name.startswith("bench_")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["results"]) == 0
        out = capsys.readouterr().out
        assert "Recorded results" in out and "_text00" not in out and "_list00" not in out
        _named_once_each(caught, bench_files)
        assert main(["results", "--readme"]) == 0
        assert "_text00" not in readme.read_text() and "old" not in readme.read_text()
        for figure in ("ladder", "roofline", "shape-sweep", "clocks"):
            caught.clear()
            assert main(["viz", figure, "--out", str(tmp_path / f"{figure}.png")]) == 0, capsys.readouterr().err
            assert (tmp_path / f"{figure}.png").stat().st_size > 0
            _named_once_each(caught, bench_files)
        caught.clear()
        page = book_results.results_page()
        book.draw_figure(book_site.LADDER, tmp_path / "ladder.png")
        assert "_text00" not in page and "ceilings_nvidia-h200_" in page
        _named_once_each(caught, [*bench_files, planted[4]])
        caught.clear()
        profiles = profile.load_profiles()
        assert profiles and not any(LATER in r["file"] for r in profiles)
        _named_once_each(caught, [p for p in planted if p.parent.name == "profiles"])
    assert "traceback" not in capsys.readouterr().err.lower()


def test_a_malformed_record_is_skipped_with_one_line_that_says_what_is_wrong(tmp_path):
    bench = json.loads(NEWEST_BENCH.read_text())["records"]
    path = _run(tmp_path / "bench_x.json", [bench[0], {**bench[1], "pct_cublas": "37.7"}, [], 1])
    with pytest.warns(UserWarning) as caught:
        rows = records.load_records(tmp_path, latest_only=False)
    assert len(rows) == 1 and rows[0]["rung"] == bench[0]["rung"]
    (said,) = [str(w.message) for w in caught]
    assert said.startswith(f"skipped 3 of 4 records of {path}: record 1 has pct_cublas = \"37.7\", not a number")
    assert "(and 2 more)" in said and "delete it" in said


@pytest.mark.parametrize("command, kind", [("results", "bench"), ("profiles", "profile")])
def test_special_files_named_like_runs_are_skipped_without_blocking(command, kind, tmp_path):
    planted = _special_files(tmp_path, kind)
    done = run_cli(command, "--dir", str(tmp_path))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    said = done.stderr.strip().splitlines()
    assert len(said) == 3 and all(any(str(p) in line for line in said) for p in planted)
    assert {"a FIFO, not a file", "a folder, not a file", "a device or socket, not a file"} == {
        line.split("(")[-1].rstrip(")") for line in said}


def test_a_planted_run_without_the_recorded_provenance_is_not_listed_as_recorded(attacked, capsys):
    folder, _ = attacked
    record = {**json.loads(NEWEST_BENCH.read_text())["records"][0], "pct_cublas": 999.0}
    planted = folder / f"bench_nvidia-h200_{LATER}_check0.json"      # what a check's child process could write
    planted.write_text(json.dumps({"provenance": {"date": "2099-12-31T00:00:00+00:00", "gpu": "NVIDIA H200"},
                                   "records": [record]}))
    with pytest.warns(UserWarning, match=rf"skipped {planted}: its provenance lacks driver, cuda_runtime, nvrtc, "
                                         "packages, which every recorded run has"):
        assert main(["results"]) == 0
    out = capsys.readouterr().out
    assert "999.0" not in out and planted.name not in out
    assert f"  {NEWEST_BENCH.name}: NVIDIA H200, " in out              # each run's file is shown: its provenance
    assert not any(planted.name == r["file"] for r in records.load_records())


def test_the_recorded_results_all_still_load_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert records.load_records() and profile.load_profiles()
        for kind in ("tune", "ceilings", "limits", "model", "api", "verify"):
            assert records.load_runs(kind=kind), kind


@pytest.mark.parametrize("where", ["/nonexistent", "file"])
def test_results_of_a_missing_folder_is_refused_in_one_line(where, tmp_path, capsys):
    folder = tmp_path / "a_file" if where == "file" else Path(where)
    if where == "file":
        folder.write_text("")
    assert main(["results", "--dir", str(folder)]) == 2
    (said,) = capsys.readouterr().err.strip().splitlines()
    assert said.startswith(f"hgemm-course results: {folder} is ") and "give --dir a folder" in said


@pytest.mark.parametrize("command", [["plan", "/nonexistent.txt"], ["bench", "--shapes", "/nonexistent"]])
def test_a_missing_file_of_shapes_is_named(command, capsys):
    with pytest.raises(SystemExit) as exited:
        main(command)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"'{command[-1]}': no such file" in err and "give a file of shapes" in err


def test_a_shapes_argument_that_is_a_device_is_not_read():
    done = run_cli("plan", "/dev/zero")
    assert done.returncode == 2 and "'/dev/zero': not a file of shapes" in done.stderr


@pytest.mark.parametrize("args, said", [
    (["1000000"], "M x N = 1000000x1000000 is over the plan's ceiling of 34359738368 (2^35) elements of C"),
    (["10000000"], "over the plan's ceiling of 34359738368 (2^35) elements of C"),
    (["1000000000"], "M=1000000000, N=1000000000, K=1000000000 are over the plan's ceiling of 16777216 (2^24)"),
    (["64x64x100000000"], "K=100000000 is over the plan's ceiling of 16777216 (2^24) per dimension"),
    (["4096", "--units", "100000000000"], "units=100000000000 is over the plan's ceiling of 10000 clusters"),
])
def test_plan_refuses_sizes_past_its_model_in_one_line(args, said):
    done = run_cli("plan", *args)                 # in a child: without the bounds these take minutes and all memory
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("hgemm-course plan: ") and said in line


def test_plan_takes_the_largest_shape_under_its_ceiling():
    p = hgemm_course.library.plan.plan(2**17, 2**18, 2**24)
    assert p.rung in ("11", "12") and p.M == 2**17
    with pytest.raises(ValueError, match=r"units=0: the plan takes whole numbers of at least 1"):
        hgemm_course.library.plan.check_plannable(1, 1, 1, 0)


def test_units_as_a_float_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "4096", "--units", "1e11"])
    assert "'1e11': give a whole number of at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("size", ["100000x100000x1", "512x512x1", "128x128x512"])
def test_the_simulator_refuses_a_size_past_its_bound_in_one_line(size):
    done = run_cli("verify", "01", "02", "--sizes", size, env_extra={"NUMBA_ENABLE_CUDASIM": "1"})
    assert done.returncode == 2
    (said,) = done.stderr.strip().splitlines()
    assert said.startswith(f"hgemm-course verify: {size} is too big for the Numba CUDA simulator")
    assert f"at most {SIM_MAX_OUTPUTS} (2^16) elements of C" in said and f"{SIM_MAX_MACS} (2^22) multiply-adds" in said


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["results"]])
def test_output_to_a_full_disk_is_one_line_and_a_failure(command):
    with open("/dev/full", "w") as full:
        done = run_cli(*command, stdout=full)
    assert done.returncode != 0
    (said,) = done.stderr.strip().splitlines()
    assert said == (f"hgemm-course {command[0]}: cannot write the output (No space left on device); free space "
                    "on the disk it goes to, or redirect it elsewhere.")


def _ab(n=8):
    a = np.ones((n, n), np.float16)
    return a, a.copy()


@pytest.mark.parametrize("rung", [[1], {"11": 1}, 1.5, True])
def test_gemm_refuses_a_rung_that_is_not_an_id(rung):
    a, b = _ab()
    with pytest.raises(TypeError, match=r"^rung must be a rung's id such as '11' or 11 .*hgemm-course list"):
        hgemm_course.gemm(a, b, rung=rung)


@pytest.mark.parametrize("which", ["a", "b"])
def test_gemm_refuses_a_masked_array_whose_mask_it_would_ignore(which):
    a, b = _ab()
    operands = {"a": a, "b": b}
    operands[which] = np.ma.masked_array(operands[which], mask=np.eye(8, dtype=bool))
    with pytest.raises(TypeError, match=rf"{which} is a masked array.*{which}\.filled\(0\).*np\.asarray\({which}\)"):
        hgemm_course.gemm(operands["a"], operands["b"], rung="01")


def test_gemm_refuses_a_masked_out():
    a, b = _ab()
    with pytest.raises(TypeError, match="out is a masked array"):
        hgemm_course.gemm(a, b, rung="01", out=np.ma.masked_array(np.empty((8, 8), np.float16)))


CACHED_MODULE = '''from hgemm_course.sim.cache import cached_njit


@cached_njit()
def add_one(x):
    return x + 1
'''


@pytest.mark.parametrize("damaged", ["nbc", "nbi"])
def test_a_truncated_numba_cache_file_is_rebuilt_with_one_warning(damaged, tmp_path):
    (tmp_path / "cached_mod.py").write_text(CACHED_MODULE)
    call = [sys.executable, "-c", "import cached_mod; print(cached_mod.add_one(41))"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run():
        return subprocess.run(call, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    assert run().stdout.strip() == "42"
    (file,) = (tmp_path / "__pycache__").glob(f"cached_mod.add_one-*.{damaged}")
    file.write_bytes(file.read_bytes()[:20])
    again = run()
    assert again.returncode == 0 and again.stdout.strip() == "42", again.stderr
    warned = [line for line in again.stderr.splitlines() if "UserWarning" in line]
    assert len(warned) == 1 and f"Numba's cache file {file} could not be read" in warned[0]
    assert "deleted the cache of cached_mod.add_one and compiled it afresh" in warned[0]
    healed = run()
    assert healed.stdout.strip() == "42" and not healed.stderr      # cached again, whole


def test_every_cached_simulator_function_is_guarded():
    import importlib

    for name in ("banks", "issue", "l2", "pipeline", "raster", "waves"):
        module = importlib.import_module(f"hgemm_course.sim.{name}")
        cached = [f for f in vars(module).values() if hasattr(f, "_cache") and hasattr(f, "py_func")
                  and f.py_func.__module__ == module.__name__]
        assert cached, name
        for f in cached:
            assert f._cache._cache_file._load_index.__name__ == "read_index", f"{name}.{f.py_func.__name__}"


def test_the_book_publishes_the_exercises_as_generated_not_a_learners_solved_copy(tmp_path):
    root = tmp_path / "checkout"
    (root / "chapters").mkdir(parents=True)
    (root / "results").mkdir()
    shutil.copy(paths.REPO_ROOT / "README.md", root / "README.md")
    (root / "docs").mkdir()
    shutil.copy(paths.REPO_ROOT / book_site.METHOD_PAGE, root / book_site.METHOD_PAGE)
    shutil.copytree(paths.REPO_ROOT / "solutions", root / "exercises")      # every exercise solved in place
    site = tmp_path / "source"
    book.write_sources(site, root)
    for name in sources():
        exercise = " ".join(render(name)[0].split())
        stub = " ".join(book_pages.exercise_code(book_site.ExerciseFile(name, render(name)[0])).split())
        page = " ".join((site / "exercises" / f"{Path(name).stem}.md").read_text().split())
        assert stub in page
        answer = [" ".join(line.split()) for line in render(name)[1].splitlines()]
        leaked = [line for line in answer if len(line) >= 20 and line not in exercise and line in page]
        assert not leaked, f"{name}: the site shows the solution: {leaked[:3]}"
