"""Exercise checkers: ``check("ex05", my_function)`` in a notebook, ``hgemm-course check ex05``
in a shell.

Two kinds of exercise: a Python function (:data:`EXERCISES`) and a kernel fragment, a whole
``.cu`` file with one region to write (:data:`KERNEL_EXERCISES`, checked by
:mod:`.kernel_exercise`: compiled here, run on a GPU in a child process).

Every checker compares the learner's function with the course's reference over the whole
valid domain (exhaustively, or on many random cases where the domain is large), stops at
the first wrong input, and says what was expected, what came back and why it matters.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Callable

from . import ex01_naive, ex02_tiling, ex03_wmma, ex04_ldmatrix, ex05_swizzle, ex06_supertile, ex07_mbarrier, ex08_occupancy
from . import ex09_wgmma_desc, ex10_ring_parity, ex11_persistent
from .feedback import CheckResult, Exercise, Failure, Learner
from .kernel_exercise import KernelExercise, check_kernel
from .loader import default_path, load_function

__all__ = ["ALL_EXERCISES", "CheckResult", "EXERCISES", "KERNEL_EXERCISES", "check", "resolve", "run_check"]

_REGISTRY: dict[str, Exercise] = {
    module.EXERCISE.name: module.EXERCISE
    for module in (ex01_naive, ex02_tiling, ex04_ldmatrix, ex05_swizzle, ex06_supertile, ex08_occupancy,
                   ex09_wgmma_desc, ex10_ring_parity, ex11_persistent)
}

EXERCISES: dict[str, str] = {name: ex.description for name, ex in _REGISTRY.items()}
"""Exercise name -> one-line description, in course order (``hgemm-course check --list``)."""

_KERNEL_REGISTRY: dict[str, KernelExercise] = {
    module.EXERCISE.name: module.EXERCISE for module in (ex03_wmma, ex07_mbarrier)
}

KERNEL_EXERCISES: dict[str, str] = {name: ex.description for name, ex in _KERNEL_REGISTRY.items()}
"""Kernel exercise name (``exercises/<name>.cu``) -> one-line description, in course order."""

ALL_EXERCISES: dict[str, str] = dict(sorted({**EXERCISES, **KERNEL_EXERCISES}.items()))
"""Both kinds, in course order."""

FIGURE_DIR = Path(tempfile.gettempdir()) / "hgemm-course-check"


def resolve(exercise: str) -> str:
    """The full name of an exercise given as ``ex05_swizzle``, ``ex05``, ``05``, ``5`` or ``swizzle``."""
    text = str(exercise).strip().lower().removesuffix(".py").removesuffix(".cu")
    if text in ALL_EXERCISES:
        return text
    for name in ALL_EXERCISES:
        if name.split("_", 1)[1] == text:
            return name
    match = re.fullmatch(r"(?:ex)?0*(\d+)(?:_\w*)?", text)
    if match:
        number = int(match.group(1))
        for name in ALL_EXERCISES:
            if int(name[2:4]) == number:
                return name
    raise ValueError(
        f"There is no exercise {exercise!r}. The exercises are: " + ", ".join(ALL_EXERCISES) + "."
    )


def check(exercise: str, func_or_path: Callable | str | Path | None = None, *,
          draw: bool = False, figure_dir: str | Path | None = None, gpu: bool | None = None) -> CheckResult:
    """Check a learner's answer to ``exercise``.

    ``func_or_path`` is the function itself (from a notebook), the path of a file that
    defines it, or ``None`` for ``exercises/<exercise>.py`` of the checkout. With
    ``draw=True`` the exercises that have a picture (swizzle, super-tile) save the learner's
    map next to the reference in ``figure_dir`` (default: a folder in the system's temp
    directory) and return its path in ``CheckResult.figure``.

    A kernel exercise takes the path of a ``.cu`` file (default ``exercises/<exercise>.cu``);
    ``gpu`` says whether to run it too (default: when a GPU is here).
    """
    name = resolve(exercise)
    if name in _KERNEL_REGISTRY:
        if callable(func_or_path):
            return CheckResult(name, False, f"{name} is a kernel exercise: pass the path of your .cu file "
                               f"(or nothing, for exercises/{name}.cu), not a function.")
        return check_kernel(_KERNEL_REGISTRY[name], func_or_path, gpu=gpu)
    spec = _REGISTRY[name]
    try:
        if callable(func_or_path):
            func, source = func_or_path, _source_of(func_or_path)
        else:
            source = Path(func_or_path) if func_or_path is not None else default_path(name)
            func = load_function(source, spec.function)
        learner = Learner(func, source)
    except Failure as failure:
        return CheckResult(name, False, failure.message, failure.first_failure)

    figure = None
    if draw and spec.draw is not None:
        out = Path(figure_dir) if figure_dir is not None else FIGURE_DIR
        out.mkdir(parents=True, exist_ok=True)
        try:
            figure = spec.draw(learner, out / f"{name}.png")
        except Failure:
            figure = None  # the verdict below says what is wrong; there is nothing to draw
    try:
        message = spec.verify(learner)
    except Failure as failure:
        return CheckResult(name, False, failure.message, failure.first_failure, figure)
    return CheckResult(name, True, message, None, figure)


def run_check(exercise: str, path: str | Path | None = None, *, draw: bool = False) -> int:
    """Print the verdict on ``exercise`` (the learner's file at ``path``); 0 if it passes,
    1 if it fails, 2 if there is no such exercise."""
    try:
        result = check(exercise, path, draw=draw)
    except ValueError as exc:
        print(exc)
        return 2
    print(result)
    return 0 if result.passed else 1


def _source_of(func: Callable) -> Path | None:
    code = getattr(func, "__code__", None)
    return Path(code.co_filename) if code is not None else None
