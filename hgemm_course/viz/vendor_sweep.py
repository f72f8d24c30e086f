"""The small-and-skinny sweep: gemm() against the faster vendor library at every shape users bring."""
from __future__ import annotations

import math

from matplotlib.figure import Figure

HIGH_PCT = 95.0             # the title counts the shapes at this % of the vendor or more


def vendor_sweep_data(records=None, *, shapes=None) -> dict:
    """gemm()'s % of the faster vendor library (cuBLAS through cupy.matmul, or cuBLASLt through torch.matmul,
    whichever was faster at the shape, timed against each other first) per shape, from the newest recorded
    ``bench plan`` run that timed every shape of ``shapes`` (default: benchmarks/shapes_small_skinny.txt,
    :func:`hgemm_course.course.small_skinny.sweep_shapes`).

    ``records``: flat bench records, each with its run's ``file`` (read from results/ when None, with each run's
    ``gpu``, ``date`` and ``l2_bytes``). The % is the median over pairs of the vendor's time over gemm()'s
    (``pct_cublas_pairwise``, which despite its name is of the vendor the record names; the ratio of medians where a
    record lacks it). Returns ``{'file', 'gpu', 'date', 'shapes': [(M, N, K)] grouped by kind in
    :data:`~hgemm_course.course.small_skinny.KINDS` order, 'kinds', 'pct', 'vendor' (the baseline's name per shape),
    'ms', 'vendor_ms', 'host_us', 'vendor_host_us', 'cycles', 'clock_ghz' (per shape, None where not recorded),
    'records' (the run's records, in that order), 'vendors' (the baselines' names, in order of first use),
    'geomean', 'min', 'min_shape', 'at_least_high' (shapes at HIGH_PCT or more)}``. No run that covers the shapes
    is a ValueError naming the command that records one.
    """
    from ..course.small_skinny import KINDS, SHAPES_FILE, shape_kind, sweep_shapes

    records = _recorded() if records is None else records
    wanted = sweep_shapes() if shapes is None else [tuple(s) for s in shapes]
    by_file: dict[str, dict] = {}
    for r in records:
        if r["rung"] == "plan":
            by_file.setdefault(r["file"], {})[(r["M"], r["N"], r["K"])] = r
    complete = [f for f, recs in by_file.items() if wanted and all(s in recs for s in wanted)]
    if not complete:
        raise ValueError(f"No recorded run times gemm() at every shape of {SHAPES_FILE}: run `hgemm-course bench plan "
                         f"--shapes {SHAPES_FILE} --record` on an H200.")
    file = max(complete)                        # run files are named by date and time
    shapes = sorted(wanted, key=lambda s: KINDS.index(shape_kind(*s)))      # stable: the file's order within a kind
    run = [by_file[file][s] for s in shapes]
    pct = [r["pct_cublas_pairwise"] if r.get("pct_cublas_pairwise") is not None else r["pct_cublas"] for r in run]
    lowest = min(range(len(pct)), key=pct.__getitem__)
    vendor = [r.get("vendor") or "cuBLAS (cupy.matmul)" for r in run]
    return {"file": file, "gpu": run[0].get("gpu", "?"), "date": run[0].get("date", "?"), "shapes": shapes,
            "kinds": [shape_kind(*s) for s in shapes], "pct": pct, "vendor": vendor,
            "ms": [r["ms"] for r in run], "vendor_ms": [r["cublas_ms"] for r in run],
            "host_us": [r.get("host_us") for r in run], "vendor_host_us": [r.get("vendor_host_us") for r in run],
            "cycles": [r.get("cycles") for r in run], "clock_ghz": [r.get("clock_ghz") for r in run],
            "records": run, "vendors": list(dict.fromkeys(vendor)),
            "geomean": math.exp(sum(math.log(p) for p in pct) / len(pct)), "min": pct[lowest],
            "min_shape": shapes[lowest], "at_least_high": sum(p >= HIGH_PCT for p in pct)}


def _recorded() -> list[dict]:
    """Every recorded bench record, with its run's file, GPU, date and L2 size."""
    from ..measurement.records import load_runs

    return [{"gpu": data["provenance"].get("gpu"), "date": data["provenance"]["date"],
             "l2_bytes": data["provenance"].get("l2_bytes"), **r, "file": path.name}
            for path, data in load_runs() for r in data["records"]]


def vendor_sweep_figure(*, records=None) -> Figure:
    """gemm() as % of the faster vendor library on the small-and-skinny shapes, grouped by kind and coloured by which
    vendor was the baseline, with the geometric mean and the lowest in the title."""
    from .styles import bar_style

    data = vendor_sweep_data(records)
    shapes, kinds = data["shapes"], data["kinds"]
    xs, x, groups = [], 0.0, []
    for i, kind in enumerate(kinds):
        if i and kind != kinds[i - 1]:
            x += 0.8                            # a gap between kinds
        if not i or kind != kinds[i - 1]:
            groups.append([kind, x, x])
        groups[-1][2] = x
        xs.append(x)
        x += 1
    fig = Figure(figsize=(15, 6), layout="constrained")
    ax = fig.add_subplot()
    styles = {name: bar_style(i) for i, name in enumerate(data["vendors"])}
    for name, style in styles.items():
        picked = [i for i, v in enumerate(data["vendor"]) if v == name]
        ax.bar([xs[i] for i in picked], [data["pct"][i] for i in picked], 0.8, color=style["color"],
               hatch=style["hatch"], edgecolor="black", linewidth=0.5, label=f"baseline: {name}")
    ax.axhline(100, color="black", linestyle="--", linewidth=1, label="the faster vendor library (100%)")
    top = max(110.0, max(data["pct"]) + 8)
    for kind, first, last in groups:
        ax.text((first + last) / 2, top - 3, kind, ha="center", va="top", fontsize=9, fontweight="bold")
    ax.set_xticks(xs, [f"{M}x{N}x{K}" for M, N, K in shapes], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("gemm(out=) as % of the faster vendor library\n(median over paired launches)")
    ax.set_ylim(0, top)
    ax.set_xlim(-0.8, xs[-1] + 0.8)
    fig.legend(loc="outside lower center", ncols=3)
    M, N, K = data["min_shape"]
    fig.suptitle(f"gemm() reaches {data['geomean']:.1f}% of the faster vendor library (geometric mean over "
                 f"{len(shapes)} small and skinny shapes), {data['at_least_high']} of them at {HIGH_PCT:.0f}% or more; "
                 f"lowest {data['min']:.1f}% at {M}x{N}x{K}\nrecorded on the {data['gpu']} ({data['file']})")
    return fig
