"""Exercise checkers: ``check("ex05", my_function)`` in a notebook, ``hgemm-course check ex05``
in a shell.

Two kinds of exercise: a Python function (:data:`EXERCISES`, run in a child process with a time and
a memory limit that only answers the checker's calls, :mod:`.python_exercise`; a Numba CUDA device function, as
in ex02_outer_product, runs there inside a kernel of the course's) and a kernel fragment, a rung's
whole ``.cu`` file with regions to write (:data:`KERNEL_EXERCISES`, checked by :mod:`.kernel_check`:
compiled in a child process for the target it is checked on, the regions run on the CPU through
:mod:`.host_model` where a model can stand in for the GPU, the kernel run on a GPU in a child process
that only produces C; where no GPU here runs the rung, the verdict is "could not check").
``exercises/`` and ``solutions/`` are generated from one source per exercise by :mod:`.generate`.

The verdict is decided in the caller's process, where no learner code runs, from plain data the
children send back, and the caller's own work on that data (the explanation of a wrong answer too) stays
within the check's time limit and 2 GiB of memory of its own; every process a check starts ends with it
(:mod:`.sandbox`), runs confined (no ptrace, writes only below its own folders, :mod:`.confine`;
``hgemm-course check`` says in one line which protection this kernel lacks), and a change to the course's files,
site-packages or results during a check fails it (:mod:`.watch`; without Landlock, what learner code left there
is moved away once the check has ended). The caller loads no Numba cache file that learner code could have written.

Every checker compares the learner's function with the course's reference over the whole
valid domain (exhaustively, or on many random cases where the domain is large), stops at
the first wrong input, and says what was expected, what came back and why it matters. An extra
question is optional everywhere: checked once written, and a pass says which parts were checked.
"""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Callable

from . import ex01_naive, ex02_outer_product, ex02_tiling, ex03_cp_async, ex03_wmma, ex04_ldmatrix, ex04_mma_sync
from . import ex05_swizzle, ex05_swizzle_kernel, ex06_supertile
from . import ex07_mbarrier, ex08_occupancy, ex09_wgmma_desc, ex09_wgmma_loop, ex10_producer, ex10_ring_parity
from . import ex11_persistent, ex11_tile_loop, ex12_streamk, ex13_small_skinny
from . import confine
from .caller import checked_timeout
from .feedback import CheckResult, Exercise, Failure
from .kernel_check import check_kernel
from .kernel_exercise import GPU_TIMEOUT_S, KernelExercise
from .loader import learner_file
from .python_exercise import TIMEOUT_S, run_in_child

__all__ = ["ALL_EXERCISES", "CheckResult", "EXERCISES", "KERNEL_EXERCISES", "check", "resolve", "run_check"]

_REGISTRY: dict[str, Exercise] = {
    module.EXERCISE.name: module.EXERCISE
    for module in (ex01_naive, ex02_tiling, ex02_outer_product, ex04_ldmatrix, ex05_swizzle, ex06_supertile,
                   ex08_occupancy, ex09_wgmma_desc, ex10_ring_parity, ex11_persistent, ex12_streamk, ex13_small_skinny)
}

EXERCISES: dict[str, str] = {name: ex.description for name, ex in _REGISTRY.items()}
"""Exercise name -> one-line description, in course order: by chapter, and a chapter's in the order it poses them."""

_KERNEL_REGISTRY: dict[str, KernelExercise] = {
    module.EXERCISE.name: module.EXERCISE
    for module in (ex03_wmma, ex03_cp_async, ex04_mma_sync, ex05_swizzle_kernel, ex07_mbarrier, ex09_wgmma_loop,
                   ex10_producer, ex11_tile_loop)
}

KERNEL_EXERCISES: dict[str, str] = {name: ex.description for name, ex in _KERNEL_REGISTRY.items()}
"""Kernel exercise name (``exercises/<name>.cu``) -> one-line description, in course order."""

ALL_EXERCISES: dict[str, str] = dict(sorted({**EXERCISES, **KERNEL_EXERCISES}.items()))
"""Both kinds, in course order."""

def resolve(exercise: str) -> str:
    """The full name of an exercise given as ``ex05_swizzle``, ``ex05``, ``05``, ``5`` or ``swizzle``.
    A chapter has a Python exercise (or two) and may have a kernel exercise too: its number alone means its
    first Python one (``05`` is ``ex05_swizzle``, ``02`` is ``ex02_tiling``); the others go by their full name or
    their name after the number (``ex05_swizzle_kernel``, ``outer_product``)."""
    text = str(exercise).strip().lower().removesuffix(".py").removesuffix(".cu")
    if text in ALL_EXERCISES:
        return text
    for name in ALL_EXERCISES:
        if name.split("_", 1)[1] == text:
            return name
    match = re.fullmatch(r"(?:ex)?0*(\d+)", text)
    if match:
        number = int(match.group(1))
        for names in (EXERCISES, KERNEL_EXERCISES):
            for name in names:
                if int(name[2:4]) == number:
                    return name
    raise ValueError(
        f"There is no exercise {exercise!r}. The exercises are: " + ", ".join(ALL_EXERCISES) + "."
    )


def _for_file(name: str, path) -> str:
    """The exercise a file given with ``name`` is for: ``name``, unless the file is plainly another exercise of the same
    chapter: named after it (``ex04 --path solutions/ex04_mma_sync.cu``), or a ``.cu`` file given with the number of a
    chapter whose Python exercise it cannot be and whose one kernel exercise it can."""
    if path is None or callable(path):
        return name
    file = Path(path)
    same = [n for n in ALL_EXERCISES if n[:4] == name[:4]]
    if file.stem in same and file.suffix == (".cu" if file.stem in KERNEL_EXERCISES else ".py"):
        return file.stem
    kernels = [n for n in same if n in KERNEL_EXERCISES]
    if file.suffix == ".cu" and name in EXERCISES and len(kernels) == 1:
        return kernels[0]
    return name


def check(exercise: str, func_or_path: Callable | str | Path | None = None, *, draw: bool = False,
          figure_dir: str | Path | None = None, gpu: bool | None = None, timeout: float | None = None) -> CheckResult:
    """Check a learner's answer to ``exercise``.

    ``func_or_path`` is the function itself (from a notebook), the path of a file that
    defines it, or ``None`` for the learner's copy: ``./<exercise>.py`` or
    ``./exercises/<exercise>.py`` in the current folder, else ``exercises/<exercise>.py`` of the
    checkout. With ``draw=True`` the exercises that have a picture (swizzle, super-tile) save
    the learner's map next to the reference as ``<exercise>.png`` in ``figure_dir`` (default: a new
    private folder in the system's temp directory), never through a symbolic link, and return its
    path in ``CheckResult.figure``.

    The learner's code runs in a child process with ``timeout`` seconds (default 60; from 1 to 3600)
    and 4 GiB of memory, and only answers the checker's calls: the verdict is decided here, within the same
    time (3 s more at most) and 2 GiB of this process's memory. An exit, a crash, a hang, a huge allocation,
    a signal sent to the checker there, an answer too large to judge is a FAIL that says what happened, and
    never reaches the caller; every process it started is gone when the check returns.

    A kernel exercise takes the path of a ``.cu`` file (default: the learner's copy, found the
    same way); ``gpu`` says whether to run it too (default: when a GPU here runs the rung), within
    ``timeout`` seconds (default 120). A kernel not run is never a PASS: the verdict is "could not
    check" (``CheckResult.unchecked`` says why) when the CPU part found nothing wrong.
    """
    name = _for_file(resolve(exercise), func_or_path)
    if name in _KERNEL_REGISTRY:
        timeout = checked_timeout(timeout, GPU_TIMEOUT_S)
        if callable(func_or_path):
            return CheckResult(name, False, f"{name} is a kernel exercise: pass the path of your .cu file "
                               f"(or nothing, for exercises/{name}.cu), not a function.")
        return check_kernel(_KERNEL_REGISTRY[name], func_or_path, gpu=gpu, timeout=timeout)
    spec = _REGISTRY[name]
    timeout = checked_timeout(timeout, TIMEOUT_S)
    draw_to = _figure_path(name, figure_dir) if draw and spec.draw is not None else None
    if callable(func_or_path) and spec.runner is not None:
        return CheckResult(name, False, f"{name} runs your {spec.function} inside a kernel the checker builds, in a "
                           f"fresh process: pass the path of your .py file (or nothing, for exercises/{name}.py), "
                           "not the function.")
    if callable(func_or_path):
        return run_in_child(spec, func=func_or_path, draw_to=draw_to, timeout=timeout)
    try:
        source = learner_file(f"{name}.py", func_or_path)
    except Failure as failure:
        return CheckResult(name, False, failure.message, failure.first_failure)
    return run_in_child(spec, source=source, draw_to=draw_to, timeout=timeout)


def _figure_path(name: str, figure_dir: str | Path | None) -> Path:
    """Where the picture goes: ``<name>.png`` in ``figure_dir``, else in a new private temporary folder;
    a ValueError when that path is a symbolic link (the checker never writes through one)."""
    folder = Path(figure_dir).expanduser() if figure_dir else Path(tempfile.mkdtemp(prefix="hgemm-course-figures-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder.resolve() / f"{name}.png"
    if path.is_symlink():
        raise ValueError(f"{path} is a symbolic link; the checker does not write a picture through one. "
                         "Remove it, or give another folder.")
    return path


def run_check(exercise: str, path: str | Path | None = None, *, draw: bool = False,
              timeout: float | None = None) -> int:
    """Print which file is checked and the verdict on it; 0 if it passes, 1 if it fails, 2 if it
    could not be checked (no such exercise or file, a timeout outside 1-3600 s: one line says what to do;
    a kernel exercise whose kernel no GPU here runs: its headline says why, below it what the CPU part checked)."""
    try:
        name = _for_file(resolve(exercise), path)
        checked_timeout(timeout, TIMEOUT_S)
        source = learner_file(f"{name}.cu" if name in _KERNEL_REGISTRY else f"{name}.py", path)
        print(f"checking {_shown(source)}", flush=True)
        if confine.missing():        # on stderr: the verdict's lines stay as they are
            print("note: protection off on this machine: " + "; ".join(confine.missing()), file=sys.stderr, flush=True)
        result = check(name, source, draw=draw, timeout=timeout)
    except ValueError as exc:
        print(exc)
        return 2
    except Failure as failure:
        print(failure.message)
        return 2
    print(result)
    return result.exit_code


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is inside it, else in full: no doubt which file it is."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
