"""The recorded runs a chapter's tables read: those that held the stream (:data:`HOLD_SINCE`), with every launch's
samples merged back in (:func:`with_samples`), and each record's figures from one stretch of launches, its timing
build's (:func:`stretch_row`, laid out by :func:`format_stretch_table`)."""
from __future__ import annotations

import json
from pathlib import Path

from ..library.paths import results_dir
from ..measurement import verdict

# Runs from this time on queued their timed launches behind timing.StreamHold; before it, a short kernel's
# events could count the host's launch time as the kernel's (cuBLAS read 110 TFLOP/s at 1024^3).
HOLD_SINCE = "2026-12-01T17:53"


def with_samples(rows: list[dict], folder=None) -> list[dict]:
    """Flat records (:func:`hgemm_course.measurement.records.load_records`) with their run file's own record merged in: every
    launch's samples, which the flat ones leave out."""
    runs: dict[str, dict] = {}
    out = []
    for r in rows:
        if r["file"] not in runs:
            records = json.loads((Path(folder or results_dir()) / r["file"]).read_text())["records"]
            runs[r["file"]] = {(x["rung"], x["M"], x["N"], x["K"]): x for x in records}   # the last of a key, as load_records
        out.append({**r, **runs[r["file"]][(r["rung"], r["M"], r["N"], r["K"])]})
    return out


def stretch_row(r: dict) -> dict | None:
    """One record's figures from one stretch of launches, its timing build's: median ms and Mcycles, the clock
    that is the one over the other (so no column contradicts another) and the TFLOP/s of that ms; and, from the stretch that alternated
    the plain build with the vendor baseline, the % of it (a ratio, which the clock does not move) with the
    p10-p90 of its pairs. None for a record without its launches' clocks."""
    import statistics

    clocks = r.get("launch_clocks") or []
    if not clocks:
        return None
    ms = statistics.median(c["ns"] for c in clocks) / 1e6
    mcycles = statistics.median(c["cycles"] for c in clocks) / 1e6
    paired = r.get("paired") and r.get("samples_ms") and r.get("cublas_samples_ms")
    pairs = [100 * v / s for s, v in zip(r["samples_ms"], r["cublas_samples_ms"])] if paired else []
    lo, hi = verdict.p10_p90(pairs) if pairs else (float("nan"), float("nan"))
    return {"rung": r["rung"], "M": r["M"], "N": r["N"], "K": r["K"], "ms": ms,
            "mcycles": mcycles, "ghz": mcycles / ms,        # the clock of the median launch: its cycles over its time
            "tflops": 2 * r["M"] * r["N"] * r["K"] / (ms * 1e-3) / 1e12,
            "pct": statistics.median(pairs) if pairs else r["pct_cublas"], "pct_p10": lo, "pct_p90": hi}


STRETCH_NOTE = ("ms, Mcycles, GHz and TFLOP/s: the median launch of the rung's timing build (each CTA logs its SM "
                "cycles and the global timer), one stretch; % vendor: the plain build alternated launch by launch with "
                "the vendor baseline, the median pair with its p10-p90.")


def format_stretch_table(records) -> str:
    """The fixed-width table of :func:`stretch_row` for each record that has its launches' clocks."""
    from ..measurement.vendors import baseline_note

    rows = [s for r in records if (s := stretch_row(r)) is not None]
    lines = [f"{'rung':<5} {'M x N x K':>16} {'ms':>8} {'Mcycles':>8} {'GHz':>6} {'TFLOP/s':>8} "
             f"{'% vendor':>9} {'(p10-p90)':>12}"]
    for s in rows:
        shape, spread = f"{s['M']}x{s['N']}x{s['K']}", f"({s['pct_p10']:.1f}-{s['pct_p90']:.1f})"
        lines.append(f"{s['rung']:<5} {shape:>16} {s['ms']:>8.3f} {s['mcycles']:>8.3f} {s['ghz']:>6.3f} "
                     f"{s['tflops']:>8.1f} {s['pct']:>8.1f}% {spread:>12}")
    lines.append(baseline_note(records))
    lines.append(STRETCH_NOTE)
    return "\n".join(lines)
