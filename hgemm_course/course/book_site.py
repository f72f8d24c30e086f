"""What the course's website holds: its pages in reading order, the chapters and appendices, the exercises as a
learner starts them, each rung's kernel and the diff from the rung before (which ``hgemm-course diff`` prints), and the
figures drawn from the records. :mod:`.book_pages` and :mod:`.book_results` write the pages; :mod:`.book` builds the
site."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from ..library.ladder import Rung, registry
from ..library.paths import KERNELS_DIR, PTX_SNIPPETS_DIR, REPO_ROOT

TEMPLATES_DIR = Path(__file__).resolve().parent / "book_templates"


METHOD_PAGE = "docs/method.md"              # written once: README links it, the site shows it as method.md


LEXERS = {".py": "python", ".cu": "cuda", ".cuh": "cuda"}


LANGUAGES = {".py": "Python (Numba)", ".cu": "CUDA C++"}


DIFF_CONTEXT = 3                            # lines around each change, as `hgemm-course diff` prints by default


README_SECTION = "## Two commands"          # the landing page quotes README's introduction and this section


@dataclass(frozen=True)
class SiteFigure:
    """A figure of the site: what ``hgemm-course viz NAME`` draws from the records, drawn as the site is built."""

    name: str                           # the figure's name for `hgemm-course viz`
    alt: str                            # what it shows, for a reader who cannot see it

    @property
    def file(self) -> str:
        return f"{self.name}.png"

    @property
    def command(self) -> str:
        return f"hgemm-course viz {self.name}"


LADDER = SiteFigure("ladder", "each rung's percentage of its vendor baseline on the H200 at every recorded size")


SHAPE_SWEEP = SiteFigure("shape-sweep", "rungs 11 and 12 and gemm()'s plan against the vendor baseline on the course's "
                                        "sweep of shapes")


CLOCKS = SiteFigure("clocks", "rung 07's and its vendor baseline's SM clocks pair by pair, and each pair's ratio against the ratio "
                              "of their cycles")


ROOFLINE = SiteFigure("roofline", "every recorded square run on the roofline of the H200's measured ceilings")


SITE_FIGURES = (LADDER, SHAPE_SWEEP, CLOCKS, ROOFLINE)


@dataclass(frozen=True)
class KernelFile:
    """One source file the site shows as a page: a rung's kernel or a header the kernels include."""

    path: Path
    rung: Rung | None = None            # None for a header

    @property
    def page(self) -> str:
        return f"kernels/{self.path.stem}"


def checkout_root(root: Path | None = None) -> Path:
    """The repository the site is built from: its chapters/ exist only in a checkout."""
    root = Path(root) if root is not None else REPO_ROOT
    if root is None or not (root / "chapters").is_dir():
        raise RuntimeError("the website is built from a checkout's chapters/, and this install has "
                           "none; run it from a clone of the repository after `pip install -e .[book]`.")
    return root


def chapters(root: Path) -> list[Path]:
    """The chapter notebooks in course order: ``chapters/NN_topic.ipynb``, whatever chapters exist."""
    return sorted((root / "chapters").glob("[0-9][0-9]_*.ipynb"))


def appendices(root: Path) -> list[Path]:
    """The appendix notebooks, read after the chapters: ``chapters/AN_topic.ipynb`` (A1 the plan behind gemm())."""
    return sorted((root / "chapters").glob("A[0-9]_*.ipynb"))


@dataclass(frozen=True)
class ExerciseFile:
    """An exercise's file as the learner starts from it: generated from hgemm_course/check/sources/."""

    name: str                           # ex05_swizzle.py
    text: str                           # the stubs between the markers, never the solution

    @property
    def suffix(self) -> str:
        return Path(self.name).suffix


def exercises() -> dict[str, ExerciseFile]:
    """Every registered exercise (``hgemm-course check --list``), in course order, with its file as
    ``python -m hgemm_course.check.generate`` writes it into exercises/ from the course's source."""
    from ..check import ALL_EXERCISES
    from ..check.generate import render, sources

    known = sources()
    found = {}
    for name in ALL_EXERCISES:
        files = [f"{name}{suffix}" for suffix in (".py", ".cu")]
        existing = [f for f in files if f in known]
        if not existing:
            raise RuntimeError(f"exercise {name} is registered in hgemm_course/check but neither {files[0]} nor "
                               f"{files[1]} is in hgemm_course/check/sources/.")
        found[name] = ExerciseFile(existing[0], render(existing[0])[0])
    return found


def chapter_number(path: Path) -> str:
    return path.name[:2]


def rungs_of_chapter(number: str) -> list[Rung]:
    """The rungs a chapter teaches (``05`` -> rung 05; none for a chapter without a kernel, like 00 and 08)."""
    return [rung for rung in registry().values() if rung.id[:2] == number and rung.kernel_path is not None]


def previous_rung(rung: Rung) -> Rung | None:
    """The rung before ``rung`` on the ladder, or None for the first."""
    ids = list(registry())
    index = ids.index(rung.id)
    return registry()[ids[index - 1]] if index else None


def diffable(old: Rung | None, new: Rung) -> bool:
    """A diff says what a chapter changes only between sources in one language: rung 03, the first CUDA C++
    kernel after the Numba rungs, is read whole."""
    return old is not None and old.kernel_path is not None and old.kernel_path.suffix == new.kernel_path.suffix


def diff_page(old: Rung, new: Rung) -> str:
    return f"kernels/diff_{old.id}_{new.id}"


def kernel_files() -> list[KernelFile]:
    """Every rung's kernel, in ladder order, then the headers the CUDA kernels include."""
    kernels = [KernelFile(rung.kernel_path, rung) for rung in registry().values() if rung.kernel_path is not None]
    headers = sorted(KERNELS_DIR.glob("*.cuh")) + sorted(PTX_SNIPPETS_DIR.glob("*.cuh"))
    return kernels + [KernelFile(path) for path in headers]


def pages(root: Path) -> list[str]:
    """Every page of the site, as Sphinx names them (the HTML file without ``.html``), in reading order."""
    rungs = list(registry().values())
    return (["index"] + [path.stem for path in chapters(root) + appendices(root)]
            + ["exercises/index"] + [f"exercises/{name}" for name in exercises()]
            + ["kernels/index"] + [k.page for k in kernel_files()]
            + [diff_page(previous_rung(r), r) for r in rungs if r.kernel_path and diffable(previous_rung(r), r)]
            + ["method", "results"])


def kernel_text(path: Path) -> str:
    """A kernel source as it compiles and as the chapters read it: without the comment lines that mark the
    regions its exercises cut out (hgemm_course/check/generate.py)."""
    from ..check.generate import without_markers

    return without_markers(path.read_text())


def rung_diff(old: Rung, new: Rung, context: int = DIFF_CONTEXT) -> str:
    """What ``hgemm-course diff OLD NEW`` prints: the unified diff of the two rungs' kernel sources."""
    return "".join(difflib.unified_diff(
        kernel_text(old.kernel_path).splitlines(keepends=True), kernel_text(new.kernel_path).splitlines(keepends=True),
        fromfile=old.kernel_path.name, tofile=new.kernel_path.name, n=context))

