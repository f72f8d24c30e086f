"""The child process of a Python exercise's check: it imports the learner's file (or has the function, forked from a
notebook), then answers the caller's calls, one or a batch at a time, with what the learner's function returned or
raised, in :mod:`.answer_format`. It reports where it is when the caller's time is up (SIGUSR1) and where from the
learner's code called ``os._exit``. Nothing it sends decides a verdict: the caller (:mod:`.python_exercise`) reads
it as data.
"""
from __future__ import annotations

import faulthandler
import functools
import importlib
import json
import linecache
import os
import signal
import sys
from pathlib import Path
from typing import Callable

from . import supervisor
from .answer_format import HEADER, MAX_FRAME_BYTES, PIPE_LOST, decode, encode
from .feedback import MEMORY_LIMIT_GIB, Failure, describe, format_call, learner_frame
from .loader import load_module


def spawned_main(argv: list[str]) -> None:
    """The child in a fresh interpreter: ``argv`` is the request (JSON)."""
    _child_main(json.loads(argv[0]), None)


def forked_main(plain: dict, func: Callable) -> None:
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
        data = HEADER.pack(len(body)) + body
        self.sending = True
        try:
            while data:
                data = data[os.write(self.answer_fd, data):]
        finally:
            self.sending = False

    def receive(self) -> dict | None:
        while True:
            if len(self.buffer) >= HEADER.size:
                (size,) = HEADER.unpack(self.buffer[:HEADER.size])
                if len(self.buffer) >= HEADER.size + size:
                    body = self.buffer[HEADER.size:HEADER.size + size]
                    self.buffer = self.buffer[HEADER.size + size:]
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
    source = Path(plain["source"]) if func is None else source_of(func)
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
    runner = _runner(plain.get("runner"))    # before the learner's file: it may set up what the file imports
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
    if runner is not None:
        main = functools.partial(runner, main)
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


def _runner(spec: str | None) -> Callable | None:
    """The course's function ``"module:function"`` (:attr:`.feedback.Exercise.runner`) that runs the learner's
    function inside what the course builds around it, None when the exercise calls it directly."""
    if spec is None:
        return None
    module, function = spec.split(":")
    return getattr(importlib.import_module(module), function)


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
    supervisor.apply_limits({"memory_bytes": memory})


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


def source_of(func: Callable) -> Path | None:
    code = getattr(func, "__code__", None)
    return Path(code.co_filename) if code is not None else None
