"""Find a learner's exercise file and import it, turning every import-time mistake into a
:class:`~hgemm_course.check.feedback.Failure` that names the file and line."""
from __future__ import annotations

import importlib.util
import itertools
import sys
import traceback
from pathlib import Path
from types import ModuleType

from ..paths import REPO_ROOT
from .feedback import Failure

_module_ids = itertools.count()


def default_path(exercise: str) -> Path:
    """``exercises/<exercise>.py`` of the checkout (or of the current folder)."""
    roots = [REPO_ROOT] if REPO_ROOT is not None else []
    roots.append(Path.cwd())
    for root in roots:
        path = root / "exercises" / f"{exercise}.py"
        if path.is_file():
            return path
    raise Failure(
        f"Cannot find exercises/{exercise}.py (looked in "
        + ", ".join(str(r / "exercises") for r in roots)
        + "). Pass the path of your file: hgemm-course check "
        + f"{exercise} --path FILE."
    )


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
        raise Failure(
            f"{exc.filename or path}, line {exc.lineno}: {type(exc).__name__}: {exc.msg}{code}\n"
            "Fix the syntax and check again.",
            {"input": None, "expected": None, "got": f"{type(exc).__name__} at line {exc.lineno}"},
        ) from None
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if Path(f.filename).resolve() == path.resolve()]
        where = f", line {frames[-1].lineno}" if frames else ""
        raise Failure(
            f"{path}{where}: importing the file raised {type(exc).__name__}: {exc}\n"
            "Code at the top level of the file runs on import; keep it to definitions.",
            {"input": None, "expected": None, "got": f"{type(exc).__name__}: {exc}"},
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
