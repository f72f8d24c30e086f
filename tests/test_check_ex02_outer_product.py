"""ex02_outer_product: the learner's device function runs in the checker's kernel under the simulator and is compiled
by Numba; wrong ownership, a missing accumulate, a frag loaded once, local memory, a typing error, a syntax error and
hostile files each end in a FAIL that says what happened, and no message gives the loop."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hgemm_course.check import check, resolve

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex02_outer_product.py").read_text()
NAME = "ex02_outer_product"
SHORT_TIMEOUT_S = 5
# the solution's index expressions and its accumulate: no verdict may print them
ANSWER = ["ty + i * THREADS_Y", "tx + j * THREADS_X", "+= a_frag[i] * b_frag[j]", "ty+16", "ty + 16"]


def mine(tmp_path: Path, old: str, new: str) -> Path:
    """The solution with ``old`` replaced by ``new``."""
    assert old in SOLUTION
    path = tmp_path / "mine.py"
    path.write_text(SOLUTION.replace(old, new, 1))
    return path


def failed(path: Path, **kwargs) -> str:
    result = check(NAME, path, **kwargs)
    assert result.verdict == "FAIL", str(result)
    assert "Traceback" not in str(result)
    assert not any(answer in result.message for answer in ANSWER), result.message
    return result.message


def test_the_solution_passes_under_the_simulator_and_compiles_to_registers():
    result = check(NAME, ROOT / "solutions" / f"{NAME}.py")
    assert result.passed, str(result)
    assert "All 8192 cases right" in result.message
    assert "acc, a_frag and b_frag in registers (no local memory)" in result.message


@pytest.mark.gpu
def test_on_the_gpu_the_compiled_solution_runs_and_every_threads_acc_is_right():
    """Where a GPU is here, the kernel around the learner's function is also run compiled, and its acc compared."""
    result = check(NAME, ROOT / "solutions" / f"{NAME}.py")
    assert result.passed, str(result)
    assert ": every thread's acc right" in result.message and "not run on a GPU" not in result.message


def test_the_solution_passes_under_a_large_stack_limit():
    """The simulator's 256 threads each get a small stack of their own, not the shell's (64 MiB here), which would
    overrun the check's memory limit ("can't start new thread")."""
    import resource

    script = (f"import resource; resource.setrlimit(resource.RLIMIT_STACK, ({64 << 20}, {64 << 20}))\n"
              "from hgemm_course.check import check\n"
              f"print(check({NAME!r}, {str(ROOT / 'solutions' / (NAME + '.py'))!r}).verdict)")
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    if hard != resource.RLIM_INFINITY and hard < 64 << 20:
        pytest.skip("the stack's hard limit here is below 64 MiB")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.stdout.strip().splitlines()[-1] == "PASS", run.stdout + run.stderr


def test_the_simulator_runs_one_thread_at_a_time():
    """256 simulated threads at once overran what a check's process could start on the H200's machine: the check's
    kernel run and its trace each run one thread beside the caller's at a time."""
    script = f"""
import threading, importlib.util
live, most = [0], [0]
start, bootstrap = threading.Thread.start, threading.Thread._bootstrap_inner
def counted(self):
    live[0] += 1; most[0] = max(most[0], live[0])
    try:
        bootstrap(self)
    finally:
        live[0] -= 1
threading.Thread._bootstrap_inner = counted
from hgemm_course.check import outer_product_run as run
spec = importlib.util.spec_from_file_location("answer", {str(ROOT / 'solutions' / (NAME + '.py'))!r})
answer = importlib.util.module_from_spec(spec); spec.loader.exec_module(answer)
acc = run.run(answer.outer_products, run="kernel", seed=0)
run.run(answer.outer_products, run="trace", seed=0, ty=3, tx=5)
print(most[0], acc.shape)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    most, shape = done.stdout.split(maxsplit=1)
    assert int(most) <= 2 and shape.strip() == "(16, 16, 4, 4)", done.stdout


def test_the_solution_is_rung_02s_own_loop():
    """The exercise asks for the block of k02_tiled.py after ``# ---- outer products from shared memory``, word for word."""
    kernel = (ROOT / "hgemm_course" / "library" / "ladder" / "k02_tiled.py").read_text()
    block = kernel.split("# ---- outer products from shared memory", 1)[1].split("\n", 1)[1].split("cuda.syncthreads()")[0]
    solved = SOLUTION.split('not loaded yet."""\n', 1)[1]
    assert [line.strip() for line in solved.splitlines() if line.strip()] == \
        [line.strip() for line in block.splitlines() if line.strip()]


def test_the_stub_fails_with_its_hint_in_one_line():
    result = check(NAME)
    assert result.verdict == "FAIL"
    assert result.message.splitlines()[0] == "outer_products is not written yet (it raises NotImplementedError)."
    assert "tid=" not in result.message and "Traceback" not in str(result)


def test_the_cli_passes_the_solution_and_fails_the_stub():
    run = [sys.executable, "-m", "hgemm_course.course.cli", "check", NAME]
    passed = subprocess.run(run + ["--path", "solutions/ex02_outer_product.py"], capture_output=True, text=True, cwd=ROOT)
    assert passed.returncode == 0 and f"{NAME}: PASS" in passed.stdout, passed.stdout + passed.stderr
    stub = subprocess.run(run, capture_output=True, text=True, cwd=ROOT)
    assert stub.returncode == 1 and f"{NAME}: FAIL" in stub.stdout


def test_the_wrong_ownership_stride_names_the_row_and_the_rows_owned(tmp_path):
    message = failed(mine(tmp_path, "a_tile[ty + i * THREADS_Y, kk]", "a_tile[ty * TM + i, kk]"))
    assert message.startswith("acc[1, 0] of thread (ty=0, tx=0), k-slice 0, under the simulator: expected")
    assert "takes a_tile values from row 1, which this thread does not own: it owns rows 0, 16, 32, 48" in message


def test_acc_indices_swapped_use_the_threads_own_rows_for_the_wrong_i(tmp_path):
    message = failed(mine(tmp_path, "acc[i, j] +=", "acc[j, i] +="))
    assert "takes a_tile values from row 16: one of this thread's rows, but not the one the ownership rule pairs " \
           "with i = 0" in message


def test_a_store_instead_of_an_accumulate_keeps_only_the_last_product(tmp_path):
    message = failed(mine(tmp_path, "acc[i, j] +=", "acc[i, j] ="))
    assert "acc[0, 0] of thread (ty=0, tx=0) no longer holds its starting value" in message
    assert "holds only the product for kk = 15" in message


def test_a_frag_loaded_once_outside_the_kk_loop(tmp_path):
    once = ("    for i in range(TM):\n        a_frag[i] = a_tile[ty + i * THREADS_Y, 0]\n    for kk in range(BK):\n"
            "        for j in range(TN):")
    message = failed(mine(tmp_path, "    for kk in range(BK):\n        for i in range(TM):\n"
                                    "            a_frag[i] = a_tile[ty + i * THREADS_Y, kk]\n        for j in range(TN):",
                          once))
    assert "Every product in acc[0, 0] of thread (ty=0, tx=0) takes its a_tile value from column 0, whatever" in message


def test_half_the_slice_names_the_kk_left_out(tmp_path):
    message = failed(mine(tmp_path, "for kk in range(BK):", "for kk in range(BK // 2):"))
    assert "has no product for kk = 8-15: the k-slice is BK = 16 wide" in message


def test_writing_a_shared_tile_is_named(tmp_path):
    message = failed(mine(tmp_path, "b_frag[j] = b_tile[kk, tx + j * THREADS_X]",
                          "b_frag[j] = b_tile[kk, tx + j * THREADS_X]\n            b_tile[kk, 0] = 0.5"))
    assert "Your function writes b_tile[0, 0]" in message


def test_a_runtime_index_into_a_frag_is_local_memory(tmp_path):
    path = mine(tmp_path, "a_frag[i] = a_tile[ty + i * THREADS_Y, kk]", "a_frag[(i + kk) % TM] = a_tile[ty + i * THREADS_Y, kk]")
    path.write_text(path.read_text().replace("acc[i, j] += a_frag[i]", "acc[i, j] += a_frag[(i + kk) % TM]"))
    message = failed(path)
    assert message.startswith("Compiled for sm_") and "keeps acc or a frag in local memory" in message


def test_what_the_simulator_runs_but_numba_cannot_type_is_a_compile_fail(tmp_path):
    message = failed(mine(tmp_path, "    for kk in range(BK):", "    extra = [ty]\n    extra.append(tx)\n    for kk in range(BK):"))
    assert "Your function runs under the simulator, but Numba's CUDA compiler cannot compile it" in message
    assert "TypingError" in message


def test_a_syntax_error_is_one_line_with_its_line_number(tmp_path):
    path = mine(tmp_path, "for kk in range(BK):", "for kk in range(BK)")
    message = failed(path)
    assert re.match(rf"{re.escape(str(path))}, line \d+: SyntaxError: expected ':'", message.splitlines()[0])


def test_an_endless_loop_in_the_function_is_stopped_at_the_timeout(tmp_path):
    path = mine(tmp_path, "    for kk in range(BK):", "    while ty >= 0:\n        pass\n    for kk in range(BK):")
    start = time.monotonic()
    message = failed(path, timeout=SHORT_TIMEOUT_S)
    assert time.monotonic() - start < SHORT_TIMEOUT_S + 10
    assert f"No answer after {SHORT_TIMEOUT_S} s while running outer_products" in message
    assert "is there an endless loop in outer_products?" in message


def test_a_file_that_writes_into_the_course_fails_and_leaves_nothing(tmp_path):
    planted = ROOT / "hgemm_course" / "check" / "planted_by_ex02_outer_product.py"
    path = tmp_path / "mine.py"
    path.write_text(f"open({str(planted)!r}, 'w').write('PASS = True')\n\n" + SOLUTION)
    try:
        failed(path)
        assert not planted.exists()
    finally:
        planted.unlink(missing_ok=True)


def test_a_function_passed_in_is_refused_in_one_line():
    result = check(NAME, lambda *args: None)
    assert result.verdict == "FAIL" and "pass the path of your .py file" in result.message
    assert "\n" not in result.message


@pytest.mark.parametrize("given, name", [("02", "ex02_tiling"), ("ex02", "ex02_tiling"), ("outer_product", NAME),
                                         ("ex02_outer_product.py", NAME)])
def test_the_chapters_number_still_means_its_first_exercise(given, name):
    assert resolve(given) == name
