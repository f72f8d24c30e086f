"""The supervisor of a sandboxed worker (:mod:`.sandbox`): the process between the caller and the code a check
must not trust.

The supervisor runs no learner code. It

- is a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a process the worker starts and orphans, one
  that calls setsid or forks twice too, becomes the supervisor's child, so at the end it kills and reaps
  every one of them;
- is not dumpable (``prctl(PR_SET_DUMPABLE, 0)``): the worker, the same user, cannot ptrace it or read its memory;
- blocks every signal it may and reads them with ``sigtimedwait``: a signal learner code aims at the checker
  (``os.kill(os.getppid(), SIGTERM)``) reaches the supervisor, which tells the caller who sent it; the caller
  ends the check with a FAIL that names it;
- starts the worker in a session of its own, stdin ``/dev/null``, stdout and stderr into the caller's
  pipes, under ``RLIMIT_CPU``, ``RLIMIT_FSIZE``, no core dumps and, where asked, ``RLIMIT_AS``; the worker
  dies with the supervisor (``PR_SET_PDEATHSIG``) and is confined (:mod:`.confine`: no ptrace, writes only
  below its own folder, no signal out of its Landlock domain, as far as the kernel allows); its caches and
  temporary files (``TMPDIR``, ``NUMBA_CACHE_DIR``, ...) are in that folder;
- kills everything when the caller says ``stop``, when its backstop time is up, or when the caller goes
  away (its command pipe closes), then exits.

This file imports only the standard library: the supervisor starts with ``python -I``, which reads no
environment variable, no user site and nothing from the current folder.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import signal
import sys
import time

if __package__:
    from . import confine
else:                            # the supervisor, run as a script by ``python -I -S``
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import confine

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.02                  # how often the supervisor looks at its signals and its worker
CACHE_VARIABLES = {"TMPDIR": "tmp", "NUMBA_CACHE_DIR": "numba", "CUPY_CACHE_DIR": "cupy", "CUDA_CACHE_PATH": "cuda",
                   "MPLCONFIGDIR": "matplotlib", "XDG_CACHE_HOME": "xdg"}
_SYNCHRONOUS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP, signal.SIGSYS,
                signal.SIGABRT}
BLOCKED = frozenset(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP} - _SYNCHRONOUS)
LIBC = ctypes.CDLL(None, use_errno=True)    # loaded here, not in a fork of a process with threads


def prctl(option: int, value: int) -> None:
    LIBC.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


def _set_limit(which: int, soft: int, hard: int) -> None:
    """setrlimit, never above the hard limit in force (only root may raise one)."""
    _, current = resource.getrlimit(which)
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(which, (soft, hard))


def apply_limits(limits: dict) -> None:
    """The limits of :class:`.sandbox.Limits` (as a dict), in the process that calls it."""
    _set_limit(resource.RLIMIT_CORE, 0, 0)
    if limits.get("cpu_s"):
        _set_limit(resource.RLIMIT_CPU, limits["cpu_s"], limits["cpu_s"] + 5)
    if limits.get("memory_bytes"):
        _set_limit(resource.RLIMIT_AS, limits["memory_bytes"], limits["memory_bytes"])
    if limits.get("file_bytes"):
        _set_limit(resource.RLIMIT_FSIZE, limits["file_bytes"], limits["file_bytes"])


def close_fds_except(keep: set[int]) -> None:
    low = 3
    for fd in sorted(keep | {1 << 20}):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1


def _worker_setup(config: dict) -> None:
    """In the worker, before its own code: a session of its own, the three standard streams, only the
    file descriptors it is given, the limits, default signals, and death with the supervisor."""
    os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(config["stdout_fd"], 1)
    os.dup2(config["stderr_fd"], 2)
    keep = set(config["keep_fds"])
    close_fds_except(keep)
    for fd in keep:
        os.set_inheritable(fd, True)
    for signum in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    apply_limits(config["limits"])
    if config.get("cwd"):
        os.chdir(config["cwd"])
        confine.confine([config["cwd"], *config.get("writable", ())])


def _worker_env(config: dict) -> dict:
    """The worker's environment: the one given (else this one) with the caches and temporary files of the
    tools it may run (Python, Numba, CuPy, CUDA, matplotlib) in its own folder, where it may write."""
    env = dict(os.environ if config.get("env") is None else config["env"])
    if config.get("cwd"):
        for name, folder in CACHE_VARIABLES.items():
            path = os.path.join(config["cwd"], ".cache", folder)
            os.makedirs(path, exist_ok=True)
            env[name] = path
    return env


def _start_exec(config: dict) -> int:
    """Fork and exec ``config["argv"]``: the worker's pid."""
    pid = os.fork()
    if pid == 0:
        try:
            _worker_setup(config)
            argv = config["argv"]
            os.execve(argv[0], argv, _worker_env(config))
        except BaseException as exc:  # the exec failed: say so on the worker's stderr
            os.write(2, f"cannot start {config['argv'][0]}: {exc}\n".encode())
        os._exit(127)
    return pid


class _Supervisor:
    def __init__(self, config: dict, start):
        self.config = config
        self.status = config["status_fd"]
        self.command = config["command_fd"]
        self.caller = config["caller_pid"]
        self.start = start
        self.worker: int | None = None
        self.worker_ended = False

    def send(self, **event) -> None:
        try:
            os.write(self.status, (json.dumps(event) + "\n").encode())
        except OSError:              # the caller has gone; the stop below still runs
            pass

    def main(self) -> None:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        prctl(PR_SET_DUMPABLE, 0)
        signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)
        self.worker = self.start(self.config)
        for fd in (self.config["stdout_fd"], self.config["stderr_fd"], *self.config["keep_fds"]):
            try:
                os.close(fd)         # the worker holds them now: the caller sees the end of its output
            except OSError:
                pass
        self.send(event="started", pid=self.worker)
        backstop = time.monotonic() + self.config["backstop_s"]
        try:
            while self._step():
                if time.monotonic() > backstop:
                    self.send(event="backstop", seconds=self.config["backstop_s"])
                    break
        finally:
            killed = self.kill_all()
            self.send(event="done", killed=killed)

    def _step(self) -> bool:
        """One look at signals, children and commands; False once told to stop (or the caller is gone)."""
        while True:
            info = signal.sigtimedwait(BLOCKED, 0)
            if info is None:
                break
            if info.si_signo != signal.SIGCHLD and info.si_pid != self.caller:
                self.send(event="signal", signal=signal.Signals(info.si_signo).name, sender=info.si_pid)
        self.reap()
        ready, _, _ = select.select([self.command], [], [], POLL_S)
        if ready:
            data = os.read(self.command, 4096)
            if not data or b"stop" in data:
                return False
            if b"where" in data and self.worker is not None and not self.worker_ended:
                try:
                    os.kill(self.worker, signal.SIGUSR1)
                except ProcessLookupError:
                    pass
        return True

    def reap(self) -> None:
        """Reap every child that has ended (the worker, or an orphan of it)."""
        while self._reap_one():
            pass

    def _reap_one(self) -> bool:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == self.worker and not self.worker_ended:
            self.worker_ended = True
            if os.WIFSIGNALED(status):
                self.send(event="exit", signal=signal.Signals(os.WTERMSIG(status)).name)
            else:
                self.send(event="exit", code=os.waitstatus_to_exitcode(status))
        return pid != 0

    def _has_children(self) -> bool:
        try:
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        return True

    def kill_all(self) -> int:
        """SIGKILL every descendant (orphans come here, the subreaper) until none is left; how many
        were still running besides the worker."""
        me, others = os.getpid(), set()
        while True:
            pids = descendants(me)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            others.update(p for p in pids if p != self.worker)
            if pids:
                time.sleep(0.002)
            self.reap()
            if not pids and not self._has_children():
                return len(others)


def descendants(root: int) -> list[int]:
    """The pids below ``root`` in the process tree, from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(b")", 1)[1].split()
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def supervise(config: dict, start) -> None:
    """The supervisor's life: start the worker with ``start(config)`` and watch it until stopped. It first takes
    back the address space limit the caller had before :func:`.sandbox.bounded_memory` lowered it for its own work."""
    try:
        if config.get("address_space"):
            resource.setrlimit(resource.RLIMIT_AS, tuple(config["address_space"]))
        _Supervisor(config, start).main()
    finally:
        os._exit(0)


def start_fork(config: dict, target) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            _worker_setup(config)
            target()
        finally:
            os._exit(0)
    return pid


if __name__ == "__main__":
    _config = json.loads(sys.argv[1])
    supervise(_config, _start_exec)
