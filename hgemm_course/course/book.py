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

import re
import shutil
import sys
import tempfile
from pathlib import Path

from ..library.paths import require_writable
from .book_pages import (chapter_notebook, diff_page_text, exercise_page, exercises_index, kernel_page, kernels_index,
                         landing_page)
from .book_results import results_page
from .book_site import (METHOD_PAGE, SITE_FIGURES, TEMPLATES_DIR, SiteFigure, appendices, chapter_number, chapters,
                        checkout_root, diff_page, diffable, exercises, kernel_files, previous_rung)


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

