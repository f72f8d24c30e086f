"""What a check must leave as it found it: the course's installed files (its package, its checkers and
their compiled bytecode, the PTX snippets), the top of every site-packages folder (where a ``.pth`` file
would run in every later Python) and the results it lists (the recorded ones, and the learner's
./hgemm-results/).

Where the kernel has Landlock, learner code cannot write any of them (:mod:`.confine`), and the results,
which another process (a ``bench`` meanwhile) may write, are not watched. Elsewhere learner code runs as
the same user, so nothing stops it writing there; a check compares a snapshot taken before it started with
one taken after, and a change is a FAIL that names the files. A snapshot holds, per file, its size, inode,
mode and modification and status-change times: a rewrite changes the status-change time even when the
modification time is put back. Numba's cache files are watched only where Landlock is missing, and
those the checker's own references wrote are not counted (:mod:`hgemm_course.sim.cache` keeps their digests).
"""
from __future__ import annotations

import hashlib
import os
import site
import sys
import sysconfig
from functools import cache
from pathlib import Path

from ..paths import PACKAGE_DIR, PTX_SNIPPETS_DIR, REPO_ROOT, results_dir, user_results_dir
from . import confine

NUMBA_SUFFIXES = (".nbi", ".nbc")   # Numba's cache
SHOWN = 5


@cache
def landlock() -> bool:
    """Whether learner code runs under Landlock here (it then writes nothing outside its own folders)."""
    return confine.landlock_abi() > 0


def roots() -> list[Path]:
    """The folders a check must not change."""
    out: list[Path] = []
    watched = (PACKAGE_DIR, PTX_SNIPPETS_DIR) if landlock() else (PACKAGE_DIR, PTX_SNIPPETS_DIR, results_dir(),
                                                                 user_results_dir())
    for folder in watched:
        folder = Path(folder).resolve()
        if not any(folder == r or r in folder.parents for r in out):
            out.append(folder)
    return out


def site_folders() -> list[Path]:
    """Every folder whose ``.pth`` files a later Python runs: the interpreter's site-packages and the user's."""
    names = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), site.getusersitepackages(),
             *site.getsitepackages()}
    return sorted({Path(n).resolve() for n in names if n})


def protected() -> list[Path]:
    """What learner code must never write: the watched folders, the site folders, the checkout, the interpreter."""
    out = [*roots(), *site_folders(), results_dir().resolve(), user_results_dir().resolve(), Path(sys.prefix).resolve()]
    return out + ([REPO_ROOT.resolve()] if REPO_ROOT is not None else [])


def own_folders(source: Path | None) -> list[str]:
    """Where learner code may write besides its work folder: the folder of the learner's file, unless it is or
    holds anything :func:`protected` (nor lies inside the package, the results or a site folder)."""
    if source is None:
        return []
    folder = Path(source).resolve().parent
    for path in protected():
        if folder == path or folder in path.parents or (path != REPO_ROOT and path in folder.parents):
            return []
    return [str(folder)]


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def snapshot() -> dict[str, tuple]:
    """Path -> (kind, size, inode, mode, mtime, ctime) for every file and folder under :func:`roots` and every
    file at the top of :func:`site_folders`."""
    out: dict[str, tuple] = {}
    for top in site_folders():
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for name in names:
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not os.path.isdir(path):
                out[path] = ("file", st.st_size, st.st_ino, st.st_mode, st.st_mtime_ns, st.st_ctime_ns)
    for root in roots():
        if not root.exists():
            continue
        for folder, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                if name.endswith(NUMBA_SUFFIXES) and landlock():
                    continue
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                kind = "dir" if name in dirs else "file"
                size = 0 if kind == "dir" else st.st_size   # a folder's size and times change when files come and go
                times = () if kind == "dir" else (st.st_mtime_ns, st.st_ctime_ns)
                out[path] = (kind, size, st.st_ino, st.st_mode, *times)
    return out


def changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """``path (changed)``, ``path (new)``, ``path (deleted)`` for every difference."""
    from ..sim import cache as numba_cache

    out = []
    for path in sorted(set(before) | set(after)):
        if path.endswith(NUMBA_SUFFIXES) and path in after and numba_cache.wrote(path, _digest(path)):
            continue             # written by the checker's own references, as they compiled
        if path not in before:
            out.append(f"{path} (new)")
        elif path not in after:
            out.append(f"{path} (deleted)")
        elif before[path] != after[path]:
            out.append(f"{path} (changed)")
    return out


def message(changed: list[str]) -> str:
    """The FAIL's message for a check during which the course's files changed."""
    listed = "\n".join(f"  {line}" for line in changed[:SHOWN])
    more = f"\n  ... and {len(changed) - SHOWN} more" if len(changed) > SHOWN else ""
    return ("While your code was checked, the course's own files or its results changed:\n"
            f"{listed}{more}\n"
            "A check must leave them as they were, so this one fails whatever your answers. If your code wrote "
            "there, stop it (if another program did, such as a bench, check again once it has finished); then restore the files (git checkout -- FILE in the course's checkout, or "
            "pip install --force-reinstall hgemm-course) and delete what it added.")
