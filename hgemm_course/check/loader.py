"""Find a learner's exercise file and import it, turning every import-time mistake (a
``sys.exit`` too) into a :class:`~hgemm_course.check.feedback.Failure` that names the file and line."""
from __future__ import annotations

import importlib.util
import itertools
import sys
import traceback
from pathlib import Path
from types import ModuleType

from ..library.paths import REPO_ROOT
from .feedback import Failure, describe

_module_ids = itertools.count()


def learner_file(file_name: str, path: str | Path | None = None) -> Path:
    """The file to check, as an absolute path (the check runs in another folder): ``path`` when
    given, else the learner's copy in the current folder (``./ex05_swizzle.py``, then
    ``./exercises/ex05_swizzle.py``), else ``exercises/`` of the checkout."""
    exercise = Path(file_name).stem
    if path is not None:
        path = Path(path).expanduser().resolve()
        if not path.is_file():
            raise Failure(f"There is no file {path}: give the path of your copy, "
                          f"hgemm-course check {exercise} --path FILE.")
        return path
    candidates = [Path.cwd() / file_name, Path.cwd() / "exercises" / file_name]
    if REPO_ROOT is not None:
        candidates.append(REPO_ROOT / "exercises" / file_name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise Failure(f"Cannot find {file_name} (looked for " + ", ".join(map(str, candidates))
                  + f"). Pass the path of your file: hgemm-course check {exercise} --path FILE.")


def load_module(path: Path) -> ModuleType:
    """Import ``path`` afresh (edits since the last check are seen) as a private module."""
    path = Path(path)
    if not path.is_file():
        raise Failure(f"There is no file {path}.")
    name = f"_hgemm_course_learner_{next(_module_ids)}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise Failure(f"{path} cannot be imported as Python (is it a .py file?).")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        code = f"\n    {exc.text.rstrip()}" if exc.text else ""
        line = f", line {exc.lineno}" if exc.lineno else ""
        raise Failure(
            f"{exc.filename or path}{line}: {type(exc).__name__}: {exc.msg}{code}\n"
            "Fix the syntax and check again.",
            {"input": None, "expected": None, "got": f"{type(exc).__name__} at line {exc.lineno}"},
        ) from None
    except (Exception, SystemExit) as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if Path(f.filename).resolve() == path.resolve()]
        where = f", line {frames[-1].lineno}" if frames else ""
        what = (f"ended the program with {describe(exc)} (sys.exit, exit() or raise SystemExit)"
                if isinstance(exc, SystemExit) else f"raised {describe(exc)}")
        raise Failure(
            f"{path}{where}: importing the file {what}\n"
            "Code at the top level of the file runs on import; keep it to definitions.",
            {"input": None, "expected": None, "got": describe(exc)},
        ) from None
    finally:
        sys.modules.pop(name, None)
    return module


def load_function(path: Path, function: str):
    """The function ``function`` defined in the learner's file at ``path``."""
    module = load_module(path)
    func = getattr(module, function, None)
    if not callable(func):
        raise Failure(f"{path} defines no function {function}(); keep the name the exercise gave.")
    return func
