"""hgemm_course.check.python_exercise: a learner's code that exits, hangs, crashes or asks for too much
memory is a FAIL that says what happened and where, and the checker itself carries on.

Each hostile file is the ex05 solution with one bad line put in at the top level (runs on
import) or at the top of swizzle_128b (runs on the first call, row=0 and chunk=0).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hgemm_course.check import check, run_check
from hgemm_course.check.feedback import MEMORY_LIMIT_GIB

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex05_swizzle.py").read_text()
SHORT_TIMEOUT_S = 3


def hostile(tmp_path: Path, bad_line: str, *, at_import: bool) -> tuple[Path, int]:
    """The ex05 solution with ``bad_line`` put in; (its path, the bad line's number)."""
    anchor = "\n\ndef swizzle_128b" if at_import else ' of ``row`` is stored."""\n'   # the end of its docstring
    indent = "" if at_import else "    "
    head, tail = SOLUTION.split(anchor)
    text = head + ("\n" if at_import else anchor) + indent + bad_line + "\n" + (anchor if at_import else "") + tail
    path = tmp_path / "mine.py"
    path.write_text(text)
    line = text.splitlines().index(indent + bad_line) + 1
    return path, line


def test_sys_exit_at_import(tmp_path):
    path, line = hostile(tmp_path, "import sys; sys.exit(0)", at_import=True)
    result = check("ex05", path)
    assert not result.passed
    assert f"{path}, line {line}: importing the file ended the program with SystemExit(0)" in result.message


def test_raise_system_exit_in_the_function(tmp_path):
    path, line = hostile(tmp_path, "raise SystemExit(0)", at_import=False)
    result = check("ex05", path)
    assert not result.passed
    assert "swizzle_128b(row=0, chunk=0) ended the program with SystemExit(0)" in result.message
    assert f"at {path}, line {line}: raise SystemExit(0)" in result.message


def test_os_exit_at_import(tmp_path):
    path, line = hostile(tmp_path, "import os; os._exit(0)", at_import=True)
    result = check("ex05", path)
    assert not result.passed
    assert "ended the process with os._exit(0) while importing your file, before giving an answer" in result.message
    assert f"at {path}, line {line}: import os; os._exit(0)" in result.message
    assert result.first_failure["got"] == "os._exit(0)"


def test_os_exit_in_the_function(tmp_path):
    path, line = hostile(tmp_path, "import os; os._exit(3)", at_import=False)
    result = check("ex05", path)
    assert not result.passed
    assert "os._exit(3) while running swizzle_128b" in result.message
    assert f"in swizzle_128b(row=0, chunk=0) at {path}, line {line}" in result.message


def test_endless_loop_at_import(tmp_path):
    path, line = hostile(tmp_path, "while True: pass", at_import=True)
    start = time.monotonic()
    result = check("ex05", path, timeout=SHORT_TIMEOUT_S)
    assert time.monotonic() - start < SHORT_TIMEOUT_S + 5
    assert not result.passed
    assert f"No answer after {SHORT_TIMEOUT_S} s while importing your file" in result.message
    assert f"at {path}, line {line}: while True: pass" in result.message
    assert "--timeout SECONDS" in result.message


def test_endless_loop_in_the_function_names_the_call(tmp_path):
    path, line = hostile(tmp_path, "while row == 3: pass", at_import=False)
    result = check("ex05", path, timeout=SHORT_TIMEOUT_S)
    assert not result.passed
    assert "is there an endless loop in swizzle_128b?" in result.message
    assert f"in swizzle_128b(row=3, chunk=0) at {path}, line {line}: while row == 3: pass" in result.message


def test_huge_allocation_at_import_is_a_memory_error(tmp_path):
    path, line = hostile(tmp_path, "BUFFER = bytearray(64 * 2**30)", at_import=True)
    result = check("ex05", path)
    assert not result.passed
    assert f"{path}, line {line}: importing the file raised MemoryError" in result.message
    assert f"more than the {MEMORY_LIMIT_GIB} GiB memory limit" in result.message


def test_huge_numpy_allocation_in_the_function_is_a_memory_error(tmp_path):
    path, line = hostile(tmp_path, "import numpy; numpy.ones(100 * 2**30 // 8)", at_import=False)
    result = check("ex05", path)
    assert not result.passed
    assert "swizzle_128b(row=0, chunk=0) raised MemoryError" in result.message
    assert f"at {path}, line {line}" in result.message


def test_crash_is_named_by_its_signal(tmp_path):
    path, _ = hostile(tmp_path, "import ctypes; ctypes.string_at(0)", at_import=False)
    result = check("ex05", path)
    assert not result.passed
    assert "killed by SIGSEGV while running swizzle_128b" in result.message


def test_the_whole_process_group_is_killed(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    path, _ = hostile(tmp_path, f"import subprocess; open({str(pid_file)!r}, 'w').write("
                                "str(subprocess.Popen(['sleep', '600']).pid)); exec('while True: pass')",
                      at_import=True)
    assert not check("ex05", path, timeout=SHORT_TIMEOUT_S).passed
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 2                      # SIGKILL is delivered, not waited for
    while running(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(grandchild)


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed but not yet reaped by whoever adopted it, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_child_works_in_a_fresh_temporary_folder(tmp_path):
    cwd_file = tmp_path / "cwd.txt"
    path, _ = hostile(tmp_path, f"import os; open({str(cwd_file)!r}, 'w').write(os.getcwd())", at_import=True)
    assert check("ex05", path).passed
    folder = Path(cwd_file.read_text())
    assert folder != Path.cwd() and folder != tmp_path and not folder.exists()


def test_numba_imports_and_compiles_under_the_memory_limit(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("import numba\n\n\n@numba.njit\ndef _swizzle(row, chunk):\n    return chunk ^ (row % 8)\n\n\n"
                    "def swizzle_128b(row, chunk):\n    return int(_swizzle(row, chunk))\n")
    result = check("ex05", path)
    assert result.passed, str(result)


@pytest.mark.parametrize("func, says", [
    (lambda row, chunk: os._exit(0), "os._exit(0) while running swizzle_128b"),
    (lambda row, chunk: sys.exit(1), "ended the program with SystemExit(1)"),
])
def test_a_function_passed_in_cannot_end_the_caller(func, says):
    result = check("ex05", func)
    assert not result.passed and says in result.message


def test_a_function_passed_in_that_hangs_times_out():
    def swizzle_128b(row, chunk):
        while True:
            pass

    result = check("ex05", swizzle_128b, timeout=SHORT_TIMEOUT_S)
    assert not result.passed
    assert "is there an endless loop in swizzle_128b?" in result.message
    assert "in swizzle_128b(row=0, chunk=0) at" in result.message and "while True:" in result.message


def test_timeout_must_be_positive(capsys):
    with pytest.raises(ValueError, match="positive number of seconds"):
        check("ex05", timeout=0)
    assert run_check("ex05", timeout=-1) == 2
    assert "positive number of seconds" in capsys.readouterr().out


# ------------------------------------------------------------------- which file is checked

def test_a_copy_in_the_current_folder_comes_first(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "ex05_swizzle.py").write_text(SOLUTION)
    result = check("ex05")
    assert result.passed and result.source == tmp_path / "exercises" / "ex05_swizzle.py"

    (tmp_path / "ex05_swizzle.py").write_text("def swizzle_128b(row, chunk):\n    return chunk\n")
    assert run_check("ex05") == 1
    assert capsys.readouterr().out.startswith("checking ex05_swizzle.py\nex05_swizzle: FAIL")


def test_without_a_copy_here_the_checkout_exercise_is_checked(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run_check("ex05") == 1
    assert capsys.readouterr().out.startswith(f"checking {ROOT / 'exercises' / 'ex05_swizzle.py'}\n")


# -------------------------------------------------------------------------------- the CLI

def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hgemm_course.course.cli", "check", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_cli_exit_codes(tmp_path):
    passed = cli("ex05_swizzle", "--path", "solutions/ex05_swizzle.py")
    assert passed.returncode == 0
    assert passed.stdout.startswith("checking solutions/ex05_swizzle.py\nex05_swizzle: PASS")

    path, _ = hostile(tmp_path, "import sys; sys.exit(0)", at_import=True)
    failed = cli("ex05", "--path", str(path))
    assert failed.returncode == 1 and "ex05_swizzle: FAIL" in failed.stdout and "SystemExit(0)" in failed.stdout

    for args in (["ex05", "--path", str(tmp_path / "missing.py")], ["ex99"]):
        unchecked = cli(*args)
        assert unchecked.returncode == 2
        assert unchecked.stdout.count("\n") == 1 and "Traceback" not in unchecked.stdout + unchecked.stderr


def test_cli_list_and_help():
    listed = cli("--list")
    assert listed.returncode == 0 and listed.stdout.startswith("ex01_naive ")
    helped = cli("--help")
    assert "--path PATH" in helped.stdout and "--timeout SECONDS" in helped.stdout and "default: 60" in helped.stdout


# ---------------------------------------------------------------------------- in a notebook

def test_a_notebook_kernel_survives_a_hostile_exercise(tmp_path):
    """check() in a Jupyter kernel: a file calling os._exit and a function calling it leave the kernel alive."""
    from jupyter_client.manager import start_new_kernel

    path, _ = hostile(tmp_path, "import os; os._exit(0)", at_import=True)
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        outputs = []
        code = ("import os\nfrom hgemm_course.check import check\n"
                f"print(check('ex05', {str(path)!r}).passed, check('ex05', lambda row, chunk: os._exit(0)).passed)\n"
                "print('still here')")
        reply = client.execute_interactive(code, timeout=120, output_hook=lambda msg: outputs.append(msg))
        text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
        assert reply["content"]["status"] == "ok", text
        assert "False False\nstill here" in text
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_learner_file_imports_its_neighbours(tmp_path):
    """As `python FILE` would: a helper module beside the learner's file imports in the checker's child."""
    (tmp_path / "my_helpers.py").write_text("def xor_swizzle(row, chunk):\n    return chunk ^ (row % 8)\n")
    path = tmp_path / "mine.py"
    path.write_text("from my_helpers import xor_swizzle\n\n\ndef swizzle_128b(row, chunk):\n"
                    "    return xor_swizzle(row, chunk)\n")
    result = check("ex05", path)
    assert result.passed, result.message
