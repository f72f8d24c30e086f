"""What every "% of" figure is of: vendors.baseline_label, and the label each figure's data and each table carry,
for records timed against cupy.matmul alone (no ``vendor`` field), against cuBLASLt, and against each in turn."""
import pytest

from hgemm_course.measurement import records, vendors
from hgemm_course.measurement.vendors import CUBLAS_NAME, CUBLASLT_NAME, baseline_label

MIXED_LABEL = "the faster of cuBLAS and cuBLASLt at each shape"


def rec(rung, n, pct, vendor=None, **extra):
    r = {"rung": rung, "M": n, "N": n, "K": n, "tflops": 7.0 * pct, "cublas_tflops": 700.0, "pct_cublas": pct,
         "gpu": "NVIDIA H200", "date": "2026-12-01T00:00:00", "paired": True, "file": "run.json", **extra}
    return r if vendor is None else {**r, "vendor": vendor}


OLD = [rec("11", 2048, 98.0), rec("11", 4096, 100.0), rec("12", 4096, 97.0)]           # cupy.matmul alone, no vendor
TORCH = [rec("11", 2048, 95.0, CUBLASLT_NAME), rec("11", 4096, 99.0, CUBLASLT_NAME)]
MIXED = [rec("11", 2048, 95.0, CUBLASLT_NAME), rec("11", 4096, 100.0, CUBLAS_NAME), rec("12", 4096, 96.0)]


def test_label_of_each_kind_of_records():
    assert baseline_label(OLD) == baseline_label(OLD, per_shape=True) == "cuBLAS (cupy.matmul)"
    assert baseline_label([{**r, "vendor": CUBLAS_NAME} for r in OLD]) == CUBLAS_NAME
    assert baseline_label(TORCH) == baseline_label(TORCH, per_shape=True) == "cuBLASLt (torch.matmul)"
    assert baseline_label([]) == CUBLAS_NAME
    assert baseline_label(MIXED) == MIXED_LABEL
    assert baseline_label(MIXED, per_shape=True) == (
        f"{MIXED_LABEL}: {CUBLASLT_NAME} at 2048x2048x2048; {CUBLAS_NAME} at 4096x4096x4096")


def test_per_shape_names_the_rungs_where_one_shape_had_both():
    records = [rec("12", 4096, 97.0), rec("plan", 4096, 99.0, CUBLASLT_NAME), rec("plan", 8192, 101.0)]
    assert baseline_label(records, per_shape=True) == (
        f"{MIXED_LABEL}: {CUBLAS_NAME} at 4096x4096x4096 (rung 12), 8192x8192x8192; "
        f"{CUBLASLT_NAME} at 4096x4096x4096 (rung plan)")


def test_baseline_note_says_both_were_timed_where_one_won_everywhere():
    timed = {CUBLAS_NAME: 1.0, CUBLASLT_NAME: 0.9}
    records = [rec("11", 4096, 99.0, CUBLASLT_NAME, vendor_ms=timed)]
    assert vendors.baseline_note(records) == f"baseline: {CUBLASLT_NAME}, the faster of cuBLAS and cuBLASLt at every shape"
    assert vendors.baseline_note(MIXED) == f"baseline: {baseline_label(MIXED, per_shape=True)}"


@pytest.mark.parametrize("records, label", [(OLD, CUBLAS_NAME), (TORCH, CUBLASLT_NAME), (MIXED, MIXED_LABEL)])
def test_the_ladder_figures_data_names_its_baseline(records, label):
    from hgemm_course import viz

    grid = viz.ladder_grid_data(records)
    assert grid["baseline"] == label and grid["baseline_shapes"] == baseline_label(records, per_shape=True)
    assert grid["baselines"]["12" if "12" in grid["rungs"] else "11"] in (CUBLAS_NAME, CUBLASLT_NAME)
    assert viz.ladder_data(records)["baseline"] == baseline_label(
        [r for r in records if r["M"] == max(x["M"] for x in records if x["rung"] == r["rung"])])
    fig = viz.ladder_figure(records=records)
    assert fig.axes[0].get_ylabel().startswith(f"% of {label}")


def test_the_ladder_headline_names_the_rungs_own_baseline():
    from hgemm_course import viz

    title = viz.ladder_figure(records=MIXED)._suptitle.get_text()     # rung 11: cuBLASLt at 2048^3, cuBLAS at 4096^3
    assert title.startswith(f"Rung 11 runs level with {MIXED_LABEL} from 2048^3 up")
    title = viz.ladder_figure(records=MIXED + [rec("12", 8192, 120.0)])._suptitle.get_text()
    assert title.startswith(f"Rung 12 reaches 108% of {CUBLAS_NAME} from 4096^3 up")
    title = viz.ladder_figure(records=TORCH)._suptitle.get_text()
    assert f"level with {CUBLASLT_NAME}" in title


@pytest.mark.parametrize("rows, label", [(OLD, CUBLAS_NAME), (TORCH, CUBLASLT_NAME)])
def test_the_readme_table_and_the_summary_name_the_baseline(rows, label):
    assert f"% is of {label}, timed launch by launch" in records.ladder_markdown(rows)
    summary = records.ladder_summary(rows, sizes=(2048, 4096))
    assert summary["baseline"] == label
    text = records.format_ladder_summary(summary)
    assert text.splitlines()[0] == f"% of {label}:" and f"% of {label} at 4096^3 (1 run)." in text


def test_the_summary_of_mixed_records_says_which_at_which_shape():
    text = records.format_ladder_summary(records.ladder_summary(MIXED, sizes=(2048, 4096)))
    assert text.splitlines()[0] == f"% of {baseline_label(MIXED, per_shape=True)}:"
    assert f"The top rung, 12 streamk, reads 96.0% of {CUBLAS_NAME} at 4096^3 (1 run)." in text


def test_the_summary_gives_each_cell_over_all_its_runs_and_calls_a_spread_across_100_level():
    runs = [rec("12", 4096, pct, CUBLASLT_NAME, date=f"2026-12-0{day}T00:00:00", file=f"run{day}.json")
            for day, pct in enumerate([97.0, 99.0, 101.0, 103.0, 105.0], start=1)]
    summary = records.ladder_summary(runs, sizes=(4096,))
    cell = dict(summary["rows"])["12 streamk"][4096]
    assert (cell.pct, len(cell.runs)) == (101.0, 5) and cell.low < 100 < cell.high
    text = records.format_ladder_summary(summary)
    assert "101.0% (98-104, 5)" in text          # p10-p90, inclusive: 97.8-104.2
    assert f"12 streamk, runs level with {CUBLASLT_NAME} at 4096^3 (median of 5 runs" in text
    from hgemm_course import viz

    grid = viz.ladder_grid_data(runs)
    assert (grid["pct_cublas"][0, 0], grid["runs"][0, 0]) == (101.0, 5) and grid["low"][0, 0] < 100


def test_a_baseline_of_many_shapes_is_told_in_counts_on_one_short_line():
    records = [rec("11", n, 99.0, CUBLAS_NAME if n % 2 else CUBLASLT_NAME) for n in range(1000, 1060)]
    note = vendors.baseline_note(records)
    assert len(note) <= vendors.BASELINE_WIDTH + 60
    assert f"{CUBLASLT_NAME} at 30 shapes; {CUBLAS_NAME} at 30 shapes" in note and "--json" in note
    assert vendors.baseline_note(MIXED) == f"baseline: {baseline_label(MIXED, per_shape=True)}"   # short: in full
