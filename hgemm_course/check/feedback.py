"""The feedback format every checker shares: one result type, one failure type, one way to
call a learner's function and read back what it returned.

A checker runs in the caller's process, where no learner code runs, and calls the learner's
function through :class:`Learner`, which asks the child process that runs it (:mod:`.child`) and
gets plain data back. It turns each return value into plain ints with :func:`as_int` /
:func:`as_int_pair`, compares it with the course's reference and raises :class:`Failure` at the
first wrong answer. :func:`hgemm_course.check.check` turns that into a :class:`CheckResult`.
No learner mistake ever escapes as a traceback: an exception inside the learner's code (a
``sys.exit`` too) becomes a failure naming the call, the exception and the learner's file and line.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any, Callable

MEMORY_LIMIT_GIB = 4
"""How much memory the learner's code may take (on top of the checker's own; see :mod:`.child`)."""
OUTPUT_CAP_BYTES = 64 << 10
"""How much of what the learner's code prints a check keeps."""
CALLER_MEMORY_GIB = 2
"""How much memory the checker's own work on the learner's answers may add to the caller (:mod:`.child`)."""


@dataclass
class CheckResult:
    """What a checker found.

    ``message`` explains the verdict; ``first_failure`` holds the first wrong input with the
    expected and the returned value (``None`` when the exercise passes or could not be run);
    ``figure`` is the path of the picture saved with ``draw=True``; ``source`` the file checked
    (``None`` for a function passed in); ``unchecked`` the one line saying what the check could not
    do here and why (a kernel not run: no GPU, or one without the rung's features). With it the
    verdict is "could not check", never PASS: ``passed`` is False, though nothing was found wrong.
    ``output`` is what the learner's code printed (stdout and stderr), at most :data:`OUTPUT_CAP_BYTES`;
    ``output_dropped`` counts the bytes past that cap, which were not kept.
    """

    exercise: str
    passed: bool
    message: str
    first_failure: dict | None = None
    figure: Path | None = None
    source: Path | None = None
    unchecked: str | None = None
    output: str = ""
    output_dropped: int = 0

    def __post_init__(self):
        self.message = capped(self.message)
        if self.passed and self.unchecked:
            raise ValueError(f"{self.exercise}: a check that could not be completed ({self.unchecked}) did not pass.")

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL`` or ``could not check``."""
        if self.passed:
            return "PASS"
        return "could not check" if self.unchecked else "FAIL"

    @property
    def exit_code(self) -> int:
        """``hgemm-course check``'s exit status: 0 PASS, 1 FAIL, 2 could not check."""
        return {"PASS": 0, "FAIL": 1}.get(self.verdict, 2)

    def __str__(self) -> str:
        lines = [f"{self.exercise}: {self.verdict}" + (f": {self.unchecked}" if self.unchecked else "")]
        lines += ["  " + line if line else "" for line in self.message.splitlines()]
        if self.figure is not None:
            lines.append(f"  Picture (yours next to the reference): {self.figure}")
        if self.output or self.output_dropped:
            kept = f"; {self.output_dropped} bytes more were not kept (the checker keeps the first " \
                   f"{OUTPUT_CAP_BYTES >> 10} KiB)" if self.output_dropped else ""
            lines.append(f"  Your code printed{kept}:")
            lines += ["  | " + line for line in self.output.splitlines()]
        return "\n".join(lines)


MAX_LINE = 2000
"""The longest line of a verdict's message: a value the learner returned is shown up to there."""


def capped(message: str) -> str:
    """``message`` with each line cut at :data:`MAX_LINE` characters, saying how much was left out: a verdict is read
    by a person, whatever size of answer it quotes."""
    return "\n".join(line if len(line) <= MAX_LINE else line[:MAX_LINE] + f"... ({len(line) - MAX_LINE} characters more)"
                     for line in message.split("\n"))


class Failure(Exception):
    """The learner's answer is wrong (or could not be obtained); ``message`` says why."""

    def __init__(self, message: str, first_failure: dict | None = None):
        super().__init__(message)
        self.message = message
        self.first_failure = first_failure


class Stopped(BaseException):
    """The check cannot go on asking: the learner's process gives no more answers (it ended, hung, sent what is
    not an answer), or the checker's own time is up. A BaseException, so that no ``except Exception`` in a checker
    takes it for the learner's mistake."""


def explained(explain: Callable[[], str]) -> str:
    """``explain()``: the explanation of a wrong answer already found, which may ask the learner's code for more
    answers and work on them. Where that runs out of the check's time or of the memory the checker allows its own
    work, or the learner's code gives no more answers, one line says so, and the wrong answer found stands."""
    try:
        return explain()
    except Stopped:
        return ("(The rest of the explanation is left out: working it out from your other answers ran past the "
                "check's time limit, or your code gave no more answers.)")
    except (MemoryError, RecursionError):
        return (f"(The rest of the explanation is left out: working it out from your other answers needed more than "
                f"the {CALLER_MEMORY_GIB} GiB the checker allows its own work.)")


class Unchecked(Exception):
    """Part of a check could not be done here, through no fault of the learner's; the one-line message
    says what and why. The verdict is then "could not check"."""


def describe(exc: BaseException) -> str:
    """``ZeroDivisionError: division by zero``, ``SystemExit(0)``; a MemoryError says what the limit is."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r})"
    if isinstance(exc, MemoryError):
        return f"MemoryError: your code asked for more than the {MEMORY_LIMIT_GIB} GiB memory limit"
    return f"{type(exc).__name__}: {exc}"


def format_call(name: str, args: dict[str, Any]) -> str:
    """``swizzle_128b(row=3, chunk=0)``."""
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def mismatch(call: str, args: dict[str, Any], expected: Any, got: Any, why: str = "") -> Failure:
    """The common failure: ``call`` returned ``got`` where ``expected`` was right."""
    message = f"{call}: expected {expected!r}, got {got!r}."
    if why:
        message += "\n" + why
    return Failure(message, {"input": args, "expected": expected, "got": got})


class NotWritten(Failure):
    """The learner's function still raises the exercise's NotImplementedError."""


class Learner:
    """A learner's function as the checker sees it: calling it sends the arguments to the process that
    runs the learner's code (:mod:`.child`) and returns what came back there, as plain data (ints, floats,
    strings, tuples, lists, dicts, numpy arrays; anything else as a :class:`Returned` that only shows its
    repr). An exception there comes back as a :class:`Failure` naming the call, the exception and the
    learner's line, never as a traceback. ``ask`` does the asking: ``ask.call(name, kwargs)`` and
    ``ask.has(name)``."""

    def __init__(self, name: str, ask, source: Path | None = None):
        self.name = name
        self.source = source
        self._ask = ask

    def __call__(self, **kwargs: Any) -> Any:
        return self._ask.call(self.name, kwargs)

    @property
    def timeout(self) -> float | None:
        """The check's time limit in seconds (None where unknown), for a checker that starts a process of its own."""
        return getattr(self._ask, "timeout", None)

    def plan(self, calls: list[dict[str, Any]]) -> None:
        """Say which calls come next, in order (each a dict of arguments): the child then runs them many at a
        time, not one per message. A call that is not the next planned one is made on its own; the verdict
        is the same either way."""
        self._ask.plan(self.name, calls)

    def companion(self, name: str) -> "Learner | None":
        """The learner's function ``name``, defined next to this one (same file or notebook namespace), for
        an exercise's second function or its extra question; None when there is none."""
        return Learner(name, self._ask, self.source) if self._ask.has(name) else None


def learner_failure(name: str, kwargs: dict[str, Any], raised: dict) -> Failure:
    """The Failure for a call of the learner's function that raised: ``raised`` is what the child reported,
    ``{"kind": "not_implemented", "hint": ...}``, ``{"kind": "exit" | "error", "text": ..., "where": ...}``
    (the exception as :func:`describe` puts it, and :func:`learner_frame`'s line)."""
    kind, text, where = raised["kind"], raised.get("text", ""), raised.get("where", "")
    if kind == "not_implemented":
        hint = raised.get("hint") or "fill in the TODO"
        return NotWritten(f"{name} is not written yet (it raises NotImplementedError).\nHint: {hint}",
                          {"input": kwargs, "expected": None, "got": "NotImplementedError"})
    if kind == "exit":   # sys.exit(), exit() or raise SystemExit: the answer never comes
        return Failure(f"{format_call(name, kwargs)} ended the program with {text}{where}\n"
                       "sys.exit, exit() and raise SystemExit end the program; the checker needs your "
                       "function's answer, so return it instead.",
                       {"input": kwargs, "expected": None, "got": text})
    return Failure(f"{format_call(name, kwargs)} raised {text}{where}",   # the learner's bug, reported as such
                   {"input": kwargs, "expected": None, "got": text})


def learner_frame(exc: BaseException, source: Path | None, skip: int = 1) -> str:
    """`` (at FILE, line N: CODE)`` for the deepest frame in the learner's file (the first ``skip`` frames
    are the checker's own call)."""
    frames = traceback.extract_tb(exc.__traceback__)[skip:]
    if source is not None:
        mine = [f for f in frames if Path(f.filename).resolve() == source.resolve()]
        frames = mine or frames
    if not frames:
        return ""
    frame = frames[-1]
    code = f": {frame.line.strip()}" if frame.line else ""
    return f"\n  at {frame.filename}, line {frame.lineno}{code}"


class Returned:
    """What a learner's function returned when it is not plain data (a generator, a set, an object of the
    learner's own class): its type's name and its repr, and its items when it was iterable. The child
    makes a subclass per type name, so ``type(value).__name__`` reads as the learner's type."""

    def __init__(self, text: str):
        self._text = text

    def __repr__(self) -> str:
        return self._text


class ReturnedIterable(Returned):
    def __init__(self, text: str, items: list):
        super().__init__(text)
        self._items = items

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def _type_name(value: Any) -> str:
    return type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _wrong_type(value: Any, call: str, args: dict[str, Any], want: str, floats: bool) -> Failure:
    hint = " Use integer division (//), not /: index math stays in ints." if floats else ""
    return Failure(f"{call} returned {value!r} ({_type_name(value)}); it must return {want}.{hint}",
                   {"input": args, "expected": want, "got": value})


def as_int(value: Any, call: str, args: dict[str, Any], what: str = "an int") -> int:
    """``value`` as a Python int (numpy ints fine); anything else is a clear failure."""
    if _is_int(value):
        return int(value)
    raise _wrong_type(value, call, args, what, isinstance(value, float))


def as_int_pair(value: Any, call: str, args: dict[str, Any], what: str) -> tuple[int, int]:
    """``value`` as a tuple of two Python ints; ``what`` names the pair, e.g. ``(row, col)``."""
    want = f"a tuple of two ints {what}"
    try:
        items = list(value)
    except TypeError:
        items = None
    if items is None or len(items) != 2 or isinstance(value, (str, bytes, dict)) \
            or not all(_is_int(v) for v in items):
        floats = items is not None and any(isinstance(v, float) for v in items)
        raise _wrong_type(value, call, args, want, floats)
    return int(items[0]), int(items[1])


def passed_message(cases: int, what: str, extra: str = "") -> str:
    """The one-line success note: how much was checked, and what it means."""
    message = f"All {cases} cases right: {what}."
    return message + ("\n" + extra if extra else "")


@dataclass
class Exercise:
    """One exercise: the function the learner writes and how it is checked.

    ``verify(learner)`` returns the success message or raises :class:`Failure`;
    ``draw(learner, path)`` (optional) saves the learner's map next to the reference. Both run in the
    caller's process, and import nothing that :func:`.child.prepare` has not imported before the child started.
    ``runner`` (optional), ``"module:function"`` of the course, is for a function that runs only inside what the
    course builds around it (a Numba CUDA device function, inside a kernel): the child imports that module before
    the learner's file and answers each call with ``function(learners_function, **arguments)``, plain data; such
    an exercise is checked from a file only, in a fresh interpreter.
    ``imports``: modules of the course that ``verify`` imports besides the references, imported by
    :func:`.caller.prepare` before any learner code runs.
    """

    name: str
    function: str
    description: str
    verify: Callable[[Learner], str]
    draw: Callable[[Learner, Path], Path] | None = field(default=None)
    runner: str | None = None
    imports: tuple[str, ...] = ()


def with_extra(learner: Learner, passed: str, name: str, verify: Callable[[Learner], int], what: str) -> str:
    """The pass message of an exercise with an extra question: ``passed`` (the main part's), then one line
    for the extra question ``name``, which is optional: checked when the learner has written it (``verify``
    raises Failure when wrong, else returns the cases checked, which ``what`` explains), else said to be
    not checked. A wrong extra answer fails the check, saying the main part is right. ``what`` is printed
    only once the learner's own function has been found right: a pass never gives an answer away."""
    extra = learner.companion(name)
    if extra is None:
        return passed + f"\nExtra question, {name}(): not checked (there is no {name}() next to {learner.name}())."
    try:
        cases = verify(extra)
    except NotWritten:
        return passed + f"\nExtra question, {name}(): not checked (not written yet: it raises NotImplementedError)."
    except Failure as failure:
        raise Failure(f"The main part is right: {passed}\nBut the extra question, {name}(), is wrong (it is optional: "
                      f"leave it raising NotImplementedError to skip it):\n{failure.message}",
                      failure.first_failure) from None
    return passed + f"\nExtra question, {name}(): all {cases} cases right: {what}."
