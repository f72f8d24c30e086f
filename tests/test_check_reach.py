"""More of the ways learner code reaches past its worker, each tried as the learner's file: the verdict process's
memory, environment, maps and file descriptors through every door the kernel has for them; a process that hides
in namespaces of its own; a forged answer frame built to be expensive to read. Each: the wrong answer fails, no
traceback, nothing left running."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from hgemm_course.check import check

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex05_swizzle.py").read_text()
WRONG_128B = "def swizzle_128b(row, chunk):\n    return chunk\n"
CALLER_PID = "int(open(f'/proc/{os.getppid()}/stat').read().rsplit(')', 1)[1].split()[1])"   # the supervisor's parent
ANSWER_FD = "json.loads(sys.argv[-1])['answer_fd']"


def _file(tmp_path: Path, lines: str, body: str = WRONG_128B) -> Path:
    path = tmp_path / "mine.py"
    path.write_text(lines + "\n\n" + body)
    return path


def _running_with(token: str) -> list[int]:
    """The pids of running processes whose command line holds ``token``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if token.encode() in Path(f"/proc/{name}/cmdline").read_bytes() and \
                    Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                out.append(int(name))
        except OSError:
            continue
    return out


def test_the_verdict_process_is_out_of_reach_through_proc_vm_calls_and_pidfds(tmp_path):
    """process_vm_readv, pidfd_getfd, and /proc/<caller>/{environ,maps,cwd,root} of the process that decides the
    verdict: every one refused, and the wrong answer fails."""
    path = _file(tmp_path, "import ctypes, os\n"
                           f"caller = {CALLER_PID}\n"
                           "libc = ctypes.CDLL(None, use_errno=True)\n"
                           "class Iovec(ctypes.Structure):\n"
                           "    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
                           "buf = ctypes.create_string_buffer(64)\n"
                           "local, remote = Iovec(ctypes.cast(buf, ctypes.c_void_p), 64), Iovec(0x400000, 64)\n"
                           "n = libc.process_vm_readv(caller, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)\n"
                           "print('process_vm_readv', n, ctypes.get_errno(), flush=True)\n"
                           "pidfd = os.pidfd_open(caller)\n"
                           "n = libc.syscall(438, pidfd, 0, 0)\n"                  # pidfd_getfd
                           "print('pidfd_getfd', n, ctypes.get_errno(), flush=True)\n"
                           "for name in ('environ', 'maps', 'auxv'):\n"
                           "    try:\n        open(f'/proc/{caller}/{name}', 'rb').read(1); print('read', name)\n"
                           "    except OSError as exc:\n        print('refused', name, exc.errno)\n"
                           "for name in ('cwd', 'root', 'exe'):\n"
                           "    try:\n        os.listdir(f'/proc/{caller}/{name}') if name != 'exe' else "
                           "os.readlink(f'/proc/{caller}/{name}'); print('read', name)\n"
                           "    except OSError as exc:\n        print('refused', name, exc.errno)\n", WRONG_128B)
    result = check("ex05", path)
    assert result.verdict == "FAIL" and "expected 1, got 0" in result.message, str(result)
    assert "process_vm_readv -1 1" in result.output and "pidfd_getfd -1 1" in result.output, result.output
    assert "read " not in result.output and result.output.count("refused") == 6, result.output


@pytest.mark.skipif(shutil.which("unshare") is None or subprocess.run(["unshare", "--user", "--pid", "--fork", "true"],
                                                                     capture_output=True).returncode != 0,
                    reason="no unprivileged user and PID namespaces here")
def test_a_process_in_namespaces_of_its_own_does_not_survive_the_check(tmp_path):
    """unshare --user --pid --fork: the sleeper is pid 1 of a PID namespace of its own, in a session of its own."""
    token = f"{os.getpid() % 1000}.{time.monotonic_ns() % 100000}"
    path = _file(tmp_path, "import subprocess, time\n"
                           f"subprocess.Popen(['unshare', '--user', '--pid', '--fork', 'sleep', '600.{token}'], "
                           "start_new_session=True)\n"
                           "time.sleep(0.5)", SOLUTION)
    result = check("ex05", path)
    assert result.passed, str(result)
    deadline = time.monotonic() + 3
    while _running_with(f"600.{token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running_with(f"600.{token}") == []


def test_a_forged_answer_frame_of_millions_of_empty_lists_is_a_fail_in_bounded_time(tmp_path):
    """16 MiB of nested empty lists, the largest frame the checker reads, written as the answer to its first call:
    read under the caller's bounds, it is not an answer, and the check says so in one line."""
    path = _file(tmp_path, "import json, os, struct, sys\n"
                           "def swizzle_128b(row, chunk):\n"
                           "    body = b'{\"value\": [' + b','.join([b'[[]]'] * ((16 << 20) // 6)) + b']}'\n"
                           f"    os.write({ANSWER_FD}, struct.pack('>I', len(body)) + body)\n"
                           "    import time; time.sleep(30)\n", "")
    start = time.monotonic()
    result = check("ex05", path, timeout=20)
    assert result.verdict == "FAIL" and "Traceback" not in str(result), str(result)
    assert time.monotonic() - start < 25
