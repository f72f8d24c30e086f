"""ex09_wgmma_loop: rung 09's descriptors and wgmma loop, compiled and run through the host model."""
import shutil
from pathlib import Path

import pytest

from hgemm_course.check import check

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex09_wgmma_loop.cu").read_text()
A_START = "a_stage + i * 64 * 128 + kk * 32"
FENCE = "        wgmma_fence();                                // the accumulators are settled before wgmma reads them\n"
WAIT = "wgmma_wait_group<1>();                        // slice kt - 1's products are done; slice kt's run on"

HOST_MODEL = pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the regions needs g++")


def _mine(tmp_path: Path, text: str) -> Path:
    assert text != SOLUTION, "the mistake was not made: its text is not in the solution"
    path = tmp_path / "ex09_wgmma_loop.cu"
    path.write_text(text)
    return path


@HOST_MODEL
def test_solution_passes_the_cpu_part():
    result = check("ex09_wgmma_loop", ROOT / "solutions" / "ex09_wgmma_loop.cu", gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "products with the right descriptors" in result.message and "the CPU part passed" in result.unchecked


def test_untouched_exercise_fails_with_the_hint():
    result = check("ex09_wgmma_loop", gpu=False)
    assert result.verdict == "FAIL"
    assert "has no wgmma.mma_async" in result.message
    assert "Hint: the shared-memory descriptors of a stage's operands" in result.message
    assert "Traceback" not in str(result)


def test_a_compile_error_names_the_learners_line(tmp_path):
    lines = SOLUTION.splitlines()
    at = next(i for i, line in enumerate(lines) if "wgmma_commit_group();" in line)
    lines[at] = lines[at].replace("wgmma_commit_group();", "wgmma_commit_group()")
    result = check("ex09_wgmma_loop", _mine(tmp_path, "\n".join(lines) + "\n"), gpu=False)
    assert result.verdict == "FAIL" and f"ex09_wgmma_loop.cu:{at + 2}: error:" in result.message


@HOST_MODEL
def test_a_k_step_of_16_bytes_is_decoded(tmp_path):
    result = check("ex09_wgmma_loop", _mine(tmp_path, SOLUTION.replace(A_START, "a_stage + i * 64 * 128 + kk * 16")),
                   gpu=False)
    assert result.verdict == "FAIL"
    assert "product 0, k16 step 1: the descriptor of A" in result.message
    assert "start address" in result.message


def test_a_missing_fence_is_named(tmp_path):
    result = check("ex09_wgmma_loop", _mine(tmp_path, SOLUTION.replace(FENCE, "")), gpu=False)
    assert result.verdict == "FAIL" and "has no wgmma.fence" in result.message


@HOST_MODEL
def test_a_fence_after_the_products_is_caught_by_the_model(tmp_path):
    text = SOLUTION.replace(FENCE, "").replace("        wgmma_commit_group();\n",
                                                "        wgmma_fence();\n        wgmma_commit_group();\n")
    result = check("ex09_wgmma_loop", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL" and "comes before any wgmma_fence()" in result.message


@HOST_MODEL
def test_waiting_on_two_groups_frees_a_stage_in_use(tmp_path):
    result = check("ex09_wgmma_loop", _mine(tmp_path, SOLUTION.replace(WAIT, "wgmma_wait_group<2>();")), gpu=False)
    assert result.verdict == "FAIL"
    assert "wgmma_wait_group<2> leaves 2 groups running" in result.message


@HOST_MODEL
def test_waiting_on_nothing_in_flight_passes_with_a_note(tmp_path):
    result = check("ex09_wgmma_loop", _mine(tmp_path, SOLUTION.replace(WAIT, "wgmma_wait_group<0>();")), gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "the tensor cores idle" in result.message


@HOST_MODEL
def test_extra_question_with_the_128b_stride_is_decoded(tmp_path):
    result = check("ex09_wgmma_loop", _mine(tmp_path, SOLUTION.replace("wgmma_desc_field(8 * 64)",
                                                                       "wgmma_desc_field(8 * 128)")), gpu=False)
    assert result.verdict == "FAIL"
    assert "desc_a_swizzle_64b(a_stage=1024, i=0, kk=0)" in result.message and "stride" in result.message


@pytest.mark.gpu
def test_solution_runs_right_on_the_gpu():
    result = check("ex09_wgmma_loop", ROOT / "solutions" / "ex09_wgmma_loop.cu", gpu=True)
    assert result.passed, str(result)
    assert "on this GPU: right on" in result.message
