"""Run what a check must not trust (a learner's Python code, a compile of a learner's ``.cu``, a program
built from a learner's region) so that nothing it does outlives or outgrows the check.

    caller (CLI, notebook) -- supervisor (:mod:`.supervisor`: ``python -I supervisor.py``, or a fork) -- worker -- ...

The caller's side is :class:`Box`: it starts the supervisor, reads its reports and the worker's output
(capped at ``output_cap`` bytes a stream; the rest is counted, not kept; a report that is not one of the
supervisor's is taken as the supervisor's end) and stops it. :func:`bounded_memory` bounds the caller's own
work on what a worker gave back (``RLIMIT_AS``, soft, for the length of a block). A supervisor stopped (SIGSTOP)
or killed leaves nothing: the caller is a child subreaper while a box is open, so orphans come to it, and it kills
every process the box started. :func:`run` is a whole run of one program: its exit status and capped output,
within a time limit. What the supervisor does is :mod:`.supervisor`'s.
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

from . import supervisor
from .supervisor import LIBC, PR_SET_CHILD_SUBREAPER, close_fds_except, descendants, prctl, start_fork, supervise

PR_GET_CHILD_SUBREAPER = 37
STOP_WAIT_S = 10.0             # how long the caller waits for the supervisor to finish a stop
FILE_LIMIT_BYTES = 1 << 30     # RLIMIT_FSIZE: no file written larger than 1 GiB


@dataclass
class Limits:
    """What a worker may use: CPU seconds (``RLIMIT_CPU``; SIGXCPU at it, SIGKILL 5 s later), address space
    in bytes (``RLIMIT_AS``; None: the worker sets its own) and the largest file it may write."""

    cpu_s: int | None = None
    memory_bytes: int | None = None
    file_bytes: int = FILE_LIMIT_BYTES


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
            LIBC.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0))
            self.before = value.value
            prctl(PR_SET_CHILD_SUBREAPER, 1)
        self.open += 1

    def leave(self) -> None:
        self.open = max(0, self.open - 1)
        if self.open == 0 and not self.before:
            prctl(PR_SET_CHILD_SUBREAPER, 0)


_SUBREAPER = _Subreaper()


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
    under the limit in force before (the supervisor takes it back, :func:`.supervisor.supervise`)."""
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
            self._process = subprocess.Popen([sys.executable, "-I", "-S", "-B", supervisor.__file__, json.dumps(config)],
                                             pass_fds=sorted(passed), stdin=subprocess.DEVNULL, start_new_session=True)
            self._pid = self._process.pid
        else:
            self._process = None
            self._pid = os.fork()
            if self._pid == 0:
                try:
                    os.setsid()
                    close_fds_except(passed | {0, 1, 2})
                    supervise(config, lambda cfg: start_fork(cfg, target))
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
