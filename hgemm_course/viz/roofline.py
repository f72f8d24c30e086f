"""The roofline of the measuring GPU: the ceiling chain (FP32 cores -> mma.sync -> wgmma peak, cuBLAS as a reference
-> datasheet), the memory roof, and the ladder on them. The compute roof is the highest measured peak
(``roofline.compute_roof``)."""
from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from .styles import point_style


def roofline_data(*, ceilings=None, records=None):
    """Ceilings (``hgemm_course.measurement.roofline.recorded_ceilings``), their compute roofs lowest first
    (``hgemm_course.measurement.ceilings.roofs``: those an older record lacks are left out), and each recorded
    square run's (intensity, TFLOP/s)."""
    from ..measurement.ceilings import roofs
    from ..measurement.records import load_records
    from ..measurement.roofline import compute_roof, gemm_floor, recorded_ceilings

    ceilings = recorded_ceilings() if ceilings is None else ceilings
    if ceilings is None:
        raise ValueError("No recorded ceilings: run `hgemm-course ceilings` on a GPU first")
    records = load_records() if records is None else records
    roof = compute_roof(ceilings)
    points = []
    for r in records:
        f = gemm_floor(r["M"], r["N"], r["K"], peak_tflops=roof["tflops"],
                       bandwidth_gbs=ceilings["bandwidth_gbs"])
        points.append({"rung": r["rung"], "size": (r["M"], r["N"], r["K"]), "intensity": f["intensity"],
                       "tflops": r["tflops"]})
    ridge = roof["tflops"] * 1e12 / (ceilings["bandwidth_gbs"] * 1e9)
    return {"peak_tflops": roof["tflops"], "peak_name": roof["name"], "bandwidth_gbs": ceilings["bandwidth_gbs"],
            "ridge": ridge, "roofs": roofs(ceilings), "points": points, "gpu": ceilings["gpu"],
            "date": ceilings["date"]}


def roofline_figure(*, ceilings=None, records=None) -> Figure:
    """The roofline of the recorded ceilings with every recorded square run on it."""
    data = roofline_data(ceilings=ceilings, records=records)
    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.subplots()
    x = np.logspace(0, 4, 200)
    memory = x * data["bandwidth_gbs"] / 1e3
    top = max(roof["tflops"] for roof in data["roofs"])
    ax.loglog(x, np.minimum(top, memory), color="grey", lw=0.8,
              label=f"memory: {data['bandwidth_gbs']:.0f} GB/s copy bandwidth")
    for i, roof in enumerate(data["roofs"]):
        the_roof = roof["measured"] and roof["tflops"] == data["peak_tflops"]   # the compute roof, drawn heavy
        label = f"{roof['name']}: {roof['tflops']:.0f} TFLOP/s" + ("" if roof["measured"] else ", not measured")
        ax.loglog(x, np.minimum(roof["tflops"], memory), color="black" if the_roof else colormaps["Dark2"](i),
                  lw=2 if the_roof else 1.2, ls="-" if roof["measured"] else "--", label=label)
    ax.axvline(data["ridge"], color="grey", ls=":", label=f"ridge {data['ridge']:.0f} flop/byte")
    for i, rung in enumerate(sorted({p["rung"] for p in data["points"]})):
        pts = [p for p in data["points"] if p["rung"] == rung]
        ax.scatter([p["intensity"] for p in pts], [p["tflops"] for p in pts], label=f"rung {rung}", zorder=3,
                   **point_style(i))
    ax.set_xlabel("arithmetic intensity (flop per byte of A, B, C moved once)")
    ax.set_ylabel("TFLOP/s")
    fig.suptitle(f"{data['gpu']}, ceilings of {data['date'][:10]}: {roofline_headline(data)}")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def roofline_headline(data):
    """Where the recorded runs sit against the ridge."""
    points, ridge = data["points"], data["ridge"]
    if not points:
        return "no recorded runs to place"
    left = sum(p["intensity"] < ridge for p in points)
    if left:
        return f"{left} of {len(points)} recorded runs sit left of the ridge at {ridge:.0f} flop/byte: memory caps them"
    least = min(points, key=lambda p: p["intensity"])
    M, N, K = least["size"]
    size = f"{M}^3" if M == N == K else f"{M}x{N}x{K}"
    return (f"all {len(points)} recorded runs sit right of the ridge at {ridge:.0f} flop/byte\n"
            f"({size}: {least['intensity']:.0f} flop/byte and up), so compute, not memory, caps them")
