"""Where the course's files live, for an editable install and for a built wheel alike."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

LIBRARY_DIR = Path(__file__).resolve().parent
PACKAGE_DIR = LIBRARY_DIR.parent
KERNELS_DIR = LIBRARY_DIR / "kernels"


def _first_existing(*candidates: Path) -> Path:
    for path in candidates:
        if path.is_dir():
            return path
    raise FileNotFoundError(
        "Cannot find the folder " + candidates[0].name + "; looked in "
        + ", ".join(str(c) for c in candidates)
        + ". Reinstall with `pip install -e .` from the repository root."
    )


# A wheel carries the snippets inside the package (pyproject's force-include);
# an editable install reads them from the repository root.
PTX_SNIPPETS_DIR = _first_existing(PACKAGE_DIR / "ptx_snippets", PACKAGE_DIR.parent / "ptx_snippets")

# The repository root, when running from a checkout (None from a wheel).
REPO_ROOT = PACKAGE_DIR.parent if (PACKAGE_DIR.parent / "pyproject.toml").is_file() else None


def results_dir() -> Path:
    """Recorded GPU figures: results/ of the checkout, else the package's bundled copy."""
    if REPO_ROOT is not None:
        return REPO_ROOT / "results"
    return PACKAGE_DIR / "results"


def probe_dir(name: str) -> Path:
    """Where research/<name>.py's reports are recorded: results/probes/<name>/, apart from the course's runs."""
    return results_dir() / "probes" / name


def raw_dir(name: str) -> Path:
    """Where the raw profiler output behind records is kept (ncu's CSVs and source pages): results/ncu/<name>/,
    apart from the records."""
    return results_dir() / "ncu" / name


def user_results_dir() -> Path:
    """Where runs are written unless recorded: ./hgemm-results/ under the current folder."""
    return Path.cwd() / "hgemm-results"


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Write a whole file so that a reader sees the old file or the complete new one, never a part.

    The data goes to a temporary file in the same folder (so the rename stays on one file system,
    where it is atomic), reaches the disk, and ``os.replace`` gives it the final name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)            # mkstemp makes the file private; give it an ordinary file's mode
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def require_writable(folder: Path, fix: str = "pass --out-dir with a folder you can write to") -> Path:
    """The folder, once a file could be written in it (or, while it does not exist yet, in the nearest
    folder above it, so a refused run leaves no empty folder behind); else a one-line RuntimeError naming it.

    Called before a run starts, so a long measurement never ends in a folder it cannot write.
    """
    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(f"{existing} is not a folder")
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise RuntimeError(f"cannot write to {folder} ({exc.strerror or exc}); {fix}.") from None
    return folder
