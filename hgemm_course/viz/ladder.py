"""Ladder figure: each rung's recorded speed as a percentage of cuBLAS."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure


def ladder_data(records=None, *, size=None):
    """One bar per rung from recorded results: the record at ``size`` (M, N, K), else each rung's largest.

    ``records``: :func:`hgemm_course.results.load_records` output (read from results/ when None).
    Returns ``{'rungs', 'pct_cublas', 'sizes', 'gpus'}`` sorted by rung.
    """
    if records is None:
        from ..results import load_records

        records = load_records()
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
            "gpus": sorted({best[r]["gpu"] for r in rungs if best[r]["gpu"]})}


def ladder_grid_data(records=None):
    """% of cuBLAS per rung (rows) and square size (columns), NaN where nothing is recorded.

    Returns ``{'rungs', 'sizes', 'pct_cublas' (len(rungs) x len(sizes)), 'gpus'}``.
    """
    if records is None:
        from ..results import load_records

        records = load_records()
    square = [r for r in records if r["M"] == r["N"] == r["K"]]
    rungs = sorted({r["rung"] for r in square})
    sizes = sorted({r["M"] for r in square})
    grid = np.full((len(rungs), len(sizes)), np.nan)
    for r in square:
        grid[rungs.index(r["rung"]), sizes.index(r["M"])] = r["pct_cublas"]
    return {"rungs": rungs, "sizes": sizes, "pct_cublas": grid,
            "gpus": sorted({r["gpu"] for r in square if r["gpu"]})}


def ladder_figure(*, records=None, size=None) -> Figure:
    """Grouped bars: each rung's % of cuBLAS at every recorded square size (or one ``size``)."""
    data = ladder_grid_data(records if size is None else
                            [r for r in (records or _all_records()) if (r["M"], r["N"], r["K"]) == tuple(size)])
    if not data["rungs"]:
        raise ValueError("No recorded results to draw: run `hgemm-course bench` on a GPU first")
    fig = Figure(figsize=(11, 4.8), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(data["rungs"]))
    width = 0.8 / len(data["sizes"])
    for j, n in enumerate(data["sizes"]):
        ax.bar(x + (j - (len(data["sizes"]) - 1) / 2) * width, data["pct_cublas"][:, j], width, label=f"{n}^3")
    ax.axhline(100, color="black", ls="--", lw=1)
    ax.set_xticks(x, data["rungs"])
    ax.set_xlabel("rung")
    ax.set_ylabel("% of cuBLAS (same process, median)")
    ax.legend(title="size", fontsize=8)
    best = np.nanargmax(data["pct_cublas"])
    i, j = np.unravel_index(best, data["pct_cublas"].shape)
    fig.suptitle(f"Rung {data['rungs'][i]} reaches {data['pct_cublas'][i, j]:.3g}% of cuBLAS at {data['sizes'][j]}^3 "
                 f"on {', '.join(data['gpus']) or 'an unrecorded GPU'}")
    return fig


def _all_records():
    from ..results import load_records

    return load_records()
