"""Ladder figure: each rung's recorded speed as a percentage of the vendor baseline its records were paired with."""
from __future__ import annotations

from textwrap import fill

import numpy as np
from matplotlib.figure import Figure

from .styles import bar_style

THROUGHPUT_FROM = 2048  # README: 1024^3 times the launch as much as the kernel; from 2048^3 up the kernels fill the GPU
LEVEL_PCT = 5           # a median this close to 100% reads as level: cuBLAS's clock drifts single runs further (90-117%)


def ladder_data(records=None, *, size=None):
    """One bar per rung from recorded results: the record at ``size`` (M, N, K), else each rung's largest.

    ``records``: :func:`hgemm_course.results.load_records` output (read from results/ when None).
    Returns ``{'rungs', 'pct_cublas', 'sizes', 'gpus', 'baseline'}`` sorted by rung, 'baseline' what the % are of
    (:func:`hgemm_course.harness.baseline_label` of the records drawn).
    """
    from ..harness import baseline_label

    records = _all_records() if records is None else records
    best = {}
    for r in records:
        key = (r["M"], r["N"], r["K"])
        if size is not None and key != tuple(size):
            continue
        current = best.get(r["rung"])
        if current is None or r["M"] * r["N"] * r["K"] > current["M"] * current["N"] * current["K"]:
            best[r["rung"]] = r
    rungs = sorted(best)
    return {"rungs": rungs, "pct_cublas": np.array([best[r]["pct_cublas"] for r in rungs], float),
            "sizes": [(best[r]["M"], best[r]["N"], best[r]["K"]) for r in rungs],
            "gpus": sorted({best[r]["gpu"] for r in rungs if best[r]["gpu"]}),
            "baseline": baseline_label(best.values())}


def ladder_grid_data(records=None):
    """% of the vendor baseline per rung (rows) and square size (columns), NaN where nothing is recorded.

    Returns ``{'rungs', 'sizes', 'pct_cublas' (len(rungs) x len(sizes)), 'gpus', 'baseline', 'baseline_shapes',
    'baselines'}``: what the grid's % are of, that with which vendor at which shape where they differ, and per rung
    what its row's % are of (:func:`hgemm_course.harness.baseline_label`).
    """
    from ..harness import baseline_label

    records = _all_records() if records is None else records
    square = [r for r in records if r["M"] == r["N"] == r["K"]]
    rungs = sorted({r["rung"] for r in square})
    sizes = sorted({r["M"] for r in square})
    grid = np.full((len(rungs), len(sizes)), np.nan)
    for r in square:
        grid[rungs.index(r["rung"]), sizes.index(r["M"])] = r["pct_cublas"]
    return {"rungs": rungs, "sizes": sizes, "pct_cublas": grid,
            "gpus": sorted({r["gpu"] for r in square if r["gpu"]}), "baseline": baseline_label(square),
            "baseline_shapes": baseline_label(square, per_shape=True),
            "baselines": {rung: baseline_label(r for r in square if r["rung"] == rung) for rung in rungs}}


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
        ax.bar(x + (j - (len(data["sizes"]) - 1) / 2) * width, data["pct_cublas"][:, j], width, label=f"{n}^3",
               **bar_style(j))
    ax.axhline(100, color="black", ls="--", lw=1)
    ax.set_xticks(x, data["rungs"])
    ax.set_xlabel("rung")
    ax.set_ylabel(f"% of {data['baseline']}\n(same process, median)")
    ax.legend(title="size", fontsize=8)
    fig.suptitle(f"{ladder_headline(data)} on {', '.join(data['gpus']) or 'an unrecorded GPU'}")
    if data["baseline_shapes"] != data["baseline"]:
        fig.supxlabel(fill(f"baseline: {data['baseline_shapes']}", 180), fontsize=7)
    return fig


def _all_records():
    from ..results import load_records

    return load_records()
