"""Recorded tuning sweeps of a rung's configurations: ``hgemm-course tune``'s runs and, for rungs it has not swept, the
tuning scripts' runs it replaced (:func:`tuning_runs`, their rows :func:`sweep_rows` and :func:`script_rows`, printed
by :func:`show_tuning`); and two configurations of one sweep judged against each other (:func:`tune_comparison`,
printed by :func:`tune_verdicts`).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..measurement import vendors, verdict


def tuning_runs(rung: str, *, also: tuple[str, ...] = (), folder=None) -> dict:
    """The newest recorded sweep of ``rung``, then of each rung in ``also``: ``hgemm-course tune``'s runs
    (``tune_*.json`` under ``folder``, default results/), as ``sweeps`` [(path, data)]. The rungs with no such run yet
    (``unswept``) are read from the tuning scripts that came before ``tune`` (``folder``/tuning/*.json): ``scripts``
    is (path, data) of the newest of those runs that measured the first such rung (None without one, or without an
    unswept rung)."""
    from ..library.paths import results_dir
    from ..measurement.records import load_runs

    folder = Path(folder) if folder is not None else results_dir()
    runs = load_runs(folder, kind="tune")
    sweeps, unswept = [], []
    for r in (rung, *also):
        found = [(path, data) for path, data in runs if data["provenance"].get("rung") == r]
        if found:
            sweeps.append(found[-1])
        else:
            unswept.append(r)
    scripts = None
    if unswept:
        runs = [(path, json.loads(path.read_text())) for path in sorted((folder / "tuning").glob("*.json"))]
        runs = [(p, d) for p, d in runs if "variants" in d and any(v["rung"] == unswept[0] for v in d["variants"])]
        scripts = max(runs, key=lambda pd: (pd[1]["provenance"]["date"], pd[0].name)) if runs else None
    return {"sweeps": sweeps, "unswept": unswept, "scripts": scripts}


def sweep_rows(path: Path, data: dict) -> list[dict]:
    """One recorded ``hgemm-course tune`` run's configurations: ``{"rung", "label", "config", "passed", "file", "date",
    "gpu", "tflops", "pct_cublas"}`` each, the last two by (M, N, K)."""
    prov, records = data["provenance"], data["records"]
    failed = {label for label, _ in prov.get("failed", [])}
    rows: dict[str, dict] = {}
    for r in records:
        row = rows.setdefault(r["label"], {"rung": prov["rung"], "label": r["label"], "config": r["config"],
                                           "passed": r["label"] not in failed, "file": path.name,
                                           "date": prov["date"], "gpu": prov["gpu"], "tflops": {}, "pct_cublas": {}})
        row["tflops"][r["M"], r["N"], r["K"]] = r["tflops"]
        row["pct_cublas"][r["M"], r["N"], r["K"]] = r["pct_cublas"]
    return list(rows.values())


def format_sweep(path: Path, data: dict) -> str:
    """One recorded ``hgemm-course tune`` run: its table, best and default, failures and skips."""
    from ..measurement.tune import TuneConfig, format_tune_table

    prov, records = data["provenance"], data["records"]
    lines = [f"RECORDED by `hgemm-course tune {prov['rung']}` on the {prov['gpu']} ({path.name}, {prov['date'][:10]}): "
             f"% of {vendors.baseline_label(records, per_shape=True)} timed in the same process, best geometric mean "
             "first", format_tune_table(records)]
    if prov.get("best"):
        lines.append(f"best: {TuneConfig(**prov['best']).label}; the rung's default then: {prov['default']}")
    lines += [f"FAILED verification, not timed: {label}: {summary}" for label, summary in prov.get("failed", [])]
    if prov.get("skipped"):
        lines.append(f"{len(prov['skipped'])} more configurations of the sweep skipped before any launch, each with its "
                     "reason in the file's provenance")
    return "\n".join(lines)


def script_rows(path: Path, data: dict, rungs) -> list[dict]:
    """The variants of ``rungs`` in a run of the tuning scripts that ``hgemm-course tune`` replaced, in the run's
    order: ``{"rung", "label", "name", "registers", "ctas_per_sm", "passed", "file", "date", "gpu", "tflops",
    "pct_cublas"}`` each, the last two by (n, n, n)."""
    prov = data["provenance"]
    return [{"rung": v["rung"], "label": v["label"], "name": v["name"], "registers": v["registers"],
             "ctas_per_sm": v["ctas_per_sm"], "passed": v["passed"], "file": path.name, "date": prov["date"],
             "gpu": prov["gpu"], "tflops": {(int(n),) * 3: t["tflops"] for n, t in v["timing"].items()},
             "pct_cublas": {(int(n),) * 3: t["pct_cublas"] for n, t in v["timing"].items()}}
            for v in data["variants"] if v["rung"] in rungs]


def format_script_run(path: Path, data: dict, rows: list[dict]) -> str:
    """:func:`script_rows` under the run's line, with the vendor baseline (cuBLAS through cupy.matmul in those
    scripts' records) from the same process."""
    prov = data["provenance"]
    sizes = [str(s) for s in prov["sizes"]]
    baseline = vendors.baseline_label(t for v in data["variants"] for t in v["timing"].values())
    lines = [f"RECORDED during tuning on the {prov['gpu']} ({path.name}, {prov['date'][:10]}): "
             f"{prov['script']} (since replaced by `hgemm-course tune`), medians of {prov['repeats']} launches, "
             f"% of {baseline} timed in the same process",
             f"{'rung':<5}{'variant':<34}{'regs':>5}{'CTA/SM':>7}" + "".join(f"{n + '^3 TF/s (% vendor)':>24}" for n in sizes),
             f"{'':<5}{baseline + ', fp16':<34}{'':>12}" + "".join(f"{data['cublas'][n]['tflops']:>24.1f}" for n in sizes)]
    for row in rows:
        label = row["label"]
        if label == "default" and "<" in row["name"]:       # the template arguments the default had then
            label += " " + row["name"][row["name"].index("<"):].replace(" ", "")
        lines.append(f"{row['rung']:<5}{label[:33]:<34}{row['registers']:>5}{row['ctas_per_sm']:>7}"
                     + "".join(f"{row['tflops'][(int(n),) * 3]:>15.1f} ({row['pct_cublas'][(int(n),) * 3]:5.1f}%)"
                               if (int(n),) * 3 in row["tflops"]
                               else f"{'-' if row['passed'] else 'FAILED verification':>24}" for n in sizes))
    return "\n".join(lines)


def show_tuning(rung: str, *, also: tuple[str, ...] = (), folder=None) -> list[dict]:
    """Print :func:`tuning_runs`: each sweep (:func:`format_sweep`), % of the vendor baseline timed in the same
    process, labelled with its file and date; then the scripts' run of the unswept rungs (:func:`format_script_run`),
    labelled with the script. Returns one row per configuration printed."""
    found = tuning_runs(rung, also=also, folder=folder)
    rows = []
    for path, data in found["sweeps"]:
        print(format_sweep(path, data))
        rows += sweep_rows(path, data)
    if found["unswept"] and found["scripts"] is None:
        first = found["unswept"][0]
        print(f"No recorded tuning run of rung {first}: `hgemm-course tune {first} --record` on the H200 records one.")
    elif found["unswept"]:
        path, data = found["scripts"]
        shown = script_rows(path, data, found["unswept"])
        print(format_script_run(path, data, shown))
        rows += shown
    return rows


# ---------------------------------------------------------------- two configurations of one tuning sweep

def tune_comparison(rung: str, label_a: str, label_b: str, *, path=None, folder=None) -> dict | None:
    """Verdicts on two configurations of a recorded ``hgemm-course tune`` run (the newest of ``rung``, or the file
    ``path``), one per shape both were timed at. Where the run alternated each configuration launch by launch with
    the vendor baseline, each launch's time over its paired baseline launch's is what is compared, so that the clock
    drift they shared cancels; otherwise each launch's time. Returns ``{"path", "provenance", "verdicts"}``, or None
    without a tune run of ``rung``."""
    from ..measurement.records import load_runs

    if path is None:
        runs = [(p, d) for p, d in load_runs(folder, kind="tune") if d["provenance"].get("rung") == rung]
        if not runs:
            return None
        path, data = runs[-1]
    else:
        path = Path(path)
        data = json.loads(path.read_text())
    by = {(r["label"], r["M"], r["N"], r["K"]): r for r in data["records"]}
    found = []
    for (label, M, N, K), ra in by.items():
        rb = by.get((label_b, M, N, K))
        if label != label_a or rb is None:
            continue
        paired = ra.get("paired") and rb.get("paired")
        if paired:
            va = [x / y for x, y in zip(ra["samples_ms"], ra["cublas_samples_ms"])]
            vb = [x / y for x, y in zip(rb["samples_ms"], rb["cublas_samples_ms"])]
            what = f"time over the paired {vendors.baseline_label([ra, rb])} launch's at {M}x{N}x{K}"
        else:
            va, vb = ra["samples_ms"], rb["samples_ms"]
            what = f"time at {M}x{N}x{K}, each configuration in its own turn"
        found.append(verdict.compare(label_a, va, label_b, vb, what))
    return {"path": path, "provenance": data["provenance"], "verdicts": found}


def tune_verdicts(rung: str, label_a: str, label_b: str, *, path=None, folder=None) -> list:
    """Print :func:`tune_comparison` under its run's line; returns the verdicts."""
    compared = tune_comparison(rung, label_a, label_b, path=path, folder=folder)
    if compared is None:
        print(f"No recorded tune run of rung {rung}: `hgemm-course tune {rung}` on a GPU records one.")
        return []
    prov = compared["provenance"]
    print(f"RECORDED on the {prov['gpu']} ({compared['path'].name}, {prov['date'][:10]}): {label_b} against {label_a}")
    for judged in compared["verdicts"]:
        print(judged)
    return compared["verdicts"]
