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

import ast
import difflib
import html
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from itertools import dropwhile
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


def figure_block(figure: SiteFigure, caption: str) -> str:
    """A figure drawn as the site is built, its caption ending with the command that draws it."""
    return f"""```{{figure}} {figure.file}
:alt: {figure.alt}

{caption} Drawn from `results/` as this site was built, by `{figure.command}`.
```
"""


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
    return f"""# hgemm-course

{intro}

{figure}

{commands}

## Running the chapters yourself

Each chapter page of this site is a notebook of `chapters/` as committed, with the outputs it was saved
with; nothing on this site runs. To run them, from a clone of the repository:

```bash
pip install -e ".[cu13,dev]"
jupyter lab chapters/
```

Without a GPU the notebooks compile the kernels, run the simulators and show the recorded H200 figures,
labelled as recorded; on a GPU they measure. Each chapter links its kernel source, what it changes
since the rung before, and its exercise, which `hgemm-course check` checks.

```{{toctree}}
:caption: Chapters
:maxdepth: 1

{chapter_list}
```

```{{toctree}}
:caption: Appendices
:maxdepth: 1

{appendix_list}
```

```{{toctree}}
:caption: Exercises, kernels, results
:maxdepth: 1

exercises/index
kernels/index
method
results
```
"""


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
    return f"""# {name}

{description}{back}

## The problem

{fenced(problem_statement(exercise))}
## What you write

`exercises/{exercise.name}` opens with the problem above; below it is the code. Replace each stub marked TODO
(in the file it sits between a BEGIN SOLUTION and an END SOLUTION comment line), in place or in a copy of the
file, and check it:

{fenced(f"hgemm-course check {name}", "bash")}
The checker runs your code in a separate process and says exactly what is wrong: the first wrong input,
what was expected and what came back.

{fenced(exercise_code(exercise), LEXERS[exercise.suffix])}"""


def exercises_index(found: dict[str, ExerciseFile], descriptions: dict[str, str]) -> str:
    rows = "\n".join(f"| [{name}]({name}.md) | `{exercise.name}` | {descriptions[name]} |"
                     for name, exercise in found.items())
    return f"""# Exercises

Each exercise is one function or one kernel fragment of the chapter with its number. Fill it in and run
`hgemm-course check <name>`: the checker tests it against the course's own answer over the whole valid
domain and stops at the first wrong case.

| exercise | file | what you write |
|---|---|---|
{rows}

```{{toctree}}
:hidden:

{chr(10).join(found)}
```
"""


def kernel_page(kernel: KernelFile, chapter_stems: dict[str, str]) -> str:
    path, rung = kernel.path, kernel.rung
    if rung is None:
        where = "ptx_snippets" if path.parent == PTX_SNIPPETS_DIR else "hgemm_course/library/kernels"
        intro = f"A header the CUDA kernels include: `{where}/{path.name}`."
    else:
        folder = "hgemm_course/ladder" if path.suffix == ".py" else "hgemm_course/library/kernels"
        chapter = chapter_stems.get(rung.id[:2])
        links = [f"chapter [{chapter}](../{chapter}.ipynb)"] if chapter else []
        old = previous_rung(rung)
        if diffable(old, rung):
            links.append(f"[what it changes since rung {old.id}]({Path(diff_page(old, rung)).name}.md)")
        intro = (f"Rung {rung.id} ({rung.slug}): {rung.idea}. `{folder}/{path.name}`"
                 + (f"; see {', '.join(links)}." if links else "."))
    return f"# {path.name}\n\n{intro}\n\n{fenced(kernel_text(path), LEXERS[path.suffix])}"


def diff_page_text(old: Rung, new: Rung, chapter_stems: dict[str, str]) -> str:
    chapter = chapter_stems.get(new.id[:2])
    read = f" Chapter [{chapter}](../{chapter}.ipynb) explains it." if chapter else ""
    return f"""# Rung {old.id} to rung {new.id}

What `hgemm-course diff {old.id} {new.id}` prints: every line that changes from
[{old.kernel_path.name}]({old.kernel_path.stem}.md) to [{new.kernel_path.name}]({new.kernel_path.stem}.md),
the new rung's idea: {new.idea}.{read}

{fenced(rung_diff(old, new), "diff")}"""


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
    return f"""# Kernels

One source per rung; neighbouring rungs differ by their chapter's idea, which the diff shows.

| rung | source | diff | the idea |
|---|---|---|---|
{chr(10).join(rows)}

The headers the CUDA kernels include, one per instruction family:

{chr(10).join(headers)}

```{{toctree}}
:hidden:

{toctree}
```
"""


def escaped(value) -> str:
    """A field of a record or file as text on a page: HTML's specials as entities (MyST passes raw HTML through,
    so a ``<script>`` in a record would run), a table's ``|`` and Markdown's backquote escaped, on one line."""
    text = html.escape(str(value), quote=False)
    return text.replace("|", "\\|").replace("`", "\\`").replace("\r", " ").replace("\n", " ")


def provenance_table(runs: list[tuple[Path, dict]], keys: tuple[str, ...]) -> str:
    """The provenance of recorded runs, one row per run file, with the fields among ``keys`` any run records."""
    keys = [key for key in keys if any(data["provenance"].get(key) for _, data in runs)]
    rows = ["| file | " + " | ".join(key.replace("_", " ") for key in keys) + " |", "|---" * (1 + len(keys)) + "|"]
    for path, data in runs:
        cells = [escaped(data["provenance"].get(key) or "-") for key in keys]
        rows.append(f"| `results/{path.name}` | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


BENCH_PROVENANCE = ("gpu", "date", "driver_release", "cuda_runtime", "nvrtc", "python")
MODEL_PROVENANCE = ("gpu", "measured_at", "driver_release", "cuda_runtime", "ncu", "script", "ncu_csv")


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def shape_name(shape: tuple[int, int, int]) -> str:
    M, N, K = shape
    return f"{M}^3" if M == N == K else f"{M}x{N}x{K}"


def ladder_section() -> str:
    from ..measurement.records import RECORDED_GPU, ladder_markdown, load_records, load_runs

    files = {r["file"] for r in load_records(gpu=RECORDED_GPU)}
    runs = [(path, data) for path, data in load_runs(gpu=RECORDED_GPU) if path.name in files]
    from ..viz import ladder_grid_data

    figure = figure_block(LADDER, "Each rung's % of its vendor baseline "
                                  f"({escaped(ladder_grid_data()['baseline'])}), timed in pairs, at every recorded "
                                  "square size: the median over the recorded runs, the whisker their p10-p90.")
    return f"""## The ladder on the {RECORDED_GPU}

README's table, written from the same records (`hgemm-course results --readme`): for each rung and size, the
median over its recorded runs of TFLOP/s and of the percentage of the vendor baseline timed in the same process
(which the line under the table names), with that percentage's p10-p90 and the number of runs.

{figure}
{ladder_markdown()}

### Provenance of the runs in the table

{provenance_table(runs, BENCH_PROVENANCE)}"""


def sweep_section() -> str:
    """Rungs 11 and 12 and gemm()'s plan over the course's sweep of shapes: the figure and the numbers behind it."""
    from ..library.plan import plan
    from .plan_tables import UNITS, launch_text
    from ..viz import shape_sweep_data

    data = shape_sweep_data()
    latest = data["latest_plan"]
    header = "| shape | rung 11 | rung 12 | the plan runs | gemm() |" + (" gemm(), latest run |" if latest else "")
    rows = [header, "|---" * (6 if latest else 5) + "|"]
    for i, shape in enumerate(data["shapes"]):
        planned = percent(data["planned_pct"][i]) + ("" if data["plan_measured"][i] else " (its rung's own launch)")
        cells = [shape_name(shape), percent(data["pct"]["11"][i]), percent(data["pct"]["12"][i]),
                 f"`{launch_text(plan(*shape, units=UNITS))}`", planned] + ([percent(latest["pct"][i])] if latest else [])
        rows.append("| " + " | ".join(cells) + " |")
    summary = (f"Over the non-square shapes, gemm() read a geometric mean of {percent(data['geomean_planned'])} of "
               f"{escaped(data['baseline'])}, lowest {percent(data['min_planned'])}, in `results/{data['file']}`")
    if latest:
        summary += (f"; in the latest run of `hgemm-course bench plan` over the sweep, `results/{latest['file']}`, "
                    f"{percent(latest['geomean'])}, lowest {percent(latest['min'])}, of {escaped(latest['baseline'])}")
    figure = figure_block(SHAPE_SWEEP, "Rungs 11 and 12 per shape, the plan's choice outlined, stars for gemm() in "
                                       "the latest run.")
    return f"""## Beyond the squares: the plan per shape

`gemm()` runs rung 11 or rung 12, chosen per shape by a model of the waves (appendix
[A1](A1_plan.ipynb), and [the method page](method.md)); "the plan runs" is that choice, its rung and launch
arguments, as this code's plan gives it. The sweep times both rungs on the same shapes, in one run, and
`hgemm-course bench plan` times what `gemm()` launches; each figure is a percentage of the vendor baseline timed
in the same run, which the sentence under the table names.

{figure}
{chr(10).join(rows)}

{summary}.
"""


def clocks_section() -> str:
    """The clocks of one recorded paired run, pair by pair: what pairing does not hold equal."""
    from ..viz import clocks_data

    data = clocks_data()
    figure = figure_block(CLOCKS, f"Rung {data['rung']} and {data['baseline']} at {data['size']}^3 in `results/{data['file']}`, "
                                  "pair by pair: each launch's SM clock as its cycles (Nsight Compute, "
                                  f"`results/profiles/`) over its time, NVML's reading dotted.")
    return f"""## The clocks of a pair

The two kernels of a pair need not run at one clock: the GPU sets each kernel's clock by the power it draws.
Over this run the ratio of times is {percent(min(data['pct']))} to {percent(max(data['pct']))} of {data['baseline']}, and
the ratio of cycles, which no clock moves, {percent(data['pct_cycles'])}.

{figure}"""


def cycles_section() -> str:
    """Each profiled rung's SM cycles against cuBLAS's at the same shape, as ``hgemm-course profiles`` prints them."""
    from ..measurement.profile import CUBLAS, cycle_ratios, load_profiles

    shapes = sorted({(r["M"], r["N"], r["K"]) for r in load_profiles() if r["rung"] == CUBLAS},
                    key=lambda s: (s[0] * s[1] * s[2], s))
    by_shape = {shape: {r["rung"]: r["pct_cublas_cycles"] for r in cycle_ratios(*shape)} for shape in shapes}
    by_shape = {shape: row for shape, row in by_shape.items() if row}
    rungs = sorted({rung for row in by_shape.values() for rung in row})
    if not rungs:
        return ""
    rows = ["| shape | " + " | ".join(f"rung {rung}" for rung in rungs) + " |", "|---" * (1 + len(rungs)) + "|"]
    rows += ["| " + " | ".join([shape_name(shape)] + [percent(row.get(rung)) for rung in rungs]) + " |"
             for shape, row in by_shape.items()]
    return f"""## SM cycles against cuBLAS

The comparison no clock moves: cuBLAS's SM cycles over each rung's, one launch of each under Nsight Compute at
the same shape (`hgemm-course profile RUNG --size N` and `hgemm-course profile cublas --size N`; the records
are in `results/profiles/`, and `hgemm-course profiles` prints them).

{chr(10).join(rows)}
"""


def ceilings_section() -> str:
    from ..measurement.ceilings import format_ceilings
    from ..measurement.roofline import recorded_ceilings

    record = recorded_ceilings()
    if record is None:
        return ""
    figure = figure_block(ROOFLINE, "Every recorded square run on the roofline of the measured ceilings.")
    return f"""## The ceiling chain

The roofs every chapter places its rung against, measured by `hgemm-course ceilings` on the {record['gpu']}
(`results/{record['file']}`, {record['date'][:10]}).

{fenced(format_ceilings(record))}
{figure}"""


def model_section() -> str:
    """Each recorded comparison of a simulator with Nsight Compute, as ``python3 -m hgemm_course.measurement.model_checks``
    printed it, with the run's provenance."""
    from ..measurement.model_checks import Config, bank_table, l2_table
    from ..measurement.records import load_runs

    blocks = []
    for path, data in load_runs(kind="model"):
        records = data["records"]
        rungs = sorted({r["config"]["rung"] for r in records if "rung" in r["config"]})
        of_rungs = f"of rung{'s' if len(rungs) > 1 else ''} {', '.join(rungs)}"
        if records and records[0]["check"] == "banks":
            configs = {r["config"]["name"]: r["config"] for r in records}
            title = f"Shared-memory banks {of_rungs}: `sim.main_loop_bank_conflicts` against ncu's counters"
            table = bank_table(records, [Config(c["name"], c["kind"], c["rung"], c["M"], c["N"], c["K"],
                                                tuple(c["super_mn"]) if c.get("super_mn") else None, c["kernel"])
                                         for c in configs.values()])
        else:
            title = f"L2 {of_rungs}: `sim.l2_model` against ncu's L2 hit rate of the SMs' reads"
            table = l2_table(records)
        note = data["provenance"].get("note")
        blocks.append(f"### {title}\n\n{provenance_table([(path, data)], MODEL_PROVENANCE)}\n"
                      + (f"{escaped(note)}\n\n" if note else "") + fenced(table))
    return """## The models against the hardware

The shared-memory bank and L2 simulators against Nsight Compute's counters on the H200, configuration by
configuration: the model's count beside the hardware's.

""" + "\n".join(blocks)


def results_page() -> str:
    return f"""# Results

Every figure and table on this page is read from the runs recorded on the H200 under `results/`, each with
its provenance, and drawn as the site is built: nothing here was measured while it was built.
[How the course measures](method.md) says how each figure is made.

{ladder_section()}
{sweep_section()}
{clocks_section()}
{cycles_section()}
{ceilings_section()}
{model_section()}"""


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

