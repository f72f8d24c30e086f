"""The course website (hgemm_course/course/book.py): the pages it writes, then the built site in a real browser.

The site is built once for this module; the browser tests serve it on localhost and drive Debian's
Chromium through Playwright. Without the ``book`` extra, or without /usr/bin/chromium, those tests
skip; CI installs both (.ci/run).
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import io
import json
import re
import shutil
import threading
from collections import deque
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urldefrag, urlparse
from urllib.request import urlopen

import pytest

from hgemm_course.course import book, book_pages, book_results, book_site
from hgemm_course.check import ALL_EXERCISES
from hgemm_course.check.generate import is_marker, render
from hgemm_course.library.paths import PTX_SNIPPETS_DIR
from hgemm_course.course.cli import main
from hgemm_course.library.ladder import get, registry
from hgemm_course.viz import FIGURES

# myst-parser still reads an attribute Sphinx 9 deprecates, once per reference: a note to its authors, not to us
pytestmark = pytest.mark.filterwarnings("ignore:'myst_parser.sphinx_ext.myst_refs.MystReferenceResolver.app' is deprecated")

ROOT = book_site.checkout_root()
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTEFACTS = ROOT / "book-artefacts"           # screenshots for a person to look at (git-ignored)
SECRET_LINE_CHARS = 20                        # a shorter solution line ("return out") says nothing of the answer


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def solution_lines(name: str) -> list[str]:
    """The lines of the solution that the exercise as generated does not show anywhere: the answer, line by line
    (from the course's source, not the working copies in exercises/ and solutions/, which a learner may edit)."""
    exercise, solution = render(book_site.exercises()[name].name)
    exercise = normalized(exercise)
    return [line for line in map(normalized, solution.splitlines())
            if len(line) >= SECRET_LINE_CHARS and line not in exercise]


@functools.lru_cache(maxsize=1)
def course_text() -> str:
    """What the site must publish whatever the exercises are: the rungs' kernel sources, the PTX snippet headers
    they include (the answers of ex03_cp_async and ex04_mma_sync) and the chapters."""
    sources = [rung.kernel_path.read_text() for rung in registry().values() if rung.kernel_path]
    sources += [path.read_text() for path in sorted(PTX_SNIPPETS_DIR.glob("*.cuh"))]
    return normalized("\n".join(sources + [path.read_text() for path in book_site.chapters(ROOT)]))


class _Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []

    def handle_data(self, data):
        self.parts.append(data)


def page_text(path: Path) -> str:
    """What a reader sees of a page: its text with the tags dropped (highlighting splits a line in spans)."""
    if path.suffix != ".html":
        return path.read_text()
    parser = _Text()
    parser.feed(path.read_text())
    return "".join(parser.parts)


def figure_outputs(notebook: Path) -> int:
    cells = json.loads(notebook.read_text())["cells"]
    return sum("image/png" in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))


def served(url: str) -> bool:
    try:
        with urlopen(url) as response:
            return response.status == 200
    except HTTPError:
        return False


# ----------------------------------------------------------------------------- the pages book.py writes


def test_chapters_are_found_by_glob_in_course_order(tmp_path):
    (tmp_path / "chapters").mkdir()
    for name in ("12_streamk.ipynb", "02_tiled.ipynb", "10_warp_specialized.ipynb", "notes.ipynb", "03_wmma.py"):
        (tmp_path / "chapters" / name).write_text("{}")
    assert [p.name for p in book_site.chapters(tmp_path)] == ["02_tiled.ipynb", "10_warp_specialized.ipynb",
                                                         "12_streamk.ipynb"]


def test_pages_list_every_chapter_exercise_kernel_and_diff_once():
    pages = book_site.pages(ROOT)
    assert len(pages) == len(set(pages)) and pages[0] == "index" and pages[-1] == "results"
    chapter_pages = [p for p in pages if re.fullmatch(r"\d\d_\w+", p)]
    assert chapter_pages == [p.stem for p in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))]
    assert [p for p in pages if p.startswith("exercises/ex")] == [f"exercises/{name}" for name in ALL_EXERCISES]
    for rung in registry().values():
        assert f"kernels/{rung.kernel_path.stem}" in pages
    assert "kernels/diff_04_05" in pages and "kernels/diff_07_09" in pages
    assert "kernels/diff_02_03" not in pages          # a Numba kernel against a CUDA C++ one says nothing
    assert "method" in pages


def test_a_diff_page_shows_what_hgemm_course_diff_prints(capsys):
    old, new = get("04"), get("05")
    assert main(["diff", "04", "05"]) == 0
    assert book_site.rung_diff(old, new) == capsys.readouterr().out
    page = book_pages.diff_page_text(old, new, {"05": "05_swizzle"})
    assert "hgemm-course diff 04 05" in page and book_site.rung_diff(old, new).strip() in page
    assert "```diff" in page and "(../05_swizzle.ipynb)" in page


def test_kernels_show_without_the_markers_of_their_exercise_regions():
    for rung in registry().values():
        page = book_pages.kernel_page(book_site.KernelFile(rung.kernel_path, rung), {})
        assert "BEGIN SOLUTION" not in page and "END SOLUTION" not in page, rung.id
        old = book_site.previous_rung(rung)
        if book_site.diffable(old, rung):
            assert "SOLUTION" not in book_site.rung_diff(old, rung), rung.id


def test_the_chapter_box_links_kernel_diff_and_exercise():
    box = book_pages.chapter_box("05", ["ex05_swizzle"])
    for target in ("kernels/k05_swizzle.md", "kernels/diff_04_05.md", "exercises/ex05_swizzle.md"):
        assert f"({target})" in box
    assert "hgemm-course check ex05_swizzle" in box
    assert "diff_02_03" not in book_pages.chapter_box("03", [])
    assert book_pages.chapter_box("00", []) is None


@pytest.mark.parametrize("name", list(ALL_EXERCISES))
def test_an_exercise_page_states_the_problem_and_the_command_but_not_the_answer(name):
    exercise = book_site.exercises()[name]
    page = book_pages.exercise_page(name, exercise, ALL_EXERCISES[name], None)
    assert f"hgemm-course check {name}" in page
    assert normalized(page).count(normalized(book_pages.problem_statement(exercise).splitlines()[0])) == 1
    assert normalized(book_pages.exercise_code(exercise)) in normalized(page)
    assert "TODO" in book_pages.exercise_code(exercise)
    assert not [line for line in page.splitlines() if is_marker(line)], "the stubs show their region marks"
    leaked = [line for line in solution_lines(name) if line in normalized(page)]
    assert not leaked, f"{name}'s page shows its solution: {leaked}"


def test_the_problem_of_a_kernel_exercise_is_its_leading_comment():
    statement = book_pages.problem_statement(book_site.exercises()["ex03_wmma"])
    assert statement.startswith("Exercise 03") and "#include" not in statement


def test_the_landing_page_quotes_readme_and_lists_every_chapter():
    page = book_pages.landing_page(ROOT, book_site.chapters(ROOT))
    assert 'pip install -e ".[cu13,dev]" && hgemm-course tour' in page and "pytest --nbval-lax tests chapters" in page
    assert "jupyter lab chapters/" in page
    assert f"{{figure}} {book_site.LADDER.file}" in page and "results/ladder_h200.png" not in page   # drawn, not copied
    toctree = page[page.index("```{toctree}"):]
    assert [line for line in toctree.splitlines() if re.fullmatch(r"\d\d_\w+", line)] == [
        p.stem for p in book_site.chapters(ROOT)]


def figures_of(page: str) -> dict[str, str]:
    """Each ```{figure} block of a page: its file and its caption."""
    return dict(re.findall(r"```\{figure\} (\S+)\n:alt: [^\n]+\n\n(.*?)\n```", page, flags=re.S))


def test_every_figure_of_the_site_is_drawn_from_the_records_and_names_its_command():
    drawn = {figure.file: figure for figure in book_site.SITE_FIGURES}
    assert all(figure.name in FIGURES for figure in book_site.SITE_FIGURES)
    shown = {**figures_of(book_pages.landing_page(ROOT, book_site.chapters(ROOT))), **figures_of(book_results.results_page())}
    assert set(shown) == set(drawn)
    for file, caption in shown.items():
        assert normalized(caption).endswith(f"by `{drawn[file].command}`."), caption


def test_the_footer_names_the_licence_holder():
    assert book.copyright_holder(ROOT) == "2026 The hgemm-course authors"


def test_a_fence_outgrows_the_backticks_inside_it():
    assert book_pages.fenced("a ``` b", "python") == "````python\na ``` b\n````\n"


def test_book_refuses_an_out_folder_that_holds_something_else(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["book", "--out", str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert (tmp_path / "notes.txt").read_text() == "mine" and len(list(tmp_path.iterdir())) == 1


# ----------------------------------------------------------------------------- the built site


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """The site, built once for the module, and what the build printed on stderr (its progress bars)."""
    for module in ("sphinx", "myst_nb", "furo"):
        pytest.importorskip(module, reason="the website needs the book extra: pip install -e .[book]")
    out = tmp_path_factory.mktemp("book") / "site"
    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed):
            book.build(out)
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}\n{printed.getvalue()}") from None
    return out, printed.getvalue()


@pytest.fixture(scope="module")
def site(built) -> Path:
    return built[0]


def test_the_site_has_every_page(site):
    missing = [page for page in book_site.pages(ROOT) if not (site / f"{page}.html").is_file()]
    assert not missing


def test_the_build_shows_its_progress(built):
    printed = built[1]
    for step in ("drawing the figures and tables from results/", "Sphinx reads, then writes the pages"):
        assert re.search(re.escape(step) + r": 100%", printed), printed[-2000:]


def test_the_site_shows_the_figures_it_drew_and_the_licence_holder(site):
    assert all((site / "_images" / figure.file).is_file() for figure in book_site.SITE_FIGURES)
    assert f"Copyright &#169; {book.copyright_holder(ROOT)}" in (site / "index.html").read_text()


def test_no_solution_appears_in_the_site(site):
    """No file of the site holds a line of a solution. A kernel exercise is a fragment of its rung's kernel,
    which the site publishes with its chapter: such a line may appear there, never on the exercise's own page."""
    assert not list(site.rglob("solutions")) and not list(site.rglob("*solution*"))
    texts = {path: normalized(page_text(path)) for path in site.rglob("*") if path.suffix in (".html", ".js", ".txt")}
    for name in ALL_EXERCISES:
        for line in solution_lines(name):
            where = [p for p, text in texts.items() if line in text]
            if line in course_text():
                where = [p for p in where if p.stem == name]
            assert not where, f"a line of solutions/{name} is published in {where}: {line!r}"


# ----------------------------------------------------------------------------- the site in a browser


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):       # the test reports failures itself
        pass


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.is_file():
        pytest.skip(f"no {CHROMIUM}: apt-get install chromium chromium-driver")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright (the dev extra)")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 900})
        yield context
        context.close()


@dataclass
class PageVisit:
    """What one page showed the browser."""

    url: str
    status: int
    console_errors: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    images: int = 0
    links: list[str] = field(default_factory=list)     # every href of the page, absolute
    ids: set[str] = field(default_factory=set)          # the anchors a link may point at
    contents: list[str] = field(default_factory=list)   # the links of the page's own contents box (furo's toc)
    next_page: list[str] = field(default_factory=list)  # furo's "next" link at the foot of the page


def visit(context, url: str) -> PageVisit:
    page = context.new_page()
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("requestfailed", lambda request: errors.append(f"request failed: {request.url}"))
    response = page.goto(url, wait_until="load")
    result = PageVisit(url, response.status if response else 0, errors)
    result.images = page.eval_on_selector_all("img", "imgs => imgs.length")
    result.broken_images = page.eval_on_selector_all(
        "img", "imgs => imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
    result.links = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    result.ids = set(page.eval_on_selector_all("[id]", "nodes => nodes.map(n => n.id)"))
    result.contents = page.eval_on_selector_all(".toc-tree a", "links => links.map(a => a.href)")
    result.next_page = page.eval_on_selector_all("a.next-page", "links => links.map(a => a.href)")
    page.close()
    return result


@pytest.fixture(scope="module")
def crawl(browser, server) -> dict[str, PageVisit]:
    """Every page reachable from the landing page and the chapter pages, each opened in the browser once."""
    start = [server] + [f"{server}{path.stem}.html" for path in book_site.chapters(ROOT)]
    visits, queue = {}, deque(start)
    while queue:
        url = queue.popleft()
        if url in visits:
            continue
        visits[url] = found = visit(browser, url)
        for link in found.links:
            target = urldefrag(link).url
            if target.startswith(server) and target not in visits and urlparse(target).path.endswith((".html", "/")):
                queue.append(target)
    return visits


def test_every_page_is_reached_from_the_landing_page(crawl, server):
    reached = {urldefrag(url).url.removeprefix(server) or "index.html" for url in crawl}
    assert not [page for page in book_site.pages(ROOT) if f"{page}.html" not in reached]


def test_no_link_inside_the_site_is_broken(crawl, server):
    broken = []
    for visit_ in crawl.values():
        for link in visit_.links:
            target, anchor = urldefrag(link)
            if not target.startswith(server):
                continue
            landed = crawl.get(target)
            if landed is None:                      # an image, a stylesheet: fetched, not opened as a page
                broken += [] if served(target) else [(visit_.url, link)]
            elif landed.status != 200 or (anchor and anchor not in landed.ids):
                broken.append((visit_.url, link))
    assert not broken


def test_every_image_loads_and_no_page_logs_an_error(crawl):
    assert not {url: v.broken_images for url, v in crawl.items() if v.broken_images}
    assert not {url: v.console_errors for url, v in crawl.items() if v.console_errors}
    assert not {url: v.status for url, v in crawl.items() if v.status != 200}


def test_the_landing_page_shows_the_ladder_and_every_chapter(crawl, server):
    landing = crawl[server]
    assert landing.images >= 1
    for path in book_site.chapters(ROOT):
        assert f"{server}{path.stem}.html" in landing.links


def test_a_chapter_page_has_navigation_contents_figures_and_its_code(crawl, server):
    paths = book_site.chapters(ROOT)
    for path, following in zip(paths, paths[1:] + [None]):
        chapter = crawl[f"{server}{path.stem}.html"]
        figures = figure_outputs(path)
        assert chapter.images >= figures, f"{path.name}: {chapter.images} images for {figures} figure outputs"
        if following:
            assert chapter.next_page == [f"{server}{following.stem}.html"]
        sections = [link for link in chapter.contents if urldefrag(link).fragment]
        assert sections and all(urldefrag(link).fragment in chapter.ids for link in sections), path.name
        for rung in book_site.rungs_of_chapter(path.name[:2]):
            assert f"{server}kernels/{rung.kernel_path.stem}.html" in chapter.links
        for name in ALL_EXERCISES:
            if name[2:4] == path.name[:2]:
                assert f"{server}exercises/{name}.html" in chapter.links
    swizzle = crawl[f"{server}05_swizzle.html"]
    assert f"{server}kernels/diff_04_05.html" in swizzle.links
    assert f"{server}05_swizzle.html#the-picture" in swizzle.contents


def test_a_wide_table_fits_or_scrolls_in_view(browser, server):
    """At 1280 px a table wider than the text scrolls sideways in a box no taller than the window, so its scroll
    bar is on screen, not below the fold of a long table."""
    page = browser.new_page()
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{server}results.html", wait_until="load")
    boxes = page.eval_on_selector_all(".table-wrapper", """boxes => boxes.map(box => ({
        fits: box.scrollWidth <= box.clientWidth, scrolls: getComputedStyle(box).overflowX === "auto",
        height: box.getBoundingClientRect().height}))""")
    page.close()
    assert boxes and not [box for box in boxes if not box["fits"] and not (box["scrolls"] and box["height"] <= 800)]


def test_screenshots_of_the_landing_page_and_a_chapter(browser, server, crawl):
    shutil.rmtree(ARTEFACTS, ignore_errors=True)
    ARTEFACTS.mkdir()
    page = browser.new_page()
    for name, url in (("landing", server), ("chapter_05_swizzle", f"{server}05_swizzle.html")):
        page.goto(url, wait_until="load")
        page.screenshot(path=str(ARTEFACTS / f"{name}.png"), full_page=False)
        assert (ARTEFACTS / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.close()


# ------------------------------------------------------------------ fields from records are text, never markup

SCRIPT = "<script>window.ranFromRecord = 1</script>"


def _planted_table() -> str:
    data = {"provenance": {"gpu": SCRIPT, "date": "2026-12-01", "driver_release": "<img src=x onerror=alert(1)>",
                           "python": "a | b `c`"}}
    return book_results.provenance_table([(Path("bench_planted.json"), data)], book_results.BENCH_PROVENANCE)


def _as_myst_html(markdown: str) -> str:
    """What MyST's parser (markdown-it, raw HTML passed through) makes of the page text."""
    markdown_it = pytest.importorskip("markdown_it", reason="MyST's parser comes with the book extra")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)


def test_a_script_in_a_records_provenance_reaches_the_page_as_text():
    table = _planted_table()
    assert "<script" not in table and "<img" not in table and "&lt;script&gt;" in table
    rendered = _as_myst_html(table)
    assert "<script" not in rendered and "<img" not in rendered
    assert rendered.count("<td>") == 1 + 4 and "a \\| b" not in rendered   # the | stays in its cell


def test_a_script_in_a_record_does_not_run_in_a_browser(browser):
    page = browser.new_page()
    try:
        page.set_content("<html><body>" + _as_myst_html(_planted_table()) + "</body></html>")
        assert page.evaluate("window.ranFromRecord") is None
        assert SCRIPT in page.inner_text("body")
    finally:
        page.close()
