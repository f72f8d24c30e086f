"""A chapter's "run it": a rung run here, or shown as the H200 recorded it.

On a GPU, what it can run is measured, written as a run file (:func:`hgemm_course.measurement.records.write_run`) to
./hgemm-results/, and printed under "measured on <GPU>, <date>, written to <file>"; when
``python -m hgemm_course.course.notebooks`` executes the chapters on the H200 for the site (it sets
:data:`RECORD_ENV`), the runs go to the course's results/ instead (:func:`hgemm_course.measurement.records.run_folder`
with ``record``, which takes only an H200 run with complete provenance). For what the GPU cannot run (a
feature it lacks, see :mod:`hgemm_course.library.target`), one line says why, and the recorded H200 figures follow.
Without a GPU nothing is measured: the figures shown are read from results/ and labelled with their
file and date, never presented as if they had just run.

Each measurement or reading returns data (:func:`bench_here`, :func:`recorded_rows`, :func:`compare_here`,
:func:`compare_recorded`); the calls the notebooks make print it (:func:`bench_or_show`, :func:`show_recorded`,
:func:`compare_or_show`, :func:`run_or_show`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..library import target
from ..library.ladder import get
from ..library.paths import results_dir
from ..measurement import bench, timing, verdict, verification
from ..measurement.bench import format_table
from ..measurement.records import load_records, run_folder, write_report, write_run
from .compiled import compile_report
from .stretch import HOLD_SINCE, format_stretch_table, with_samples

CLOCK_NOTE = ("ms and % vendor: the rung alternated launch by launch with the vendor baseline the table's last line "
              "names. Mcycles (the busiest SM's) and GHz: "
              "its timing build alternated with its plain build, whose times timed/plain compares; the clock may "
              "differ between the two stretches, since the power limit sets it by what runs.")

# Set to 1 by hgemm_course.course.notebooks (the site's execution on the H200): what a chapter measures is recorded in results/
RECORD_ENV = "HGEMM_COURSE_RECORD"


def measurement_folder() -> Path:
    """Where a chapter's measurement is written: the course's results/ when :data:`RECORD_ENV` is 1 (an H200 run with
    complete provenance only, else a RuntimeError that says so), otherwise the learner's ./hgemm-results/."""
    return run_folder(record=os.environ.get(RECORD_ENV) == "1")


def shown_path(path: Path) -> str:
    """A written run's path as a cell prints it: ``results/<name>`` in the course's folder, else the path itself."""
    path = Path(path)
    try:
        return f"results/{path.resolve().relative_to(results_dir().resolve()).as_posix()}"
    except ValueError:
        return str(path)


def measured_label(t: target.Target, path: Path) -> str:
    """The label of a figure measured on ``t`` and written to ``path``: its GPU (or, for another target's code run
    here with ``--as``, that target's and the GPU that ran it), the run's date and the file."""
    host = getattr(t, "host", None)
    where = t.gpu if host is None else f"{t.arch}'s code run on the {host.gpu}"
    try:
        date = json.loads(Path(path).read_text())["provenance"]["date"][:10]
    except (OSError, ValueError, KeyError, TypeError):
        date = "date unknown"
    return f"measured on {where}, {date}, written to {shown_path(path)}"


# ---------------------------------------------------------------- what the H200 recorded

def recorded_rows(*rungs: str, sizes=None) -> list[dict]:
    """The newest recorded benchmark rows of these rungs (at ``sizes``, M; default all) from runs that held the
    stream (HOLD_SINCE), each with the name and date of its run."""
    return [r for r in load_records() if r["rung"] in rungs and (sizes is None or r["M"] in sizes)
            and str(r.get("date", "")) >= HOLD_SINCE]


def format_recorded(rows: list[dict], rungs, *, one_stretch: bool = False) -> str:
    """:func:`recorded_rows` as one table per run under its name and date, then a line for the ``rungs`` with no row.
    With ``one_stretch``, each run's table is :func:`format_stretch_table` of the rows with their samples
    (:func:`with_samples`: every time beside its cycles and clock from the same launches) and its provenance is one
    line under it."""
    lines = []
    for name in sorted({r["file"] for r in rows}):
        run = [r for r in rows if r["file"] == name]
        if one_stretch:
            lines += [format_stretch_table(run), f"recorded on the {run[0]['gpu']}, {str(run[0]['date'])[:10]}, "
                                                 f"results/{name}"]
            continue
        lines += [f"RECORDED on the {run[0]['gpu']} ({name}, {str(run[0]['date'])[:10]}):", format_table(run)]
    if not one_stretch and any(r.get("cycles") for r in rows):
        lines.append(CLOCK_NOTE)
    missing = [r for r in rungs if r not in {row["rung"] for row in rows}]
    if missing:
        lines.append(f"No recorded result for rung {', '.join(missing)}: `hgemm-course bench {' '.join(missing)}` "
                     "on a GPU records one.")
    return "\n".join(lines)


def show_recorded(*rungs: str, sizes=None, one_stretch: bool = False) -> list[dict]:
    """Print :func:`recorded_rows` (:func:`format_recorded`); returns them."""
    rows = recorded_rows(*rungs, sizes=sizes)
    text = format_recorded(with_samples(rows) if one_stretch else rows, rungs, one_stretch=one_stretch)
    if text:
        print(text)
    return rows


# ---------------------------------------------------------------- run here, or show the record

def bench_here(rung_ids, sizes) -> dict:
    """On the GPU here: time the rungs it runs against the vendor baseline in this process (``bench.bench``, each
    verified first) and write the run (:func:`measurement_folder`). Returns ``{"label"`` (:func:`measured_label`;
    None where it runs none of them), ``"rows"`` (the measured records), ``"refused"`` (``(rung id, why)`` for each
    rung it cannot run, ``verification.refusal_here``'s line)``}``."""
    here = target.runnable()
    rungs = [get(r) for r in rung_ids]
    refused = [(rung, why) for rung in rungs if (why := verification.refusal_here(rung)) is not None]
    runs = [rung.id for rung in rungs if all(rung is not other for other, _ in refused)]
    label, rows = None, []
    if runs:
        skipped: list = []        # stays empty: bench is asked only for what runs here
        folder = measurement_folder()
        records = bench.bench(runs, sizes, skipped=skipped, progress=False)  # a chapter prints its table, no bar
        label = measured_label(here, write_run(records, folder=folder))
        rows = [r if isinstance(r, dict) else r.as_dict() for r in records]
    return {"label": label, "rows": rows, "refused": [(rung.id, why) for rung, why in refused]}


def format_measured(measured: dict, *, one_stretch: bool = False) -> str:
    """:func:`bench_here`'s table under its label (with ``one_stretch``, :func:`format_stretch_table` with the label
    under it), then each refusal's line."""
    lines, rows = [], measured["rows"]
    if measured["label"] is not None:
        if one_stretch:
            lines += [format_stretch_table(rows), measured["label"]]
        else:
            lines += [f"{measured['label']}:", format_table(rows)]
            if any(r.get("cycles") for r in rows):
                lines.append(CLOCK_NOTE)
    lines += [why for _, why in measured["refused"]]
    return "\n".join(lines)


def bench_or_show(rung_ids, sizes, *, one_stretch: bool = False) -> list[dict]:
    """On a GPU: :func:`bench_here`, printed (:func:`format_measured`), then the recorded H200 figures of the rungs
    it cannot run (:func:`show_recorded`). Without a GPU: the recorded figures of all of them. Returns the rows
    printed, measured ones first."""
    if target.runnable() is None:
        return show_recorded(*rung_ids, sizes=sizes, one_stretch=one_stretch)
    measured = bench_here(rung_ids, sizes)
    text = format_measured(measured, one_stretch=one_stretch)
    if text:
        print(text)
    rows = list(measured["rows"])
    if measured["refused"]:
        rows += show_recorded(*(rid for rid, _ in measured["refused"]), sizes=sizes, one_stretch=one_stretch)
    return rows


def run_or_show(rung_ids, shapes, sizes, *, one_stretch: bool = False) -> None:
    """A chapter's "run it and check it": its rung after the one before it.

    On a GPU: verify the newest of ``rung_ids`` that this GPU runs on ``shapes`` (sizes with tails), then
    :func:`bench_or_show` at ``sizes``: what it runs is timed against the vendor baseline now, what it cannot run gets its
    one-line refusal and its recorded H200 figures. Without a GPU: :func:`hgemm_course.course.compiled.compile_report`
    of the last rung for the current target, and the recorded figures."""
    here = target.runnable()
    if here is None:
        print("no GPU here:", end=" ")
        compile_report(rung_ids[-1], target.current())
        show_recorded(*rung_ids, sizes=sizes, one_stretch=one_stretch)
        return
    runs = [rid for rid in rung_ids if verification.refusal_here(get(rid)) is None]
    if runs:
        for shape in shapes:
            print(verification.verify(runs[-1], *shape).raise_if_failed().summary())
    bench_or_show(rung_ids, sizes, one_stretch=one_stretch)


# ---------------------------------------------------------------- one rung against another

def compare_here(rung_a: str, rung_b: str, size: int, *, repeats: int = 30) -> dict:
    """On the GPU here, which runs both rungs: each verified, then the two alternated launch by launch (the time
    verdict, from each pair's ratio), then each alternated with its timing build (the cycles verdict), the
    measurements and verdicts written as a ``compare`` report (:func:`measurement_folder`). Returns ``{"label"``
    (:func:`measured_label` of the report), ``"verdicts"}``."""
    import cupy

    a, b = get(rung_a), get(rung_b)
    folder = measurement_folder()
    for rung in (a, b):
        verification.verify(rung, size, size, size).raise_if_failed()
    sets = timing.input_sets(size, size, size, cupy.cuda.Device().attributes["L2CacheSize"])
    paired = timing.time_paired(b.launch, a.launch, sets, warmup=5, repeats=repeats)
    clocked = [timing.time_with_clock(rung.launch, sets) for rung in (a, b)]
    ratios = [tb / ta for tb, ta in zip(paired.fn_ms, paired.reference_ms)]
    found = [verdict.compare_paired(f"rung {a.id}", f"rung {b.id}", ratios,
                                    f"time at {size}^3, launches alternated (b / a per pair)")]
    cycles = {rung.id: [c.cycles for c in run.launches] for rung, run in zip((a, b), clocked)} if all(clocked) else {}
    if cycles:
        found.append(verdict.compare(f"rung {a.id}", cycles[a.id], f"rung {b.id}", cycles[b.id],
                                     f"SM cycles at {size}^3"))
    path = write_report({"rungs": [a.id, b.id], "M": size, "N": size, "K": size, "a_ms": list(paired.reference_ms),
                         "b_ms": list(paired.fn_ms), "cycles": cycles, "verdicts": [str(v) for v in found]},
                        kind="compare", folder=folder)
    return {"label": measured_label(target.runnable(), path), "verdicts": found}


def compare_recorded(rung_a: str, rung_b: str, size: int) -> dict | None:
    """The cycles verdict of the recorded runs of both rungs at ``size``^3 that held the stream
    (:func:`hgemm_course.measurement.verdict.compare_records`): ``{"gpu", "files", "verdicts"}``, or None where
    either lacks one with its cycles."""
    rows = {r["rung"]: r for r in load_records() if r["rung"] in (rung_a, rung_b)
            and r["M"] == r["N"] == r["K"] == size and str(r.get("date", "")) >= HOLD_SINCE}
    judged = verdict.compare_records(rows[rung_a], rows[rung_b]) if len(rows) == 2 else None
    if judged is None:
        return None
    return {"gpu": rows[rung_a]["gpu"], "files": sorted({rows[rung_a]["file"], rows[rung_b]["file"]}),
            "verdicts": [judged]}


def compare_or_show(rung_a: str, rung_b: str, size: int, *, repeats: int = 30) -> list:
    """Whether rung ``rung_b`` takes fewer SM cycles and less time than rung ``rung_a`` at ``size``^3, as verdicts
    computed from the measurements (:mod:`hgemm_course.measurement.verdict`), printed and returned: on a GPU that
    runs both, :func:`compare_here` under the label of its report; otherwise :func:`compare_recorded`, labelled as
    recorded."""
    a, b = get(rung_a), get(rung_b)
    if target.runnable() is not None and verification.refusal_here(a) is None and verification.refusal_here(b) is None:
        measured = compare_here(a.id, b.id, size, repeats=repeats)
        print(f"{measured['label']}, rungs {a.id} and {b.id} at {size}^3:")
    else:
        measured = compare_recorded(a.id, b.id, size)
        if measured is None:
            print(f"No recorded run of rungs {a.id} and {b.id} at {size}^3 with their cycles: "
                  f"`hgemm-course bench {a.id} {b.id} --sizes {size}` on a GPU measures them.")
            return []
        print(f"RECORDED on the {measured['gpu']} ({', '.join(measured['files'])}):")
    for judged in measured["verdicts"]:
        print(judged)
    return measured["verdicts"]
