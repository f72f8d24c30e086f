"""What a check must leave as it found it: the course's installed files (its package, its checkers and
their compiled bytecode, the PTX snippets) and the results it lists (the recorded ones, and the learner's
./hgemm-results/).

Learner code runs as the same user, so nothing stops it writing there; a check compares a snapshot
taken before it started with one taken after, and a change is a FAIL that names the files. A snapshot
holds, per file, its size, inode, mode and modification and status-change times: a rewrite changes the
status-change time even when the modification time is put back. Numba's cache files are left out:
the checker's own references write them when they compile.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..paths import PACKAGE_DIR, PTX_SNIPPETS_DIR, results_dir, user_results_dir

SKIPPED_SUFFIXES = (".nbi", ".nbc")   # Numba's cache, written by the references themselves
SHOWN = 5


def roots() -> list[Path]:
    """The folders a check must not change."""
    out: list[Path] = []
    for folder in (PACKAGE_DIR, PTX_SNIPPETS_DIR, results_dir(), user_results_dir()):
        folder = Path(folder).resolve()
        if not any(folder == r or r in folder.parents for r in out):
            out.append(folder)
    return out


def snapshot() -> dict[str, tuple]:
    """Path -> (kind, size, inode, mode, mtime, ctime) for every file and folder under :func:`roots`."""
    out: dict[str, tuple] = {}
    for root in roots():
        if not root.exists():
            continue
        for folder, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                if name.endswith(SKIPPED_SUFFIXES):
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
    out = []
    for path in sorted(set(before) | set(after)):
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
            "there, stop it; then restore the files (git checkout -- FILE in the course's checkout, or "
            "pip install --force-reinstall hgemm-course) and delete what it added.")
