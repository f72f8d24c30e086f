"""The main job run twice in a row, each in a fresh process, as a learner does on a machine that ran it before:
the second run finds what the first left in the temporary folder both share and in the working folder, and must
print the same compile table."""
import os
import subprocess
import sys

import pytest

from conftest import HAS_GPU
from hgemm_course.course.tour import NEXT_STEPS


def _tour(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["TMPDIR"] = str(tmp_path / "tmp")                       # the cubin cache, shared by both runs
    return subprocess.run([sys.executable, "-m", "hgemm_course.course.cli", "tour"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)


def _compile_table(text: str) -> str:
    return text.split("== Every CUDA kernel compiled for")[1].split("\n== ")[0]


@pytest.mark.skipif(HAS_GPU, reason="the CPU tour; on a GPU the run book's suite step runs the tour twice")
def test_tour_passes_twice_in_a_row_in_fresh_processes(tmp_path):
    (tmp_path / "tmp").mkdir()
    first, second = _tour(tmp_path), _tour(tmp_path)
    for run in (first, second):
        assert run.returncode == 0, run.stdout + run.stderr
        assert "\x00" not in run.stdout + run.stderr and "Traceback" not in run.stderr, run.stderr
        assert run.stdout.rstrip().endswith(NEXT_STEPS)
    assert _compile_table(second.stdout) == _compile_table(first.stdout)
