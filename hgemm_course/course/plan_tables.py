"""The tables of appendix A1 (``chapters/A1_plan.ipynb``): gemm()'s plan, its fitted constants, and what it ran.

Each table that shows a timing of the plan names the launch the plan ran: its rung and the rung's launch
arguments. A tile probe (``research/tile_probe.py``) records that launch beside each of gemm()'s timings, so its
tables show it as recorded; a bench run (``hgemm-course bench plan``) records gemm()'s time only, so its table
shows the launch :func:`hgemm_course.library.plan.plan` picks in this code beside it, and says so. The functions return
data; the ``format_*`` twins print it.
"""
from __future__ import annotations

import json
from pathlib import Path
from statistics import median

from ..library import plan_constants
from ..library.paths import REPO_ROOT

UNITS = 66        # the H200's clusters of two CTAs: every recorded run is the H200's
TILE_PROBE_DIR = Path("results") / "probes" / "tile_probe"     # under the repository: research/tile_probe.py's reports


CONSTANTS = plan_constants.constants()     # library/plan_constants.toml


def format_constants(constants=CONSTANTS) -> str:
    """The constants, one block each: name, value and kind, what it sets, what it was fitted on."""
    label = {"fit": "a fit", "margin": "a margin judged from timings", "choice": "a setting chosen from timings"}
    return "\n".join(f"{c.module}.{c.name} = {c.value}  ({label[c.kind]})\n    sets: {c.sets}\n"
                     f"    from: {c.fitted_on}" for c in constants)


# ----------------------------------------------------------------------------- the plan's choices (model only)


def launch_text(p) -> str:
    """The launch a plan runs, as a tile probe records it: "rung 11 {'super_mn': (8, 2)}"."""
    return f"rung {p.rung} {p.options_text()}"


def plan_rows(shapes, units: int = UNITS) -> list[dict]:
    """Per shape, what the plan runs and the busy fraction the model gives each choice it weighed."""
    from ..library.plan import plan

    rows = []
    for shape in shapes:
        p = plan(*shape, units=units)
        best12 = p.efficiency[f"rung 12, sk_waves={p.sk_waves}"]
        rows.append({"shape": tuple(shape), "launch": launch_text(p), "waves": p.tiles / p.units,
                     "rung 11": p.efficiency["rung 11"], "128x128": p.efficiency["rung 11, 128x128 tiles"],
                     "128x64": p.efficiency["rung 11, 128x64 tiles"], "rung 12": best12, "sk_waves": p.sk_waves})
    return rows


def format_plans(shapes, units: int = UNITS) -> str:
    head = (f"{'M x N x K':>18} {'waves':>6} {'rung 11':>8} {'128x128':>8} {'128x64':>8} {'rung 12':>8}   "
            "the plan runs")
    lines = ["busy fractions as the plan weighs them: 'rung 11' is its 128x256 tiles on the super tile the plan picks "
             "for the shape (the busiest walk of its list; 1x1 without clusters within one wave), not only rung 11's "
             "own 16x2; the smaller tiles are charged for their speed; 'rung 12' is its best sk_waves", head]
    for r in plan_rows(shapes, units):
        lines.append(f"{'x'.join(map(str, r['shape'])):>18} {r['waves']:6.2f} {r['rung 11']:8.0%} {r['128x128']:8.0%} "
                     f"{r['128x64']:8.0%} {r['rung 12']:8.0%}   {r['launch']}")
    return "\n".join(lines)


def reason_text(p) -> str:
    """The plan's reason, with the gain of dividing by K signed: where rung 12's best split is less busy than
    rung 11, the plan's "would gain 0.0%" reads "would gain nothing (rung 12 -x%)"."""
    gain = p.efficiency[f"rung 12, sk_waves={p.sk_waves}"] / p.efficiency["rung 11"] - 1
    if gain < 0:
        return p.reason.replace("would gain 0.0%", f"would gain nothing (rung 12 {gain:+.1%})")
    return p.reason


def alignment_rows() -> list[dict]:
    """The small and narrow tiles' speed per FLOP against 128x256 tiles, for each pair of row alignments."""
    from ..library.plan import narrow_tile_speed, small_tile_speed

    cases = (("both aligned", 4096, 4096), ("A's rows off", 4096, 4100), ("B's rows off", 4100, 4096),
             ("both off", 4100, 4100))
    return [{"rows": name, "N": N, "K": K, "128x128": small_tile_speed(N, K), "128x64": narrow_tile_speed(N, K)}
            for name, N, K in cases]


def format_alignment() -> str:
    lines = [f"{'rows of A (K) and B (N)':<30} {'128x128':>8} {'128x64':>8}"]
    for r in alignment_rows():
        case = f"{r['rows']} (K={r['K']}, N={r['N']})"
        lines.append(f"{case:<30} {r['128x128']:8.3f} {r['128x64']:8.3f}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- recorded: tile probes


def probe_variant(rung: str, options: dict) -> str:
    """The tile probe's name (research/tile_probe.py) of rung ``rung`` launched with ``options`` as
    :meth:`Plan.options_text` writes them: "12 sk0", "11 super 8x2", "11 128x128 s4 no cluster super 1x1"."""
    from ..library.ladder.r11_persistent import TILES
    from ..library.plan import NARROW_TILE_STAGES, NARROW_TILES

    if rung == "12":
        return f"12 sk{options['sk_waves']}"
    sup = options.get("super_mn")
    name = "11"
    if "tiles" in options:
        stages = NARROW_TILE_STAGES if options["tiles"] == "x".join(map(str, NARROW_TILES)) else TILES.stages
        name += f" {options['tiles']} s{stages}"
    if options.get("cluster_m") == 1:
        name += " no cluster"
    return name + (f" super {sup[0]}x{sup[1]}" if sup else "")


def parse_launch(text: str) -> tuple[str, dict]:
    """(rung, options) of a launch as :func:`launch_text` writes it (and a tile probe records it)."""
    import ast

    rung, _, options = text.removeprefix("rung ").partition(" ")
    return rung, ast.literal_eval(options)


def probe_records(*names: str) -> list[dict]:
    """The timings of the named tile probes (files under :data:`TILE_PROBE_DIR`), each with its shape as M, N, K and its
    variant as its rung, as the records :func:`hgemm_course.measurement.vendors.baseline_label` reads."""
    if REPO_ROOT is None:
        raise ValueError("the tile probes are under results/ in a checkout of the repository; this install has none.")
    return [{**t, "M": t["shape"][0], "N": t["shape"][1], "K": t["shape"][2], "rung": t["variant"]}
            for name in names for t in json.loads((REPO_ROOT / TILE_PROBE_DIR / name).read_text())["timing"]]


def probe_timings(*names: str) -> dict[tuple, dict]:
    """Per shape of the named tile probes (files under :data:`TILE_PROBE_DIR`): % of the vendor baseline of each launch the probe
    timed, by the probe's name for it, and of the plan, by the launch it ran as recorded:
    ``{shape: {'variants': {variant: [%]}, 'plan': {launch text: [%]}}}``."""
    timed: dict[tuple, dict] = {}
    for t in probe_records(*names):
        entry = timed.setdefault(tuple(t["shape"]), {"variants": {}, "plan": {}})
        key, group = (t["plan"], "plan") if t["variant"] == "plan" else (t["variant"], "variants")
        entry[group].setdefault(key, []).append(t["pct_cublas"])
    return timed


def probe_rows(*names: str, units: int = UNITS) -> list[dict]:
    """Per shape of the probes: each launch the plan ran there (as recorded) with the median of its timings; the
    fastest of those and of the probe's launches, by median, and whether it is a launch the plan did not run; and
    the launch the plan picks in this code with the median of that launch's timings (the plan's and the probe's),
    or None where nothing ran it."""
    from ..library.plan import plan

    rows = []
    for shape, entry in probe_timings(*names).items():
        p = plan(*shape, units=units)
        ran = {launch: median(v) for launch, v in entry["plan"].items()}
        ran_variants = {probe_variant(*parse_launch(launch)) for launch in ran}
        medians = ran | {variant: median(v) for variant, v in entry["variants"].items()}
        best = max(medians, key=medians.get)
        now = entry["plan"].get(launch_text(p), []) + entry["variants"].get(probe_variant(p.rung, p.options_text()), [])
        rows.append({"shape": shape, "ran": ran, "best": best, "best_pct": medians[best],
                     "best_is_other": best not in ran and best not in ran_variants, "plan_now": launch_text(p),
                     "plan_now_pct": median(now) if now else None})
    return rows


def format_probe(*names: str, units: int = UNITS, elsewhere: tuple[str, ...] = ()) -> str:
    """The recorded probes' table, a line per launch the plan ran at a shape: the median of its timings, the
    fastest launch's median and its name ("this launch" where it is the launch on that line);
    then a line where the plan in this code runs a launch the probe's plan did not, with its median there, or,
    where these probes did not time it, its median in the probes ``elsewhere`` that did."""
    from ..measurement.vendors import baseline_label

    other = probe_rows(*elsewhere, units=units) if elsewhere else []
    lines = [f"RECORDED on the NVIDIA H200 ({', '.join(names)}), medians of % of "
             f"{baseline_label(probe_records(*names), per_shape=True)}:",
             f"{'M x N x K':>18} {'plan':>6} {'fastest':>8}   the launch the plan ran; the fastest launch timed"]
    for r in probe_rows(*names, units=units):
        shape = "x".join(map(str, r["shape"]))
        for i, (launch, pct) in enumerate(r["ran"].items()):
            fastest = f"{r['best_pct']:8.1f}" if i == 0 else " " * 8
            named = ""
            if i == 0:
                named = ("   fastest: this launch" if r["best"] == launch
                         else f"   fastest: {r['best']}, the probe's timing of a launch the plan ran"
                         if r["best"] not in r["ran"] and not r["best_is_other"] else f"   fastest: {r['best']}")
            lines.append(f"{shape if i == 0 else '':>18} {pct:6.1f} {fastest}   {launch}{named}")
        if r["plan_now"] not in r["ran"]:
            pct = "-" if r["plan_now_pct"] is None else f"{r['plan_now_pct']:.1f}"
            note = ""
            if r["plan_now_pct"] is None:
                there = next((o for o in other if o["shape"] == r["shape"] and o["plan_now"] == r["plan_now"]
                              and o["plan_now_pct"] is not None), None)
                note = (" (not timed in these probes; " + (f"{there['plan_now_pct']:.1f} in "
                        f"{', '.join(elsewhere)})" if there else "nor in the tile probes named here)"))
            lines.append(f"{'':>18} {pct:>6} {'':>8}   this code's plan: {r['plan_now']}{note}")
    return "\n".join(lines)


def recorded_plan_launches() -> dict[tuple, set[str]]:
    """Per shape, the launches gemm()'s plan ran in the recorded tile probes (results/probes/tile_probe/*.json)."""
    if REPO_ROOT is None:
        return {}
    probes = sorted(p.name for p in (REPO_ROOT / TILE_PROBE_DIR).glob("tile_probe_*.json"))
    return {shape: set(entry["plan"]) for shape, entry in probe_timings(*probes).items() if entry["plan"]}


# ----------------------------------------------------------------------------- recorded: the shape sweep


def sweep_rows(records=None, units: int = UNITS) -> dict:
    """The course's sweep (:func:`hgemm_course.viz.shape_sweep_data`): per shape rung 11's and rung 12's own
    launches, the launch the plan picks in this code, and gemm()'s own launches timed in the same run. Returns
    ``{'file', 'gpu', 'rows': [{'shape', 'waves', 'rung 11', 'rung 12', 'launch', 'gemm', 'differs_from_probes'}],
    'nonsquare', 'geomean', 'lowest', 'baseline'}`` (the two before it over the non-square shapes, of gemm()'s
    timings; 'baseline' what the % are of, as shape_sweep_data names it);
    ``differs_from_probes``: the tile probes recorded gemm()'s plan at this shape running launches other than the
    one this code's plan picks."""
    import math

    from ..library.plan import plan
    from ..viz import shape_sweep_data

    data = shape_sweep_data(records)
    probed = recorded_plan_launches()
    rows = []
    for i, shape in enumerate(data["shapes"]):
        p = plan(*shape, units=units)
        ran = probed.get(tuple(shape))
        rows.append({"shape": shape, "waves": p.tiles / p.units, "rung 11": data["pct"]["11"][i],
                     "rung 12": data["pct"]["12"][i], "launch": launch_text(p),
                     "gemm": data["planned_pct"][i] if data["plan_measured"][i] else None,
                     "differs_from_probes": ran is not None and launch_text(p) not in ran})
    timed = [r["gemm"] for r in rows if r["gemm"] is not None and not r["shape"][0] == r["shape"][1] == r["shape"][2]]
    return {"file": data["file"], "gpu": data["gpu"], "rows": rows,
            "nonsquare": sum(1 for r in rows if not r["shape"][0] == r["shape"][1] == r["shape"][2]),
            "geomean": math.exp(sum(map(math.log, timed)) / len(timed)) if timed else None,
            "lowest": min(timed) if timed else None, "baseline": data["baseline"]}


def format_sweep(records=None, units: int = UNITS) -> str:
    data = sweep_rows(records, units)
    lines = [f"RECORDED on the {data['gpu']} ({data['file']}), % of {data['baseline']}. 'gemm()' is gemm()'s own launch in that "
             "run, of the plan as it was when recorded: a bench run records gemm()'s time, not the launch it ran, so "
             "which launch that was cannot be recovered. 'the plan runs' is the launch plan() picks in this code; * "
             "marks a shape where the tile probes recorded gemm()'s plan running another launch than that:",
             f"{'M x N x K':>18} {'waves':>6} {'rung 11':>8} {'rung 12':>8} {'gemm()':>8}   the plan runs"]
    for r in data["rows"]:
        gemm = "-" if r["gemm"] is None else f"{r['gemm']:.1f}"
        mark = "*" if r["differs_from_probes"] else " "
        lines.append(f"{'x'.join(map(str, r['shape'])):>18} {r['waves']:6.2f} {r['rung 11']:8.1f} {r['rung 12']:8.1f} "
                     f"{gemm:>8} {mark} {r['launch']}")
    if data["geomean"] is not None:
        lines.append(f"gemm() on the {data['nonsquare']} non-square shapes: geometric mean {data['geomean']:.1f}%, "
                     f"lowest {data['lowest']:.1f}% of {data['baseline']}")
    return "\n".join(lines)
