"""The site's results page: every recorded H200 run the course draws on, with its provenance, each section from its
template in ``book_templates/pages/``. Nothing is measured here: every figure is read from ``results/`` as the site
is built."""
from __future__ import annotations

from pathlib import Path

from .book_site import CLOCKS, LADDER, ROOFLINE, SHAPE_SWEEP
from .book_pages import escaped, fenced, figure_block, render


def provenance_table(runs: list[tuple[Path, dict]], keys: tuple[str, ...]) -> str:
    """The provenance of recorded runs, one row per run file, with the fields among ``keys`` any run records."""
    keys = [key for key in keys if any(data["provenance"].get(key) for _, data in runs)]
    rows = ["| file | " + " | ".join(key.replace("_", " ") for key in keys) + " |", "|---" * (1 + len(keys)) + "|"]
    for path, data in runs:
        cells = [escaped(data["provenance"].get(key) or "-") for key in keys]
        rows.append(f"| `results/{path.name}` | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


BENCH_PROVENANCE = ("gpu", "date", "driver_release", "cuda_runtime", "nvrtc", "python")


MODEL_PROVENANCE = ("gpu", "measured_at", "driver_release", "cuda_runtime", "ncu", "script", "ncu_csv")


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def shape_name(shape: tuple[int, int, int]) -> str:
    M, N, K = shape
    return f"{M}^3" if M == N == K else f"{M}x{N}x{K}"


def ladder_section() -> str:
    from ..measurement.records import RECORDED_GPU, ladder_markdown, load_records, load_runs

    files = {r["file"] for r in load_records(gpu=RECORDED_GPU)}
    runs = [(path, data) for path, data in load_runs(gpu=RECORDED_GPU) if path.name in files]
    from ..viz import ladder_grid_data

    figure = figure_block(LADDER, "Each rung's % of its vendor baseline "
                                  f"({escaped(ladder_grid_data()['baseline'])}), timed in pairs, at every recorded "
                                  "square size: the median over the recorded runs, the whisker their p10-p90.")
    return render("results_ladder.md", gpu=RECORDED_GPU, figure=figure, table=ladder_markdown(),
                  provenance=provenance_table(runs, BENCH_PROVENANCE))


def sweep_section() -> str:
    """Rungs 11 and 12 and gemm()'s plan over the course's sweep of shapes: the figure and the numbers behind it."""
    from ..library.plan import plan
    from .plan_tables import UNITS, launch_text
    from ..viz import shape_sweep_data

    data = shape_sweep_data()
    latest = data["latest_plan"]
    header = "| shape | rung 11 | rung 12 | the plan runs | gemm() |" + (" gemm(), latest run |" if latest else "")
    rows = [header, "|---" * (6 if latest else 5) + "|"]
    for i, shape in enumerate(data["shapes"]):
        planned = percent(data["planned_pct"][i]) + ("" if data["plan_measured"][i] else " (its rung's own launch)")
        cells = [shape_name(shape), percent(data["pct"]["11"][i]), percent(data["pct"]["12"][i]),
                 f"`{launch_text(plan(*shape, units=UNITS))}`", planned] + ([percent(latest["pct"][i])] if latest else [])
        rows.append("| " + " | ".join(cells) + " |")
    summary = (f"Over the non-square shapes, gemm() read a geometric mean of {percent(data['geomean_planned'])} of "
               f"{escaped(data['baseline'])}, lowest {percent(data['min_planned'])}, in `results/{data['file']}`")
    if latest:
        summary += (f"; in the latest run of `hgemm-course bench plan` over the sweep, `results/{latest['file']}`, "
                    f"{percent(latest['geomean'])}, lowest {percent(latest['min'])}, of {escaped(latest['baseline'])}")
    figure = figure_block(SHAPE_SWEEP, "Rungs 11 and 12 per shape, the plan's choice outlined, stars for gemm() in "
                                       "the latest run.")
    return render("results_sweep.md", figure=figure, table="\n".join(rows), summary=summary)


def clocks_section() -> str:
    """The clocks of one recorded paired run, pair by pair: what pairing does not hold equal."""
    from ..viz import clocks_data

    data = clocks_data()
    figure = figure_block(CLOCKS, f"Rung {data['rung']} and {data['baseline']} at {data['size']}^3 in `results/{data['file']}`, "
                                  "pair by pair: each launch's SM clock as its cycles (Nsight Compute, "
                                  f"`results/profiles/`) over its time, NVML's reading dotted.")
    return render("results_clocks.md", lowest=percent(min(data["pct"])), highest=percent(max(data["pct"])),
                  baseline=data["baseline"], cycles=percent(data["pct_cycles"]), figure=figure)


def cycles_section() -> str:
    """Each profiled rung's SM cycles against cuBLAS's at the same shape, as ``hgemm-course profiles`` prints them."""
    from ..measurement.profile import CUBLAS, cycle_ratios, load_profiles

    shapes = sorted({(r["M"], r["N"], r["K"]) for r in load_profiles() if r["rung"] == CUBLAS},
                    key=lambda s: (s[0] * s[1] * s[2], s))
    by_shape = {shape: {r["rung"]: r["pct_cublas_cycles"] for r in cycle_ratios(*shape)} for shape in shapes}
    by_shape = {shape: row for shape, row in by_shape.items() if row}
    rungs = sorted({rung for row in by_shape.values() for rung in row})
    if not rungs:
        return ""
    rows = ["| shape | " + " | ".join(f"rung {rung}" for rung in rungs) + " |", "|---" * (1 + len(rungs)) + "|"]
    rows += ["| " + " | ".join([shape_name(shape)] + [percent(row.get(rung)) for rung in rungs]) + " |"
             for shape, row in by_shape.items()]
    return render("results_cycles.md", table="\n".join(rows))


def ceilings_section() -> str:
    from ..measurement.ceilings import format_ceilings
    from ..measurement.roofline import recorded_ceilings

    record = recorded_ceilings()
    if record is None:
        return ""
    figure = figure_block(ROOFLINE, "Every recorded square run on the roofline of the measured ceilings.")
    return render("results_ceilings.md", gpu=record["gpu"], file=record["file"], date=record["date"][:10],
                  chain=fenced(format_ceilings(record)), figure=figure)


def model_section() -> str:
    """Each recorded comparison of a simulator with Nsight Compute, as ``python3 -m hgemm_course.measurement.model_checks``
    printed it, with the run's provenance."""
    from ..measurement.model_checks import Config, bank_table, l2_table
    from ..measurement.records import load_runs

    blocks = []
    for path, data in load_runs(kind="model"):
        records = data["records"]
        rungs = sorted({r["config"]["rung"] for r in records if "rung" in r["config"]})
        of_rungs = f"of rung{'s' if len(rungs) > 1 else ''} {', '.join(rungs)}"
        if records and records[0]["check"] == "banks":
            configs = {r["config"]["name"]: r["config"] for r in records}
            title = f"Shared-memory banks {of_rungs}: `sim.main_loop_bank_conflicts` against ncu's counters"
            table = bank_table(records, [Config(c["name"], c["kind"], c["rung"], c["M"], c["N"], c["K"],
                                                tuple(c["super_mn"]) if c.get("super_mn") else None, c["kernel"])
                                         for c in configs.values()])
        else:
            title = f"L2 {of_rungs}: `sim.l2_model` against ncu's L2 hit rate of the SMs' reads"
            table = l2_table(records)
        note = data["provenance"].get("note")
        blocks.append(f"### {title}\n\n{provenance_table([(path, data)], MODEL_PROVENANCE)}\n"
                      + (f"{escaped(note)}\n\n" if note else "") + fenced(table))
    return render("results_models.md", blocks="\n".join(blocks))


def results_page() -> str:
    return render("results.md", ladder=ladder_section(), sweep=sweep_section(), clocks=clocks_section(),
                  cycles=cycles_section(), ceilings=ceilings_section(), models=model_section())
