"""Run a learner's Python exercise in a child process, so that nothing the learner's code does
(exit, crash, hang, eat all memory) takes the caller down or passes for a verdict.

The parent (:func:`run_in_child`) starts the child, listens on a pipe and keeps the time; the
child (:func:`_child_main`) imports the learner's file, runs the exercise's checker and sends
back the verdict, a :class:`~.feedback.CheckResult`. Every way of ending without a verdict is a
FAIL that says what happened and where:

- a time-out: the parent asks the child where it is (SIGUSR1; the child answers with the call
  in progress and the learner's line), then kills the child's whole process group;
- ``os._exit``: the child wraps it so that it reports the caller's line before exiting;
- a signal (a crash, the out-of-memory killer), or an exit code with no verdict.

``sys.exit`` and ``MemoryError`` are exceptions: :mod:`.loader` and :class:`~.feedback.Learner`
already turn them into failures at the learner's line.

A file is checked in a fresh interpreter, ``python -m hgemm_course.check FD REQUEST`` (safe to
start from a notebook that holds threads and a CUDA context, and unlike multiprocessing's
"spawn" it does not re-run the caller's script). A function passed in from a notebook cannot
be imported anywhere else, so it is checked in a fork of this process, which inherits it.
"""
from __future__ import annotations

import faulthandler
import json
import linecache
import math
import multiprocessing
import numbers
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable

from .feedback import MEMORY_LIMIT_GIB, CheckResult, Exercise, Failure, Learner, format_call
from .loader import load_function

TIMEOUT_S = 60
WHERE_WAIT_S = 1.0   # how long a timed-out child gets to say where it is before it is killed


@dataclass
class _Request:
    """What the child checks: the learner's file (absolute path) or function."""

    exercise: Exercise
    source: Path | None
    func: Callable | None
    draw_to: Path | None   # where to save the picture, when one is asked for
    timeout: float


@dataclass
class _Report:
    """What the parent heard. The child sends ``(field, value)`` pairs that set these fields."""

    verdict: CheckResult | None = None
    importing: bool = False      # the child started importing the learner's file
    calling: str | None = None   # the exercise function the checker started calling
    where: str | None = None     # the learner's call and line when stopped, or when it called os._exit
    exit_code: int | None = None  # what the learner passed to os._exit


# ------------------------------------------------------------------------------ parent side

def run_in_child(exercise: Exercise, *, source: Path | None = None, func: Callable | None = None,
                 draw_to: Path | None = None, timeout: float = TIMEOUT_S) -> CheckResult:
    """Check the learner's file ``source`` (absolute) or function ``func`` in a child process,
    within ``timeout`` seconds and :data:`~.feedback.MEMORY_LIMIT_GIB` GiB."""
    request = _Request(exercise, source, func, draw_to, timeout)
    with tempfile.TemporaryDirectory(prefix="hgemm-course-check-") as workdir:
        receiver, sender = multiprocessing.Pipe(duplex=False)
        child = _start(request, sender, workdir)
        sender.close()           # the child holds the only writer now: end of file means it is gone
        try:
            report, timed_out = _listen(receiver, child.pid, timeout)
        finally:
            receiver.close()
            exit_code = _kill(child)
    result = report.verdict or _no_verdict(exercise.name, report, timed_out, exit_code, timeout)
    result.source = source
    return result


def _start(request: _Request, sender: Connection, workdir: str):
    """The child, in a session (so a process group) of its own and in the folder ``workdir``."""
    if request.func is not None:
        child = multiprocessing.get_context("fork").Process(target=_forked_main, args=(sender, request, workdir))
        child.start()
        return child
    fd = sender.fileno()
    plain = {"exercise": request.exercise.name, "source": str(request.source), "timeout": request.timeout,
             "draw_to": str(request.draw_to) if request.draw_to else None}
    # The learner's folder on the child's path, as `python FILE` puts it: the file's neighbours import.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(request.source.parent),
                                                                     os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, "-m", "hgemm_course.check", str(fd), json.dumps(plain)],
                            pass_fds=(fd,), cwd=workdir, start_new_session=True, env=env)


def _listen(receiver: Connection, pid: int, timeout: float) -> tuple[_Report, bool]:
    """Read the child's messages until its verdict, its end or the deadline; (report, timed out)."""
    report = _Report()
    deadline = time.monotonic() + timeout
    while report.verdict is None:
        left = deadline - time.monotonic()
        if left <= 0:
            _ask_where(receiver, pid, report)
            return report, True
        if receiver.poll(left):
            try:
                _read(receiver.recv(), report)
            except EOFError:     # the child ended without a verdict
                break
    return report, False


def _ask_where(receiver: Connection, pid: int, report: _Report) -> None:
    """Ask a timed-out child where the learner's code is; it answers from its SIGUSR1 handler,
    unless it is stuck in compiled code, which does not let the handler run."""
    os.kill(pid, signal.SIGUSR1)
    until = time.monotonic() + WHERE_WAIT_S
    try:
        while report.where is None and receiver.poll(max(0.0, until - time.monotonic())):
            _read(receiver.recv(), report)
    except EOFError:
        pass


def _read(message: tuple, report: _Report) -> None:
    field, value = message
    if field in _Report.__dataclass_fields__:
        setattr(report, field, value)


def _kill(child) -> int:
    """Kill the child and everything it started (its process group); its exit code, negative
    for the signal that ended it."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:   # a fork killed before it made its own group
        child.kill()
    if isinstance(child, subprocess.Popen):
        return child.wait()
    child.join()
    return child.exitcode


def _no_verdict(exercise: str, report: _Report, timed_out: bool, exit_code: int | None,
                timeout: float) -> CheckResult:
    """The FAIL for a child that gave no verdict: what happened, during what, and where."""
    if report.calling:
        during = f"while running {report.calling}"
    elif report.importing:
        during = "while importing your file"
    else:
        during = "before your file was loaded"
    at = f"\n  {report.where}" if report.where else ""
    if timed_out:
        got = f"no answer after {timeout:g} s"
        if report.calling:
            question = f"is there an endless loop in {report.calling}?"
        elif report.importing:
            question = "is there an endless loop at its top level (code there runs on import)?"
        else:
            question = "the check could not even start: is the machine very busy?"
        message = (f"No answer after {timeout:g} s {during}: {question}{at}\n"
                   "If it is only slow, give it longer: hgemm-course check --timeout SECONDS, "
                   "or check(..., timeout=SECONDS).")
    elif report.exit_code is not None:
        got = f"os._exit({report.exit_code})"
        message = (f"Your code ended the process with os._exit({report.exit_code}) {during}, before "
                   f"giving an answer.{at}\nThe checker needs your function's answer: return it instead of exiting.")
    elif exit_code is not None and exit_code < 0:
        name = signal.Signals(-exit_code).name
        got = name
        message = f"Your code was killed by {name} {during}, before giving an answer{_why(name)}.{at}"
    else:
        got = f"exit code {exit_code}"
        message = (f"Your code ended the process (os._exit or a crash) with exit code {exit_code} {during}, "
                   f"before giving an answer.{at}")
    return CheckResult(exercise, False, message, {"input": None, "expected": "an answer", "got": got})


def _why(signal_name: str) -> str:
    return {
        "SIGKILL": f": most likely the system ran out of memory (the checker allows {MEMORY_LIMIT_GIB} GiB)",
        "SIGSEGV": ": a crash in compiled code (numba, numpy, ctypes), such as an access out of bounds",
        "SIGBUS": ": a crash in compiled code (numba, numpy, ctypes), such as a misaligned access",
        "SIGXCPU": ": it used up its CPU time (a busy loop, or many threads)",
    }.get(signal_name, "")


# ------------------------------------------------------------------------------- child side

def spawned_main(argv: list[str]) -> None:
    """The child in a fresh interpreter: ``argv`` is the pipe's file descriptor and the request."""
    from . import _REGISTRY

    fd, plain = int(argv[0]), json.loads(argv[1])
    draw_to = Path(plain["draw_to"]) if plain["draw_to"] else None
    request = _Request(_REGISTRY[plain["exercise"]], Path(plain["source"]), None, draw_to, plain["timeout"])
    _child_main(Connection(fd, readable=False), request)


def _forked_main(conn: Connection, request: _Request, workdir: str) -> None:
    os.setsid()                  # a process group of its own, which the parent can kill whole
    os.chdir(workdir)
    _child_main(conn, request)


def _child_main(conn: Connection, request: _Request) -> None:
    """Check under the limits and send the verdict; os._exit and SIGUSR1 send where the learner's code is."""
    _limit_resources(request.timeout)
    faulthandler.enable()        # a crash prints the Python stack, the learner's line in it, on stderr
    source = request.source if request.func is None else _source_of(request.func)
    exit_process = os._exit

    def reported_exit(status, /):    # os._exit ends the process at once: say where from, first
        try:
            conn.send(("where", _position(sys._getframe(1), source)))
            conn.send(("exit_code", status))
        finally:
            exit_process(status)

    os._exit = reported_exit
    # the parent's question when the time is up
    signal.signal(signal.SIGUSR1, lambda _signum, frame: conn.send(("where", _position(frame, source))))
    try:
        verdict = _check(request, source, conn)
    except BaseException as exc:  # a KeyboardInterrupt raised by the learner's code, or a bug here
        verdict = CheckResult(request.exercise.name, False,
                              f"The check stopped on {type(exc).__name__}: {exc}\n{traceback.format_exc()}",
                              {"input": None, "expected": "an answer", "got": type(exc).__name__})
    finally:
        os._exit = exit_process
    verdict.first_failure = _plain(verdict.first_failure)
    sys.stdout.flush()           # the learner's prints: the parent kills this process once it has the verdict
    sys.stderr.flush()
    conn.send(("verdict", verdict))


def _limit_resources(timeout: float) -> None:
    """Memory: RLIMIT_AS at MEMORY_LIMIT_GIB above what the child maps already, so that a huge
    allocation fails at once with MemoryError instead of swapping or waking the out-of-memory
    killer. Relative, because a forked child starts with its parent's mappings (tens of GiB in
    a notebook with a CUDA context). It leaves room to import numba and JIT-compile (about
    0.3 GiB; tests/test_check_isolation.py checks it), not to start CUDA, which reserves far
    more address space: the Python exercises need no GPU.
    CPU: RLIMIT_CPU a little past the time limit, so that a busy loop also ends when the parent
    dies without killing it (a notebook kernel restarted during a check)."""
    memory = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    memory += MEMORY_LIMIT_GIB * 2**30
    _set_limit(resource.RLIMIT_AS, memory, memory)
    cpu_s = math.ceil(timeout) + 10
    _set_limit(resource.RLIMIT_CPU, cpu_s, cpu_s + 5)   # SIGXCPU at the soft limit, SIGKILL at the hard one


def _set_limit(limit: int, soft: int, hard: int) -> None:
    """setrlimit, never above the hard limit the child has already (only root may raise one)."""
    _, current = resource.getrlimit(limit)
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(limit, (soft, hard))


def _check(request: _Request, source: Path | None, conn) -> CheckResult:
    """Import the learner's function and run the exercise's checker on it (and its picture)."""
    spec = request.exercise
    func = request.func
    if func is None:
        conn.send(("importing", True))
        try:
            func = load_function(request.source, spec.function)
        except Failure as failure:
            return CheckResult(spec.name, False, failure.message, failure.first_failure)
    learner = Learner(func, source)
    conn.send(("calling", spec.function))
    figure = None
    if request.draw_to is not None and spec.draw is not None:
        request.draw_to.parent.mkdir(parents=True, exist_ok=True)
        try:
            figure = spec.draw(learner, request.draw_to)
        except Failure:
            figure = None        # the verdict below says what is wrong; there is nothing to draw
    try:
        return CheckResult(spec.name, True, spec.verify(learner), None, figure)
    except Failure as failure:
        return CheckResult(spec.name, False, failure.message, failure.first_failure, figure)


def _position(frame, source: Path | None) -> str | None:
    """Where the learner's code is, looking out from ``frame``: the call in progress and the
    innermost line of the learner's file, ``in swizzle_128b(row=3, chunk=0) at mine.py, line 4: while True:``."""
    mine = Path(source).resolve() if source is not None else None
    call = line = None
    while frame is not None:
        code = frame.f_code
        if line is None and Path(code.co_filename).resolve() == mine:
            text = linecache.getline(code.co_filename, frame.f_lineno).strip()
            line = f"at {code.co_filename}, line {frame.f_lineno}" + (f": {text}" if text else "")
        if call is None and code is Learner.__call__.__code__:
            call = "in " + format_call(frame.f_locals["self"].name, frame.f_locals["kwargs"])
        frame = frame.f_back
    return " ".join(part for part in (call, line) if part) or None


def _source_of(func: Callable) -> Path | None:
    code = getattr(func, "__code__", None)
    return Path(code.co_filename) if code is not None else None


def _plain(value):
    """``value`` as plain Python data, anything else (a numpy int, an object of a class in the
    learner's file) as an int, a float or its repr: the parent cannot import the learner's file
    to unpickle it."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) in (list, tuple):
        return type(value)(_plain(v) for v in value)
    if type(value) is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return repr(value)
