"""ex11_tile_loop: rung 11's persistent tile loops, compiled and walked through the host model."""
import shutil
from pathlib import Path

import pytest

from hgemm_course.check import check

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex11_tile_loop.cu").read_text()
LOOP = "for (int t = cluster; t < tiles; t += clusters) {"
SKIP = "if (tile.x >= grid_cm || tile.y >= grid_n) continue;  // the edge super tiles are not full"

HOST_MODEL = pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the regions needs g++")


def _mine(tmp_path: Path, text: str) -> Path:
    assert text != SOLUTION, "the mistake was not made: its text is not in the solution"
    path = tmp_path / "ex11_tile_loop.cu"
    path.write_text(text)
    return path


@HOST_MODEL
def test_solution_passes_the_cpu_part():
    result = check("ex11_tile_loop", ROOT / "solutions" / "ex11_tile_loop.cu", gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "every tile once in rung 11's order" in result.message and "the CPU part passed" in result.unchecked


def test_untouched_exercise_fails_with_the_hint():
    result = check("ex11_tile_loop", gpu=False)
    assert result.verdict == "FAIL"
    assert "not written yet (the exercise's placeholder is still there)" in result.message
    assert "Hint: walk this cluster's share of the launch positions" in result.message
    assert "Traceback" not in str(result)


@HOST_MODEL
def test_walking_by_cta_splits_the_clusters(tmp_path):
    text = SOLUTION.replace(LOOP, "for (int t = blockIdx.x; t < tiles; t += gridDim.x) {")
    result = check("ex11_tile_loop", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL" and "the two CTAs of cluster 0 walk different tiles" in result.message


@HOST_MODEL
def test_a_stride_of_one_computes_tiles_twice(tmp_path):
    text = SOLUTION.replace(LOOP, "for (int t = cluster; t < tiles; t += 1) {")
    result = check("ex11_tile_loop", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL" and "is computed by cluster 0 and by cluster 1" in result.message


@HOST_MODEL
def test_unskipped_holes_are_named(tmp_path):
    result = check("ex11_tile_loop", _mine(tmp_path, SOLUTION.replace(SKIP, "")), gpu=False)
    assert result.verdict == "FAIL" and "outside the" in result.message and "partial edge super tile" in result.message


@HOST_MODEL
def test_producer_and_consumer_out_of_step(tmp_path):
    at = SOLUTION.rindex(LOOP)                      # the consumers' loop only
    text = SOLUTION[:at] + "for (int t = cluster + clusters; t < tiles; t += clusters) {" + SOLUTION[at + len(LOOP):]
    result = check("ex11_tile_loop", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL" and "CTA 0's producer walks" in result.message


@HOST_MODEL
def test_a_loop_that_never_ends_is_stopped(tmp_path):
    result = check("ex11_tile_loop", _mine(tmp_path, SOLUTION.replace(LOOP, "for (int t = cluster; t < tiles; t += 0) {")),
                   gpu=False)
    assert result.verdict == "FAIL" and "a loop that never ends" in result.message


@HOST_MODEL
def test_extra_question_off_by_one_is_named(tmp_path):
    text = SOLUTION.replace("tiles - (cdiv(tiles, ctas) - 1) * ctas", "tiles % ctas")
    result = check("ex11_tile_loop", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL" and "last_round_busy_ctas(tiles=1, ctas=1) = 0, expected 1" in result.message


@pytest.mark.gpu
def test_solution_runs_right_on_the_gpu():
    result = check("ex11_tile_loop", ROOT / "solutions" / "ex11_tile_loop.cu", gpu=True)
    assert result.passed, str(result)
    assert "on this GPU: right on" in result.message
