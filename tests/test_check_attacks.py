"""Attacks on the checker, each written as the hostile or careless learner's file that used to get through,
and what stops it now: the verdict is decided in the caller's process from plain data the child sends back
(hgemm_course.check.python_exercise), every process a check starts is gone when it returns (check.sandbox), the course's
files and results are watched (check.watch), the learner's folder shadows nothing, and every bad input is
a verdict or a one-line refusal.

Most files are the ex05 solution with lines put in at its top (they run on import) or at the top of
swizzle_128b (they run on the first call).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hgemm_course.check import check, run_check
from hgemm_course.check.answer_format import MAX_FRAME_BYTES, decode, encode
from hgemm_course.check.caller import TIMEOUT_RANGE_S
from hgemm_course.check.feedback import OUTPUT_CAP_BYTES

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex05_swizzle.py").read_text()
EX03 = (ROOT / "solutions" / "ex03_wmma.cu").read_text()
EX03_FIRST_LOAD = "#pragma unroll\n            for (int i = 0; i < FRAG_M; ++i) {\n                wmma::load_matrix_sync(a_frag[i]"
WRONG_128B = "def swizzle_128b(row, chunk):\n    return chunk\n"
ANSWER_FD = "json.loads(sys.argv[-1])['answer_fd']"       # where the child writes its answers


def mine(tmp_path: Path, text: str, name: str = "mine.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def on_import(tmp_path: Path, lines: str, body: str = SOLUTION) -> Path:
    """``body`` (the ex05 solution) with ``lines`` run when the file is imported."""
    return mine(tmp_path, lines + "\n\n" + body)


def in_function(tmp_path: Path, lines: str) -> Path:
    """The ex05 solution with ``lines`` at the top of swizzle_128b."""
    anchor = ' of ``row`` is stored."""\n'
    indented = "".join(f"    {line}\n" for line in lines.splitlines())
    return mine(tmp_path, SOLUTION.replace(anchor, anchor + indented, 1))


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hgemm_course.course.cli", "check", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone(pids: list[int], within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while any(map(running, pids)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(map(running, pids))


# ----------------------------------------------------------------------- the verdict cannot be forged

def test_a_pickle_written_to_the_childs_pipe_runs_nothing_and_is_a_fail(tmp_path):
    """The child used to send a pickled verdict, which the parent unpickled: a payload ran code in the caller."""
    marker = tmp_path / "ran-in-the-caller"
    path = on_import(tmp_path, f"import json, os, pickle, sys\n"
                               f"class Evil:\n    def __reduce__(self):\n        return (open, ({str(marker)!r}, 'w'))\n"
                               f"os.write({ANSWER_FD}, pickle.dumps(('verdict', Evil())))", WRONG_128B)
    result = check("ex05", path)
    assert result.verdict == "FAIL" and not marker.exists()
    assert "not an answer" in result.message or "more than the checker reads" in result.message


def test_a_forged_verdict_message_is_a_fail_naming_what_came_back(tmp_path):
    """("verdict", 5) on the pipe used to crash the parent with a traceback."""
    path = on_import(tmp_path, "import json, os, struct, sys\n"
                               "body = json.dumps({'verdict': 5}).encode()\n"
                               f"os.write({ANSWER_FD}, struct.pack('>I', len(body)) + body)")
    result = check("ex05", path)
    assert result.verdict == "FAIL" and result.exit_code == 1
    assert "sent back something that is not an answer" in result.message and "{'verdict': 5}" in result.message
    assert "Traceback" not in str(result)


def test_patching_the_checker_inside_the_child_changes_nothing(tmp_path):
    """EXERCISE.verify and ex05_swizzle._reference patched in the child used to give PASS for a wrong answer."""
    path = on_import(tmp_path, "import hgemm_course.check.ex05_swizzle as m\n"
                               "m._reference = lambda row, chunk: chunk\n"
                               "m.EXERCISE.verify = lambda learner: 'All cases right'", WRONG_128B)
    result = check("ex05", path)
    assert result.verdict == "FAIL" and "swizzle_128b(row=1, chunk=0): expected 1, got 0" in result.message


def test_an_answer_that_claims_to_equal_everything_is_judged_by_its_value(tmp_path):
    path = mine(tmp_path, "class Yes(int):\n    def __eq__(self, other):\n        return True\n"
                          "    def __ne__(self, other):\n        return False\n    __hash__ = int.__hash__\n\n"
                          "class Anything:\n    def __eq__(self, other):\n        return True\n\n"
                          "def swizzle_128b(row, chunk):\n    return Yes(chunk) if row % 2 else Anything()\n")
    result = check("ex05", path)
    assert result.verdict == "FAIL"
    assert "swizzle_128b(row=0, chunk=0) returned" in result.message and "(Anything)" in result.message


def test_what_the_child_sends_is_read_as_data_only():
    for value in (3, -2**70, 1.5, "x", None, True, (1, (2, 3)), [1, [2]], {"a": (1, 2)}):
        assert decode(encode(value)) == value and type(decode(encode(value))) is type(value)
    for bad in ({"__reduce__": "os.system"}, {"tuple": 3}, {"ndarray": [1], "dtype": "object"}, {"dict": [[[1], 2]]}):
        with pytest.raises(Exception, match="format|rebuilt|not a value"):
            decode(bad)


def test_printing_a_fake_verdict_shows_only_as_the_learners_output(tmp_path):
    path = in_function(tmp_path, "print('ex05_swizzle: PASS')\nreturn chunk")
    out = cli("ex05", "--path", str(path))
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert lines[1] == "ex05_swizzle: FAIL"
    assert "  | ex05_swizzle: PASS" in lines and "ex05_swizzle: PASS" not in lines


# ------------------------------------------------------------- nothing outlives or outgrows a check

def _pid_file_line(pid_file: Path, argv: str, session: bool) -> str:
    return (f"import subprocess\nopen({str(pid_file)!r}, 'a').write(str(subprocess.Popen({argv}, "
            f"start_new_session={session}).pid) + '\\n')")


def test_a_setsid_grandchild_does_not_survive_the_check(tmp_path):
    pids = tmp_path / "pids"
    path = on_import(tmp_path, _pid_file_line(pids, "['sleep', '600']", True) + "\n"
                     + "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                       f"        open({str(pids)!r}, 'a').write(str(os.getpid()) + '\\n')\n"
                       "        import time; time.sleep(600)\n    os._exit(0)")
    assert check("ex05", path).passed
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 2 and gone(started)


def test_a_function_passed_in_that_starts_a_setsid_process_leaves_none():
    def swizzle_128b(row, chunk):
        if row == chunk == 0:
            print("pid", subprocess.Popen(["sleep", "600"], start_new_session=True).pid, flush=True)
        return chunk ^ (row % 8)

    result = check("ex05", swizzle_128b)
    assert result.passed, str(result)
    assert gone([int(result.output.split()[1])])


def test_a_host_model_region_that_starts_a_setsid_process_leaves_none(tmp_path):
    pid_file = tmp_path / "pid"
    start = (f'#ifndef __CUDACC__\nif (kk == 0) std::system("setsid sleep 600 >/dev/null 2>&1 & echo $! >> {pid_file}");\n'
             "#endif\n")                                           # for g++ only: NVRTC has no std::system
    path = mine(tmp_path, EX03.replace(EX03_FIRST_LOAD, start + EX03_FIRST_LOAD), "ex03_wmma.cu")
    result = check("ex03", path, gpu=False)
    assert result.verdict == "could not check", str(result)          # the region is right: only the GPU part is missing
    pids = [int(line) for line in pid_file.read_text().split()]
    assert pids and gone(pids)


def test_a_compile_that_never_ends_stops_at_the_timeout(tmp_path):
    """A macro bomb still compiled at 180 s with --timeout 10, in the caller's own process."""
    bomb = "#define B0 (1+1)\n" + "".join(f"#define B{i} B{i - 1}+B{i - 1}\n" for i in range(1, 40))
    path = mine(tmp_path, bomb + "constexpr long bomb = B36;\n" + EX03, "ex03_wmma.cu")
    start = time.monotonic()
    result = check("ex03", path, gpu=False, timeout=2)
    assert time.monotonic() - start < 8
    assert result.verdict == "FAIL" and "did not compile within 2 s" in result.message


def test_a_region_that_prints_forever_is_stopped_at_the_cap(tmp_path):
    """A host-model region that printed forever grew the caller to 7.8 GB in 30 s."""
    flood = ('#ifndef __CUDACC__\nif (kk == 0) for (;;) std::printf("%s\\n", "flooding the checker with lines it never asked '
             'for");\n#endif\n')
    path = mine(tmp_path, EX03.replace(EX03_FIRST_LOAD, flood + EX03_FIRST_LOAD), "ex03_wmma.cu")
    result = check("ex03", path, gpu=False)
    assert result.verdict == "FAIL" and "printed more than 64 MiB" in result.message


def test_what_learner_code_prints_is_kept_up_to_the_cap_and_the_cap_is_said(tmp_path):
    path = on_import(tmp_path, "print('x' * 1_000_000)")
    result = check("ex05", path)
    assert result.passed and len(result.output) <= OUTPUT_CAP_BYTES
    assert result.output_dropped > 900_000
    assert f"the checker keeps the first {OUTPUT_CAP_BYTES >> 10} KiB" in str(result)


def test_a_signal_aimed_at_the_checker_ends_only_the_check(tmp_path):
    """os.kill(os.getppid(), SIGTERM) used to end the CLI with exit 143, no verdict, its temp dir left behind."""
    cwd_file = tmp_path / "cwd"
    path = on_import(tmp_path, f"import os, signal\nopen({str(cwd_file)!r}, 'w').write(os.getcwd())\n"
                               "os.kill(os.getppid(), signal.SIGTERM)\nimport time; time.sleep(5)")
    out = cli("ex05", "--path", str(path))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    if "Operation not permitted" not in out.stdout:          # where Landlock scopes signals, none gets out
        assert "sent SIGTERM to the checker" in out.stdout
    assert not Path(cwd_file.read_text()).exists()


def test_killing_the_checkers_supervisor_ends_only_the_check(tmp_path):
    path = in_function(tmp_path, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time; time.sleep(5)")
    start = time.monotonic()
    result = check("ex05", path)
    assert result.verdict == "FAIL"
    assert ("was killed while running swizzle_128b" in result.message
            or "PermissionError: [Errno 1] Operation not permitted" in result.message), result.message
    assert time.monotonic() - start < 5


def test_closing_stdout_is_not_a_crash(tmp_path):
    """A correct solution that closed sys.stdout was reported as killed by SIGKILL, most likely out of memory."""
    assert check("ex05", on_import(tmp_path, "import sys\nsys.stdout.close()\nsys.stderr.close()")).passed


def test_closing_the_answer_pipe_is_a_fail_that_says_so(tmp_path):
    path = in_function(tmp_path, f"import json, os, sys\nos.close({ANSWER_FD})\nreturn chunk ^ (row % 8)")
    result = check("ex05", path)
    assert result.verdict == "FAIL" and "was closed while running swizzle_128b" in result.message


def test_an_answer_larger_than_the_checker_reads_is_a_fail(tmp_path):
    path = in_function(tmp_path, f"return 'x' * {MAX_FRAME_BYTES + 1}")
    result = check("ex05", path)
    assert result.verdict == "FAIL" and "more than the checker reads (16 MiB)" in result.message


def test_a_fork_storm_leaves_no_process(tmp_path):
    pids = tmp_path / "pids"
    path = on_import(tmp_path, "import os, time\nfor _ in range(20):\n    if os.fork() == 0:\n        os.setsid()\n"
                               f"        open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
                               "        time.sleep(600)\n        os._exit(0)")
    assert check("ex05", path).passed
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 20 and gone(started)


# ------------------------------------------------------------ a check changes nothing it must not

def test_a_learner_file_that_touches_an_installed_checker_fails_the_check(tmp_path):
    """A learner file rewrote check/ex05_swizzle.py, and wrong answers passed from then on. Here it only sets the
    file's times (its content stays): the status-change time moves all the same, and the check names the file."""
    target = ROOT / "hgemm_course" / "check" / "ex05_swizzle.py"
    path = on_import(tmp_path, f"import os\nst = os.stat({str(target)!r})\n"
                               f"os.utime({str(target)!r}, ns=(st.st_atime_ns, st.st_mtime_ns))")
    result = check("ex05", path)
    assert result.verdict == "FAIL"
    assert "the course's own files or its results changed" in result.message and f"{target} (changed)" in result.message


def test_a_planted_run_in_the_results_fails_the_check(tmp_path, monkeypatch):
    """A learner file planted a 'recorded H200 run' at 142.7% of cuBLAS, which `hgemm-course results` listed."""
    monkeypatch.chdir(tmp_path)
    planted = tmp_path / "hgemm-results" / "bench_nvidia-h200_20261201T000000_planted.json"
    path = on_import(tmp_path, f"import os\nos.makedirs({str(planted.parent)!r}, exist_ok=True)\n"
                               f"open({str(planted)!r}, 'w').write('{{\"pct_cublas\": 142.7}}')")
    result = check("ex05", path)
    assert result.verdict == "FAIL"        # where Landlock is, the write itself is refused
    assert f"{planted} (new)" in result.message or ("Permission denied" in result.message and not planted.exists())


# --------------------------------------------------------------- the learner's folder shadows nothing

@pytest.mark.parametrize("module", ["json", "random", "signal", "typing", "numpy"])
def test_a_module_beside_the_solution_shadows_nothing(module, tmp_path):
    (tmp_path / f"{module}.py").write_text("raise ImportError('the learner\\'s own file, imported by mistake')\n")
    path = mine(tmp_path, "import json\nimport numpy as np\n\n\ndef swizzle_128b(row, chunk):\n"
                          "    return int(np.int64(chunk) ^ (row % 8))\n")
    result = check("ex05", path)
    assert result.passed, str(result)


def test_a_neighbour_module_still_imports(tmp_path):
    (tmp_path / "my_xor.py").write_text("def swizzle(row, chunk):\n    return chunk ^ (row % 8)\n")
    assert check("ex05", mine(tmp_path, "from my_xor import swizzle as swizzle_128b\n")).passed


def test_the_caller_imports_what_the_verdict_uses_before_any_learner_code(tmp_path):
    """The references the verdict is computed from are imported in the caller before the child starts: no module
    of the course, nor of matplotlib for the picture, is first imported while learner code runs (numba and numpy
    load parts of themselves on first use; they are not the course's files, which the watch covers)."""
    script = f"""
import sys
from pathlib import Path
from hgemm_course.check import caller, check
caller.prepare(draw=True)
before = set(sys.modules)
for name in ("ex04_ldmatrix", "ex05_swizzle", "ex06_supertile", "ex09_wgmma_desc", "ex10_ring_parity", "ex12_streamk"):
    assert check(name, Path({str(ROOT)!r}) / "solutions" / f"{{name}}.py", draw=True, figure_dir={str(tmp_path)!r}).passed
new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("hgemm_course", "matplotlib"))
print(new)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -------------------------------------------------------------- every input a verdict or one line

@pytest.mark.parametrize("timeout", [float("inf"), 1e7, float("nan"), 0, -1, 0.5, 3601])
def test_a_timeout_out_of_range_is_one_line_with_the_range(timeout, capsys):
    assert run_check("ex05", ROOT / "solutions" / "ex05_swizzle.py", timeout=timeout) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and f"from {TIMEOUT_RANGE_S[0]} to {TIMEOUT_RANGE_S[1]}" in out


def test_the_cli_refuses_timeout_inf_in_one_line():
    for value in ("inf", "1e7"):
        out = cli("ex05", "--timeout", value)
        assert out.returncode == 2 and out.stdout.count("\n") == 1 and "Traceback" not in out.stdout + out.stderr


@pytest.mark.parametrize("name, suffix", [("ex05", ".py"), ("ex03", ".cu")])
def test_a_file_of_random_bytes_is_a_fail_not_a_traceback(name, suffix, tmp_path):
    path = tmp_path / f"garbage{suffix}"
    path.write_bytes(bytes(range(256)) * 8)
    result = check(name, path, gpu=False) if suffix == ".cu" else check(name, path)
    assert result.verdict == "FAIL" and "Traceback" not in str(result) and "line None" not in result.message


# ------------------------------------------------------------------ the extra question is optional

def test_the_cli_passes_a_right_answer_with_the_extra_question_untouched(tmp_path):
    """The CLI failed a right swizzle_128b because swizzle_64b was still the exercise's stub."""
    exercise = (ROOT / "exercises" / "ex05_swizzle.py").read_text()
    stub = 'raise NotImplementedError("a permutation of each row\'s chunks that spreads 8 consecutive rows over 8 chunks")'
    assert stub in exercise
    out = cli("ex05", "--path", str(mine(tmp_path, exercise.replace(stub, "return chunk ^ (row % 8)"))))
    assert out.returncode == 0, out.stdout
    assert "Extra question, swizzle_64b(): not checked (not written yet" in out.stdout
    assert "row // 2" not in out.stdout


def test_a_pass_never_gives_the_extra_answer_away():
    """check("ex05", f) passed and its message gave the 64-byte answer away."""
    result = check("ex05", lambda row, chunk: chunk ^ (row % 8))
    assert result.passed and "not checked (there is no swizzle_64b()" in result.message
    assert "64B" not in result.message.replace("SWIZZLE_128B", "") and "row // 2" not in result.message


def test_a_wrong_extra_answer_fails_and_says_the_main_part_is_right(tmp_path):
    path = mine(tmp_path, SOLUTION.replace("return chunk ^ (row // 2 % 4)", "return chunk ^ (row % 4)"))
    assert SOLUTION != path.read_text()
    result = check("ex05", path)
    assert result.verdict == "FAIL"
    assert result.message.startswith("The main part is right: All 2048 cases right: swizzle_128b")
    assert "the extra question, swizzle_64b(), is wrong" in result.message


@pytest.mark.parametrize("name", ["ex05_swizzle_kernel", "ex10_producer"])
def test_a_kernel_exercise_with_its_extra_region_untouched_is_checked_without_it(name, tmp_path):
    from hgemm_course.check.generate import regions_of

    solution = (ROOT / "solutions" / f"{name}.cu").read_text()
    extra = regions_of(f"{name}.cu")[-1]
    text = solution.replace("".join(extra.solution), "".join(extra.stub))
    assert text != solution
    result = check(name, mine(tmp_path, text, f"{name}.cu"), gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "extra question" in result.message and "not checked, its region is not written yet" in result.message


# ------------------------------------------------------------------------------ the picture

def test_the_default_picture_folder_is_private_and_new():
    first = check("ex05", lambda row, chunk: chunk ^ (row % 8), draw=True).figure
    second = check("ex05", lambda row, chunk: chunk ^ (row % 8), draw=True).figure
    assert first.parent != second.parent and first.is_file() and second.is_file()
    assert first.parent.stat().st_mode & 0o077 == 0 and first.parent.name.startswith("hgemm-course-figures-")


def test_a_planted_link_at_the_picture_path_is_not_followed(tmp_path):
    """--draw wrote to a fixed /tmp/hgemm-course-check/<exercise>.png and followed a link planted there."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "ex05_swizzle.png").symlink_to(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        check("ex05", ROOT / "solutions" / "ex05_swizzle.py", draw=True, figure_dir=tmp_path)
    assert victim.read_text() == "keep me"


def test_a_link_planted_during_the_check_is_not_followed(tmp_path):
    victim, figures = tmp_path / "victim.txt", tmp_path / "figures"
    victim.write_text("keep me")
    path = on_import(tmp_path, f"import os\nos.makedirs({str(figures)!r}, exist_ok=True)\n"
                               f"os.symlink({str(victim)!r}, {str(figures / 'ex05_swizzle.png')!r})")
    result = check("ex05", path, draw=True, figure_dir=figures)
    assert result.passed and result.figure is None and victim.read_text() == "keep me"


# --------------------------------------------------------------------------- the GPU run's C

def test_the_gpu_runs_c_is_compared_here_and_a_bad_report_is_a_fail(tmp_path):
    """The GPU run only produces C; the parent rebuilds the inputs from the seed and compares with its own
    reference. Its report is read against its format, and C as a plain float16 array (no pickle)."""
    import numpy as np

    from hgemm_course.check.feedback import Failure
    from hgemm_course.check.gpu_verdict import _compare_c, gpu_results
    from hgemm_course.measurement.verification import random_inputs

    M, N, K, seed = 40, 24, 32, 7
    a, b, _ = random_inputs(M, N, K, seed=seed)
    right = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    line = json.dumps({"shape": [M, N, K], "seed": seed, "c": "c0.npy", "kernels": []})
    (result,) = gpu_results(line, "mine.cu")
    np.save(tmp_path / "c0.npy", right)
    _compare_c(tmp_path / "c0.npy", result, "03", "mine.cu")
    wrong = right.copy()
    wrong[3, 5] += 1
    np.save(tmp_path / "c0.npy", wrong)
    with pytest.raises(Failure, match=r"first wrong element C\[3, 5\]"):
        _compare_c(tmp_path / "c0.npy", result, "03", "mine.cu")
    np.save(tmp_path / "c0.npy", np.array([object()] * (M * N), dtype=object).reshape(M, N), allow_pickle=True)
    with pytest.raises(Failure, match="cannot be read"):
        _compare_c(tmp_path / "c0.npy", result, "03", "mine.cu")
    with pytest.raises(Failure, match="not in its format"):
        gpu_results(json.dumps({"shape": [M, N, K], "passed": True}), "mine.cu")


def test_the_sandbox_reports_a_signal_and_who_sent_it():
    from hgemm_course.check import sandbox

    done = sandbox.run(["/bin/sh", "-c", "kill -USR2 $PPID; sleep 5"], timeout=10, limits=sandbox.Limits(cpu_s=10),
                       stdout_cap=100, stderr_cap=100)
    assert [s["signal"] for s in done.signals] == [signal.Signals.SIGUSR2.name]
    assert os.getpid() not in [s["sender"] for s in done.signals]


# ------------------------------------------------------------- the verdict process is out of learner code's reach

CALLER_PID = "int(open(f'/proc/{os.getppid()}/stat').read().rsplit(')', 1)[1].split()[1])"   # the supervisor's parent


def test_learner_code_cannot_ptrace_or_read_the_verdict_process(tmp_path):
    """gdb, attached to the checking process by the learner's import, replaced the reference: a wrong answer read PASS."""
    path = on_import(tmp_path, "import ctypes, os\n"
                               f"caller = {CALLER_PID}\n"
                               "libc = ctypes.CDLL(None, use_errno=True)\n"
                               "print('ptrace', libc.ptrace(16, caller, 0, 0), flush=True)\n"
                               "for name in ('mem', 'fd/0'):\n"
                               "    try:\n        open(f'/proc/{caller}/{name}', 'rb').close(); print('opened', name)\n"
                               "    except OSError as exc:\n        print('refused', name, exc.errno)", WRONG_128B)
    result = check("ex05", path)
    assert result.verdict == "FAIL", str(result)
    assert "ptrace -1" in result.output and "opened" not in result.output, result.output


def test_a_line_written_into_the_callers_report_pipe_is_refused(tmp_path):
    """A line written through /proc/<caller>/fd into the supervisor's report pipe gave KeyError: 'event'."""
    path = on_import(tmp_path, "import os, stat\n"
                               f"caller = {CALLER_PID}\n"
                               "for fd in range(3, 64):\n"
                               "    try:\n        w = os.open(f'/proc/{caller}/fd/{fd}', os.O_WRONLY | os.O_NONBLOCK)\n"
                               "    except OSError:\n        continue\n"
                               "    if stat.S_ISFIFO(os.fstat(w).st_mode):   # a pipe only: never a file of the caller\n"
                               "        print('wrote into', fd, flush=True)\n"
                               "        os.write(w, b'{\"x\": 1}\\n')\n"
                               "    os.close(w)", WRONG_128B)
    result = check("ex05", path)
    assert result.verdict == "FAIL" and "Traceback" not in result.message, str(result)


def test_the_supervisors_reports_are_validated():
    from hgemm_course.check.sandbox import _report

    assert _report(b'{"event": "exit", "code": 0}') == {"event": "exit", "code": 0}
    assert _report(b'{"event": "exit", "signal": "SIGSEGV"}') is not None
    for line in (b'{"x": 1}', b"[]", b"not json", b'{"event": "exit", "signal": "SIGNOPE"}',
                 b'{"event": "started", "pid": "1"}', b'{"event": "done", "killed": 0, "extra": 1}'):
        assert _report(line) is None, line


def test_a_pickle_planted_in_numbas_cache_of_a_reference_is_not_loaded(tmp_path):
    """The learner wrote a pickle into the index of the checker's own reference: the caller unpickled it."""
    import importlib.util
    import pickle

    import numba

    from hgemm_course.sim import cache

    module_file = tmp_path / "reference.py"
    module_file.write_text("from hgemm_course.sim.cache import cached_njit\n\n"
                           "@cached_njit()\ndef twice(x):\n    return 2 * x\n")
    spec = importlib.util.spec_from_file_location("planted_reference", module_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cache.seal()
    marker = tmp_path / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    index = Path(module.twice._cache._cache_file._index_path)
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_bytes(pickle.dumps(numba.__version__) + pickle.dumps((module.twice._cache._cache_file._source_stamp,
                                                                     Payload())))
    assert module.twice(21) == 42
    assert not marker.exists()


def _site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_path("purelib"))


def test_a_pth_file_planted_in_site_packages_fails_the_check(tmp_path):
    """A right answer planted a .pth file in the venv: every later check ran it, and a plain wrong answer passed."""
    planted = _site_packages() / "zz_hgemm_course_planted.pth"
    path = on_import(tmp_path, f"try:\n    open({str(planted)!r}, 'w').write('import os\\n')\n"
                               "except OSError as exc:\n    print('refused', exc)")
    try:
        result = check("ex05", path)
        assert result.verdict == "FAIL" or ("refused" in result.output and not planted.exists()), str(result)
        if planted.exists():
            assert f"{planted} (new)" in result.message
    finally:
        planted.unlink(missing_ok=True)


def test_a_file_planted_in_numbas_cache_folder_of_the_package_fails_or_is_refused(tmp_path):
    from hgemm_course.library.paths import PACKAGE_DIR

    planted = PACKAGE_DIR / "sim" / "__pycache__" / "planted-1.py311.nbi"
    path = on_import(tmp_path, f"try:\n    open({str(planted)!r}, 'wb').write(b'x')\n"
                               "except OSError as exc:\n    print('refused', exc)")
    try:
        result = check("ex05", path)
        assert result.verdict == "FAIL" or ("refused" in result.output and not planted.exists()), str(result)
    finally:
        planted.unlink(missing_ok=True)


def _supervised_cli(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """A check whose learner code leaves a setsid grandchild and then hangs; the CLI's process and the pids of
    the supervisor and the grandchild."""
    pids = tmp_path / "pids"
    path = on_import(tmp_path, "import os, time\n"
                               f"open({str(pids)!r}, 'a').write(f'{{os.getppid()}}\\n')\n"
                               "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                               f"        open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
                               "        time.sleep(600)\n    os._exit(0)\n"
                               "time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-m", "hgemm_course.course.cli", "check", "ex05", "--path", str(path),
                             "--timeout", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not pids.exists() or len(pids.read_text().split()) < 2):
        time.sleep(0.05)
    return proc, [int(p) for p in pids.read_text().split()]


@pytest.mark.parametrize("how", [signal.SIGSTOP, signal.SIGKILL])
def test_a_stopped_or_killed_supervisor_leaves_nothing_running(how, tmp_path):
    """After SIGSTOP or SIGKILL to the supervisor, a setsid grandchild was still running."""
    proc, (supervisor, grandchild) = _supervised_cli(tmp_path)
    os.kill(supervisor, how)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "Traceback" not in out, out
    assert gone([grandchild, supervisor])


def test_a_results_file_another_process_writes_during_a_check_is_not_blamed(tmp_path, monkeypatch):
    """A bench writing into ./hgemm-results/ during a check failed a right answer."""
    from hgemm_course.check import watch

    if not watch.landlock():
        pytest.skip("no Landlock on this machine: a change to the results during a check cannot be told apart "
                    "from learner code's, and fails it")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hgemm-results").mkdir()
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5); "
                               "open('hgemm-results/bench.json', 'w').write('{}')"], cwd=tmp_path)
    path = on_import(tmp_path, "import time; time.sleep(1.5)")
    result = check("ex05", path)
    writer.wait()
    assert result.passed, str(result)


def test_draw_into_a_fifo_keeps_the_verdict(tmp_path):
    """A FIFO in place of --draw's figure lost the verdict: exit 2 with "File or stream is not seekable."."""
    os.mkfifo(tmp_path / "ex05_swizzle.png")
    path = on_import(tmp_path, "import os\nos.mkfifo('figure.png')")
    result = check("ex05", path, draw=True, figure_dir=tmp_path)
    assert result.passed and result.figure is None, str(result)


def test_the_callers_own_work_on_the_answers_stops_at_its_limit():
    """ex12: the explanation of a bad answer ran in the caller past the timeout."""
    from hgemm_course.check.caller import OverTime, caller_time_limit

    start = time.monotonic()
    with pytest.raises(OverTime, match="more than 0.3 s"):
        with caller_time_limit(0.3):
            while True:
                pass
    assert time.monotonic() - start < 2


def test_a_parity_expression_with_a_huge_shift_runs_only_in_the_host_model(tmp_path):
    """ex07: `+ (((kt + 1) << 4000000000) & 0)` was evaluated in the caller 5376 times, 500 MB each. The region now
    runs in the host model's supervised program; the caller reads only the waits it recorded."""
    solution = (ROOT / "solutions" / "ex07_mbarrier.cu").read_text()
    wait = "(kt / STAGES) % 2);"
    assert wait in solution
    path = mine(tmp_path, solution.replace(wait, "(kt / STAGES) % 2 + (((kt + 1) << 4000000000) & 0));", 1),
                "ex07_mbarrier.cu")
    start = time.monotonic()
    result = check("ex07", path, gpu=False, timeout=10)
    assert result.verdict != "PASS" and "Traceback" not in str(result), str(result)
    assert time.monotonic() - start < 30


@pytest.mark.skipif(__import__("shutil").which("g++") is None, reason="the host model of the regions needs g++")
def test_a_stray_printf_in_a_host_model_region_is_a_one_line_fail(tmp_path):
    """ex10: a printf("\\n") in the producer region gave an IndexError traceback from read_trace."""
    solution = (ROOT / "solutions" / "ex10_producer.cu").read_text()
    anchor = "        warpgroup_reg_dealloc<PRODUCER_REGS>();\n        if (tid == 0) {\n"
    assert anchor in solution
    path = mine(tmp_path, solution.replace(anchor, anchor + '            printf("\\n");\n', 1), "ex10_producer.cu")
    result = check("ex10_producer", path, gpu=False)
    assert result.verdict == "FAIL" and "Traceback" not in str(result), str(result)
    assert "printed a line the checker cannot read" in result.message, result.message


def test_an_int_too_long_to_print_is_a_fail_not_the_checkers_traceback(tmp_path):
    path = mine(tmp_path, "def swizzle_128b(row, chunk):\n    return 10 ** 5000\n")
    out = cli("ex05", "--path", str(path))
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr, out.stdout + out.stderr
    assert "too long to read" in out.stdout
