"""What the course publishes stands on its records: every results file a notebook (source or committed output),
README or docs/ names exists in the repository, and every cell that only reads records has nbval compare its
output with the committed one (``# NBVAL_CHECK_OUTPUT``; CI runs ``pytest --nbval-lax tests chapters``)."""
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# a run file's name as results.write_run makes it (kind, GPU, stamp, optional suffix), or a path under results/
RUN_FILE = re.compile(r"\b[a-z][a-z0-9_]*_nvidia-[a-z0-9-]+_\d{8}T\d{6}(?:_[0-9a-f]{6})?\.json\b")
RESULTS_PATH = re.compile(r"\bresults/[\w./*<>{}-]*")       # a pattern (``*``, ``<name>``, ``{a,b}``) names no file


def _texts():
    """(where, text) for every notebook cell's source and output, README and docs/."""
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            yield f"{path.name} cell {i}", cell.source
            for out in cell.get("outputs", []):
                text = out.get("text") or out.get("data", {}).get("text/plain") or ""
                yield f"{path.name} cell {i} output", "".join(text)
    for path in PAGES:
        yield path.name, path.read_text()


def _recorded_names() -> set[str]:
    return {p.name for p in RESULTS.rglob("*") if p.is_file()}


def missing_results_files(texts) -> list[str]:
    """Each results file named in ``texts`` that is not in the repository, as "where: name"."""
    names = _recorded_names()
    missing = []
    for where, text in texts:
        for name in RUN_FILE.findall(text):
            if name not in names:
                missing.append(f"{where}: {name}")
        for path in RESULTS_PATH.findall(text):
            path = path.rstrip("./")
            if any(c in path for c in "*<>{}"):
                continue
            if not (ROOT / path).exists() and Path(path).name not in names:
                missing.append(f"{where}: {path}")
    return missing


def test_every_results_file_the_course_names_exists():
    assert missing_results_files(_texts()) == []


def test_a_missing_results_file_is_found():
    texts = [("page", "see `limits_nvidia-h200_20261202T182609_9c69e0.json` and results/tuning/nothing.json; "
                      "results/ holds limits_nvidia-h200_20261202T145527_c075e2.json")]
    assert missing_results_files(texts) == ["page: limits_nvidia-h200_20261202T182609_9c69e0.json",
                                            "page: results/tuning/nothing.json"]


# Calls that read recorded results and nothing else, and calls whose output depends on the machine (a GPU measures,
# the toolchain compiles, a learner's exercise is checked, a figure is drawn): a cell with the first and none of the
# second prints the same on every machine, so nbval compares it with its committed output.
READS_RECORDS = ("show_recorded", "place_on_ceilings", "model_vs_hardware", "show_limits", "show_tuning",
                 "tune_verdicts", "profiles_side_by_side", "size_sweep", "tensor_instructions", "show_l2_promotion",
                 "ablation.show", "load_runs", "load_records", "recorded_", "cycle_ratios",
                 "clocks_data", "results_dir")
MACHINE = ("bench_or_show", "run_or_show", "compare_or_show", "ceilings_or_show", "limits_or_show", "time_or_show",
           "verify(", "HAS_GPU", "has_gpu", "machine_report", "check(", "hgemm_course_cli", "recorded_build", "Code(",
           "figure(", "_figure", "compile", "what_runs_where", "kernel()")
MARK = "# NBVAL_CHECK_OUTPUT"


def record_reading_cells_unmarked(nb) -> list[int]:
    """The code cells of ``nb`` that only read records but leave nbval's output check off."""
    return [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            and any(call in cell.source for call in READS_RECORDS) and not any(m in cell.source for m in MACHINE)
            and MARK not in cell.source]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_cells_that_only_read_records_have_their_output_checked(path):
    assert record_reading_cells_unmarked(nbformat.read(path, as_version=4)) == []


def test_an_unmarked_record_reading_cell_is_found():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('show_recorded("07")'),
                                         nbformat.v4.new_code_cell(f'{MARK}\nshow_recorded("07")'),
                                         nbformat.v4.new_code_cell('bench_or_show(["07"], [4096])\nshow_recorded("07")')])
    assert record_reading_cells_unmarked(nb) == [0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_checked_cell_shows_nothing_but_what_it_prints(path):
    """nbval runs a cell without storing it in the kernel's history, where IPython looks for a closing ``;``: a
    checked cell that ends in a call's value shows it under nbval but not in the committed output."""
    nb = nbformat.read(path, as_version=4)
    assert [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and MARK in cell.source
            and cell.source.rstrip().endswith(";")] == []
