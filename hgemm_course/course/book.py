"""The course as a website: ``hgemm-course book --out DIR`` turns the chapter notebooks into static HTML.

The notebooks are rendered as committed, outputs and figures included: nothing is executed and no GPU
is needed. Sphinx with myst-nb does the rendering (the ``book`` extra); this module writes the source
tree it reads, into a temporary folder, so nothing generated is ever committed:

- ``index.md``: the landing page, README's introduction and its two commands, with the ladder figure;
- ``NN_topic.ipynb``: every chapter, found by glob (``chapters/NN_*.ipynb``), each with a box linking
  its rung's kernel source, the diff from the previous rung and its exercise;
- ``AN_topic.ipynb``: every appendix, found by glob (``chapters/A[0-9]_*.ipynb``), after the chapters;
- ``exercises/exNN_*.md``: each exercise of :data:`hgemm_course.check.ALL_EXERCISES`, the problem and
  the ``hgemm-course check`` command, its file as ``hgemm_course.check.generate`` writes it from the course's
  source: the working copy in exercises/, which a learner may have solved in place, and solutions/ are never read;
- ``kernels/``: each rung's kernel source and ``hgemm-course diff`` from the rung before it, and the
  headers the kernels include;
- ``method.md``: how the course measures (docs/method.md, which README links);
- ``results.md``: the recorded H200 runs under results/, each with its provenance.

Every figure of the landing and results pages is drawn from the records under results/ while the site is
built, as ``hgemm-course viz NAME`` draws it: no committed picture can go stale.
"""
from __future__ import annotations

import difflib
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..library.ladder import Rung, registry
from ..library.paths import KERNELS_DIR, PTX_SNIPPETS_DIR, REPO_ROOT, require_writable

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


# ----------------------------------------------------------------------------- what the site holds


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


# ----------------------------------------------------------------------------- markdown helpers










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


# ----------------------------------------------------------------------------- the pages














































def method_page(root: Path) -> str:
    """How the course measures: docs/method.md as written, which README links too."""
    return (root / METHOD_PAGE).read_text()


def draw_figure(figure: SiteFigure, out: Path) -> None:
    """What ``hgemm-course viz NAME --out OUT`` draws, from the records under results/."""
    from ..viz import draw

    draw(figure.name, out)


def copyright_holder(root: Path) -> str:
    """The year and holder of the LICENSE's copyright line ("2026 The hgemm-course authors"), for the footer."""
    match = re.search(r"^Copyright \(c\) (.+)$", (root / "LICENSE").read_text(), flags=re.M)
    if match is None:
        raise RuntimeError("LICENSE has no 'Copyright (c) YEAR HOLDER' line, which the site's footer quotes.")
    return match.group(1).strip()


def write_sources(folder: Path, root: Path, *, progress: bool = True) -> None:
    """Write the site's source tree into ``folder``: the pages of :func:`pages`, Sphinx's settings, the figures."""
    import nbformat
    from tqdm import tqdm

    from ..check import ALL_EXERCISES
    from .book_pages import (chapter_notebook, diff_page_text, exercise_page, exercises_index, kernel_page,
                             kernels_index, landing_page)
    from .book_results import results_page

    folder = Path(folder)
    for sub in ("exercises", "kernels", "_static"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for template in ("conf.py", "favicon.svg"):
        shutil.copy(TEMPLATES_DIR / template, folder / template)
    shutil.copy(TEMPLATES_DIR / "site.css", folder / "_static" / "site.css")

    chapter_paths = chapters(root)
    chapter_stems = {chapter_number(path): path.stem for path in chapter_paths}
    found = exercises()
    (folder / "index.md").write_text(landing_page(root, chapter_paths))
    for path in chapter_paths:
        names = [name for name in found if name[2:4] == chapter_number(path)]
        nbformat.write(chapter_notebook(path, names), folder / path.name)
    for path in appendices(root):
        nbformat.write(chapter_notebook(path, []), folder / path.name)

    (folder / "exercises" / "index.md").write_text(exercises_index(found, ALL_EXERCISES))
    for name, exercise in found.items():
        page = exercise_page(name, exercise, ALL_EXERCISES[name], chapter_stems.get(name[2:4]))
        (folder / "exercises" / f"{name}.md").write_text(page)

    kernels = kernel_files()
    (folder / "kernels" / "index.md").write_text(kernels_index(kernels))
    for kernel in kernels:
        (folder / f"{kernel.page}.md").write_text(kernel_page(kernel, chapter_stems))
        old = previous_rung(kernel.rung) if kernel.rung else None
        if kernel.rung and diffable(old, kernel.rung):
            (folder / f"{diff_page(old, kernel.rung)}.md").write_text(diff_page_text(old, kernel.rung, chapter_stems))

    (folder / "method.md").write_text(method_page(root))
    with tqdm(total=len(SITE_FIGURES) + 1, desc="drawing the figures and tables from results/", unit="step",
              disable=not progress) as bar:
        for figure in SITE_FIGURES:
            draw_figure(figure, folder / figure.file)
            bar.update()
        (folder / "results.md").write_text(results_page())
        bar.update()


# ----------------------------------------------------------------------------- the build


def sphinx_html(source: Path, build_dir: Path, *, copyright: str, progress: bool = True) -> Path:
    """Sphinx's HTML build of ``source`` into ``build_dir/html``, with one progress bar over its reading and writing
    of every page (Sphinx's own log is a line per page). Returns the HTML folder."""
    from sphinx.application import Sphinx
    from tqdm import tqdm

    docs = {path.relative_to(source).with_suffix("").as_posix() for path in source.rglob("*")
            if path.suffix in (".md", ".ipynb")}
    html = build_dir / "html"

    with tqdm(total=2 * len(docs), desc="Sphinx reads, then writes the pages", unit="step",
              disable=not progress) as bar:
        def read(*_):
            bar.update()

        def written(_app, page, *_):
            # returns None: the page keeps its template. genindex and search are written too, no page of ours
            if page in docs:
                bar.update()

        app = Sphinx(source, source, html, build_dir / "doctrees", "html", confoverrides={"copyright": copyright},
                     status=None, warning=sys.stderr, warningiserror=True)
        app.connect("source-read", read)
        app.connect("html-page-context", written)
        app.build()
    if app.statuscode:
        raise RuntimeError("Sphinx could not build the site without warnings (they are printed above).")
    return html


def build(out: Path, *, root: Path | None = None, progress: bool = True) -> Path:
    """Build the website into ``out`` and return the path of its landing page; ``progress``: show a bar per step.

    Sphinx's warnings (a broken link, a missing image, a notebook it cannot read) fail the build: a
    site that builds is a site without them.
    """
    try:
        import sphinx  # noqa: F401  (the book extra: Sphinx, myst-nb and furo)
    except ImportError:
        raise RuntimeError("the website needs Sphinx, myst-nb and furo: `pip install -e .[book]` installs them.") from None
    root = checkout_root(root)
    out = Path(out).resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file; give --out a folder.")
    if out.is_dir() and any(out.iterdir()) and not (out / ".buildinfo").is_file():
        raise ValueError(f"{out} holds files that are not an earlier build of the site; give --out a new or empty "
                         "folder, e.g. --out ./hgemm-book.")
    require_writable(out, "give --out a folder you can write to")
    with tempfile.TemporaryDirectory(prefix="hgemm-book-") as tmp:
        # myst-nb writes the notebooks' images beside Sphinx's output folder (build/jupyter_execute), so Sphinx
        # builds inside the temporary folder too, and only the finished site is copied to ``out``
        source, build_dir = Path(tmp) / "source", Path(tmp) / "build"
        write_sources(source, root, progress=progress)
        html = sphinx_html(source, build_dir, copyright=copyright_holder(root), progress=progress)
        shutil.copytree(html, out, dirs_exist_ok=True)
    return out / "index.html"

