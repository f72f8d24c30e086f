"""hgemm_course.check.confine: what a worker loses before learner code runs, tested in a fork; where the kernel
lacks a protection, its test is skipped with the reason, and check.confine.missing() names it."""
from __future__ import annotations

import ctypes
import os
import platform

import pytest

from hgemm_course.check import confine


def _in_confined_fork(tmp_path, action) -> int:
    """Run ``action()`` in a fork confined to ``tmp_path/own``; the fork's exit status."""
    own = tmp_path / "own"
    own.mkdir()
    pid = os.fork()
    if pid == 0:
        try:
            confine.confine([str(own)])
            os._exit(action())
        except BaseException:
            os._exit(99)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_missing_names_each_protection_in_words():
    for line in confine.missing():
        assert line.split()[0] in ("seccomp", "Landlock") and "(" in line


@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="seccomp: no syscall table here")
def test_a_confined_process_cannot_ptrace_its_parent(tmp_path):
    parent = os.getpid()

    def attach():
        libc = ctypes.CDLL(None, use_errno=True)
        return 0 if libc.ptrace(16, parent, 0, 0) == -1 and ctypes.get_errno() == 1 else 1   # PTRACE_ATTACH, EPERM
    assert _in_confined_fork(tmp_path, attach) == 0


@pytest.mark.skipif(confine.landlock_abi() == 0, reason="no Landlock in this kernel: writes are only watched")
def test_a_confined_process_writes_only_below_its_folders(tmp_path):
    def write():
        open(tmp_path / "own" / "mine", "w").write("x")
        try:
            open(tmp_path / "outside", "w")
        except PermissionError:
            return 0
        return 1
    assert _in_confined_fork(tmp_path, write) == 0 and not (tmp_path / "outside").exists()


@pytest.mark.skipif(confine.landlock_abi() < 6, reason="no Landlock scopes in this kernel: signals out are reported")
def test_a_confined_process_cannot_signal_out(tmp_path):
    parent = os.getpid()

    def signal_parent():
        try:
            os.kill(parent, 0)
        except PermissionError:
            return 0
        return 1
    assert _in_confined_fork(tmp_path, signal_parent) == 0


def test_the_caller_is_not_dumpable_during_a_check_and_is_again_after():
    libc = ctypes.CDLL(None)
    before = libc.prctl(confine.PR_GET_DUMPABLE, 0, 0, 0, 0)
    with confine.Sealed():
        assert libc.prctl(confine.PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
    assert libc.prctl(confine.PR_GET_DUMPABLE, 0, 0, 0, 0) == before


def test_where_landlock_is_off_the_results_are_watched(monkeypatch):
    from hgemm_course.check import watch
    from hgemm_course.library.paths import results_dir

    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)         # a kernel without Landlock
    watch.landlock.cache_clear()
    try:
        assert not watch.landlock() and results_dir().resolve() in watch.roots()
    finally:
        watch.landlock.cache_clear()


def test_a_confined_worker_without_a_gpu_leaves_nothing_in_dev_shm(tmp_path):
    """A file in /dev/shm would outlive the check: a worker may write the character devices, not there."""
    import subprocess
    import sys

    if confine.landlock_abi() == 0 or confine.gpu_present() or not os.path.isdir("/dev/shm"):
        pytest.skip("needs Landlock and no NVIDIA GPU (which keeps /dev writable), and a /dev/shm")
    name = f"/dev/shm/hgemm-course-test-{os.getpid()}"
    code = (f"from hgemm_course.check import confine; confine.confine([{str(tmp_path)!r}]); "
            f"open('/dev/null', 'w').write('x'); open({str(tmp_path / 'mine')!r}, 'w').write('x')\n"
            f"try:\n    open({name!r}, 'w')\nexcept PermissionError:\n    print('refused')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "refused", run.stdout + run.stderr
    assert not os.path.exists(name) and (tmp_path / "mine").exists()
