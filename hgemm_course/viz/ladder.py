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


def ladder_figure(*, records=None, size=None) -> Figure:
    data = ladder_data(records, size=size)
    if not data["rungs"]:
        raise ValueError("No recorded results to draw: run `hgemm-course bench` on a GPU first")
    fig = Figure(figsize=(10, 4.8), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(data["rungs"]))
    ax.bar(x, data["pct_cublas"], color="#4e79a7")
    for xi, pct in zip(x, data["pct_cublas"]):
        ax.text(xi, pct, f"{pct:.3g}%", ha="center", va="bottom", fontsize=9)
    ax.axhline(100, color="black", ls="--", lw=1)
    ax.set_xticks(x, [f"{r}\n{m}x{n}x{k}" for r, (m, n, k) in zip(data["rungs"], data["sizes"])], fontsize=8)
    ax.set_ylabel("% of cuBLAS (same process, median)")
    top = int(np.argmax(data["pct_cublas"]))
    m, n, k = data["sizes"][top]
    fig.suptitle(f"Rung {data['rungs'][top]} reaches {data['pct_cublas'][top]:.3g}% of cuBLAS at {m}x{n}x{k} "
                 f"on {', '.join(data['gpus']) or 'an unrecorded GPU'}")
    return fig
