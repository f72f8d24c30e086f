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
Where Landlock is missing the top of the folders a later program reads code or settings from at its start are
watched too (:func:`startup_folders`: the interpreter's ``bin``, IPython's startup folder, matplotlib's config).

Nothing learner code leaves there outlives the check (:func:`undo`, where Landlock is missing): once every process
of the check has ended, what it added, the caches it changed (bytecode, Numba's) and the records it changed are
moved into a new folder of the system's temporary directory, so no later check loads them and ``hgemm-course
results`` lists none of them. What cannot be put back (a changed source, a deleted file) is named, with how to
restore it.
"""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
import site
import stat
import sys
import sysconfig
import tempfile
from functools import cache
from pathlib import Path

from ..library.paths import PACKAGE_DIR, PTX_SNIPPETS_DIR, REPO_ROOT, results_dir, user_results_dir
from . import confine

NUMBA_SUFFIXES = (".nbi", ".nbc")   # Numba's cache
CACHE_SUFFIXES = (".pyc", *NUMBA_SUFFIXES)   # what a later process loads and rebuilds when it is gone
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


def startup_folders() -> list[Path]:
    """Where a later program reads code or settings at its start, watched (at their top) where Landlock is missing:
    the interpreter's ``bin`` (the ``hgemm-course`` command, ``python``), IPython's startup folder (what a notebook's
    kernel runs first) and matplotlib's config folder (a ``matplotlibrc`` names the backend module it imports)."""
    try:
        home = Path.home()
    except RuntimeError:         # no HOME, and no entry for this user: nothing of the user's to read at a start
        return [(Path(sys.prefix) / "bin").resolve()]
    ipython = Path(os.environ.get("IPYTHONDIR") or home / ".ipython")
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    matplotlib = Path(os.environ.get("MPLCONFIGDIR") or config / "matplotlib")
    folders = {Path(sys.prefix) / "bin", ipython / "profile_default" / "startup", matplotlib}
    return sorted({f.resolve() for f in folders})


def _tops() -> list[Path]:
    """The folders whose top (files and folders, not below) a snapshot holds."""
    return site_folders() + ([] if landlock() else [f for f in startup_folders() if f not in site_folders()])


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
    file and folder at the top of :func:`site_folders` (and of :func:`startup_folders` where Landlock is missing)."""
    out: dict[str, tuple] = {}
    for top in _tops():
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
            if stat.S_ISDIR(st.st_mode):         # a new package there imports where nothing did
                out[path] = ("dir", 0, st.st_ino, st.st_mode)
            else:
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


def _differences(before: dict[str, tuple], after: dict[str, tuple]) -> list[tuple[str, str]]:
    """(path, "new" | "deleted" | "changed") for every difference, in path order."""
    from ..sim import cache as numba_cache

    out = []
    for path in sorted(set(before) | set(after)):
        if path.endswith(NUMBA_SUFFIXES) and path in after and numba_cache.wrote(path, _digest(path)):
            continue             # written by the checker's own references, as they compiled
        if path not in before:
            out.append((path, "new"))
        elif path not in after:
            out.append((path, "deleted"))
        elif before[path] != after[path]:
            out.append((path, "changed"))
    return out


def changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """``path (changed)``, ``path (new)``, ``path (deleted)`` for every difference."""
    return [f"{path} ({how})" for path, how in _differences(before, after)]


def undo(before: dict[str, tuple], after: dict[str, tuple]) -> Path | None:
    """Where Landlock is missing, once the check's processes have all ended: move what learner code may have left to
    act later (every new file or folder, a changed cache file, a changed record) into a new private folder of the
    system's temporary directory, under its own path; that folder, or None when there was nothing to move."""
    if landlock():
        return None              # learner code could write none of them: a change is another program's
    records = [results_dir().resolve(), user_results_dir().resolve()]
    targets: list[str] = []
    for path, how in _differences(before, after):
        if any(path.startswith(t + os.sep) for t in targets):
            continue             # inside a new folder, which moves whole
        record = any(Path(path).is_relative_to(folder) for folder in records)
        if how == "new" or (how == "changed" and after[path][0] == "file" and (path.endswith(CACHE_SUFFIXES) or record)):
            targets.append(path)
    if not targets:
        return None
    folder = Path(tempfile.mkdtemp(prefix="hgemm-course-moved-"))
    for path in targets:
        _move(path, folder / path.lstrip(os.sep))
    return folder


def _move(path: str, dest: Path) -> None:
    """Move ``path`` (a file, a link, a folder) to ``dest``, across file systems too; a FIFO, socket or device that
    cannot be carried across is deleted. Nothing is followed through a link."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(path, dest)
        return
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            return
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISDIR(mode):
            shutil.copytree(path, dest, symlinks=True, ignore_dangling_symlinks=True)
        elif stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            shutil.copy2(path, dest, follow_symlinks=False)
    except (OSError, shutil.Error):
        pass                     # what could not be carried is deleted all the same
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def message(changed: list[str], moved: Path | None = None) -> str:
    """The FAIL's message for a check during which the course's files changed (``moved``: where :func:`undo` put
    what it moved)."""
    listed = "\n".join(f"  {line}" for line in changed[:SHOWN])
    more = f"\n  ... and {len(changed) - SHOWN} more" if len(changed) > SHOWN else ""
    text = ("While your code was checked, the course's own files or its results changed:\n"
            f"{listed}{more}\n"
            "A check must leave them as they were, so this one fails whatever your answers. If your code wrote "
            "there, stop it (if another program did, such as a bench, check again once it has finished)")
    if moved is not None:
        text += (f".\nWhat was added there, and the caches and records that changed, were moved to {moved}, so that "
                 "nothing later loads or lists them (move back what another program wrote)")
    return text + ("; then restore the files (git checkout -- FILE in the course's checkout, or pip install "
                   "--force-reinstall hgemm-course) and delete what it added." if moved is None else
                   "; restore any other file named above (git checkout -- FILE in the course's checkout, or pip "
                   "install --force-reinstall hgemm-course).")
