"""Shape sweep figure: rung 11 against rung 12 on every recorded shape, with the plan's choice marked."""
from __future__ import annotations

from matplotlib.figure import Figure


def course_sweep_shapes() -> list[tuple[int, int, int]]:
    """The shapes of the course's sweep, ``benchmarks/shapes_nonsquare.txt`` (none in an installed package without
    the repository)."""
    from ..cli import _parse_shapes
    from ..paths import REPO_ROOT

    path = None if REPO_ROOT is None else REPO_ROOT / "benchmarks" / "shapes_nonsquare.txt"
    return _parse_shapes(str(path)) if path is not None and path.is_file() else []


def shape_sweep_data(records=None, *, rungs=("11", "12"), shapes=None):
    """% of cuBLAS of ``rungs`` per shape from the newest recorded run that timed them all on every shape of
    ``shapes`` (default: the course's sweep, :func:`course_sweep_shapes`; with none, on any non-square shape), with
    the plan's pick. A run that timed other shapes only (a check of the plan's model, say) is not the sweep.

    ``records``: :func:`hgemm_course.results.load_records` output (read from results/ when None).
    Returns ``{'shapes': [(M, N, K)], 'pct': {rung: [%]}, 'planned': [rung], 'planned_pct': [%] (gemm()'s own
    launches where the run timed ``plan``, else the planned rung's), 'plan_measured': [bool],
    'geomean_planned', 'min_planned' (both over the non-square shapes), 'file', 'gpu', 'date'}``.
    """
    import math

    from ..plan import plan
    from ..results import load_records
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
    nonsquare = [p for p, (M, N, K) in zip(planned_pct, shapes) if not M == N == K] or planned_pct
    return {"shapes": shapes, "pct": pct, "planned": planned, "planned_pct": planned_pct, "plan_measured": measured,
            "geomean_planned": math.exp(sum(math.log(p) for p in nonsquare) / len(nonsquare)),
            "min_planned": min(nonsquare), "file": file, "gpu": any_rec.get("gpu", "?"),
            "date": any_rec.get("date", "?")}


def shape_sweep_figure(*, records=None) -> Figure:
    """Bars of rung 11 and rung 12 per shape, the plan's choice outlined, cuBLAS at 100%."""
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
                   marker="D", color="black", zorder=3, label="gemm() (the plan), timed itself")
    ax.axhline(100, color="black", linestyle="--", linewidth=1, label="cuBLAS, paired launches")
    ax.set_xticks(range(len(shapes)), [f"{M}x{N}x{K}" for M, N, K in shapes], rotation=45, ha="right")
    ax.set_ylabel("% of cuBLAS (median of paired launches)")
    ax.set_ylim(0, max(110, max(max(v) for v in data["pct"].values()) + 5))
    ax.legend(loc="lower right", title="outlined: the plan's choice")
    fig.suptitle(f"The plan's choice on the non-square shapes: geometric mean {data['geomean_planned']:.1f}% of cuBLAS, lowest "
                 f"{data['min_planned']:.1f}% (recorded on the {data['gpu']}, {str(data['date'])[:10]})")
    return fig
