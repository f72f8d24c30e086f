"""Shape sweep figure: rung 11 against rung 12 on every recorded shape, with the plan's choice marked."""
from __future__ import annotations

from matplotlib.figure import Figure


def course_sweep_shapes() -> list[tuple[int, int, int]]:
    """The shapes of the course's sweep, ``benchmarks/shapes_nonsquare.txt`` (none in an installed package without
    the repository)."""
    from ..measurement.shapes import parse_shapes
    from ..library.paths import REPO_ROOT

    path = None if REPO_ROOT is None else REPO_ROOT / "benchmarks" / "shapes_nonsquare.txt"
    return parse_shapes(str(path)) if path is not None and path.is_file() else []


def shape_sweep_data(records=None, *, rungs=("11", "12"), shapes=None):
    """% of the vendor baseline of ``rungs`` per shape from the newest recorded run that timed them all on every shape of
    ``shapes`` (default: the course's sweep, :func:`course_sweep_shapes`; with none, on any non-square shape), with
    the plan's pick. A run that timed other shapes only (a check of the plan's model, say) is not the sweep.

    ``records``: :func:`hgemm_course.measurement.records.load_records` output (read from results/ when None).
    Returns ``{'shapes': [(M, N, K)], 'pct': {rung: [%]}, 'planned': [rung], 'planned_pct': [%] (gemm()'s own
    launches where the run timed ``plan``, else the planned rung's), 'plan_measured': [bool],
    'geomean_planned', 'min_planned' (both over the non-square shapes), 'file', 'gpu', 'date',
    'latest_plan': None, or, where a later run timed gemm()'s plan (``bench plan``) at every shape of the sweep, the
    newest such run: {'file', 'date', 'pct': [% or None per shape], 'geomean', 'min'} (the last two over the
    sweep's non-square shapes, 'baseline': what its % are of)}``, with 'baseline' what the sweep run's % are of
    (:func:`hgemm_course.measurement.vendors.baseline_label`).
    """
    import math

    from ..measurement.vendors import baseline_label
    from ..library.plan import plan
    from ..measurement.records import load_records
    from ..sim.waves import UNITS

    records = load_records(latest_only=False) if records is None else records
    wanted = course_sweep_shapes() if shapes is None else list(shapes)
    by_file: dict[str, dict] = {}
    for r in records:
        by_file.setdefault(r["file"], {})[(r["rung"], r["M"], r["N"], r["K"])] = r

    def covers(recs) -> bool:
        if wanted:
            return all((rung, *s) in recs for rung in rungs for s in wanted)
        return all(any(k[0] == rung and not k[1] == k[2] == k[3] for k in recs) for rung in rungs)

    complete = {f: recs for f, recs in by_file.items() if covers(recs)}
    if not complete:
        raise ValueError(f"No recorded run times rungs {', '.join(rungs)} together: run "
                         f"`hgemm-course bench {' '.join(rungs)} --shapes benchmarks/shapes_nonsquare.txt` on an H200.")
    file = max(complete)                      # run files are named by date and time
    recs = complete[file]
    shapes = sorted({k[1:] for k in recs if all((rung, *k[1:]) in recs for rung in rungs)},
                    key=lambda s: (s[0] * s[1] * s[2], s))
    pct = {rung: [recs[(rung, *s)]["pct_cublas"] for s in shapes] for rung in rungs}
    planned = [plan(*s, units=UNITS).rung for s in shapes]     # recorded runs are the H200's
    # gemm()'s own launches where the run timed them (`bench plan`), else the planned rung's default launch
    measured = [("plan", *s) in recs for s in shapes]
    planned_pct = [recs[("plan", *s) if m else (rung, *s)]["pct_cublas"]
                   for rung, s, m in zip(planned, shapes, measured)]
    any_rec = next(iter(recs.values()))

    def nonsquare(values):
        return [p for p, (M, N, K) in zip(values, shapes) if not M == N == K] or values

    def geomean(values):
        return math.exp(sum(math.log(p) for p in values) / len(values))

    scored = wanted or shapes                 # the sweep's shapes, which a later run of the plan must all have
    later = [f for f, r in by_file.items() if f > file and all(("plan", *s) in r for s in scored)]
    latest_plan = None
    if later:
        newest = by_file[max(later)]
        plan_pct = [newest[("plan", *s)]["pct_cublas"] if ("plan", *s) in newest else None for s in shapes]
        on_sweep = [newest[("plan", *s)]["pct_cublas"] for s in scored if not s[0] == s[1] == s[2]]
        latest_plan = {"file": max(later), "date": next(iter(newest.values())).get("date", "?"), "pct": plan_pct,
                       "geomean": geomean(on_sweep), "min": min(on_sweep),
                       "baseline": baseline_label(newest[("plan", *s)] for s in shapes if ("plan", *s) in newest)}
    return {"shapes": shapes, "pct": pct, "planned": planned, "planned_pct": planned_pct, "plan_measured": measured,
            "geomean_planned": geomean(nonsquare(planned_pct)), "min_planned": min(nonsquare(planned_pct)),
            "file": file, "gpu": any_rec.get("gpu", "?"), "date": any_rec.get("date", "?"), "latest_plan": latest_plan,
            "baseline": baseline_label(recs[(rung, *s)] for rung in (*rungs, "plan") for s in shapes
                                       if (rung, *s) in recs)}


def shape_sweep_figure(*, records=None) -> Figure:
    """Bars of rung 11 and rung 12 per shape, the plan's choice outlined, the vendor baseline at 100%."""
    data = shape_sweep_data(records)
    shapes = data["shapes"]
    fig = Figure(figsize=(14, 5.5), layout="constrained")
    ax = fig.add_subplot()
    width = 0.38
    for i, (rung, color) in enumerate(zip(data["pct"], ("tab:gray", "tab:blue"))):
        xs = [x + (i - 0.5) * width for x in range(len(shapes))]
        bars = ax.bar(xs, data["pct"][rung], width, color=color, label=f"rung {rung}")
        for bar, planned in zip(bars, data["planned"]):
            if planned == rung:
                bar.set_edgecolor("black")
                bar.set_linewidth(2)
    if any(data["plan_measured"]):
        ax.scatter([x for x, m in enumerate(data["plan_measured"]) if m],
                   [p for p, m in zip(data["planned_pct"], data["plan_measured"]) if m],
                   marker="D", color="black", zorder=3, label="gemm() (the plan), timed in the same run")
    if (latest := data["latest_plan"]):
        timed = [(x, p) for x, p in enumerate(latest["pct"]) if p is not None]
        ax.scatter([x for x, _ in timed], [p for _, p in timed], marker="*", s=110, color="tab:orange",
                   edgecolor="black", zorder=4, label=f"gemm() timed on its own ({latest['file']}): geometric mean "
                                 f"{latest['geomean']:.1f}%, lowest {latest['min']:.1f}% of {latest['baseline']}")
    ax.axhline(100, color="black", linestyle="--", linewidth=1, label=f"{data['baseline']}, paired launches")
    ax.set_xticks(range(len(shapes)), [f"{M}x{N}x{K}" for M, N, K in shapes], rotation=45, ha="right")
    ax.set_ylabel(f"% of {data['baseline']}\n(median of paired launches)")
    ax.set_ylim(0, max(110, max(max(v) for v in data["pct"].values()) + 5))
    fig.legend(loc="outside lower center", ncols=3, title="outlined: the plan's choice")
    fig.suptitle(f"Rungs 11 and 12 on the sweep, recorded on the {data['gpu']} ({data['file']})\nthe plan's choice: "
                 f"geometric mean {data['geomean_planned']:.1f}% of {data['baseline']} on the non-square shapes, lowest "
                 f"{data['min_planned']:.1f}%")
    return fig
