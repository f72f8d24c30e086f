"""ex04_mma_sync: the learner's ldmatrix and mma.sync asm, read through the checker's probe kernels and the fragment
emulator, and rung 04's double-buffered k-step, played through the ring model."""
import shutil
from pathlib import Path

import pytest

from hgemm_course.check import check
from hgemm_course.check.generate import without_markers
from hgemm_course.library.paths import PTX_SNIPPETS_DIR

ROOT = Path(__file__).resolve().parent.parent
SOLUTION_PATH = ROOT / "solutions" / "ex04_mma_sync.cu"
SOLUTION = SOLUTION_PATH.read_text()
HOST_MODEL = pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the k-step needs g++")


def _mine(tmp_path: Path, old: str, new: str) -> Path:
    assert SOLUTION.count(old) >= 1, f"the mistake's text is not in the solution: {old!r}"
    path = tmp_path / "ex04_mma_sync.cu"
    path.write_text(SOLUTION.replace(old, new, 1))
    return path


def test_the_solution_holds_the_course_snippets_as_they_compile():
    """The solution's asm is the snippets' own, not a copy that can drift."""
    for header in ("ldmatrix.cuh", "mma_sync.cuh"):
        body = without_markers((PTX_SNIPPETS_DIR / header).read_text()).replace("#pragma once\n", "")
        assert body in SOLUTION, header


@HOST_MODEL
def test_solution_passes_the_cpu_part():
    result = check("ex04_mma_sync", SOLUTION_PATH, gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "mma_m16n8k16 adds A @ B to d" in result.message
    assert "each k-step's fragments load while the previous k-step's mma run" in result.message


def test_untouched_exercise_fails_in_its_first_line():
    result = check("ex04_mma_sync", ROOT / "exercises" / "ex04_mma_sync.cu", gpu=False)
    assert result.verdict == "FAIL" and "Traceback" not in str(result)
    assert result.message.splitlines()[0].endswith("the kernel's PTX has no ldmatrix: no fragment is loaded from "
                                                   "shared memory: ldmatrix_x4 and ldmatrix_x4_trans issue nothing, "
                                                   "or nothing calls them.")
    assert "Hint: one inline-asm statement" in result.message


def test_swapped_mma_operands_are_named(tmp_path):
    path = _mine(tmp_path, ': "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));',
                 ': "r"(b[0]), "r"(b[1]), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]));')
    result = check("ex04_mma_sync", path, gpu=False)
    assert result.verdict == "FAIL"
    assert "its A operand gets b[0], b[1], a[0], a[1]; its B operand gets a[2], a[3]" in result.message
    assert "D comes out wrong in" in result.message


def test_ldmatrix_without_trans_for_b_says_what_a_lane_gets(tmp_path):
    path = _mine(tmp_path, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.shared.b16")
    result = check("ex04_mma_sync", path, gpu=False)
    assert result.verdict == "FAIL"
    assert "your ldmatrix_x4_trans issues ldmatrix without .trans" in result.message
    assert "lane 0's r0 would hold B[k 0, n 0-1], where mma.sync reads B[k 0-1, n 0]" in result.message


def test_ldmatrix_registers_out_of_order(tmp_path):
    path = _mine(tmp_path, ': "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)', ': "=r"(r0), "=r"(r2), "=r"(r1), "=r"(r3)')
    result = check("ex04_mma_sync", path, gpu=False)
    assert result.verdict == "FAIL"
    assert "lane 0's r1 would hold A[0, 8-9], where mma.sync reads A[8, 0-1]" in result.message


def test_write_only_accumulators_are_not_added_to(tmp_path):
    path = _mine(tmp_path, ': "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])',
                 ': "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])')
    result = check("ex04_mma_sync", path, gpu=False)
    assert result.verdict == "FAIL" and "the old d never reaches the instruction" in result.message


@HOST_MODEL
def test_one_fragment_buffer_is_not_double_buffering(tmp_path):
    path = _mine(tmp_path, "load_fragments((kk + 1) % 2, kt % STAGES, kk + 1);",
                 "load_fragments(kk % 2, kt % STAGES, kk + 1);")
    result = check("ex04_mma_sync", path, gpu=False)
    assert result.verdict == "FAIL"
    assert "at slice 0, k-step 1, the mma read fragments that were loaded after the previous k-step's mma had " \
           "started" in result.message


@HOST_MODEL
def test_no_wait_before_the_next_slice_reads_copies_in_flight(tmp_path):
    path = _mine(tmp_path, "                cp_async_wait_group<STAGES - 2>();    // slice kt + 1 has landed "
                           "(this thread's part)\n", "")
    result = check("ex04_mma_sync", path, gpu=False)
    assert result.verdict == "FAIL"
    assert "k-step 0's fragments are read from stage 1 while this thread's copies of slice 1 (piece 0) may still " \
           "be in flight" in result.message


@HOST_MODEL
def test_no_barrier_after_the_wait(tmp_path):
    path = _mine(tmp_path, "                __syncthreads();                      // every thread's part, and slice "
                           "kt is read out\n", "")
    result = check("ex04_mma_sync", path, gpu=False)
    assert result.verdict == "FAIL" and "with no __syncthreads since" in result.message


@pytest.mark.gpu
def test_solution_runs_right_on_the_gpu():
    result = check("ex04_mma_sync", SOLUTION_PATH, gpu=True)
    assert result.passed, str(result)
    assert "on this GPU: right on" in result.message


@pytest.mark.gpu
def test_swapped_operands_fail_on_the_cpu_before_the_gpu_runs(tmp_path):
    path = _mine(tmp_path, ': "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));',
                 ': "r"(b[0]), "r"(b[1]), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]));')
    result = check("ex04_mma_sync", path, gpu=True)
    assert result.verdict == "FAIL" and "its A operand gets" in result.message


@pytest.mark.parametrize("given, path, name", [
    ("ex04", "solutions/ex04_mma_sync.cu", "ex04_mma_sync"), ("04", "solutions/ex04_ldmatrix.py", "ex04_ldmatrix"),
    ("ex03", "solutions/ex03_cp_async.cu", "ex03_cp_async"), ("03", "solutions/ex03_wmma.cu", "ex03_wmma"),
    ("ex05", "solutions/ex05_swizzle_kernel.cu", "ex05_swizzle_kernel"), ("ex04", None, "ex04_ldmatrix"),
])
def test_a_chapter_number_with_a_file_checks_the_exercise_the_file_is(given, path, name):
    from hgemm_course.check import _for_file, resolve

    assert _for_file(resolve(given), ROOT / path if path else None) == name


def test_a_cu_file_of_any_name_given_with_the_chapter_number_is_its_kernel_exercise(tmp_path):
    from hgemm_course.check import _for_file

    assert _for_file("ex04_ldmatrix", tmp_path / "my_ex04.cu") == "ex04_mma_sync"
    assert _for_file("ex04_ldmatrix", tmp_path / "my_ex04.py") == "ex04_ldmatrix"
