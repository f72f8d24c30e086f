"""The few calls every chapter notebook makes: run a rung here, or show what the H200 recorded.

Without a GPU nothing is measured: the figures shown are read from results/ and
labelled with their file and date, never presented as if they had just run.
"""
from __future__ import annotations

from .device import has_gpu
from .harness import bench, format_table, verify
from .ladder import get
from .results import load_records


def show_recorded(*rungs: str, sizes=None) -> list[dict]:
    """Print the newest recorded benchmark rows of these rungs, labelled with file and date; returns them."""
    rows = [r for r in load_records() if r["rung"] in rungs and (sizes is None or r["M"] in sizes)]
    for name, date, gpu in sorted({(r["file"], r["date"][:10], r["gpu"]) for r in rows}):
        print(f"RECORDED on the {gpu} ({name}, {date}):")
    if rows:
        print(format_table(rows))
    missing = [r for r in rungs if r not in {row["rung"] for row in rows}]
    if missing:
        print(f"No recorded result for rung {', '.join(missing)} yet: `hgemm-course bench {' '.join(missing)}` "
              "on a GPU records one.")
    return rows


def run_or_show(rung_ids, shapes, sizes) -> None:
    """On a GPU: verify the last rung on shapes with tails, then time the rungs against cuBLAS.
    Without one: compile the last rung for its target (its resource report), and show the recorded figures."""
    rung = get(rung_ids[-1])
    if has_gpu():
        for shape in shapes:
            print(verify(rung.id, *shape).raise_if_failed().summary())
        print("measured now:")
        print(format_table(bench(rung_ids, sizes)))
        return
    from .build import compile_cuda

    module = compile_cuda(rung.source, name_expressions=rung.name_expressions, arch=rung.arch)
    res = module.resources_of(rung.name_expressions[0])
    print(f"no GPU here: {rung.name_expressions[0]} compiles for {rung.arch}: {res.registers} registers, "
          f"{rung.extra['smem_bytes']} bytes of dynamic shared memory, {res.spills} bytes spilled; not run.")
    show_recorded(*rung_ids, sizes=sizes)


def model_vs_hardware(check: str) -> list[dict]:
    """Print the newest recorded model-vs-ncu comparison (``check`` is "banks" or "l2"); returns its records."""
    from .results import load_runs

    runs = load_runs(kind=f"model_{check}")
    if not runs:
        print(f"No recorded {check} comparison yet: scripts/h200_model_checks.sh on the H200 records one.")
        return []
    path, data = runs[-1]
    prov = data["provenance"]
    print(f"RECORDED on the {prov['gpu']} ({path.name}, measured {str(prov.get('measured_at', prov['date']))[:10]}):")
    print(f"{'configuration':<26} {'quantity':<34} {'model':>12} {'ncu':>12}  verdict")
    for r in data["records"]:
        verdict = "agree" if r["agree"] else "DISAGREE"
        if isinstance(r["model"], list):        # a ranking, not a number
            print(f"{r['quantity']}: model {' > '.join(r['model'])}; ncu {' > '.join(r['hardware'])}: {verdict}")
            continue
        print(f"{r['config']['name']:<26} {r['quantity'][:34]:<34} {r['model']:>12,.6g} {r['hardware']:>12,.6g}  {verdict}")
    return data["records"]


def show_limits() -> dict | None:
    """Print the newest recorded chapter-08 experiments (``hgemm-course limits`` on a GPU)."""
    from .limits import format_limits
    from .results import load_runs

    runs = load_runs(kind="limits")
    if not runs:
        print("No recorded chapter-08 run yet: `hgemm-course limits` on the H200 records one.")
        return None
    path, data = runs[-1]
    print(f"RECORDED on the {data['provenance']['gpu']} ({path.name}, {data['provenance']['date'][:10]}):")
    print(format_limits(data["records"][0]))
    return data["records"][0]


def show_tuning(rung: str, *, also: tuple[str, ...] = (), folder=None) -> list[dict]:
    """Print the variants of ``rung`` (and of the rungs in ``also``) from the newest tuning run that
    measured it (``results/tuning/*.json``), with cuBLAS from the same process, labelled as recorded
    during tuning with file and date; returns the rows printed (cuBLAS excluded)."""
    import json
    from pathlib import Path

    from .paths import results_dir

    folder = Path(folder) if folder is not None else results_dir() / "tuning"
    runs = [(path, json.loads(path.read_text())) for path in sorted(folder.glob("*.json"))]
    runs = [(p, d) for p, d in runs if "variants" in d and any(v["rung"] == rung for v in d["variants"])]
    if not runs:
        print(f"No recorded tuning run of rung {rung} yet: the tuning scripts under scripts/ record one on a GPU.")
        return []
    path, data = max(runs, key=lambda pd: (pd[1]["provenance"]["date"], pd[0].name))
    prov = data["provenance"]
    sizes = [str(s) for s in prov["sizes"]]
    print(f"RECORDED during tuning on the {prov['gpu']} ({path.name}, {prov['date'][:10]}): "
          f"{prov.get('script', 'a tuning script')}, medians of {prov['repeats']} launches, cuBLAS in the same process")
    print(f"{'rung':<5}{'variant':<34}{'regs':>5}{'CTA/SM':>7}" + "".join(f"{n + '^3 TF/s (%cuBLAS)':>24}" for n in sizes))
    print(f"{'':<5}{'cuBLAS (cupy.matmul fp16)':<34}{'':>12}" + "".join(f"{data['cublas'][n]['tflops']:>24.1f}" for n in sizes))
    rows = []
    for v in data["variants"]:
        if v["rung"] != rung and v["rung"] not in also:
            continue
        row = {"rung": v["rung"], "label": v["label"], "name": v["name"], "registers": v["registers"],
               "ctas_per_sm": v["ctas_per_sm"], "passed": v["passed"], "file": path.name, "date": prov["date"],
               "gpu": prov["gpu"], "tflops": {int(n): t["tflops"] for n, t in v["timing"].items()},
               "pct_cublas": {int(n): t["pct_cublas"] for n, t in v["timing"].items()}}
        rows.append(row)
        label = v["label"]
        if label == "default" and "<" in v["name"]:       # the template arguments the default had then
            label += " " + v["name"][v["name"].index("<"):].replace(" ", "")
        print(f"{v['rung']:<5}{label[:33]:<34}{v['registers']:>5}{v['ctas_per_sm']:>7}"
              + "".join(f"{row['tflops'][int(n)]:>15.1f} ({row['pct_cublas'][int(n)]:5.1f}%)"
                        if int(n) in row["tflops"] else f"{'-' if v['passed'] else 'FAILED verification':>24}"
                        for n in sizes))
    sass = data.get(f"sass_{rung}_default")
    if sass:
        print(f"SASS of rung {rung}'s default: " + ", ".join(f"{op} {count}" for op, count in sass.items()))
    return rows
