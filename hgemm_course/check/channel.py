"""The caller's end of the conversation with a Python exercise's child (:mod:`.child`): the checker's calls out,
the learner's answers in, under one deadline, and every way the child can end without an answer named
(:class:`Ended`)."""
from __future__ import annotations

import json
import os
import time

from . import sandbox
from .answer_format import (HEADER, MAX_FRAME_BYTES, MAX_TEXT, PIPE_LOST, Malformed, abbreviated, call_key,
                            capped_text, decode, encode, framed)
from .feedback import Failure, Stopped, format_call, learner_failure

WHERE_WAIT_S = 1.0            # how long a timed-out child gets to say where it is before it is killed
BATCH = 256                   # calls the child runs in one go when the checker has said which come next


class Ended(Stopped):
    """The child gave no answer to a call (it ended, hung, sent garbage, or signalled the checker).
    A BaseException, so that no ``except Exception`` in a checker can take it for the learner's mistake."""

    def __init__(self, why: str, **facts):
        super().__init__(why)
        self.why = why
        self.facts = facts


class Channel:
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
        self.planned = [(call_key(name, kwargs), kwargs) for kwargs in calls]
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
                raise Failure(capped_text(message["import_failed"]),
                              {"input": None, "expected": "a file that imports", "got": "an error on import"})
            else:
                raise Ended("malformed", got=abbreviated(message))

    def has(self, name: str) -> bool:
        if name not in self.known:
            self._send({"op": "has", "name": name})
            message = self._receive()
            if set(message) != {"has"} or type(message["has"]) is not bool:
                raise Ended("malformed", got=abbreviated(message))
            self.known[name] = message["has"]
        return self.known[name]

    def call(self, name: str, kwargs: dict):
        self.calling, self.called = format_call(name, kwargs), name
        key = call_key(name, kwargs)
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
            raise Ended("malformed", got=abbreviated(message))
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
                    failure = learner_failure(name, kwargs, {k: capped_text(v) for k, v in raised.items()})
                    self.calling = self.called = None
                    raise failure
            if set(message) == {"missing"}:
                raise Failure(f"There is no function {name}() to call.", {"input": kwargs, "expected": name, "got": None})
        except Malformed as exc:
            raise Ended("malformed", got=f"{abbreviated(message)} ({exc})") from None
        raise Ended("malformed", got=abbreviated(message))

    # -- frames
    def _send(self, message: dict) -> None:
        data = framed(message)
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
                self.where = capped_text(message["where"]) if message["where"] is not None else None
                continue
            if set(message) == {"os_exit", "where"} and type(message["os_exit"]) is int:
                self.where = capped_text(message["where"]) if message["where"] is not None else None
                raise Ended("os_exit", code=message["os_exit"])
            return message

    def _next_frame(self) -> dict:
        while True:
            if len(self.buffer) >= HEADER.size:
                (size,) = HEADER.unpack(self.buffer[:HEADER.size])
                if size > MAX_FRAME_BYTES:
                    raise Ended("too_big", size=size)
                if len(self.buffer) >= HEADER.size + size:
                    body = self.buffer[HEADER.size:HEADER.size + size]
                    self.buffer = self.buffer[HEADER.size + size:]
                    try:
                        message = json.loads(body)
                    except (ValueError, RecursionError):
                        raise Ended("malformed", got=abbreviated(bytes(body))) from None
                    if type(message) is not dict:
                        raise Ended("malformed", got=abbreviated(message))
                    return message
            self._fill()

    def _fill(self) -> None:
        """Read more of what the child sends, until the deadline; Ended when it cannot come."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            if self.timed_out:
                raise Ended("timed_out")
            self._time_out()
        ready = self.box.wait([self.answer_fd], left)
        if self.box.signals:
            raise Ended("signalled", **self.box.signals[0])
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
            raise Ended("signalled", **self.box.signals[0])
        if self.box.forged:
            raise Ended("malformed", got=f"a line in the supervisor's report pipe: {abbreviated(self.box.forged[0])}")
        if self.box.exit is None:
            raise Ended("supervisor" if self.box.ended else "closed")
        if self.box.exit.get("code") == PIPE_LOST:
            raise Ended("closed")
        raise Ended("exited", **self.box.exit)

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
        except Ended:
            pass
        raise Ended("timed_out")
