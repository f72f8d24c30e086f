"""Run what a check must not trust (a learner's Python code, a compile of a learner's ``.cu``, a program
built from a learner's region) so that nothing it does outlives or outgrows the check.

    caller (CLI, notebook) -- supervisor (this file: ``python -I sandbox.py``, or a fork) -- worker -- ...

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

The caller's side is :class:`Box`: it starts the supervisor, reads its reports and the worker's output
(capped at ``output_cap`` bytes a stream; the rest is counted, not kept; a report that is not one of the
supervisor's is taken as the supervisor's end) and stops it. :func:`bounded_memory` bounds the caller's own
work on what a worker gave back (``RLIMIT_AS``, soft, for the length of a block). A supervisor stopped (SIGSTOP) or killed leaves
nothing: the caller is a child subreaper while a box is open, so orphans come to it, and it kills every
process the box started. :func:`run` is a whole
run of one program: its exit status and capped output, within a time limit.

This file imports only the standard library: the supervisor starts with ``python -I``, which reads no
environment variable, no user site and nothing from the current folder.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

if __package__:
    from . import confine
else:                            # the supervisor, run as a script by ``python -I -S``
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import confine

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
POLL_S = 0.02                  # how often the supervisor looks at its signals and its worker
STOP_WAIT_S = 10.0             # how long the caller waits for the supervisor to finish a stop
FILE_LIMIT_BYTES = 1 << 30     # RLIMIT_FSIZE: no file written larger than 1 GiB
CACHE_VARIABLES = {"TMPDIR": "tmp", "NUMBA_CACHE_DIR": "numba", "CUPY_CACHE_DIR": "cupy", "CUDA_CACHE_PATH": "cuda",
                   "MPLCONFIGDIR": "matplotlib", "XDG_CACHE_HOME": "xdg"}
_SYNCHRONOUS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP, signal.SIGSYS,
                signal.SIGABRT}
BLOCKED = frozenset(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP} - _SYNCHRONOUS)


@dataclass
class Limits:
    """What a worker may use: CPU seconds (``RLIMIT_CPU``; SIGXCPU at it, SIGKILL 5 s later), address space
    in bytes (``RLIMIT_AS``; None: the worker sets its own) and the largest file it may write."""

    cpu_s: int | None = None
    memory_bytes: int | None = None
    file_bytes: int = FILE_LIMIT_BYTES


# ------------------------------------------------------------------------------------- supervisor side

_LIBC = ctypes.CDLL(None, use_errno=True)    # loaded here, not in a fork of a process with threads


def _prctl(option: int, value: int) -> None:
    _LIBC.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


def _set_limit(which: int, soft: int, hard: int) -> None:
    """setrlimit, never above the hard limit in force (only root may raise one)."""
    _, current = resource.getrlimit(which)
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(which, (soft, hard))


def apply_limits(limits: dict) -> None:
    """The limits of :class:`Limits` (as a dict), in the process that calls it."""
    _set_limit(resource.RLIMIT_CORE, 0, 0)
    if limits.get("cpu_s"):
        _set_limit(resource.RLIMIT_CPU, limits["cpu_s"], limits["cpu_s"] + 5)
    if limits.get("memory_bytes"):
        _set_limit(resource.RLIMIT_AS, limits["memory_bytes"], limits["memory_bytes"])
    if limits.get("file_bytes"):
        _set_limit(resource.RLIMIT_FSIZE, limits["file_bytes"], limits["file_bytes"])


def _close_fds_except(keep: set[int]) -> None:
    low = 3
    for fd in sorted(keep | {1 << 20}):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1


def _worker_setup(config: dict) -> None:
    """In the worker, before its own code: a session of its own, the three standard streams, only the
    file descriptors it is given, the limits, default signals, and death with the supervisor."""
    os.setsid()
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(config["stdout_fd"], 1)
    os.dup2(config["stderr_fd"], 2)
    keep = set(config["keep_fds"])
    _close_fds_except(keep)
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
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_DUMPABLE, 0)
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


def _state(pid: int) -> str | None:
    """The state letter of ``pid`` (R, S, T, Z, ...), None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return None


class _Subreaper:
    """PR_SET_CHILD_SUBREAPER on this process while any box is open, as it was before after."""

    def __init__(self):
        self.open, self.before = 0, 0

    def enter(self) -> None:
        if self.open == 0:
            value = ctypes.c_int(0)
            _LIBC.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                        ctypes.c_ulong(0))
            self.before = value.value
            _prctl(PR_SET_CHILD_SUBREAPER, 1)
        self.open += 1

    def leave(self) -> None:
        self.open = max(0, self.open - 1)
        if self.open == 0 and not self.before:
            _prctl(PR_SET_CHILD_SUBREAPER, 0)


_SUBREAPER = _Subreaper()


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
    back the address space limit the caller had before :func:`bounded_memory` lowered it for its own work."""
    try:
        if config.get("address_space"):
            resource.setrlimit(resource.RLIMIT_AS, tuple(config["address_space"]))
        _Supervisor(config, start).main()
    finally:
        os._exit(0)


# ------------------------------------------------------------------------------------------ caller side

_ALSO_WRITABLE: list[str] = []
_CALLER_AS: list[tuple[int, int]] = []     # RLIMIT_AS as it was before each bounded_memory, outermost first


def address_space() -> int:
    """The bytes of address space this process has mapped now (VmSize)."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def bounded_memory(extra_bytes: int):
    """Inside, this process may map at most ``extra_bytes`` more than it has now (``RLIMIT_AS``, soft): past it an
    allocation raises MemoryError instead of growing the caller without end. What a box starts inside runs
    under the limit in force before (the supervisor takes it back, :func:`supervise`)."""
    before = resource.getrlimit(resource.RLIMIT_AS)
    soft = address_space() + extra_bytes
    if before[0] != resource.RLIM_INFINITY:
        soft = min(soft, before[0])
    if before[1] != resource.RLIM_INFINITY:
        soft = min(soft, before[1])
    resource.setrlimit(resource.RLIMIT_AS, (soft, before[1]))
    _CALLER_AS.append(before)
    try:
        yield
    finally:
        _CALLER_AS.pop()
        resource.setrlimit(resource.RLIMIT_AS, before)


@contextlib.contextmanager
def also_writable(folders: list[str]):
    """Inside, every box's worker may write below ``folders`` too (the learner's own folder, for a check)."""
    _ALSO_WRITABLE[:] = folders
    try:
        yield
    finally:
        _ALSO_WRITABLE.clear()


@dataclass
class Stream:
    """One output stream of the worker, as the caller keeps it: at most ``cap`` bytes, the rest counted."""

    cap: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0
    closed: bool = False

    def take(self, chunk: bytes) -> None:
        room = max(0, self.cap - len(self.data))
        self.data += chunk[:room]
        self.dropped += len(chunk) - min(room, len(chunk))

    def text(self) -> str:
        return self.data.decode(errors="replace")


class Box:
    """A supervised worker: ``argv`` (a program, executed) or ``target`` (a function, run in a fork of this
    process, which must then end it with ``os._exit``). ``keep_fds`` are passed down to the worker.
    ``merge_output`` sends its stderr into the stdout stream."""

    def __init__(self, *, argv: list[str] | None = None, target=None, cwd: str | None = None,
                 env: dict | None = None, limits: Limits, keep_fds: tuple[int, ...] = (), output_cap: int,
                 merge_output: bool = True, backstop_s: float, writable: tuple[str, ...] = ()):
        _SUBREAPER.enter()
        self._before = set(descendants(os.getpid()))
        status_r, status_w = os.pipe()
        command_r, command_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = (out_r, out_w) if merge_output else os.pipe()
        self.events: list[dict] = []
        self.worker_pid: int | None = None
        self.exit: dict | None = None          # {"code": n} or {"signal": "SIGSEGV"}
        self.signals: list[dict] = []          # signals learner code sent the supervisor
        self.done = False                      # the supervisor said it has ended everything
        self.gone = False                      # the supervisor's report pipe closed: it has ended, or was killed
        self.backstop = False
        self.forged: list[str] = []            # report lines that were not the supervisor's
        self.stdout = Stream(output_cap)
        self.stderr = self.stdout if merge_output else Stream(output_cap)
        self._status, self._command, self._buffer = status_r, command_w, b""
        self._outputs = {out_r: self.stdout} | ({} if merge_output else {err_r: self.stderr})
        for fd in self._outputs:
            os.set_blocking(fd, False)
        config = {"status_fd": status_w, "command_fd": command_r, "caller_pid": os.getpid(), "stdout_fd": out_w,
                  "stderr_fd": err_w, "keep_fds": list(keep_fds), "limits": limits.__dict__, "cwd": cwd,
                  "argv": argv, "env": env, "backstop_s": backstop_s, "writable": [*writable, *_ALSO_WRITABLE],
                  "address_space": list(_CALLER_AS[0]) if _CALLER_AS else None}
        passed = {status_w, command_r, out_w, err_w, *keep_fds}
        if argv is not None:
            self._process = subprocess.Popen([sys.executable, "-I", "-S", "-B", __file__, json.dumps(config)], pass_fds=sorted(passed),
                                             stdin=subprocess.DEVNULL, start_new_session=True)
            self._pid = self._process.pid
        else:
            self._process = None
            self._pid = os.fork()
            if self._pid == 0:
                try:
                    os.setsid()
                    _close_fds_except(passed | {0, 1, 2})
                    supervise(config, lambda cfg: _start_fork(cfg, target))
                finally:
                    os._exit(0)
        for fd in passed - set(keep_fds):
            os.close(fd)

    # -- reading
    def wait(self, fds: list[int], timeout: float) -> list[int]:
        """Wait up to ``timeout`` s for one of ``fds`` to be readable, meanwhile reading the supervisor's
        reports and the worker's output; the readable ones among ``fds`` (empty on a timeout, or as soon as
        the supervisor reports something the caller must act on: a signal, the worker's end, its own end)."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            watched = [fd for fd in (self._status, *self._outputs) if fd is not None
                       and not (fd in self._outputs and self._outputs[fd].closed)] + list(fds)
            ready, _, _ = select.select(watched, [], [], max(0.0, deadline - time.monotonic()))
            mine = [fd for fd in ready if fd in fds]
            news = False
            for fd in ready:
                if fd == self._status:
                    news |= self._read_status()
                elif fd in self._outputs:
                    self._read_output(fd)
            if mine or news or time.monotonic() >= deadline:
                return mine

    def _read_output(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if chunk:
            self._outputs[fd].take(chunk)
        else:
            self._outputs[fd].closed = True

    def _read_status(self) -> bool:
        chunk = os.read(self._status, 1 << 16)
        if not chunk:
            self.gone = True
            os.close(self._status)
            self._status = None
            return True
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        news = False
        for line in lines:
            event = _report(line)
            if event is None:        # not the supervisor's: someone else wrote into the pipe
                self.forged.append(line[:200].decode(errors="replace"))
                self.gone = True
                return True
            self.events.append(event)
            kind = event.pop("event")
            if kind == "started":
                self.worker_pid = event["pid"]
            elif kind == "exit":
                self.exit = event
                news = True
            elif kind == "signal":
                self.signals.append(event)
                news = True
            elif kind == "backstop":
                self.backstop = True
                news = True
            elif kind == "done":
                self.done = True
                news = True
        return news

    def drain(self, seconds: float = 0.2) -> None:
        """Read the rest of the worker's output, for up to ``seconds``."""
        deadline = time.monotonic() + seconds
        while any(not s.closed for s in self._outputs.values()) and time.monotonic() < deadline:
            open_fds = [fd for fd, s in self._outputs.items() if not s.closed]
            ready, _, _ = select.select(open_fds, [], [], max(0.0, deadline - time.monotonic()))
            for fd in ready:
                self._read_output(fd)

    # -- commands
    def ask_where(self) -> None:
        """Have the supervisor send the worker SIGUSR1."""
        self._say(b"where\n")

    def _say(self, data: bytes) -> None:
        try:
            os.write(self._command, data)
        except OSError:
            pass

    def stop(self) -> None:
        """Kill the worker and everything it started, and wait for the supervisor to end; a supervisor that
        was stopped or killed is not waited for: what it started is killed from here."""
        if self._command is not None:
            self._say(b"stop\n")
            os.close(self._command)
            self._command = None
        deadline = time.monotonic() + STOP_WAIT_S
        while self._status is not None and time.monotonic() < deadline and _state(self._pid) != "T":
            self.wait([], min(0.1, deadline - time.monotonic()))
        if not self.done:
            self._kill_tree()
        if self._process is not None:
            try:
                self._process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._kill_supervisor()
                self._process.wait()
        else:
            self._wait_fork(deadline)
        if not self.done:            # the supervisor was killed: its orphans came to this process
            self._kill_worker_group()
            self._kill_tree()
        _SUBREAPER.leave()
        self.drain(0.05)
        for fd in self._outputs:
            os.close(fd)
        self._outputs = {}
        if self._status is not None:
            os.close(self._status)
            self._status = None

    def _kill_tree(self) -> None:
        """SIGKILL every process below this one that this box started (the supervisor's tree, and its orphans,
        which come here: the caller is a subreaper while a box is open), and reap those that are its children."""
        me, deadline = os.getpid(), time.monotonic() + 2.0
        while time.monotonic() < deadline:
            pids = [p for p in descendants(me) if p != self._pid and p not in self._before]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)
            for pid in pids:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass

    def _wait_fork(self, deadline: float) -> None:
        while True:
            pid, _ = os.waitpid(self._pid, os.WNOHANG)
            if pid:
                return
            if time.monotonic() > deadline:
                self._kill_supervisor()
                os.waitpid(self._pid, 0)
                return
            time.sleep(0.01)

    def _kill_supervisor(self) -> None:
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _kill_worker_group(self) -> None:
        if self.worker_pid is not None:
            try:
                os.killpg(self.worker_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    @property
    def supervisor_pid(self) -> int:
        return self._pid

    @property
    def ended(self) -> bool:
        """Whether the supervisor has ended (its work done, or killed)."""
        return self.done or self.gone


_REPORTS = {"started": {"pid": int}, "exit": {"code": int}, "signal": {"signal": str, "sender": int},
            "backstop": {"seconds": (int, float)}, "done": {"killed": int}}


def _report(line: bytes) -> dict | None:
    """One report of the supervisor, checked against :data:`_REPORTS`; None for anything else."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if type(event) is not dict or event.get("event") not in _REPORTS:
        return None
    fields = dict(_REPORTS[event["event"]])
    if event["event"] == "exit" and "signal" in event:
        fields = {"signal": str}
    if set(event) != {"event", *fields} or not all(type(event[k]) in (t if isinstance(t, tuple) else (t,))
                                                   for k, t in fields.items()):
        return None
    if event["event"] == "exit" and "signal" in event and event["signal"] not in signal.Signals.__members__:
        return None
    return event


def _start_fork(config: dict, target) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            _worker_setup(config)
            target()
        finally:
            os._exit(0)
    return pid


@dataclass
class Finished:
    """A whole run of a program under :func:`run`."""

    returncode: int | None       # None when it was killed for its time or its output; negative: a signal
    stdout: Stream
    stderr: Stream
    timed_out: bool = False
    over_cap: bool = False       # stdout grew past its cap, and the program was stopped there
    signals: list[dict] = field(default_factory=list)


def run(argv: list[str], *, timeout: float, limits: Limits, cwd: str | None = None, env: dict | None = None,
        stdout_cap: int, stderr_cap: int, stop_over_cap: bool = False) -> Finished:
    """Run ``argv`` supervised, within ``timeout`` seconds and ``limits``; stdout and stderr kept up to their
    caps (with ``stop_over_cap`` the program is stopped once its stdout passes the cap)."""
    box = Box(argv=argv, cwd=cwd, env=env, limits=limits, output_cap=stdout_cap, merge_output=False,
              backstop_s=timeout + 30)
    box.stderr.cap = stderr_cap
    deadline = time.monotonic() + timeout
    timed_out = over = False
    try:
        while box.exit is None and not box.signals and not box.ended:
            if stop_over_cap and box.stdout.dropped:
                over = True
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
            box.wait([], min(0.5, deadline - time.monotonic()))
    finally:
        box.stop()
    code = None
    if box.exit is not None and not (timed_out or over):
        code = box.exit["code"] if "code" in box.exit else -signal.Signals[box.exit["signal"]].value
    return Finished(code, box.stdout, box.stderr, timed_out, over or (stop_over_cap and bool(box.stdout.dropped)),
                    box.signals)


if __name__ == "__main__":
    _config = json.loads(sys.argv[1])
    supervise(_config, _start_exec)
