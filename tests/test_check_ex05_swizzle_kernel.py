"""ex05_swizzle_kernel: rung 05's swizzled addresses, compiled and run through the host and bank models."""
import shutil
from pathlib import Path

import pytest

from hgemm_course.check import check

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex05_swizzle_kernel.cu").read_text()
A_STORE = "cp_async_16_zfill(a_stage + swizzle_128b(row, chunk), src, inside ? 16 : 0);"
B_STORE = "cp_async_16_zfill(b_stage + (chunk / 8) * B_PANEL + swizzle_128b(row, chunk % 8), src, inside ? 16 : 0);"
A_LANE = "const unsigned a_lane = swizzle_128b(warp_m * WM + lane % 16, lane / 16);"
A_READ = "a_stage + (a_lane ^ (kk * 32)) + i * 16 * 128"

HOST_MODEL = pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the regions needs g++")


def _mine(tmp_path: Path, text: str) -> Path:
    assert text != SOLUTION, "the mistake was not made: its text is not in the solution"
    path = tmp_path / "ex05_swizzle_kernel.cu"
    path.write_text(text)
    return path


@HOST_MODEL
def test_solution_passes_the_cpu_part():
    result = check("ex05_swizzle_kernel", ROOT / "solutions" / "ex05_swizzle_kernel.cu", gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "takes its ideal wavefronts" in result.message and "the CPU part passed" in result.unchecked


def test_untouched_exercise_fails_with_the_hint():
    result = check("ex05_swizzle_kernel", gpu=False)
    assert result.verdict == "FAIL"
    assert "has no xor" in result.message and "Hint: where chunk (row, chunk) of A goes" in result.message
    assert "Traceback" not in str(result)


@HOST_MODEL
def test_adding_the_k_step_reads_the_wrong_chunk(tmp_path):
    result = check("ex05_swizzle_kernel", _mine(tmp_path, SOLUTION.replace(A_READ, "a_stage + a_lane + kk * 32 + i * 16 * 128")),
                   gpu=False)
    assert result.verdict == "FAIL"
    assert "lane 2 of warp 0, k-step 1, A fragment 0: the mma needs (row 2, chunk 2)" in result.message


@HOST_MODEL
def test_b_rows_without_panels_overwrite(tmp_path):
    result = check("ex05_swizzle_kernel", _mine(tmp_path, SOLUTION.replace(
        B_STORE, "cp_async_16_zfill(b_stage + swizzle_128b(row, chunk), src, inside ? 16 : 0);")), gpu=False)
    assert result.verdict == "FAIL" and "the second copy overwrites the first" in result.message


@HOST_MODEL
def test_a_consistent_unswizzled_a_is_a_bank_conflict(tmp_path):
    text = (SOLUTION.replace(A_STORE, "cp_async_16_zfill(a_stage + row * 128 + chunk * 16, src, inside ? 16 : 0);")
            .replace(A_LANE, "const unsigned a_lane = (warp_m * WM + lane % 16) * 128 + (lane / 16) * 16;")
            .replace(A_READ, "a_stage + a_lane + kk * 32 + i * 16 * 128"))
    result = check("ex05_swizzle_kernel", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL"
    assert "warp 0's ldmatrix number 0 at k-step 0 (of A) reads shared memory in 32 wavefronts where 4 do: " \
           "a 8-way bank conflict" in result.message


@HOST_MODEL
def test_extra_question_with_the_64b_pattern_is_named(tmp_path):
    text = SOLUTION.replace("row * 32 + ((chunk ^ (row / 4 % 2)) << 4)", "row * 32 + ((chunk ^ (row / 2 % 2)) << 4)")
    result = check("ex05_swizzle_kernel", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL" and "swizzle_32b(row=2, chunk=0) = 80, expected 64" in result.message


@pytest.mark.gpu
def test_solution_runs_right_on_the_gpu():
    result = check("ex05_swizzle_kernel", ROOT / "solutions" / "ex05_swizzle_kernel.cu", gpu=True)
    assert result.passed, str(result)
    assert "on this GPU: right on" in result.message
