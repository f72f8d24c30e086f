"""Ladder figure: each rung's recorded speed as a percentage of the vendor baseline its records were paired with."""
from __future__ import annotations

from textwrap import fill

import numpy as np
from matplotlib.figure import Figure

from .styles import bar_style

THROUGHPUT_FROM = 2048  # README: 1024^3 times the launch as much as the kernel; from 2048^3 up the kernels fill the GPU
LEVEL_PCT = 5           # a median this close to 100% reads as level: cuBLAS's clock drifts single runs further (90-117%)


def ladder_data(records=None, *, size=None):
    """One bar per rung from recorded results: its median over the recorded runs at the square ``size`` (M, N, K),
    else at its largest recorded square size (:func:`hgemm_course.measurement.records.ladder_cells`).

    ``records``: :func:`hgemm_course.measurement.records.load_records` output, every run's (read from results/ when None).
    Returns ``{'rungs', 'pct_cublas', 'sizes', 'gpus', 'baseline'}`` sorted by rung, 'baseline' what the % are of
    (:func:`hgemm_course.measurement.vendors.baseline_label` of the newest runs drawn).
    """
    from ..measurement.vendors import baseline_label
    from ..measurement.records import ladder_cells

    best = {}
    for (rung, n), cell in sorted(ladder_cells(_all_records() if records is None else records).items()):
        if size is None or (n, n, n) == tuple(size):
            best[rung] = (n, cell)              # sorted by size: the largest last
    rungs = sorted(best)
    return {"rungs": rungs, "pct_cublas": np.array([best[r][1].pct for r in rungs], float),
            "sizes": [(best[r][0],) * 3 for r in rungs],
            "gpus": sorted({x["gpu"] for r in rungs for x in best[r][1].runs if x.get("gpu")}),
            "baseline": baseline_label(best[r][1].runs[-1] for r in rungs)}


def ladder_grid_data(records=None):
    """% of the vendor baseline per rung (rows) and square size (columns): the median over the recorded runs, with
    their p10 and p90, by README's rule (:func:`hgemm_course.measurement.records.ladder_cells`); NaN where nothing is recorded.

    Returns ``{'rungs', 'sizes', 'pct_cublas', 'low', 'high' (each len(rungs) x len(sizes)), 'runs' (counts), 'gpus',
    'baseline', 'baseline_shapes', 'baselines'}``: what the grid's % are of, that with which vendor at which shape
    where they differ, and per rung what its row's % are of (:func:`hgemm_course.measurement.vendors.baseline_label`).
    """
    from ..measurement.vendors import baseline_label
    from ..measurement.records import ladder_cells

    cells = ladder_cells(_all_records() if records is None else records)
    rungs = sorted({rung for rung, _ in cells})
    sizes = sorted({n for _, n in cells})
    grids = {name: np.full((len(rungs), len(sizes)), np.nan) for name in ("pct_cublas", "low", "high", "runs")}
    for (rung, n), cell in cells.items():
        at = rungs.index(rung), sizes.index(n)
        for name, value in (("pct_cublas", cell.pct), ("low", cell.low), ("high", cell.high),
                            ("runs", len(cell.runs))):
            grids[name][at] = value
    drawn = [r for cell in cells.values() for r in cell.runs]
    newest = [cell.runs[-1] for cell in cells.values()]
    return {"rungs": rungs, "sizes": sizes, **grids,
            "gpus": sorted({r["gpu"] for r in drawn if r.get("gpu")}), "baseline": baseline_label(newest),
            "baseline_shapes": baseline_label(newest, per_shape=True),
            "baselines": {rung: baseline_label(c.runs[-1] for (r, _), c in cells.items() if r == rung)
                          for rung in rungs}}


def ladder_headline(data):
    """The finding a :func:`ladder_grid_data` grid supports, read as README reads it: the rung with the
    highest median % of its baseline over the sizes from ``THROUGHPUT_FROM``^3 up, "level with" the baseline when
    that median is within ``LEVEL_PCT`` of 100%, the baseline named as that rung's records name it."""
    measured = {}
    for rung, row in zip(data["rungs"], data["pct_cublas"]):
        pct = {n: p for n, p in zip(data["sizes"], row) if n >= THROUGHPUT_FROM and not np.isnan(p)}
        if pct:
            measured[rung] = pct
    if not measured:
        return f"No run from {THROUGHPUT_FROM}^3 up recorded (below that a launch times latency, not throughput)"
    rung = max(measured, key=lambda r: np.median(list(measured[r].values())))
    pct = measured[rung]
    median = np.median(list(pct.values()))
    where = f"at {min(pct)}^3" if len(pct) == 1 else f"from {min(pct)}^3 up (median of {len(pct)} sizes)"
    baseline = data["baselines"][rung]
    if abs(median - 100) <= LEVEL_PCT:
        return f"Rung {rung} runs level with {baseline} {where}"
    return f"Rung {rung} reaches {median:.0f}% of {baseline} {where}"


def ladder_figure(*, records=None, size=None) -> Figure:
    """Grouped bars: each rung's % of its vendor baseline at every recorded square size (or one ``size``); the axis
    names the baseline, and where the records' baselines differ a line under the figure says which at which shape."""
    records = _all_records() if records is None else records
    if size is not None:
        records = [r for r in records if (r["M"], r["N"], r["K"]) == tuple(size)]
    data = ladder_grid_data(records)
    if not data["rungs"]:
        raise ValueError("No recorded results to draw: run `hgemm-course bench` on a GPU first")
    fig = Figure(figsize=(11, 4.8), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(data["rungs"]))
    width = 0.8 / len(data["sizes"])
    for j, n in enumerate(data["sizes"]):
        median, low, high = data["pct_cublas"][:, j], data["low"][:, j], data["high"][:, j]
        ax.bar(x + (j - (len(data["sizes"]) - 1) / 2) * width, median, width, label=f"{n}^3",
               yerr=np.nan_to_num(np.vstack([median - low, high - median])), capsize=1.5,
               error_kw={"lw": 0.7}, **bar_style(j))
    ax.axhline(100, color="black", ls="--", lw=1)
    ax.set_xticks(x, data["rungs"])
    ax.set_xlabel("rung")
    ax.set_ylabel(f"% of {data['baseline']}\n(median over the recorded runs, p10-p90)")
    ax.legend(title="size", fontsize=8)
    fig.suptitle(f"{ladder_headline(data)} on {', '.join(data['gpus']) or 'an unrecorded GPU'}")
    if data["baseline_shapes"] != data["baseline"]:
        fig.supxlabel(fill(f"baseline: {data['baseline_shapes']}", 180), fontsize=7)
    return fig


def _all_records():
    from ..measurement.records import load_records

    return load_records(latest_only=False)
