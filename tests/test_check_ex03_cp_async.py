"""ex03_cp_async: the learner's cp.async, commit and wait asm, read through the checker's probe kernels, and rung
03's ring bookkeeping, played through the ring model."""
import shutil
from pathlib import Path

import pytest

from hgemm_course.check import check
from hgemm_course.check.generate import without_markers
from hgemm_course.library.paths import PTX_SNIPPETS_DIR

ROOT = Path(__file__).resolve().parent.parent
SOLUTION_PATH = ROOT / "solutions" / "ex03_cp_async.cu"
SOLUTION = SOLUTION_PATH.read_text()
HEAD = "        cp_async_wait_group<STAGES - 2>();\n        __syncthreads();\n        const int next"
HOST_MODEL = pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the bookkeeping needs g++")


def _mine(tmp_path: Path, old: str, new: str) -> Path:
    assert old in SOLUTION, f"the mistake's text is not in the solution: {old!r}"
    path = tmp_path / "ex03_cp_async.cu"
    path.write_text(SOLUTION.replace(old, new, 1))
    return path


def test_the_solution_holds_the_course_snippet_as_it_compiles():
    body = without_markers((PTX_SNIPPETS_DIR / "cp_async.cuh").read_text()).replace("#pragma once\n", "")
    assert body in SOLUTION


@HOST_MODEL
def test_solution_passes_the_cpu_part():
    result = check("ex03_cp_async", SOLUTION_PATH, gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "commit and wait<N> the group instructions with N's count" in result.message
    assert "each wait leaves the later slices in flight" in result.message


def test_untouched_exercise_fails_in_its_first_line():
    result = check("ex03_cp_async", ROOT / "exercises" / "ex03_cp_async.cu", gpu=False)
    assert result.verdict == "FAIL" and "Traceback" not in str(result)
    assert result.message.splitlines()[0].endswith("the kernel's PTX has no cp.async.commit_group: no copy is ever "
                                                   "closed into a group, so no wait can wait for it.")
    assert "Hint: one inline-asm statement" in result.message


@HOST_MODEL
def test_a_wait_count_one_too_high_reads_a_slice_in_flight(tmp_path):
    result = check("ex03_cp_async", _mine(tmp_path, HEAD, HEAD.replace("STAGES - 2", "STAGES - 1")), gpu=False)
    assert result.verdict == "FAIL"
    assert "with 1 slice, at slice 0, slice 0's tiles are read from stage 0 while this thread's copies of slice 0 " \
           "may still be in flight" in result.message


@HOST_MODEL
def test_a_wait_for_everything_drains_the_ring(tmp_path):
    result = check("ex03_cp_async", _mine(tmp_path, HEAD, HEAD.replace("STAGES - 2", "0")), gpu=False)
    assert result.verdict == "FAIL"
    assert "the wait (cp.async.wait_group 0) waits for slice 0 and also for slice 1" in result.message


@HOST_MODEL
def test_a_commit_only_when_a_slice_is_copied_miscounts_the_tail(tmp_path):
    path = _mine(tmp_path, "        if (next < k_tiles) load_tile(next % STAGES, next);\n        cp_async_commit_group();",
                 "        if (next < k_tiles) {\n            load_tile(next % STAGES, next);\n"
                 "            cp_async_commit_group();\n        }")
    result = check("ex03_cp_async", path, gpu=False)
    assert result.verdict == "FAIL" and "at slice 1, slice 1's tiles are read from stage 1 while" in result.message


@HOST_MODEL
def test_a_refill_before_the_barrier_overwrites_a_stage_in_use(tmp_path):
    path = _mine(tmp_path, "        __syncthreads();\n        const int next = kt + STAGES - 1;\n"
                           "        if (next < k_tiles) load_tile(next % STAGES, next);",
                 "        const int next = kt + STAGES - 1;\n        if (next < k_tiles) load_tile(next % STAGES, next);\n"
                 "        __syncthreads();")
    result = check("ex03_cp_async", path, gpu=False)
    assert result.verdict == "FAIL"
    assert "slice 3 is copied into stage 0 while a warp may still be reading it" in result.message


def test_a_zero_fill_copy_without_its_size_operand(tmp_path):
    path = _mine(tmp_path, '"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" ::"r"(smem_addr), "l"(gmem_ptr),',
                 '"cp.async.cg.shared.global [%0], [%1], 16;\\n" ::"r"(smem_addr), "l"(gmem_ptr),')
    result = check("ex03_cp_async", path, gpu=False)
    assert result.verdict == "FAIL" and "your cp_async_16_zfill has no src-size operand" in result.message


def test_a_wait_that_ignores_n(tmp_path):
    path = _mine(tmp_path, 'asm volatile("cp.async.wait_group %0;\\n" ::"n"(N));',
                 'asm volatile("cp.async.wait_group 1;\\n" ::);')
    result = check("ex03_cp_async", path, gpu=False)
    assert result.verdict == "FAIL"
    assert "issues cp.async.wait_group 1 for N = 0, cp.async.wait_group 1 for N = 1" in result.message


def test_swapped_copy_addresses(tmp_path):
    path = _mine(tmp_path, '"cp.async.cg.shared.global [%0], [%1], 16, %2;', '"cp.async.cg.shared.global [%1], [%0], 16, %2;')
    result = check("ex03_cp_async", path, gpu=False)
    assert result.verdict == "FAIL" and "your copy's destination is the 64-bit global pointer" in result.message


def test_an_l1_cached_copy(tmp_path):
    path = _mine(tmp_path, '"cp.async.cg.shared.global [%0], [%1], 16, %2;', '"cp.async.ca.shared.global [%0], [%1], 16, %2;')
    result = check("ex03_cp_async", path, gpu=False)
    assert result.verdict == "FAIL" and ".ca caches the copy in L1 as well" in result.message


def test_the_rung_kernels_compile_as_without_their_markers(tmp_path):
    from hgemm_course.library.build import compile_cuda
    from hgemm_course.library.ladder import get

    def code(ptx: str) -> list[str]:
        return [line for line in ptx.splitlines() if not line.lstrip().startswith((".file", ".loc", "//", ".b8"))]

    for rung in ("03", "04"):
        spec = get(rung)
        bare = tmp_path / spec.kernel_path.name
        bare.write_text(without_markers(spec.kernel_path.read_text()))
        marked = compile_cuda(spec.kernel_path, name_expressions=spec.name_expressions, arch=spec.arch)
        unmarked = compile_cuda(bare, name_expressions=spec.name_expressions, arch=spec.arch,
                                include_dirs=(spec.kernel_path.parent,))
        assert code(marked.ptx) == code(unmarked.ptx), rung


@pytest.mark.gpu
def test_solution_runs_right_on_the_gpu():
    result = check("ex03_cp_async", SOLUTION_PATH, gpu=True)
    assert result.passed, str(result)
    assert "on this GPU: right on" in result.message


def test_a_plain_copy_the_checker_cannot_compile_is_named(tmp_path):
    """cp_async_16 is not in rung 03's kernel, so only the checker's probe compiles it: a failure there names it."""
    path = _mine(tmp_path, '"cp.async.cg.shared.global [%0], [%1], 16;\\n" ::"r"(smem_addr), "l"(gmem_ptr));',
                 '"cp.async.cg.shared.global [%1], [%0], 16;\\n" ::"r"(smem_addr), "l"(gmem_ptr));')
    result = check("ex03_cp_async", path, gpu=False)
    assert result.verdict == "FAIL"
    assert "the checker calls your cp_async_16 from a small kernel of its own, and that does not compile" in result.message
