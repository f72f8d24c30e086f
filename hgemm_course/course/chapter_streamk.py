"""Chapter 12's two figures that no other chapter prints: rungs' SM cycles side by side from one recorded stretch of
launches, and the fix-up cost of stream-K two ways, from the bytes a partial tile moves and from the fit to timings.

Functions return data and print it; nothing here measures.
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from ..measurement import verdict
from .stretch import HOLD_SINCE, with_samples
from ..library.paths import results_dir
from ..measurement.records import load_records

# under results/: rung 11 and rung 12's sk_waves variants, research/streamk_probe.py's report
STREAMK_PROBE = "probes/streamk_probe/streamk_probe_nvidia-h200_20261201.json"
FIT_GRID = (1, 2, 3, 4, 5, 6, 8, 10, 12)                       # the fix-up costs research/fit_streamk_model.py tried


def cycles_rows(rungs, size: int, folder=None) -> list[dict]:
    """Each rung's SM cycles at ``size``^3 from the newest recorded run that holds every one of ``rungs`` there with its
    launches' clocks: the median launch of each rung's timing build with its p10-p90, all from that one run (file).
    Empty when no run holds them all."""
    records = [r for r in load_records(folder) if r["rung"] in rungs and r["M"] == r["N"] == r["K"] == size
               and r.get("launch_clocks") and str(r.get("date", "")) >= HOLD_SINCE]
    files = [f for f in sorted({r["file"] for r in records}, reverse=True)
             if {r["rung"] for r in records if r["file"] == f} >= set(rungs)]
    if not files:
        return []
    chosen = {r["rung"]: r for r in records if r["file"] == files[0]}
    rows = []
    for rung in rungs:
        r = with_samples([chosen[rung]], folder)[0]
        cycles = [c["cycles"] for c in r["launch_clocks"]]
        lo, hi = verdict.p10_p90(cycles)
        rows.append({"rung": rung, "size": size, "cycles": cycles, "mcycles": statistics.median(cycles) / 1e6,
                     "p10": lo / 1e6, "p90": hi / 1e6, "launches": len(cycles), "file": r["file"], "gpu": r["gpu"],
                     "date": str(r["date"])[:10]})
    return rows


def show_cycles(rung_a: str, rung_b: str, sizes=(4096, 8192), folder=None) -> list:
    """Print, per size, the two rungs' SM cycles from one recorded run (:func:`cycles_rows`) and the verdict on them
    (:func:`hgemm_course.measurement.verdict.compare`, judged against the spread of those same launches); one provenance line
    under the table. Returns the verdicts."""
    print(f"{'rung':<5}{'M x N x K':>16}{'Mcycles':>9}{'(p10-p90)':>16}{'launches':>9}")
    found, files = [], set()
    for n in sizes:
        rows = cycles_rows((rung_a, rung_b), n, folder)
        if not rows:
            print(f"{'':<5}{f'{n}x{n}x{n}':>16}  no recorded run holds both rungs' launch cycles here")
            continue
        for r in rows:
            shape, spread = f"{n}x{n}x{n}", f"({r['p10']:.3f}-{r['p90']:.3f})"
            print(f"{r['rung']:<5}{shape:>16}{r['mcycles']:>9.3f}{spread:>16}{r['launches']:>9}")
            files.add(r["file"])
        found.append(verdict.compare(f"rung {rung_a}", rows[0]["cycles"], f"rung {rung_b}", rows[1]["cycles"],
                                     f"SM cycles at {n}^3"))
    for v in found:
        print(v)
    if files:
        print(f"recorded on the {rows[0]['gpu']}, {rows[0]['date']}, " + ", ".join(f"results/{f}" for f in sorted(files))
              + "; SM cycles of the busiest SM per launch, each rung's timing build (its CTAs log their cycles)")
    return found


# ---------------------------------------------------------------- the fix-up cost: bytes against the fit


def fixup_from_bytes(tile_m: int = 128, tile_n: int = 256, tile_k: int = 64) -> dict:
    """The fix-up cost in K-iterations that the bytes give: one CTA's fp32 partial tile (tile_m x tile_n x 4 bytes,
    written once by a contributor and read once by the owner) against the fp16 operands one K-iteration brings into
    the CTA ((tile_m + tile_n) x tile_k x 2 bytes)."""
    partial = tile_m * tile_n * 4
    per_iteration = (tile_m + tile_n) * tile_k * 2
    return {"partial_bytes": partial, "iteration_bytes": per_iteration, "iters": partial / per_iteration}


def _probe_by_shape(folder=None) -> tuple[dict, dict]:
    probe = json.loads((Path(folder or results_dir()) / STREAMK_PROBE).read_text())
    by_shape: dict[tuple, dict[str, float]] = {}
    for t in probe["timing"]:
        by_shape.setdefault(tuple(t["shape"]), {})[t["variant"].replace("12 ", "")] = t["pct_cublas"]
    return probe["provenance"], by_shape


def fit_error(fixup_iters: float, sk_iter_cost: float | None = None, folder=None) -> float:
    """The error research/fit_streamk_model.py minimises, at one fix-up cost: over the probe's shapes and variants, the
    squared log of the model's ratio to rung 11 over the measured one, summed."""
    from ..library.plan import rung11_efficiency
    from ..sim import waves

    sk_iter_cost = waves.FITTED_SK_ITER_COST if sk_iter_cost is None else sk_iter_cost
    _, by_shape = _probe_by_shape(folder)
    error = 0.0
    for shape, measured in by_shape.items():
        pred = {}
        for v in measured:
            if v == "11":
                pred[v] = rung11_efficiency(shape[0], shape[1], waves.UNITS)
            else:
                pred[v] = waves.schedule(*shape, mode="hybrid", sk_waves=int(v.split("=")[1]), units=waves.UNITS,
                                         fixup_iters=fixup_iters, sk_iter_cost=sk_iter_cost).efficiency
        error += sum((math.log(pred[v] / pred["11"]) - math.log(measured[v] / measured["11"])) ** 2 for v in measured)
    return error


def show_fixup_cost(folder=None) -> dict:
    """Print the fix-up cost from the bytes, the value the model holds (``sim.waves.FITTED_FIXUP_ITERS``), and the fit's
    error at the bytes' value and at each cost the grid search tried, on the recorded probe. Returns the figures."""
    from ..sim import waves

    b = fixup_from_bytes(waves.TILE_M, waves.TILE_N, waves.TILE_K)
    prov, by_shape = _probe_by_shape(folder)
    errors = {f: fit_error(f, folder=folder) for f in sorted({*FIT_GRID, round(b["iters"], 2)})}
    best = min((f for f in FIT_GRID), key=errors.get)
    print(f"from the bytes: a {waves.TILE_M}x{waves.TILE_N} fp32 partial is {b['partial_bytes'] // 1024} KiB; one "
          f"K-iteration brings {b['iteration_bytes'] // 1024} KiB of fp16 operands into the CTA: "
          f"{b['iters']:.2f} K-iterations")
    print(f"the model holds {waves.FITTED_FIXUP_ITERS:g} (sim.waves.FITTED_FIXUP_ITERS), stream-K iterations at "
          f"{waves.FITTED_SK_ITER_COST:g} data-parallel ones; the fit's error (sum of squared log errors of rung 12 "
          f"against rung 11, {len(by_shape)} shapes of results/{STREAMK_PROBE}, {prov['gpu']}, {prov['date'][:10]}):")
    print("  fix-up cost  " + "".join(f"{f:>7g}" for f in errors))
    print("  error        " + "".join(f"{errors[f]:>7.4f}" for f in errors))
    print(f"the grid search tried whole K-iterations {', '.join(map(str, FIT_GRID))}; its best: {best}")
    return {"bytes": b, "errors": errors, "best": best, "held": waves.FITTED_FIXUP_ITERS}


def run_or_show_cycles(rung_a: str, rung_b: str, shapes, sizes=(4096, 8192)) -> list:
    """Chapter 12's "run it": on a GPU that runs both rungs, verify ``rung_b`` on ``shapes`` and time both at ``sizes``
    (:func:`hgemm_course.course.here_or_recorded.run_or_show`, one stretch per table), then the verdicts measured here
    (:func:`hgemm_course.course.here_or_recorded.compare_or_show`); elsewhere, ``rung_b``'s compile report and the recorded cycles of
    both from one run (:func:`show_cycles`). Returns the verdicts."""
    from .compiled import compile_report
    from .here_or_recorded import compare_or_show, run_or_show
    from ..library import target
    from ..measurement import verification
    from ..library.ladder import get

    if target.runnable() is not None and all(verification.refusal_here(get(r)) is None for r in (rung_a, rung_b)):
        run_or_show([rung_a, rung_b], shapes, list(sizes), one_stretch=True)
        return [v for n in sizes for v in compare_or_show(rung_a, rung_b, n)]
    print("no GPU here:", end=" ")
    compile_report(rung_b, target.current())
    return show_cycles(rung_a, rung_b, sizes)


def sweep_verdicts(file: str, rung_a: str = "11", rung_b: str = "12", folder=None) -> dict[tuple, verdict.Verdict]:
    """Per shape of a recorded bench run (``file`` under results/) that timed both rungs in pairs with the vendor: the
    verdict on ``rung_b``'s time against ``rung_a``'s, each launch's time over its paired vendor launch's (so the clock
    drift they shared cancels), judged against the spread of those ratios."""
    records = json.loads((Path(folder or results_dir()) / file).read_text())["records"]
    by = {(r["rung"], r["M"], r["N"], r["K"]): r for r in records if r.get("paired")}
    out = {}
    for (rung, M, N, K), a in by.items():
        b = by.get((rung_b, M, N, K))
        if rung != rung_a or b is None:
            continue
        ratios = [[x / y for x, y in zip(r["samples_ms"], r["cublas_samples_ms"])] for r in (a, b)]
        out[M, N, K] = verdict.compare(f"rung {rung_a}", ratios[0], f"rung {rung_b}", ratios[1],
                                       f"time over the paired vendor launch's at {M}x{N}x{K}")
    return out


def verdict_cell(v: verdict.Verdict) -> str:
    """A verdict in a table cell: "level (2.7%)", or the signed change in time with the spread, "-13.8% (2.7%)"."""
    if v.outcome == "level":
        return f"level ({v.spread:.1%})"
    return f"{(v.ratio - 1) * 100:+.1f}% ({v.spread:.1%})"


def sweep_rows() -> dict:
    """Chapter 12's sweep: per recorded shape (:func:`hgemm_course.viz.shape_sweep_data`), its waves of cluster tiles,
    the model's busy fractions (rung 11 on its own 16x2 super tiles, rung 11 as the plan weighs it, rung 12 on its best
    split), the two rungs' recorded % of the vendor, and the verdict on rung 12's time against rung 11's
    (:func:`sweep_verdicts`); sorted from the least busy rung 11 to the busiest."""
    from ..library.plan import plan, rung11_efficiency
    from ..sim import waves
    from ..viz import shape_sweep_data

    d = shape_sweep_data()
    judged = sweep_verdicts(d["file"])
    rows = []
    for (M, N, K), r11, r12 in zip(d["shapes"], d["pct"]["11"], d["pct"]["12"]):
        split = waves.split_schedules(M, N, K)
        rows.append({"shape": (M, N, K), "waves": waves.schedule(M, N, K).waves,
                     "busy11": rung11_efficiency(M, N, waves.UNITS),
                     "planned11": plan(M, N, K, units=waves.UNITS).efficiency["rung 11"],
                     "busy12": split[waves.best_split(split)].efficiency, "pct11": r11, "pct12": r12,
                     "verdict": judged[M, N, K]})
    rows.sort(key=lambda r: (r["busy11"], "x".join(map(str, r["shape"]))))
    return {"file": d["file"], "gpu": d["gpu"], "rows": rows}


def show_sweep() -> dict:
    """Print :func:`sweep_rows` as a table under its run, then the verdicts counted on the shapes where the model gives
    rung 12 more than the plan's margin over rung 11 as the plan weighs it, and on the rest. Returns the rows."""
    from ..sim import waves

    data = sweep_rows()
    print(f"RECORDED on the {data['gpu']} (results/{data['file']}), {len(data['rows'])} shapes; model: busy "
          "fractions ('r11 16x2': rung 11 on its own 16x2 super tiles; 'r11 plan': rung 11 as the plan weighs it, on "
          "its busiest super tile); H200: % of cuBLAS (cupy.matmul), the median pair; rung 12's time against rung "
          "11's: each launch over its paired cuBLAS launch, with the spread of those ratios")
    print(f"{'M x N x K':>18} {'waves':>6} {'r11 16x2':>9} {'r11 plan':>9} {'rung 12':>8} {'H200: rung 11':>14} "
          f"{'rung 12':>8} {'12 against 11':>16}")
    for r in data["rows"]:
        print(f"{'x'.join(map(str, r['shape'])):>18} {r['waves']:6.2f} {r['busy11']:9.0%} {r['planned11']:9.0%} "
              f"{r['busy12']:8.0%} {r['pct11']:13.1f}% {r['pct12']:7.1f}% {verdict_cell(r['verdict']):>16}")
    for name, group in (("where the model gives rung 12 more than the plan's margin", True), ("elsewhere", False)):
        shown = [r for r in data["rows"] if (r["busy12"] > r["planned11"] * (1 + waves.DP_MARGIN)) == group]
        count = {o: sum(r["verdict"].outcome == o for r in shown) for o in ("fewer", "level", "more")}
        print(f"{name} ({waves.DP_MARGIN:.0%}): {len(shown)} shapes; rung 12 takes less time at {count['fewer']}, "
              f"is level at {count['level']}, takes more at {count['more']}")
    return data
