import json
import os
import subprocess
import sys

import pytest

from conftest import HAS_GPU
from hgemm_course.cli import main


def run_cli(*args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "hgemm_course.cli", *args], capture_output=True, text=True,
                          env=env, timeout=600)


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
    from hgemm_course.harness import BenchRecord
    from hgemm_course.results import write_run

    write_run([BenchRecord("02", 2048, 2048, 2048, 1.0, 17.2, 0.1, 171.8, 10.0, [1.0] * 20, [0.1] * 20)],
              folder=tmp_path)
    assert main(["results", "--json", "--dir", str(tmp_path)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert {"rung", "M", "N", "K", "tflops", "cublas_tflops", "pct_cublas", "gpu", "date"} <= set(row)
    assert row["rung"] == "02" and row["pct_cublas"] == 10.0


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU answer")
def test_bench_without_a_gpu_fails_cleanly():
    out = run_cli("bench", "02", "--sizes", "256")
    assert out.returncode == 2
    assert "Benchmarking needs an NVIDIA GPU" in out.stderr and "Traceback" not in out.stderr


def test_bad_size_argument_is_refused():
    out = run_cli("verify", "01", "--sizes", "12x13")
    assert out.returncode == 2 and "give n" in out.stderr


@pytest.mark.skipif(HAS_GPU, reason="the CPU tour; the GPU tour runs in scripts/h200.sh")
def test_tour_without_a_gpu_compiles_and_simulates():
    out = run_cli("tour")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "hgemm-course doctor" in text
    assert "compiled for its target" in text
    assert "rung 01 48x40x72: ok" in text and "rung 02 48x40x72: ok" in text and "(simulated)" in text
    assert "Recorded H200 results" in text
