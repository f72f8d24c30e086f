"""Check a learner's Python exercise with the learner's code in a child process that only answers
calls: nothing that code does (exit, crash, hang, eat memory, print, patch the checker, write to the
pipe, signal the checker) can make the verdict or take the caller down.

The verdict is decided here, in the caller's process, where no learner code runs. The exercise's
checker (``verify``) runs here, with references imported before the child started (:func:`.caller.prepare`),
and calls the learner's function through a :class:`~.feedback.Learner`: each call sends the arguments
the checker chose to the child (:mod:`.child`; the caller's end is :mod:`.channel`), which runs the
learner's function on them and sends back what it returned, as plain data in a format that runs no code
(JSON frames; tuples, dicts, numpy arrays and other objects as tagged JSON, :mod:`.answer_format`).
Whatever the child sends that is not such an answer is a FAIL naming what came back. The child is the
worker of a supervisor (:mod:`.sandbox`) that ends every process it started, setsid'd ones included,
when the check returns.

Every way of ending without the answers is a FAIL that says what happened and where:

- a time-out: the supervisor sends the child SIGUSR1 (the child answers with the call in progress
  and the learner's line), then everything is killed;
- ``os._exit``: the child wraps it so that it reports the caller's line before exiting;
- a signal (a crash, the out-of-memory killer), an exit code, a closed pipe, a signal sent to the checker.

``sys.exit`` and ``MemoryError`` are exceptions: the child reports them at the learner's line.

A file is checked in a fresh interpreter, ``python -P -m hgemm_course.check REQUEST`` (safe to start
from a notebook that holds threads and a CUDA context, and unlike multiprocessing's "spawn" it does not
re-run the caller's script). There the course's modules are imported first and the learner's folder
goes last on ``sys.path``, after the standard library and site-packages: the file's neighbours import
as under ``python FILE``, but a ``json.py`` or ``numpy.py`` beside it shadows nothing. A function passed
in from a notebook cannot be imported anywhere else, so it is checked in a fork of this process.

A check leaves the course as it found it: the course's files and results are compared before and after
(:mod:`.watch`), and a change is a FAIL that names the files.
"""
from __future__ import annotations

import json
import math
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Callable

from . import confine, sandbox, watch
from .answer_format import MAX_FRAME_BYTES
from .caller import TIMEOUT_RANGE_S, OverTime, caller_time_limit, checked_timeout, prepare
from .channel import Channel, Ended
from .child import forked_main, source_of
from .feedback import CALLER_MEMORY_GIB, MEMORY_LIMIT_GIB, OUTPUT_CAP_BYTES, CheckResult, Exercise, Failure, Learner

TIMEOUT_S = 60
CALLER_SLACK_S = 3           # the checker's own work on the answers, beyond the time limit: its last comparisons


def run_in_child(exercise: Exercise, *, source: Path | None = None, func: Callable | None = None,
                 draw_to: Path | None = None, timeout: float = TIMEOUT_S) -> CheckResult:
    """Check the learner's file ``source`` (absolute) or function ``func`` with its code in a child process,
    within ``timeout`` seconds and :data:`~.feedback.MEMORY_LIMIT_GIB` GiB; the picture, when asked for, is
    saved as ``draw_to`` (never through a symbolic link)."""
    timeout = checked_timeout(timeout, TIMEOUT_S)
    prepare(draw_to is not None and exercise.draw is not None, exercise.imports)
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True   # so the check itself changes no file
    before = watch.snapshot()
    box = None
    try:
        with confine.Sealed(), \
                tempfile.TemporaryDirectory(prefix="hgemm-course-check-", ignore_cleanup_errors=True) as workdir:
            request_r, request_w = os.pipe()
            answer_r, answer_w = os.pipe()
            open_fds = [request_r, request_w, answer_r, answer_w]
            try:
                box = _start(exercise, source, func, workdir, timeout, (request_r, answer_w))
                for fd in (request_r, answer_w):   # the child's ends: it holds them now
                    open_fds.remove(fd)
                    os.close(fd)
                channel = Channel(box, request_w, answer_r, timeout, exercise.function)
                result = _verdict(exercise, channel, source if func is None else source_of(func), draw_to)
            finally:
                if box is not None:
                    box.stop()
                for fd in open_fds:
                    os.close(fd)
    finally:
        sys.dont_write_bytecode = writes_bytecode
    after = watch.snapshot()
    changed = watch.changes(before, after)
    if changed:
        result = CheckResult(exercise.name, False, watch.message(changed, watch.undo(before, after)),
                             {"input": None, "expected": "the course's files unchanged", "got": changed[:5]})
    result.source = source
    result.output, result.output_dropped = box.stdout.text(), box.stdout.dropped
    return result


def _start(exercise: Exercise, source: Path | None, func: Callable | None, workdir: str, timeout: float,
           fds: tuple[int, int]) -> sandbox.Box:
    """The child, under a supervisor, in the folder ``workdir``."""
    limits = sandbox.Limits(cpu_s=math.ceil(timeout) + 10)
    plain = {"exercise": exercise.name, "function": exercise.function, "source": str(source) if source else None,
             "runner": exercise.runner, "request_fd": fds[0], "answer_fd": fds[1]}
    writable = watch.own_folders(source)
    if func is not None:
        return sandbox.Box(target=lambda: forked_main(plain, func), cwd=workdir, limits=limits, keep_fds=fds,
                           output_cap=OUTPUT_CAP_BYTES, backstop_s=timeout + 30, writable=writable)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1", PYTHONSAFEPATH="1")
    return sandbox.Box(argv=[sys.executable, "-P", "-m", "hgemm_course.check", json.dumps(plain)], cwd=workdir,
                       env=env, limits=limits, keep_fds=fds, output_cap=OUTPUT_CAP_BYTES, backstop_s=timeout + 30,
                       writable=writable)


def _verdict(exercise: Exercise, channel: Channel, source: Path | None, draw_to: Path | None) -> CheckResult:
    """Run the exercise's checker against the child's answers, within the check's time and memory here too: the
    explanation of a wrong answer reads what the learner's code returned, and must neither run on past the time
    limit (:data:`CALLER_SLACK_S` at most beyond it) nor grow this process past
    :data:`~.feedback.CALLER_MEMORY_GIB` GiB more than it holds when the check starts."""
    figure = None
    try:
        with caller_time_limit(channel.timeout + CALLER_SLACK_S), sandbox.bounded_memory(CALLER_MEMORY_GIB << 30):
            channel.start()
            learner = Learner(exercise.function, channel, source)
            if draw_to is not None and exercise.draw is not None:
                figure = _draw(exercise, learner, draw_to)
            return CheckResult(exercise.name, True, exercise.verify(learner), None, figure)
    except Failure as failure:
        return CheckResult(exercise.name, False, failure.message, failure.first_failure, figure)
    except Ended as ended:
        return _no_answer(exercise.name, channel, ended)
    except OverTime as over:
        return CheckResult(exercise.name, False, str(over), {"input": None, "expected": "a verdict in time",
                                                             "got": "no verdict"})
    except MemoryError:
        return CheckResult(exercise.name, False, over_memory(), {"input": None, "expected": "a verdict",
                                                                 "got": f"over {CALLER_MEMORY_GIB} GiB"})


def over_memory() -> str:
    """The FAIL's message when the checker's own work on the learner's answers needs more memory than it allows."""
    return (f"Checking your answers needed more than the {CALLER_MEMORY_GIB} GiB the checker allows its own work: "
            "what your code returned (its size, its values) is far larger than the question asks. Return what "
            "the exercise asks for, of the size it asks.")


def _draw(exercise: Exercise, learner: Learner, draw_to: Path) -> Path | None:
    """Draw in a private folder of this process (not the child's, where learner code could plant a FIFO or a
    link), then write the picture to ``draw_to``, never through a symbolic link nor into anything but a plain file."""
    with tempfile.TemporaryDirectory(prefix="hgemm-course-figure-") as folder:
        drawn = Path(folder) / "figure.png"
        try:
            exercise.draw(learner, drawn)
        except Failure:
            return None              # the verdict says what is wrong; there is nothing to draw
        try:
            return save_figure(drawn.read_bytes(), draw_to)
        except OSError:              # a link or a FIFO planted there while the check ran: no picture, the verdict stands
            return None


def save_figure(data: bytes, path: Path) -> Path:
    """Write ``data`` to ``path`` as a new or replaced plain file; OSError rather than follow a symbolic link
    there (O_NOFOLLOW) or write into a FIFO or a device (O_NONBLOCK, then a plain file or nothing)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a plain file")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _no_answer(exercise: str, channel: Channel, ended: Ended) -> CheckResult:
    """The FAIL for a child that gave no answer: what happened, during what, and where."""
    facts, why = ended.facts, ended.why
    if channel.called:
        during = f"while running {channel.called}"
    elif channel.importing:
        during = "while importing your file"
    else:
        during = "before your file was loaded"
    at = f"\n  {channel.where}" if channel.where else ""
    if why == "timed_out":
        got = f"no answer after {channel.timeout:g} s"
        if channel.called:
            question = f"is there an endless loop in {channel.called}?"
        elif channel.importing:
            question = "is there an endless loop at its top level (code there runs on import)?"
        else:
            question = "the check could not even start: is the machine very busy?"
        message = (f"No answer after {channel.timeout:g} s {during}: {question}{at}\n"
                   f"If it is only slow, give it longer: hgemm-course check --timeout SECONDS, or "
                   f"check(..., timeout=SECONDS), up to {TIMEOUT_RANGE_S[1]} s.")
    elif why == "os_exit":
        got = f"os._exit({facts['code']})"
        message = (f"Your code ended the process with os._exit({facts['code']}) {during}, before giving an "
                   f"answer.{at}\nThe checker needs your function's answer: return it instead of exiting.")
    elif why == "signalled":
        got = f"{facts['signal']} sent to the checker"
        message = (f"Your code sent {facts['signal']} to the checker (process {facts['sender']} sent it to the "
                   f"checker's supervisor) {during}: the check stopped there, and nothing else was touched.{at}\n"
                   "Leave the checker's processes alone (os.kill, os.killpg): only the answers count.")
    elif why == "malformed":
        got = facts["got"]
        message = (f"The process that runs your code sent back something that is not an answer {during}: "
                   f"{facts['got']}.\nOnly your function's return value counts; "
                   "nothing else written to the checker's pipe is read.")
    elif why == "too_big":
        got = f"{facts['size']} bytes"
        message = (f"Your function's answer {during} is {facts['size']} bytes long, more than the checker reads "
                   f"({MAX_FRAME_BYTES >> 20} MiB): does it return far more than the question asks?")
    elif why == "supervisor":
        got = "the checker's supervisor ended"
        message = (f"The process that watches your code for the checker was killed {during} (SIGKILL from your code, "
                   f"os.kill(os.getppid(), 9)?): the check stopped there.{at}\n"
                   "Leave the checker's processes alone (os.kill, os.killpg): only the answers count.")
    elif why == "closed":
        got = "the pipe closed"
        message = (f"The pipe the checker reads your answers from was closed {during}, while your code "
                   f"still ran (os.close on a file descriptor it did not open?).{at}")
    elif "signal" in facts:
        name = facts["signal"]
        got = name
        message = f"Your code was killed by {name} {during}, before giving an answer{_why(name)}.{at}"
    else:
        got = f"exit code {facts.get('code')}"
        message = (f"Your code ended the process (os._exit or a crash) with exit code {facts.get('code')} {during}, "
                   f"before giving an answer.{at}")
    return CheckResult(exercise, False, message, {"input": None, "expected": "an answer", "got": got})


def _why(signal_name: str) -> str:
    return {
        "SIGKILL": f": the system's out-of-memory killer (the checker allows {MEMORY_LIMIT_GIB} GiB), "
                   "or a kill -9 from your own code",
        "SIGSEGV": ": a crash in compiled code (numba, numpy, ctypes), such as an access out of bounds",
        "SIGBUS": ": a crash in compiled code (numba, numpy, ctypes), such as a misaligned access",
        "SIGXCPU": ": it used up its CPU time (a busy loop, or many threads)",
        "SIGXFSZ": f": it wrote a file larger than the {sandbox.FILE_LIMIT_BYTES >> 30} GiB the checker allows",
    }.get(signal_name, "")
