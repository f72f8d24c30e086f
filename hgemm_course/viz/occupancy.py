"""Occupancy figure: CTAs per SM as the shared memory per CTA grows."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..sim import occupancy_report
from ..sim.occupancy import H200


def occupancy_data(*, threads=128, regs_per_thread=128, step_bytes=1024):
    """CTAs per SM for shared memory 0..227 KB per CTA in ``step_bytes`` steps.

    Returns ``{'smem_bytes', 'ctas_per_sm', 'limited_by', 'cliffs': [(last bytes with n CTAs, n)]}``.
    """
    smem = np.arange(0, H200["max_smem_per_cta"] + 1, step_bytes)
    reports = [occupancy_report(threads, regs_per_thread, int(s)) for s in smem]
    ctas = np.array([r["ctas_per_sm"] for r in reports])
    cliffs = [(int(smem[i]), int(ctas[i])) for i in np.flatnonzero(np.diff(ctas)) if ctas[i] <= 8]
    return {"smem_bytes": smem, "ctas_per_sm": ctas, "limited_by": [r["limited_by"] for r in reports],
            "cliffs": cliffs, "threads": threads, "regs_per_thread": regs_per_thread}


def occupancy_figure(*, threads=128, regs_per_thread=128) -> Figure:
    """CTAs per SM on sm_90 as shared memory per CTA grows, at a given thread and register count."""
    data = occupancy_data(threads=threads, regs_per_thread=regs_per_thread)
    fig = Figure(figsize=(10, 4.8), layout="constrained")
    ax = fig.subplots()
    kb = data["smem_bytes"] / 1024
    ax.step(kb, data["ctas_per_sm"], where="post", color="#4e79a7")
    for last, n in data["cliffs"]:
        ax.annotate(f"{n} CTAs up to {last / 1024:.0f} KB", (last / 1024, n), textcoords="offset points",
                    xytext=(4, 6), fontsize=9)
    ax.set_xlabel("shared memory per CTA (KB, before the 1 KB the driver reserves)")
    ax.set_ylabel("CTAs per SM")
    ax.set_yscale("log", base=2)
    ax.set_yticks([1, 2, 4, 8, 16, 32], ["1", "2", "4", "8", "16", "32"])
    ax.grid(True, alpha=0.3)
    two = [last for last, n in data["cliffs"] if n == 2]
    counts = set(data["ctas_per_sm"].tolist() if hasattr(data["ctas_per_sm"], "tolist") else data["ctas_per_sm"])
    if len(counts) == 1:                   # another limit (registers, threads) binds before shared memory does
        finding = f"{counts.pop()} CTA(s) per SM whatever the shared memory: registers or threads bind first"
    else:
        finding = f"past {two[0] / 1024:.0f} KB per CTA only one CTA fits an SM" if two else "shared memory sets the steps"
    fig.suptitle(f"{threads} threads x {regs_per_thread} registers on sm_90: {finding}")
    return fig
