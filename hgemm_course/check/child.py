"""Check a learner's Python exercise with the learner's code in a child process that only answers
calls: nothing that code does (exit, crash, hang, eat memory, print, patch the checker, write to the
pipe, signal the checker) can make the verdict or take the caller down.

The verdict is decided here, in the caller's process, where no learner code runs. The exercise's
checker (``verify``) runs here, with references imported before the child started (:func:`prepare`),
and calls the learner's function through a :class:`~.feedback.Learner`: each call sends the arguments
the checker chose to the child, which runs the learner's function on them and sends back what it
returned, as plain data in a format that runs no code (JSON frames; tuples, dicts, numpy arrays and
other objects as tagged JSON, :func:`encode`). Whatever the child sends that is not such an answer is
a FAIL naming what came back. The child is the worker of a supervisor (:mod:`.sandbox`) that ends
every process it started, setsid'd ones included, when the check returns.

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

import contextlib
import faulthandler
import importlib
import itertools
import json
import linecache
import math
import numbers
import os
import signal
import stat
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from . import confine, sandbox, watch
from .feedback import (CALLER_MEMORY_GIB, MEMORY_LIMIT_GIB, OUTPUT_CAP_BYTES, CheckResult, Exercise, Failure, Learner,
                       Returned, ReturnedIterable, Stopped, describe, format_call, learner_failure, learner_frame)
from .loader import load_module

TIMEOUT_S = 60
TIMEOUT_RANGE_S = (1, 3600)   # the time limits a check accepts
WHERE_WAIT_S = 1.0            # how long a timed-out child gets to say where it is before it is killed
MAX_FRAME_BYTES = 16 << 20    # the largest message the child may send: one answer
MAX_TEXT = 2000               # characters kept of a text the child sends (a repr, an exception's message)
MAX_ITEMS = 1 << 20           # items the child reads from an iterable the learner returned
MAX_INT_BITS = 4096           # the widest int an answer may hold: wider ones are described, not sent
MAX_DEPTH = 32                # nesting the child encodes
BATCH = 256                   # calls the child runs in one go when the checker has said which come next
CALLER_SLACK_S = 3           # the checker's own work on the answers, beyond the time limit: its last comparisons
PIPE_LOST = 121               # the child's exit status when its pipes to the parent are gone
_HEADER = struct.Struct(">I")
_ARRAY_KINDS = "biuf"         # numpy dtypes an answer may have: bool, ints, floats


# --------------------------------------------------------------------------------- the data format

def encode(value, depth: int = 0):
    """``value`` as JSON data: None, bools, ints, floats and strings as themselves, lists as arrays,
    ``{"tuple": [...]}``, ``{"dict": [[k, v], ...]}``, ``{"ndarray": [...], "dtype": "int64"}`` (numeric
    dtypes), numpy scalars as Python numbers, and anything else as ``{"opaque": TYPE, "repr": TEXT}``, with
    ``"items"`` when it can be iterated (a generator, a set, a range)."""
    kind = type(value)
    if kind is int and value.bit_length() > MAX_INT_BITS:
        return {"opaque": "int", "repr": f"(an int of {value.bit_length()} bits, too long to read)"}
    if kind is int or kind is str or kind is bool or kind is float or value is None:
        return value
    if depth > MAX_DEPTH:
        return {"opaque": kind.__name__, "repr": "(nested too deep to read)"}
    if kind is tuple:
        return {"tuple": [encode(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if type(value).__name__ == "bool_" or isinstance(value, bool):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return encode(int(value), depth)
    if isinstance(value, numbers.Real):
        return float(value)
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "kind", None) in tuple(_ARRAY_KINDS) and hasattr(value, "tolist") and getattr(value, "ndim", 0):
        return {"ndarray": value.tolist(), "dtype": str(dtype)}
    try:
        text = repr(value)[:MAX_TEXT]
    except Exception as exc:  # the learner's __repr__ raised
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    out = {"opaque": type(value).__name__, "repr": text}
    if hasattr(value, "__iter__") and not isinstance(value, (str, bytes, bytearray)):
        try:
            out["items"] = [encode(v, depth + 1) for v in itertools.islice(iter(value), MAX_ITEMS)]
        except Exception:  # an iterator that raises: not iterable, as far as the checker can tell
            pass
    return out


class Malformed(Exception):
    """What the child sent is not in the format."""


def decode(data, depth: int = 0):
    """The value :func:`encode` wrote; :class:`Malformed` for anything else."""
    if data is None or type(data) in (bool, int, float, str):
        return data
    if depth > MAX_DEPTH + 1:
        raise Malformed("nested too deep")
    if type(data) is list:
        return [decode(v, depth + 1) for v in data]
    if type(data) is dict:
        keys = set(data)
        if keys == {"tuple"} and type(data["tuple"]) is list:
            return tuple(decode(v, depth + 1) for v in data["tuple"])
        if keys == {"dict"} and type(data["dict"]) is list:
            try:
                return {decode(k, depth + 1): decode(v, depth + 1) for k, v in data["dict"]}
            except (TypeError, ValueError) as exc:
                raise Malformed(f"a dict that cannot be rebuilt ({exc})") from None
        if keys == {"ndarray", "dtype"} and type(data["dtype"]) is str:
            import numpy as np

            try:
                dtype = np.dtype(data["dtype"])
                if dtype.kind not in _ARRAY_KINDS:
                    raise TypeError(f"dtype {dtype}")
                return np.asarray(data["ndarray"], dtype=dtype)
            except (TypeError, ValueError) as exc:
                raise Malformed(f"an array that cannot be rebuilt ({exc})") from None
        if {"opaque", "repr"} <= keys <= {"opaque", "repr", "items"} and type(data["opaque"]) is str \
                and type(data["repr"]) is str:
            name = data["opaque"] if data["opaque"].isidentifier() else "object"
            if "items" in data:
                if type(data["items"]) is not list:
                    raise Malformed("items that are not a list")
                kind = type(name, (ReturnedIterable,), {})
                return kind(data["repr"][:MAX_TEXT], [decode(v, depth + 1) for v in data["items"]])
            return type(name, (Returned,), {})(data["repr"][:MAX_TEXT])
    raise Malformed(f"{_shown(data)} is not a value in the checker's format")


def _shown(data, limit: int = 200) -> str:
    text = repr(data)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _text(value) -> str:
    """A text the child sent, capped; a non-text is malformed."""
    if type(value) is not str:
        raise Malformed(f"{_shown(value)} where a text belongs")
    return value[:MAX_TEXT]


def _key(name: str, kwargs: dict) -> str:
    return f"{name}({kwargs!r}"


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return _HEADER.pack(len(body)) + body


# ------------------------------------------------------------------------------ parent side

class _Ended(Stopped):
    """The child gave no answer to a call (it ended, hung, sent garbage, or signalled the checker).
    A BaseException, so that no ``except Exception`` in a checker can take it for the learner's mistake."""

    def __init__(self, why: str, **facts):
        super().__init__(why)
        self.why = why
        self.facts = facts


class _Channel:
    """The parent's end of the conversation with the child: requests out, answers in, under one deadline."""

    def __init__(self, box: sandbox.Box, request_fd: int, answer_fd: int, timeout: float, function: str):
        self.box, self.request_fd, self.answer_fd = box, request_fd, answer_fd
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.function = function
        self.buffer = b""
        self.importing = False
        self.calling: str | None = None    # the call in progress, ``swizzle_128b(row=3, chunk=0)``
        self.called: str | None = None     # the function of the call in progress
        self.where: str | None = None      # where the child said it was (SIGUSR1, os._exit)
        self.known: dict[str, bool] = {}
        self.timed_out = False
        self.planned: list[tuple[str, dict]] = []   # the calls the checker said come next: (key, kwargs)
        self.answers: dict[str, dict] = {}           # key -> the child's reply to a planned call

    def plan(self, name: str, calls: list[dict]) -> None:
        """The checker's next calls of ``name``, in order: the child runs them :data:`BATCH` at a time."""
        self.planned = [(_key(name, kwargs), kwargs) for kwargs in calls]
        self.planned.reverse()
        self.answers = {}

    # -- the exercise's questions
    def start(self) -> None:
        """Wait for the child to import the learner's file (or to have the function): a Failure if the import failed."""
        while True:
            message = self._receive()
            if message.get("importing") is True and len(message) == 1:
                self.importing = True
            elif message.get("ready") is True and len(message) == 1:
                self.importing = False
                return
            elif set(message) == {"import_failed"} and type(message["import_failed"]) is str:
                raise Failure(_text(message["import_failed"]),
                              {"input": None, "expected": "a file that imports", "got": "an error on import"})
            else:
                raise _Ended("malformed", got=_shown(message))

    def has(self, name: str) -> bool:
        if name not in self.known:
            self._send({"op": "has", "name": name})
            message = self._receive()
            if set(message) != {"has"} or type(message["has"]) is not bool:
                raise _Ended("malformed", got=_shown(message))
            self.known[name] = message["has"]
        return self.known[name]

    def call(self, name: str, kwargs: dict):
        self.calling, self.called = format_call(name, kwargs), name
        key = _key(name, kwargs)
        if key not in self.answers and self.planned and self.planned[-1][0] == key:
            self._run_planned(name)
        message = self.answers.pop(key, None)
        if message is None:
            self._send({"op": "call", "name": name, "args": encode(kwargs)})
            message = self._receive()
        return self._answer(name, kwargs, message)

    def _run_planned(self, name: str) -> None:
        """Have the child run the next planned calls of ``name``; their replies go to ``answers``."""
        batch = []
        while self.planned and len(batch) < BATCH and self.planned[-1][0].startswith(name + "("):
            batch.append(self.planned.pop())
        self._send({"op": "calls", "name": name, "args": [encode(kwargs) for _, kwargs in batch]})
        message = self._receive()
        values = message.get("values")
        if not (set(message) <= {"values", "raised"} and type(values) is list and len(values) <= len(batch)):
            raise _Ended("malformed", got=_shown(message))
        for (key, _), value in zip(batch, values):
            self.answers[key] = {"value": value}
        if "raised" in message and len(values) < len(batch):
            self.answers[batch[len(values)][0]] = {"raised": message["raised"]}
        self.planned.extend(reversed(batch[len(values) + 1:]))   # not run: asked for again when their turn comes

    def _answer(self, name: str, kwargs: dict, message: dict):
        """The learner's return value in ``message``, or the Failure for what it raised."""
        try:
            if set(message) == {"value"}:
                return decode(message["value"])
            if set(message) == {"raised"} and type(message["raised"]) is dict:
                raised = message["raised"]
                kind = raised.get("kind")
                if kind in ("not_implemented", "exit", "error") and set(raised) <= {"kind", "hint", "text", "where"}:
                    failure = learner_failure(name, kwargs, {k: _text(v) for k, v in raised.items()})
                    self.calling = self.called = None
                    raise failure
            if set(message) == {"missing"}:
                raise Failure(f"There is no function {name}() to call.", {"input": kwargs, "expected": name, "got": None})
        except Malformed as exc:
            raise _Ended("malformed", got=f"{_shown(message)} ({exc})") from None
        raise _Ended("malformed", got=_shown(message))

    # -- frames
    def _send(self, message: dict) -> None:
        data = _frame(message)
        try:
            while data:              # a request is small: the pipe takes it whole, whatever the child does
                data = data[os.write(self.request_fd, data):]
        except OSError:
            self._gone()

    def _receive(self) -> dict:
        """The next message about the exercise; the child's other messages (where it is, os._exit) are noted."""
        while True:
            message = self._next_frame()
            if set(message) == {"where"}:
                self.where = _text(message["where"]) if message["where"] is not None else None
                continue
            if set(message) == {"os_exit", "where"} and type(message["os_exit"]) is int:
                self.where = _text(message["where"]) if message["where"] is not None else None
                raise _Ended("os_exit", code=message["os_exit"])
            return message

    def _next_frame(self) -> dict:
        while True:
            if len(self.buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack(self.buffer[:_HEADER.size])
                if size > MAX_FRAME_BYTES:
                    raise _Ended("too_big", size=size)
                if len(self.buffer) >= _HEADER.size + size:
                    body = self.buffer[_HEADER.size:_HEADER.size + size]
                    self.buffer = self.buffer[_HEADER.size + size:]
                    try:
                        message = json.loads(body)
                    except (ValueError, RecursionError):
                        raise _Ended("malformed", got=_shown(bytes(body))) from None
                    if type(message) is not dict:
                        raise _Ended("malformed", got=_shown(message))
                    return message
            self._fill()

    def _fill(self) -> None:
        """Read more of what the child sends, until the deadline; _Ended when it cannot come."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            if self.timed_out:
                raise _Ended("timed_out")
            self._time_out()
        ready = self.box.wait([self.answer_fd], left)
        if self.box.signals:
            raise _Ended("signalled", **self.box.signals[0])
        if ready:
            chunk = os.read(self.answer_fd, 1 << 16)
            if chunk:
                self.buffer += chunk
                return
            self._gone()
        if self.box.exit is not None or self.box.ended:
            self._gone()

    def _gone(self) -> None:
        """The child's pipe closed or the child ended: why, once the supervisor has said how it ended."""
        until = time.monotonic() + 1.0
        while self.box.exit is None and not self.box.ended and time.monotonic() < until:
            self.box.wait([], until - time.monotonic())
        if self.box.signals:
            raise _Ended("signalled", **self.box.signals[0])
        if self.box.forged:
            raise _Ended("malformed", got=f"a line in the supervisor's report pipe: {_shown(self.box.forged[0])}")
        if self.box.exit is None:
            raise _Ended("supervisor" if self.box.ended else "closed")
        if self.box.exit.get("code") == PIPE_LOST:
            raise _Ended("closed")
        raise _Ended("exited", **self.box.exit)

    def _time_out(self) -> None:
        """The deadline passed: ask the child where it is, give it WHERE_WAIT_S to say, and end."""
        self.box.ask_where()
        self.deadline = time.monotonic() + WHERE_WAIT_S
        self.timed_out = True
        try:
            while True:
                message = self._next_frame()
                if set(message) == {"where"}:
                    self.where = message["where"][:MAX_TEXT] if type(message["where"]) is str else None
                    break
        except _Ended:
            pass
        raise _Ended("timed_out")


def prepare(draw: bool) -> None:
    """Import every module a checker and its picture use, before any learner code runs: the references
    the verdict is computed from are then the ones installed when the check started (a learner file that
    rewrites them is caught by :mod:`.watch`, and fails the check), and their Numba caches are sealed: this
    process loads no cache file learner code could have written (:func:`hgemm_course.sim.cache.seal`)."""
    import pkgutil

    from .. import sim
    from ..library import ladder
    from ..sim import cache

    importlib.import_module("numpy")
    for module in pkgutil.iter_modules(sim.__path__):
        importlib.import_module(f"hgemm_course.sim.{module.name}")
    cache.seal()
    ladder.registry()
    if draw:
        import io

        from matplotlib.figure import Figure

        importlib.import_module("matplotlib.patches")
        importlib.import_module("hgemm_course.viz.memory")
        figure = Figure(figsize=(1, 1))
        figure.subplots().set_title("0-9")
        figure.savefig(io.BytesIO(), format="png")   # what saving a picture imports, imported now


def checked_timeout(timeout: float | None, default: float) -> float:
    """``timeout`` (default ``default``) when it is a number of seconds in :data:`TIMEOUT_RANGE_S`; else a
    one-line ValueError that gives the range."""
    if timeout is None:
        return default
    low, high = TIMEOUT_RANGE_S
    try:
        value = float(timeout)
    except (TypeError, ValueError):
        raise ValueError(f"The timeout must be a number of seconds from {low} to {high}, not {timeout!r}.") from None
    if not low <= value <= high:   # nan fails both comparisons
        raise ValueError(f"The timeout must be a positive number of seconds from {low} to {high}, "
                         f"not {timeout:g}.")
    return value


def run_in_child(exercise: Exercise, *, source: Path | None = None, func: Callable | None = None,
                 draw_to: Path | None = None, timeout: float = TIMEOUT_S) -> CheckResult:
    """Check the learner's file ``source`` (absolute) or function ``func`` with its code in a child process,
    within ``timeout`` seconds and :data:`~.feedback.MEMORY_LIMIT_GIB` GiB; the picture, when asked for, is
    saved as ``draw_to`` (never through a symbolic link)."""
    timeout = checked_timeout(timeout, TIMEOUT_S)
    prepare(draw_to is not None and exercise.draw is not None)
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
                channel = _Channel(box, request_w, answer_r, timeout, exercise.function)
                result = _verdict(exercise, channel, source if func is None else _source_of(func), draw_to)
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
             "request_fd": fds[0], "answer_fd": fds[1]}
    writable = watch.own_folders(source)
    if func is not None:
        return sandbox.Box(target=lambda: _forked_main(plain, func), cwd=workdir, limits=limits, keep_fds=fds,
                           output_cap=OUTPUT_CAP_BYTES, backstop_s=timeout + 30, writable=writable)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1", PYTHONSAFEPATH="1")
    return sandbox.Box(argv=[sys.executable, "-P", "-m", "hgemm_course.check", json.dumps(plain)], cwd=workdir,
                       env=env, limits=limits, keep_fds=fds, output_cap=OUTPUT_CAP_BYTES, backstop_s=timeout + 30,
                       writable=writable)


def _verdict(exercise: Exercise, channel: _Channel, source: Path | None, draw_to: Path | None) -> CheckResult:
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
    except _Ended as ended:
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


class OverTime(Stopped):
    """The checker's own work on the learner's answers ran past the check's time."""


@contextlib.contextmanager
def caller_time_limit(seconds: float):
    """Within the block, :class:`OverTime` once ``seconds`` have passed (in the main thread; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def over(_signum, _frame):
        raise OverTime(f"Checking your answers took the checker more than {seconds:g} s: what your code returned "
                       "(its size, its values) makes the checker's own work on it endless. Return what the exercise "
                       "asks for, of the size it asks; if it is only slow, give it longer: hgemm-course check "
                       "--timeout SECONDS.")

    before = signal.signal(signal.SIGALRM, over)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if before is None else before)


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


def _no_answer(exercise: str, channel: _Channel, ended: _Ended) -> CheckResult:
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


# ------------------------------------------------------------------------------- child side

def spawned_main(argv: list[str]) -> None:
    """The child in a fresh interpreter: ``argv`` is the request (JSON)."""
    _child_main(json.loads(argv[0]), None)


def _forked_main(plain: dict, func: Callable) -> None:
    """The child forked from a notebook: its output goes to the pipes the supervisor set up, not to the
    notebook's streams (whose threads are not in this process)."""
    import io

    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    _child_main(plain, func)


class _Answers:
    """The child's end: requests in, answers out."""

    def __init__(self, request_fd: int, answer_fd: int):
        self.request_fd, self.answer_fd = request_fd, answer_fd
        self.buffer = b""
        self.sending = False

    def send(self, message: dict) -> None:
        self.send_body(json.dumps(message).encode())

    def send_values(self, name: str, func: Callable, calls: list, source: Path | None) -> None:
        """Answer a batch of calls: ``{"values": [...]}`` (with ``"raised"`` for the call that raised, where the
        batch stops), each value serialized once; a batch stops too once its values fill half a frame."""
        pieces, size, raised = [], 0, None
        for args in calls:
            reply = _invoke(name, func, decode(args), source)
            if "raised" in reply:
                raised = reply["raised"]
                break
            pieces.append(json.dumps(reply["value"]))
            size += len(pieces[-1])
            if size > MAX_FRAME_BYTES // 2:
                break
        body = '{"values": [' + ", ".join(pieces) + "]" + (f', "raised": {json.dumps(raised)}' if raised else "") + "}"
        self.send_body(body.encode())

    def send_body(self, body: bytes) -> None:
        data = _HEADER.pack(len(body)) + body
        self.sending = True
        try:
            while data:
                data = data[os.write(self.answer_fd, data):]
        finally:
            self.sending = False

    def receive(self) -> dict | None:
        while True:
            if len(self.buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack(self.buffer[:_HEADER.size])
                if len(self.buffer) >= _HEADER.size + size:
                    body = self.buffer[_HEADER.size:_HEADER.size + size]
                    self.buffer = self.buffer[_HEADER.size + size:]
                    return json.loads(body)
            chunk = os.read(self.request_fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk


def _child_main(plain: dict, func: Callable | None) -> None:
    """Import the learner's file (or take the function), then answer calls until the parent stops asking."""
    conn = _Answers(plain["request_fd"], plain["answer_fd"])
    _limit_memory()
    faulthandler.enable()        # a crash prints the Python stack, the learner's line in it, into the output
    source = Path(plain["source"]) if func is None else _source_of(func)
    exit_process, me = os._exit, os.getpid()

    def reported_exit(status, /):    # os._exit ends the process at once: say where from, first
        if os.getpid() != me:        # a process the learner's code forked: not the one the checker asks
            exit_process(status)
        try:
            conn.send({"os_exit": int(status), "where": _position(sys._getframe(1), source)})
        finally:
            exit_process(status)

    def where(_signum, frame):       # the parent's question when the time is up
        if not conn.sending and os.getpid() == me:
            conn.send({"where": _position(frame, source)})

    os._exit = reported_exit
    signal.signal(signal.SIGUSR1, where)
    try:
        _serve(conn, plain, func, source, exit_process)
    except OSError:                  # the pipes to the parent are gone (closed by the learner's code)
        os.write(2, b"hgemm-course check: the pipe to the checker was closed\n")
        exit_process(PIPE_LOST)


def _serve(conn: _Answers, plain: dict, func: Callable | None, source: Path | None, exit_process) -> None:
    if func is None:
        conn.send({"importing": True})
        sys.path.append(str(source.parent))   # after the standard library and site-packages: shadows nothing
        try:
            namespace = vars(load_module(source))
        except Failure as failure:
            conn.send({"import_failed": failure.message})
            exit_process(0)
        main = namespace.get(plain["function"])
        if not callable(main):
            conn.send({"import_failed": f"{source} defines no function {plain['function']}(); keep the name "
                                        "the exercise gave."})
            exit_process(0)
    else:
        namespace, main = getattr(func, "__globals__", {}), func
    conn.send({"ready": True})
    while True:
        request = conn.receive()
        if request is None:
            exit_process(0)
        name = request["name"]
        target = main if name == plain["function"] else namespace.get(name)
        if request["op"] == "has":
            conn.send({"has": callable(target)})
        elif not callable(target):
            conn.send({"missing": True})
        elif request["op"] == "call":
            conn.send(_invoke(name, target, decode(request["args"]), source))
        else:                         # "calls": in order, up to the first that raises or a frame's worth
            conn.send_values(name, target, request["args"], source)


def _invoke(name: str, func: Callable, kwargs: dict, source: Path | None) -> dict:
    """One call of the learner's function: what it returned, or what it raised."""
    try:
        value = func(**kwargs)
    except NotImplementedError as exc:
        return {"raised": {"kind": "not_implemented", "hint": str(exc)}}
    except SystemExit as exc:
        return {"raised": {"kind": "exit", "text": describe(exc), "where": learner_frame(exc, source)}}
    except BaseException as exc:  # the learner's bug, or a KeyboardInterrupt raised by its code
        return {"raised": {"kind": "error", "text": describe(exc), "where": learner_frame(exc, source)}}
    try:
        return {"value": encode(value)}
    except RecursionError:
        return {"value": {"opaque": type(value).__name__, "repr": "(nested too deep to read)"}}


def _limit_memory() -> None:
    """RLIMIT_AS at MEMORY_LIMIT_GIB above what the child maps already, so that a huge allocation fails at
    once with MemoryError instead of swapping or waking the out-of-memory killer. Relative, because a
    forked child starts with its parent's mappings (tens of GiB in a notebook with a CUDA context). It
    leaves room to import numba and JIT-compile (about 0.3 GiB; tests/test_check_isolation.py checks it),
    not to start CUDA, which reserves far more address space: the Python exercises need no GPU.
    (The supervisor set RLIMIT_CPU a little past the time limit, so that a busy loop also ends when the
    parent dies without killing it.)"""
    memory = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    memory += MEMORY_LIMIT_GIB * 2**30
    sandbox.apply_limits({"memory_bytes": memory})


def _position(frame, source: Path | None) -> str | None:
    """Where the learner's code is, looking out from ``frame``: the call in progress and the innermost
    line of the learner's file, ``in swizzle_128b(row=3, chunk=0) at mine.py, line 4: while True:``."""
    mine = Path(source).resolve() if source is not None else None
    call = line = None
    while frame is not None:
        code = frame.f_code
        if line is None and Path(code.co_filename).resolve() == mine:
            text = linecache.getline(code.co_filename, frame.f_lineno).strip()
            line = f"at {code.co_filename}, line {frame.f_lineno}" + (f": {text}" if text else "")
        if call is None and code is _invoke.__code__:
            call = "in " + format_call(frame.f_locals["name"], frame.f_locals["kwargs"])
        frame = frame.f_back
    return " ".join(part for part in (call, line) if part) or None


def _source_of(func: Callable) -> Path | None:
    code = getattr(func, "__code__", None)
    return Path(code.co_filename) if code is not None else None

