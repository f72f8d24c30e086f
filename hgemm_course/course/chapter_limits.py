"""Chapter 08's experiments on rung 07 (:mod:`hgemm_course.measurement.limits`): run here where the GPU runs rung 07,
else the newest recorded run (:func:`limits_or_show`); the run as its short tables (:func:`show_limits`) or its
variants each from one stretch of launches, judged against the default by their SM cycles (:func:`limits_stretch`,
printed by :func:`show_limits_stretch`).
"""
from __future__ import annotations

from pathlib import Path

from ..library import target
from ..library.ladder import get
from ..measurement import verdict, verification
from .here_or_recorded import measured_label, measurement_folder
from .stretch import STRETCH_NOTE


def newest_limits_run() -> tuple[Path, dict] | None:
    """(path, run) of the newest recorded chapter-08 run (``hgemm-course limits`` on a GPU), or None."""
    from ..measurement.records import load_runs

    runs = load_runs(kind="limits")
    return runs[-1] if runs else None


def show_limits() -> dict | None:
    """Print the newest recorded chapter-08 experiments (:func:`newest_limits_run`) as
    :func:`hgemm_course.measurement.limits.format_limits` lays them out; returns them."""
    from ..measurement.limits import format_limits

    found = newest_limits_run()
    if found is None:
        print("No recorded chapter-08 run: `hgemm-course limits` on the H200 records one.")
        return None
    path, data = found
    print(f"RECORDED on the {data['provenance']['gpu']} ({path.name}, {data['provenance']['date'][:10]}):")
    print(format_limits(data["records"][0]))
    return data["records"][0]


def limits_stretch_rows(data: dict) -> list[dict]:
    """Chapter 08's variants of rung 07 (a ``limits`` record's ``variants``) from one stretch each: the median launch
    of the timing build (ms, Mcycles, the clock that is one over the other, the TFLOP/s of that ms) and the % of the
    vendor baseline of the plain build's launches alternated with it, the median pair with its p10-p90. Variants the
    run refused or that failed keep their reason (``why``)."""
    import statistics

    n = data["size"]
    rows = []
    for r in data["variants"]:
        row = {"variant": r["variant"], "tiles": r.get("tiles"), "smem_bytes": r["smem_bytes"],
               "registers": r.get("registers"), "ctas_per_sm": r.get("ctas_per_sm")}
        clocks, pairs = r.get("launch_clocks") or [], r.get("pct_cublas_pairs") or []
        if not clocks or not pairs:
            rows.append({**row, "why": r.get("skipped") or r.get("failed") or "no launches recorded"})
            continue
        ms = statistics.median(c["ns"] for c in clocks) / 1e6
        mcycles = statistics.median(c["cycles"] for c in clocks) / 1e6
        lo, hi = verdict.p10_p90(pairs)
        rows.append({**row, "ms": ms, "mcycles": mcycles, "ghz": mcycles / ms, "tflops": 2 * n**3 / (ms * 1e-3) / 1e12,
                     "pct": statistics.median(pairs), "pct_p10": lo, "pct_p90": hi,
                     "cycles": [c["cycles"] for c in clocks]})
    return rows


def limits_stretch(data: dict, names: dict[str, str] | None = None) -> list[dict]:
    """:func:`limits_stretch_rows` of a ``limits`` record, each with its ``name`` (``names`` relabels variants for the
    page), its ``tile`` (BM x BN) and, for each timed variant but the default, its SM cycles against the default's as
    a ``verdict``."""
    rows = limits_stretch_rows(data)
    names = names or {}
    for r in rows:
        r["name"] = names.get(r["variant"], r["variant"])
        r["tile"] = f"{r['tiles'][0]}x{r['tiles'][1]}" if r.get("tiles") else "-"   # BM, BN, BK, WM, WN, STAGES
    base = next((r for r in rows if r["variant"] == "default" and "ms" in r), None)
    for r in rows:
        if base is not None and r is not base and "cycles" in r:
            r["verdict"] = verdict.compare(base["name"], base["cycles"], r["name"], r["cycles"],
                                           f"SM cycles at {data['size']}^3")
    return rows


def format_limits_stretch(rows: list[dict], size: int, label: str) -> str:
    """:func:`limits_stretch` as one table with its provenance (``label``) under it, then the verdicts."""
    width = max(len(r["name"]) for r in rows) + 2
    lines = [f"{'variant':<{width}}{'tile':>8}{'stages':>7}{'KiB':>6}{'regs':>5}{'CTAs/SM':>8}{'ms':>7}{'Mcycles':>8}"
             f"{'GHz':>7}{'TFLOP/s':>8}{'% vendor':>9}{'(p10-p90)':>13}   (n={size})"]
    for r in rows:
        stages = r["tiles"][5] if r.get("tiles") else "-"
        head = f"{r['name']:<{width}}{r['tile']:>8}{stages:>7}{r['smem_bytes'] // 1024:>6}"
        if "ms" not in r:
            lines.append(f"{head}  {r['why']}")
            continue
        spread = f"({r['pct_p10']:.1f}-{r['pct_p90']:.1f})"
        lines.append(f"{head}{r['registers']:>5}{r['ctas_per_sm']:>8}{r['ms']:>7.3f}{r['mcycles']:>8.3f}"
                     f"{r['ghz']:>7.3f}{r['tflops']:>8.1f}{r['pct']:>8.1f}%{spread:>13}")
    lines.append(f"{label}; " + STRETCH_NOTE.replace("the rung's timing build", "each variant's timing build"))
    lines += [str(r["verdict"]) for r in rows if "verdict" in r]
    return "\n".join(lines)


def show_limits_stretch(names: dict[str, str] | None = None, *, data: dict | None = None,
                        label: str | None = None) -> list[dict]:
    """Print :func:`limits_stretch` (:func:`format_limits_stretch`) of ``data`` as just measured (``label`` its
    provenance line), or else of the newest recorded run. Returns the rows, each with its ``verdict`` where it has
    one."""
    if data is None:
        found = newest_limits_run()
        if found is None:
            print("No recorded chapter-08 run: `hgemm-course limits` on the H200 records one.")
            return []
        path, run = found
        data = run["records"][0]
        label = f"recorded on the {run['provenance']['gpu']}, {run['provenance']['date'][:10]}, results/{path.name}"
    rows = limits_stretch(data, names)
    print(format_limits_stretch(rows, data["size"], label))
    return rows


def limits_or_show(n: int = 8192, *, one_stretch: bool = False, names: dict[str, str] | None = None):
    """Chapter 08's experiments on rung 07 (``limits.run_all``): run on a GPU that runs rung 07, written
    (:func:`hgemm_course.course.here_or_recorded.measurement_folder`) and labelled with the GPU, date and file;
    otherwise the one line that says why (on a GPU) and the newest recorded run (:func:`show_limits`). Returns the
    experiments' data. With ``one_stretch``, the variants are printed and returned as :func:`show_limits_stretch`
    gives them (``names`` relabels them)."""
    here = target.runnable()
    why = verification.refusal_here(get("07"))
    if here is None or why is not None:
        if why is not None:
            print(why)
        return show_limits_stretch(names) if one_stretch else show_limits()
    from ..measurement.limits import format_limits, run_all

    path, data = run_all(n=n, folder=measurement_folder())
    if one_stretch:
        return show_limits_stretch(names, data=data, label=measured_label(here, path))
    print(f"{measured_label(here, path)}:")
    print(format_limits(data))
    return data
