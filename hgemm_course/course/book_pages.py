"""The site's pages as Markdown, each from its template in ``book_templates/pages/`` (Jinja, which Sphinx brings):
the landing page, a box on each chapter, the exercises' pages and the kernels' pages with their diffs. The site
itself (what it holds, the build) is :mod:`.book`; the results page is :mod:`.book_results`."""
from __future__ import annotations

import ast
import html
import re
from functools import lru_cache
from itertools import dropwhile
from pathlib import Path

from ..library.ladder import Rung
from ..library.paths import PTX_SNIPPETS_DIR
from .book_site import (LADDER, LANGUAGES, LEXERS, README_SECTION, TEMPLATES_DIR, ExerciseFile, KernelFile, SiteFigure,
                   appendices, chapter_number, diff_page, diffable, kernel_text, previous_rung, rung_diff,
                   rungs_of_chapter)


@lru_cache(maxsize=1)
def _templates():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES_DIR / "pages"), autoescape=False,
                              keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def render(page: str, **fields) -> str:
    """The template ``book_templates/pages/<page>`` filled in with ``fields`` (Markdown: nothing is escaped here;
    a field read from a record goes through :func:`escaped` first)."""
    return _templates().get_template(page).render(**fields)


# ----------------------------------------------------------------------------- markdown helpers


def fenced(text: str, language: str = "text") -> str:
    """``text`` as a fenced code block, its fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}\n"


def readme_sections(readme: str) -> tuple[str, str]:
    """README's introduction (below its title, above the first section, less its picture: the landing page
    draws its own from the records) and its two-commands section."""
    parts = re.split(r"^(?=## )", readme, flags=re.M)
    paragraphs = parts[0].split("\n", 1)[1].strip().split("\n\n")
    intro = "\n\n".join(p for p in paragraphs if not p.startswith("!["))
    commands = next((p for p in parts if p.startswith(README_SECTION + "\n")), None)
    if commands is None:
        raise RuntimeError(f"README.md has no '{README_SECTION}' section, which the landing page quotes.")
    return intro, commands.strip()


def problem_statement(exercise: ExerciseFile) -> str:
    """An exercise's problem in its author's words: the module docstring of a .py, the leading comment of a .cu."""
    text = exercise.text
    if exercise.suffix == ".py":
        return ast.get_docstring(ast.parse(text)) or ""
    lines = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[3:] if line.startswith("// ") else line[2:])
    return "\n".join(lines).strip()


def exercise_code(exercise: ExerciseFile) -> str:
    """The exercise's file as the learner starts from it, less what its page shows above it (the problem: the
    module docstring of a .py, the leading comment of a .cu) and the comment lines that mark its regions."""
    from ..check.generate import without_markers

    lines = exercise.text.splitlines(keepends=True)
    if exercise.suffix == ".py":
        module = ast.parse(exercise.text)
        has_docstring = ast.get_docstring(module) is not None
        code = lines[module.body[0].end_lineno:] if has_docstring else lines
    else:
        code = list(dropwhile(lambda line: line.startswith("//"), lines))
    return without_markers("".join(code)).strip("\n") + "\n"


def escaped(value) -> str:
    """A field of a record or file as text on a page: HTML's specials as entities (MyST passes raw HTML through,
    so a ``<script>`` in a record would run), a table's ``|`` and Markdown's backquote escaped, on one line."""
    text = html.escape(str(value), quote=False)
    return text.replace("|", "\\|").replace("`", "\\`").replace("\r", " ").replace("\n", " ")


# ----------------------------------------------------------------------------- the pages


def figure_block(figure: SiteFigure, caption: str) -> str:
    """A figure drawn as the site is built, its caption ending with the command that draws it."""
    return render("figure.md", figure=figure, caption=caption)


def landing_page(root: Path, chapter_paths: list[Path]) -> str:
    """The landing page: README's introduction and two commands, the ladder figure, how to run the chapters."""
    intro, commands = readme_sections((root / "README.md").read_text())
    chapter_list = "\n".join(path.stem for path in chapter_paths)
    appendix_list = "\n".join(path.stem for path in appendices(root))
    from ..viz import ladder_grid_data

    figure = figure_block(LADDER, "The ladder on the H200: each rung's % of its vendor baseline "
                                  f"({escaped(ladder_grid_data()['baseline'])}), timed in pairs, at every recorded "
                                  "size: the median over the recorded runs, the whisker their p10-p90. Every "
                                  "recorded run, with its provenance, is on the [results page](results.md).")
    return render("index.md", intro=intro, figure=figure, commands=commands, chapter_list=chapter_list,
                  appendix_list=appendix_list)


def chapter_box(number: str, exercise_names: list[str]) -> str | None:
    """The box at the top of a chapter page: its kernel, the diff from the rung before, its exercise."""
    lines = []
    for rung in rungs_of_chapter(number):
        old = previous_rung(rung)
        lines.append(f"- the kernel of rung {rung.id}: [{rung.kernel_path.name}](kernels/{rung.kernel_path.stem}.md)")
        if diffable(old, rung):
            lines.append(f"- what it changes since rung {old.id}: [`hgemm-course diff {old.id} {rung.id}`]"
                         f"({diff_page(old, rung)}.md)")
        elif old is not None:
            lines.append(f"- rung {old.id} is {LANGUAGES[old.kernel_path.suffix]} and this one "
                         f"{LANGUAGES[rung.kernel_path.suffix]}: no diff, the kernel is new")
    for name in exercise_names:
        lines.append(f"- the exercise: [{name}](exercises/{name}.md), checked by `hgemm-course check {name}`")
    if not lines:
        return None
    return "```{admonition} This chapter's code\n" + "\n".join(lines) + "\n```\n"


def chapter_notebook(path: Path, exercise_names: list[str]):
    """The chapter as committed, outputs kept, with :func:`chapter_box` below its first cell."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    box = chapter_box(chapter_number(path), exercise_names)
    if box:
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(box))
    return nb


def exercise_page(name: str, exercise: ExerciseFile, description: str, chapter: str | None) -> str:
    """An exercise's page: the problem, the command that checks it and the code to fill in; ``chapter``: its
    notebook's stem. The problem opens the file too; the page shows it once, above the code."""
    back = f" It goes with [chapter {name[2:4]}](../{chapter}.ipynb)." if chapter else ""
    return render("exercise.md", name=name, description=description, back=back,
                  problem=fenced(problem_statement(exercise)), file=exercise.name,
                  command=fenced(f"hgemm-course check {name}", "bash"),
                  code=fenced(exercise_code(exercise), LEXERS[exercise.suffix]))


def exercises_index(found: dict[str, ExerciseFile], descriptions: dict[str, str]) -> str:
    rows = "\n".join(f"| [{name}]({name}.md) | `{exercise.name}` | {descriptions[name]} |"
                     for name, exercise in found.items())
    return render("exercises_index.md", rows=rows, names="\n".join(found))


def kernel_page(kernel: KernelFile, chapter_stems: dict[str, str]) -> str:
    path, rung = kernel.path, kernel.rung
    if rung is None:
        where = "ptx_snippets" if path.parent == PTX_SNIPPETS_DIR else "hgemm_course/library/kernels"
        intro = f"A header the CUDA kernels include: `{where}/{path.name}`."
    else:
        folder = "hgemm_course/library/ladder" if path.suffix == ".py" else "hgemm_course/library/kernels"
        chapter = chapter_stems.get(rung.id[:2])
        links = [f"chapter [{chapter}](../{chapter}.ipynb)"] if chapter else []
        old = previous_rung(rung)
        if diffable(old, rung):
            links.append(f"[what it changes since rung {old.id}]({Path(diff_page(old, rung)).name}.md)")
        intro = (f"Rung {rung.id} ({rung.slug}): {rung.idea}. `{folder}/{path.name}`"
                 + (f"; see {', '.join(links)}." if links else "."))
    return render("kernel.md", name=path.name, intro=intro, code=fenced(kernel_text(path), LEXERS[path.suffix]))


def diff_page_text(old: Rung, new: Rung, chapter_stems: dict[str, str]) -> str:
    chapter = chapter_stems.get(new.id[:2])
    read = f" Chapter [{chapter}](../{chapter}.ipynb) explains it." if chapter else ""
    return render("diff.md", old=old, new=new, read=read, diff=fenced(rung_diff(old, new), "diff"))


def kernels_index(kernels: list[KernelFile]) -> str:
    rows, headers, diffs = [], [], []
    for kernel in kernels:
        if kernel.rung is None:
            headers.append(f"- [{kernel.path.name}]({kernel.path.stem}.md)")
            continue
        rung, old = kernel.rung, previous_rung(kernel.rung)
        diff = f"[{old.id} to {rung.id}]({Path(diff_page(old, rung)).name}.md)" if diffable(old, rung) else "-"
        rows.append(f"| {rung.id} | [{kernel.path.name}]({kernel.path.stem}.md) | {diff} | {rung.idea} |")
        if diffable(old, rung):
            diffs.append(Path(diff_page(old, rung)).name)
    toctree = "\n".join([k.path.stem for k in kernels] + diffs)
    return render("kernels_index.md", rows="\n".join(rows), headers="\n".join(headers), toctree=toctree)
