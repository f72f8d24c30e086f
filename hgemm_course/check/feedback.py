"""The feedback format every checker shares: one result type, one failure type, one way to
call a learner's function and read back what it returned.

A checker calls the learner's function through :class:`Learner`, turns each return value
into plain ints with :func:`as_int` / :func:`as_int_pair`, and raises :class:`Failure` at the
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


@dataclass
class CheckResult:
    """What a checker found.

    ``message`` explains the verdict; ``first_failure`` holds the first wrong input with the
    expected and the returned value (``None`` when the exercise passes or could not be run);
    ``figure`` is the path of the picture saved with ``draw=True``; ``source`` the file checked
    (``None`` for a function passed in); ``unchecked`` the one line saying what the check could not
    do here and why (a kernel not run: no GPU, or one without the rung's features). With it the
    verdict is "could not check", never PASS: ``passed`` is False, though nothing was found wrong.
    """

    exercise: str
    passed: bool
    message: str
    first_failure: dict | None = None
    figure: Path | None = None
    source: Path | None = None
    unchecked: str | None = None

    def __post_init__(self):
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
        return "\n".join(lines)


class Failure(Exception):
    """The learner's answer is wrong (or could not be obtained); ``message`` says why."""

    def __init__(self, message: str, first_failure: dict | None = None):
        super().__init__(message)
        self.message = message
        self.first_failure = first_failure


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


class Learner:
    """A learner's function, called so that any mistake becomes a :class:`Failure`."""

    def __init__(self, func: Callable, source: Path | None = None):
        self.func = func
        self.name = getattr(func, "__name__", "the function")
        self.source = source

    def __call__(self, **kwargs: Any) -> Any:
        try:
            return self.func(**kwargs)
        except NotImplementedError as exc:
            hint = str(exc) or "fill in the TODO"
            raise Failure(
                f"{self.name} is not written yet (it raises NotImplementedError).\nHint: {hint}",
                {"input": kwargs, "expected": None, "got": "NotImplementedError"},
            ) from None
        except SystemExit as exc:  # sys.exit(), exit() or raise SystemExit: the answer never comes
            where = _learner_frame(exc, self.source)
            raise Failure(
                f"{format_call(self.name, kwargs)} ended the program with {describe(exc)}{where}\n"
                "sys.exit, exit() and raise SystemExit end the program; the checker needs your "
                "function's answer, so return it instead.",
                {"input": kwargs, "expected": None, "got": describe(exc)},
            ) from None
        except Exception as exc:  # the learner's bug, reported as such
            where = _learner_frame(exc, self.source)
            raise Failure(
                f"{format_call(self.name, kwargs)} raised {describe(exc)}{where}",
                {"input": kwargs, "expected": None, "got": describe(exc)},
            ) from None


def _learner_frame(exc: BaseException, source: Path | None) -> str:
    """`` (at FILE, line N: CODE)`` for the deepest frame in the learner's file."""
    frames = traceback.extract_tb(exc.__traceback__)[1:]  # frame 0 is Learner.__call__
    if source is not None:
        mine = [f for f in frames if Path(f.filename).resolve() == source.resolve()]
        frames = mine or frames
    if not frames:
        return ""
    frame = frames[-1]
    code = f": {frame.line.strip()}" if frame.line else ""
    return f"\n  at {frame.filename}, line {frame.lineno}{code}"


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
    ``draw(learner, path)`` (optional) saves the learner's map next to the reference.
    """

    name: str
    function: str
    description: str
    verify: Callable[[Learner], str]
    draw: Callable[[Callable, Path], Path] | None = field(default=None)


def companion(learner: Learner, name: str) -> Learner | None:
    """The learner's function ``name``, defined next to the one checked first (same file or notebook
    namespace), for an exercise's extra question; None when there is none."""
    func = getattr(learner.func, "__globals__", {}).get(name)
    return Learner(func, learner.source) if callable(func) else None


def extra_note(name: str) -> str:
    """What a pass says when the extra question's function is not there."""
    return f"Extra question: define {name}() next to it (the exercise file has its stub) and check again."


def check_extra(learner: Learner, name: str, verify: Callable[[Learner], int]) -> tuple[int, str]:
    """The extra question, when the learner has written its function ``name``: (cases checked, the note
    for the pass message, empty unless the function is missing). ``verify`` raises Failure when wrong."""
    extra = companion(learner, name)
    if extra is None:
        return 0, extra_note(name)
    return verify(extra), ""
