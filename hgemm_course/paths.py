"""Where the course's files live, for an editable install and for a built wheel alike."""
from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
KERNELS_DIR = PACKAGE_DIR / "kernels"


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
