"""The few calls every chapter notebook makes: run a rung here, or show what the H200 recorded.

On a GPU, what it can run is measured, written as a run file (:func:`hgemm_course.measurement.records.write_run`) to
./hgemm-results/, and printed under "measured on <GPU>, <date>, written to <file>"; when
``python -m hgemm_course.course.notebooks`` executes the chapters on the H200 for the site (it sets
:data:`RECORD_ENV`), the runs go to the course's results/ instead (:func:`hgemm_course.measurement.records.run_folder`
with ``record``, which takes only an H200 run with complete provenance). For what the GPU cannot run (a
feature it lacks, see :mod:`hgemm_course.library.target`), one line says why, and the recorded H200 figures follow.
Without a GPU nothing is measured: the figures shown are read from results/ and labelled with their
file and date, never presented as if they had just run.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
from pathlib import Path

from ..library import target
from ..measurement import bench, timing, vendors, verdict, verification
from ..measurement.bench import format_table
from ..library.ladder import get, registry
from ..library.paths import PACKAGE_DIR, PTX_SNIPPETS_DIR, results_dir
from ..measurement.records import load_records, run_folder, write_report, write_run


# Runs from this time on queued their timed launches behind timing.StreamHold; before it, a short kernel's
# events could count the host's launch time as the kernel's (cuBLAS read 110 TFLOP/s at 1024^3).
HOLD_SINCE = "2026-12-01T17:53"


CLOCK_NOTE = ("ms and % vendor: the rung alternated launch by launch with the vendor baseline the table's last line "
              "names. Mcycles (the busiest SM's) and GHz: "
              "its timing build alternated with its plain build, whose times timed/plain compares; the clock may "
              "differ between the two stretches, since the power limit sets it by what runs.")


def show_recorded(*rungs: str, sizes=None, one_stretch: bool = False) -> list[dict]:
    """Print the newest recorded benchmark rows of these rungs from runs that held the stream (HOLD_SINCE),
    under the name and date of the run each row comes from; returns them. With ``one_stretch``, each run's table
    is :func:`format_stretch_table` (every time beside its cycles and clock from the same launches) and its
    provenance is one line under it."""
    rows = [r for r in load_records() if r["rung"] in rungs and (sizes is None or r["M"] in sizes)
            and str(r.get("date", "")) >= HOLD_SINCE]
    for name in sorted({r["file"] for r in rows}):
        run = [r for r in rows if r["file"] == name]
        if one_stretch:
            print(format_stretch_table(with_samples(run)))
            print(f"recorded on the {run[0]['gpu']}, {str(run[0]['date'])[:10]}, results/{name}")
            continue
        print(f"RECORDED on the {run[0]['gpu']} ({name}, {str(run[0]['date'])[:10]}):")
        print(format_table(run))
    if not one_stretch and any(r.get("cycles") for r in rows):
        print(CLOCK_NOTE)
    missing = [r for r in rungs if r not in {row["rung"] for row in rows}]
    if missing:
        print(f"No recorded result for rung {', '.join(missing)}: `hgemm-course bench {' '.join(missing)}` "
              "on a GPU records one.")
    return rows


# Set to 1 by hgemm_course.course.notebooks (the site's execution on the H200): what a chapter measures is recorded in results/
RECORD_ENV = "HGEMM_COURSE_RECORD"


def measurement_folder() -> Path:
    """Where a chapter's measurement is written: the course's results/ when :data:`RECORD_ENV` is 1 (an H200 run with
    complete provenance only, else a RuntimeError that says so), otherwise the learner's ./hgemm-results/."""
    return run_folder(record=os.environ.get(RECORD_ENV) == "1")


def _shown_path(path: Path) -> str:
    """A written run's path as a cell prints it: ``results/<name>`` in the course's folder, else the path itself."""
    path = Path(path)
    try:
        return f"results/{path.resolve().relative_to(results_dir().resolve()).as_posix()}"
    except ValueError:
        return str(path)


def measured_label(t: target.Target, path: Path) -> str:
    """The label of a figure measured on ``t`` and written to ``path``: its GPU (or, for another target's code run
    here with ``--as``, that target's and the GPU that ran it), the run's date and the file."""
    host = getattr(t, "host", None)
    where = t.gpu if host is None else f"{t.arch}'s code run on the {host.gpu}"
    try:
        date = json.loads(Path(path).read_text())["provenance"]["date"][:10]
    except (OSError, ValueError, KeyError, TypeError):
        date = "date unknown"
    return f"measured on {where}, {date}, written to {_shown_path(path)}"


def bench_or_show(rung_ids, sizes, *, one_stretch: bool = False) -> list[dict]:
    """On a GPU: time the rungs it runs against the vendor baseline in this process (``bench.bench``, each verified
    first), write the run (:func:`measurement_folder`) and print it under the GPU, date and file; for each rung it
    cannot run, the one line that says why (``verification.refusal_here``), then the recorded H200 figures of those rungs.
    Without a GPU: the recorded figures of all of them. Returns the rows printed, measured ones first."""
    here = target.runnable()
    if here is None:
        return show_recorded(*rung_ids, sizes=sizes, one_stretch=one_stretch)
    rungs = [get(r) for r in rung_ids]
    refused = [(rung, why) for rung in rungs if (why := verification.refusal_here(rung)) is not None]
    runs = [rung.id for rung in rungs if all(rung is not other for other, _ in refused)]
    rows = []
    if runs:
        skipped: list = []        # stays empty: bench is asked only for what runs here
        folder = measurement_folder()
        records = bench.bench(runs, sizes, skipped=skipped, progress=False)  # a chapter prints its table, no bar
        path = write_run(records, folder=folder)
        rows = [r if isinstance(r, dict) else r.as_dict() for r in records]
        if one_stretch:
            print(format_stretch_table(rows))
            print(measured_label(here, path))
        else:
            print(f"{measured_label(here, path)}:")
            print(format_table(records))
            if any(r.get("cycles") for r in rows):
                print(CLOCK_NOTE)
    for _, why in refused:
        print(why)
    if refused:
        rows += show_recorded(*(rung.id for rung, _ in refused), sizes=sizes, one_stretch=one_stretch)
    return rows


def compile_report(rung_id: str, t: target.Target | None = None) -> list[dict]:
    """Print what the rung's kernels sized for ``t`` (default: the current target) compile to, not run:
    registers, dynamic shared memory, spills (``support.kernel_row``); or, where ``t`` cannot run the
    rung, the one line that says why. Returns the kernels' rows."""
    from .target_report import kernel_row

    t = t or target.current()
    rung = get(rung_id)
    if (why := rung.refusal(t)) is not None:
        print(f"{why}; not compiled")
        return []
    kernels = rung.kernels(t)
    if not kernels:
        print(f"rung {rung.id} is Numba CUDA (Python), which Numba compiles for the GPU when it runs; not run")
        return []
    print(f"rung {rung.id} compiled for {t.describe()}{f' ({t.arch})' if t.present else ''}, not run:")
    rows = [kernel_row(k, t) for k in kernels]
    for k in rows:
        if "error" in k:
            print(f"  {k['kernel']}: COMPILE ERROR: {k['error']}")
            continue
        built = f"PTX for {k['arch']}, JIT-compiled by the driver" if k["from_ptx"] else f"cubin for {k['arch']}"
        print(f"  {k['kernel']} ({built}): {k['registers']} registers, {k['smem_dynamic']} bytes of dynamic "
              f"shared memory, {k['spill_bytes']} bytes spilled")
    return rows


def run_or_show(rung_ids, shapes, sizes, *, one_stretch: bool = False) -> None:
    """A chapter's "run it and check it": its rung after the one before it.

    On a GPU: verify the newest of ``rung_ids`` that this GPU runs on ``shapes`` (sizes with tails), then
    :func:`bench_or_show` at ``sizes``: what it runs is timed against the vendor baseline now, what it cannot run gets its
    one-line refusal and its recorded H200 figures. Without a GPU: :func:`compile_report` of the last rung
    for the current target, and the recorded figures."""
    here = target.runnable()
    if here is None:
        print("no GPU here:", end=" ")
        compile_report(rung_ids[-1], target.current())
        show_recorded(*rung_ids, sizes=sizes, one_stretch=one_stretch)
        return
    runs = [rid for rid in rung_ids if verification.refusal_here(get(rid)) is None]
    if runs:
        for shape in shapes:
            print(verification.verify(runs[-1], *shape).raise_if_failed().summary())
    bench_or_show(rung_ids, sizes, one_stretch=one_stretch)


def ceilings_or_show() -> dict | None:
    """The roofs of chapter 00: on a GPU with mma.sync, measured (``ceilings.measure_ceilings``, 30-60 s), written
    (:func:`measurement_folder`) and labelled with the GPU, date and file; on one without, the one line that says why, then the newest recorded chain;
    without a GPU, the recorded chain. Prints the copy bandwidth and cuBLAS's rate; returns the ceilings
    (None where nothing is measured or recorded)."""
    from ..measurement import ceilings as chain
    from ..measurement.roofline import recorded_ceilings

    here = target.runnable()
    why = None if here is None else here.refusal("measuring the ceiling chain", chain.NEEDS)
    if here is not None and why is None:
        folder = measurement_folder()
        ceilings = chain.measure_ceilings(progress=False)   # the chapter prints the chain, no bar
        label = measured_label(here, write_run([ceilings], kind="ceilings", folder=folder))
    else:
        if why is not None:
            print(f"{why}; the recorded H200 chain is shown instead")
        ceilings = recorded_ceilings()
        if ceilings is None:
            print("No recorded ceilings: `hgemm-course ceilings` on a GPU records them.")
            return None
        label = f"RECORDED on the {ceilings['gpu']} ({ceilings['file']}, {ceilings['date'][:10]})"
    print(f"{label}: copy {ceilings['bandwidth_gbs']:.0f} GB/s, cuBLAS fp16 {ceilings['cublas_tflops']:.0f} TFLOP/s")
    return ceilings


def limits_or_show(n: int = 8192, *, one_stretch: bool = False, names: dict[str, str] | None = None):
    """Chapter 08's experiments on rung 07 (``limits.run_all``): run on a GPU that runs rung 07, written
    (:func:`measurement_folder`) and labelled with the GPU, date and file; otherwise the one line that says why (on a GPU) and the
    newest recorded run (:func:`show_limits`). Returns the experiments' data. With ``one_stretch``, the variants are
    printed and returned as :func:`show_limits_stretch` gives them (``names`` relabels them)."""
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


@contextlib.contextmanager
def recorded_build():
    """Build the block's kernels for the recorded H200's target (:data:`target.RECORDED`): the configurations
    the chapter's prose and recorded figures describe, whatever GPU is here. Where the current target is
    another, one line says so and how to see its own (``hgemm-course compile``). Nothing in the block may
    launch a kernel: it is for compiling, counting and reading."""
    here = target.current()
    if (here.arch, here.smem_per_block) != (target.RECORDED.arch, target.RECORDED.smem_per_block):
        print(f"compiled for {target.RECORDED.describe()}, where the chapter's figures were recorded, not for "
              f"{here.describe()}{f' ({here.arch})' if here.present else ''}; `hgemm-course compile` shows what "
              f"{here.arch} builds")
    with target.use(target.RECORDED):
        yield target.RECORDED


_STAGES = re.compile(r"^\w+<(\d+), (\d+), \d+, (\d+)")     # TmaRing<BM, BN, BK, STAGES>, SwizzledStages<...>, ...


def _config(kernel) -> str:
    """A kernel's tiling in a few characters: ``256x128 s4`` (a 256x128 tile of C per CTA, a 4-stage ring),
    read from the shared-memory struct it is built with; its name where it has none."""
    m = _STAGES.match(kernel.smem_layout or "")
    return f"{m[1]}x{m[2]} s{m[3]}" if m else kernel.name_expression


def what_runs_where(arches=None) -> list[dict]:
    """Every rung on each named target (default: all of :data:`target.KNOWN`), from real compiles for it with
    NVRTC, no GPU needed (``support.rung_rows``, a few seconds per target). Prints a table, rung by target: the
    tile and stages a rung is sized to there, or the architecture it needs; then what each target is and
    each refusal in full. Returns one row per (rung, target): ``{"rung", "slug", "arch", "runs", "why",
    "config", "kernels"}``, ``why`` being the rung's refusal for that target (None where it runs)."""
    from .target_report import rung_rows

    targets = [target.named(a) for a in arches] if arches is not None else list(target.KNOWN.values())
    rungs = registry()
    rows = []
    for t in targets:
        for r in rung_rows(t):
            rung = rungs[r["rung"]]
            errors = [k["error"] for k in r["kernels"] if "error" in k]
            if not r["runs"]:
                config = f"needs {rung.arch}"
            elif r["backend"] == "numba":
                config = "Numba"
            elif errors:
                config = "COMPILE ERR"
            else:
                first = rung.kernels(t)[0]
                config = _config(first) + ("*" if r["kernels"][0]["from_ptx"] else "")
            rows.append({"rung": r["rung"], "slug": r["slug"], "arch": t.arch, "runs": r["runs"] and not errors,
                         "why": r["why"] or (errors[0] if errors else None), "config": config,
                         "kernels": r["kernels"]})
    print(_format_where(targets, rows))
    return rows


def _format_where(targets, rows: list[dict]) -> str:
    """The table of :func:`what_runs_where`, then the targets, then each refusal once with the targets it holds for."""
    width = max(13, *(len(r["config"]) + 1 for r in rows))
    cell = {(r["rung"], r["arch"]): r for r in rows}
    lines = [f"{'rung':<19}" + "".join(f"{t.arch:>{width}}" for t in targets)]
    for rid, rung in registry().items():
        lines.append(f"{rid + ' ' + rung.slug:<19}" + "".join(f"{cell[rid, t.arch]['config']:>{width}}" for t in targets))
    lines.append("BMxBN sN: a BM x BN tile of C per CTA and N shared-memory stages, sized to the target's shared memory")
    if any(r["config"].endswith("*") for r in rows):
        lines.append("*: built as PTX for the oldest architecture with the rung's features (this NVRTC does not know "
                     "the target's own), which the driver JIT-compiles")
    lines += [f"{t.arch}: {t.gpu}, {t.smem_per_block // 1024} KiB of shared memory per CTA" for t in targets]
    lines.append("why not:")
    by_target = {t.arch: t for t in targets}
    reasons: dict[str, list[str]] = {}
    for r in rows:
        if r["runs"]:
            continue
        lacks = by_target[r["arch"]].missing(get(r["rung"]).needs)
        # a missing feature's line reads "<rung> needs <features>; <the target> does not have it"
        reasons.setdefault(r["why"].partition("; ")[0] if lacks else r["why"], []).append(r["arch"])
    lines += [f"  {why}: not on {', '.join(arches)}" for why, arches in reasons.items()]
    return "\n".join(lines)


def tensor_instructions(rungs=("cublas", "07"), size: int = 8192) -> list[dict]:
    """From the recorded profiles (``hgemm-course profile``) at size^3: the kernel each of ``rungs`` ran and the
    instructions that fed its tensor cores: tensor-pipe instructions, of them wgmma reading shared memory
    (ncu counts them as gmma), and ldmatrix loads (mma.sync's operands). Prints one line each; returns them."""
    from ..measurement.profile import recorded_profile

    rows = []
    for rung in rungs:
        record = recorded_profile(rung, M=size)
        if record is None:
            print(f"No recorded profile of {rung} at {size}^3: `hgemm-course profile {rung} --size {size}` "
                  "on a GPU records one.")
            continue
        smem = record.get("smem") or {}
        row = {"rung": rung, "kernel": record["kernel"], "file": record["file"], "gpu": record["gpu"],
               "tensor_instructions": record["tensor_instructions"],
               "wgmma": (smem.get("gmma") or {}).get("instructions") or 0,
               "ldmatrix": (smem.get("ldsm") or {}).get("instructions") or 0,
               "top_stall": record["top_stalls"][0]["reason"] if record.get("top_stalls") else None}
        rows.append(row)
        name = row["kernel"].removeprefix("void ").split("(")[0]
        print(f"RECORDED on the {row['gpu']} ({row['file']}, {record['date'][:10]}), {size}^3: "
              f"{'cuBLAS' if rung == 'cublas' else 'rung ' + rung} ran {name}")
        print(f"  {row['tensor_instructions']:>13,.0f} tensor-pipe instructions: {row['wgmma']:,.0f} wgmma from shared "
              f"memory, {row['ldmatrix']:,.0f} ldmatrix; its warps stalled most on {row['top_stall']}")
    return rows


# Counters that count more than the model's quantity by what they are, for records that carry no note of their own:
# a counter's excess over the model is then a footnote, not a disagreement.
_COUNTER_NOTES = {
    counter: ("l1tex__..._op_ld counts every shared-memory load wavefront of the LSU pipe, not ldmatrix's alone, and "
              "each wavefront it counts beyond the ideal as a bank conflict: its excess over the model equals its "
              "conflict count, where the sm__sass_ counters of the ldmatrix instructions themselves count the model's "
              "wavefronts and no conflict; which other loads or replays make up the excess these counters do not say")
    for counter in ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")}


def _ranking(order: list[str], value: dict[str, float], tie: float) -> str:
    """An order as text, ``a > b = c``: ``=`` between neighbours less than ``tie`` apart in ``value``."""
    text = order[0]
    for before, name in zip(order, order[1:]):
        close = before in value and name in value and abs(value[before] - value[name]) < tie
        text += f" {'=' if close else '>'} {name}"
    return text


def model_vs_hardware(check: str) -> list[dict]:
    """Print the newest recorded model-vs-ncu comparison (``check`` is "banks" or "l2"); returns its records.

    A ranking is printed with the figures behind it: neighbours closer than the record's ``tie_points`` are tied
    (``=``), and the verdict says the orders agree only up to those ties where they are not the same."""
    from ..measurement.records import load_runs

    runs = load_runs(kind=f"model_{check}")
    if not runs:
        print(f"No recorded {check} comparison: scripts/h200_model_checks.sh on the H200 records one.")
        return []
    path, data = runs[-1]
    prov = data["provenance"]
    print(f"RECORDED on the {prov['gpu']} ({path.name}, measured {str(prov.get('measured_at', prov['date']))[:10]}):")
    # one block per (configuration, quantity): the model's figure, then each ncu counter that measures it, named,
    # with its verdict; a counter that also counts work the model leaves out says what (its note), not "disagree"
    notes: dict[str, int] = {}
    shown: set = set()
    for r in data["records"]:
        if isinstance(r["model"], list):        # a ranking, not a number
            tie = (r.get("config") or {}).get("tie_points", 0.0)
            ranked = [x for x in data["records"] if not isinstance(x["model"], list) and "order" in x["config"]]
            model = {x["config"]["order"]: x["model"] for x in ranked}
            hardware = {x["config"]["order"]: x["hardware"] for x in ranked}
            if not r["agree"]:
                verdict = "DISAGREE"
            elif r["model"] == r["hardware"]:
                verdict = "the same order"
            else:
                verdict = f"the same order once figures less than {tie:g} point apart count as tied (=)"
            print(f"{r['quantity']}: model {_ranking(r['model'], model, tie)}; ncu {_ranking(r['hardware'], hardware, tie)}: "
                  f"{verdict}")
            continue
        key = (r["config"]["name"], r["quantity"])
        if key not in shown:
            shown.add(key)
            print(f"{r['config']['name']}, {r['quantity']}: model {r['model']:,.0f}")
        note = r.get("note")
        if note is None and r["agree"] is False and r.get("counter") in _COUNTER_NOTES and r["hardware"] > r["model"]:
            note = _COUNTER_NOTES[r["counter"]]
        if r["agree"] is None or note is not None:
            mark = notes.setdefault(note or "it counts more than the model does", len(notes) + 1)
            verdict = f"counts more [{mark}]"
        else:
            verdict = "agree" if r["agree"] else "DISAGREE"
        print(f"    ncu {r['hardware']:>14,.0f}  {verdict:<15} {r.get('counter', '')}")
    for note, mark in notes.items():
        print(f"[{mark}] {note}")
    return data["records"]


def show_limits() -> dict | None:
    """Print the newest recorded chapter-08 experiments (``hgemm-course limits`` on a GPU)."""
    from ..measurement.limits import format_limits
    from ..measurement.records import load_runs

    runs = load_runs(kind="limits")
    if not runs:
        print("No recorded chapter-08 run: `hgemm-course limits` on the H200 records one.")
        return None
    path, data = runs[-1]
    print(f"RECORDED on the {data['provenance']['gpu']} ({path.name}, {data['provenance']['date'][:10]}):")
    print(format_limits(data["records"][0]))
    return data["records"][0]


def show_tuning(rung: str, *, also: tuple[str, ...] = (), folder=None) -> list[dict]:
    """Print the newest recorded sweep of ``rung``, then of each rung in ``also``: ``hgemm-course tune``'s
    runs (``tune_*.json`` under ``folder``, default results/), % of the vendor baseline timed in the same process, each
    labelled with its file and date. Returns one row per configuration printed.

    A rung with no such run yet is shown from the tuning scripts that came before ``tune``
    (``folder``/tuning/*.json), labelled with the script: the newest of those runs that measured the first
    such rung, with the rows of the others in that same run."""
    from ..library.paths import results_dir
    from ..measurement.records import load_runs

    folder = Path(folder) if folder is not None else results_dir()
    runs = load_runs(folder, kind="tune")
    rows, unswept = [], []
    for r in (rung, *also):
        sweeps = [(path, data) for path, data in runs if data["provenance"].get("rung") == r]
        if sweeps:
            rows += _show_sweep(*sweeps[-1])
        else:
            unswept.append(r)
    if unswept:
        rows += _show_script_tuning(unswept[0], also=tuple(unswept[1:]), folder=folder / "tuning")
    return rows


def _show_sweep(path: Path, data: dict) -> list[dict]:
    """One recorded ``hgemm-course tune`` run: its table, best and default, failures and skips."""
    from ..measurement.tune import TuneConfig, format_tune_table

    prov, records = data["provenance"], data["records"]
    print(f"RECORDED by `hgemm-course tune {prov['rung']}` on the {prov['gpu']} ({path.name}, {prov['date'][:10]}): "
          f"% of {vendors.baseline_label(records, per_shape=True)} timed in the same process, best geometric mean "
          "first")
    print(format_tune_table(records))
    if prov.get("best"):
        print(f"best: {TuneConfig(**prov['best']).label}; the rung's default then: {prov['default']}")
    failed = {label for label, _ in prov.get("failed", [])}
    for label, summary in prov.get("failed", []):
        print(f"FAILED verification, not timed: {label}: {summary}")
    if prov.get("skipped"):
        print(f"{len(prov['skipped'])} more configurations of the sweep skipped before any launch, each with its "
              "reason in the file's provenance")
    rows: dict[str, dict] = {}
    for r in records:
        row = rows.setdefault(r["label"], {"rung": prov["rung"], "label": r["label"], "config": r["config"],
                                           "passed": r["label"] not in failed, "file": path.name,
                                           "date": prov["date"], "gpu": prov["gpu"], "tflops": {}, "pct_cublas": {}})
        row["tflops"][r["M"], r["N"], r["K"]] = r["tflops"]
        row["pct_cublas"][r["M"], r["N"], r["K"]] = r["pct_cublas"]
    return list(rows.values())


def _show_script_tuning(rung: str, *, also: tuple[str, ...], folder: Path) -> list[dict]:
    """The variants of ``rung`` (and of the rungs in ``also``) from the newest run of the tuning scripts
    that ``hgemm-course tune`` replaced (``folder``/*.json), with the vendor baseline (cuBLAS through cupy.matmul
    in those scripts' records) from the same process."""
    import json

    runs = [(path, json.loads(path.read_text())) for path in sorted(folder.glob("*.json"))]
    runs = [(p, d) for p, d in runs if "variants" in d and any(v["rung"] == rung for v in d["variants"])]
    if not runs:
        print(f"No recorded tuning run of rung {rung}: `hgemm-course tune {rung} --record` on the H200 records one.")
        return []
    path, data = max(runs, key=lambda pd: (pd[1]["provenance"]["date"], pd[0].name))
    prov = data["provenance"]
    sizes = [str(s) for s in prov["sizes"]]
    baseline = vendors.baseline_label(t for v in data["variants"] for t in v["timing"].values())
    print(f"RECORDED during tuning on the {prov['gpu']} ({path.name}, {prov['date'][:10]}): "
          f"{prov['script']} (since replaced by `hgemm-course tune`), medians of {prov['repeats']} launches, "
          f"% of {baseline} timed in the same process")
    print(f"{'rung':<5}{'variant':<34}{'regs':>5}{'CTA/SM':>7}" + "".join(f"{n + '^3 TF/s (% vendor)':>24}" for n in sizes))
    print(f"{'':<5}{baseline + ', fp16':<34}{'':>12}" + "".join(f"{data['cublas'][n]['tflops']:>24.1f}" for n in sizes))
    rows = []
    for v in data["variants"]:
        if v["rung"] != rung and v["rung"] not in also:
            continue
        row = {"rung": v["rung"], "label": v["label"], "name": v["name"], "registers": v["registers"],
               "ctas_per_sm": v["ctas_per_sm"], "passed": v["passed"], "file": path.name, "date": prov["date"],
               "gpu": prov["gpu"], "tflops": {(int(n),) * 3: t["tflops"] for n, t in v["timing"].items()},
               "pct_cublas": {(int(n),) * 3: t["pct_cublas"] for n, t in v["timing"].items()}}
        rows.append(row)
        label = v["label"]
        if label == "default" and "<" in v["name"]:       # the template arguments the default had then
            label += " " + v["name"][v["name"].index("<"):].replace(" ", "")
        print(f"{v['rung']:<5}{label[:33]:<34}{v['registers']:>5}{v['ctas_per_sm']:>7}"
              + "".join(f"{row['tflops'][(int(n),) * 3]:>15.1f} ({row['pct_cublas'][(int(n),) * 3]:5.1f}%)"
                        if (int(n),) * 3 in row["tflops"] else f"{'-' if v['passed'] else 'FAILED verification':>24}"
                        for n in sizes))
    return rows


# The roofs of the ceiling chain that bound each instruction family: (key of the returned dict, label, where it is
# recorded). A rung is placed only against the roofs of the instruction it computes with.
_ROOFS = {
    "fp32": (("fp32", "FP32 CUDA cores", "fp32_tflops"),),
    "mma.sync": (("mma_sync_bound", "mma.sync bound, {warps} warps/SM of {wm}x{wn}, ldmatrix",
                  "mma_sync_bound ({warps} warps of {wm}x{wn} fed by ldmatrix)"),
                 ("mma_sync_peak", "mma.sync register peak", "mma_sync_tflops")),
    "wgmma": (("wgmma_peak", "wgmma peak", "wgmma_tflops"),),
}


def _instruction(rung: str) -> str:
    """The instruction family a rung computes with: "wgmma", "mma.sync", or "fp32" (the Numba rungs, CUDA cores)."""
    needs = get(rung).needs
    return "wgmma" if "wgmma" in needs else "mma.sync" if "mma.sync" in needs else "fp32"


def place_on_ceilings(rung: str, size: int = 8192, *, folder=None) -> dict:
    """Print where ``rung`` stands at ``size``^3, from recorded figures only.

    The rung's newest bench record at size^3 (``results.load_records``) as TFLOP/s, beside the vendor baseline timed
    in the same run (the record names it: :func:`hgemm_course.measurement.vendors.baseline_label`): a reference kernel, not a roof
    (chapter 00). Then the rung as a percentage of each roof that bounds the
    instruction it computes with, from the newest ``hgemm-course ceilings`` record: the FP32 CUDA-core peak for the
    FP32 rungs 01-02; for the mma.sync rungs 03-07 the mma.sync loop bound at the rung's warps and warp tile (fed by
    ldmatrix) and the mma.sync register peak; for the wgmma rungs 09 and up the wgmma peak. A roof that record lacks
    is skipped with a note; a roof the rung runs above is printed without a percentage, as a roof measured too low.
    Then the rung's recorded profile (``hgemm_course.measurement.profile``; under ``folder``/profiles), if one exists.
    ``folder``: where the results live (default results/). Returns the numbers printed: ``roofs`` holds each roof's
    ``{"label", "tflops", "pct"}`` (``pct`` None above the roof), ``cublas`` the reference's TFLOP/s and the rung's
    % of it, ``above`` the roofs the rung ran above.
    """
    from ..measurement.ceilings import rung_bound
    from ..measurement.roofline import recorded_ceilings

    out: dict = {"rung": rung, "size": size, "tflops": None, "roofs": {}, "skipped": [], "above": [],
                 "cublas": None, "profile": None}
    rows = [r for r in load_records(folder) if r["rung"] == rung and r["M"] == r["N"] == r["K"] == size]
    if not rows:
        print(f"No recorded bench of rung {rung} at {size}^3: `hgemm-course bench {rung} --sizes {size}` "
              "on a GPU records one.")
    else:
        row = rows[0]
        out.update(tflops=row["tflops"], file=row["file"], date=row["date"], gpu=row["gpu"])
        pct_cublas = 100.0 * row["tflops"] / row["cublas_tflops"]
        out["cublas"] = {"tflops": row["cublas_tflops"], "pct": pct_cublas}
        print(f"RECORDED on the {row['gpu']} ({row['file']}, {row['date'][:10]}): rung {rung} at {size}^3 runs "
              f"{row['tflops']:.1f} TFLOP/s; {vendors.baseline_label([row])}, the vendor baseline timed in the same "
              "run (a reference kernel, not a roof), "
              f"{row['cublas_tflops']:.1f}: the rung is {pct_cublas:.1f}% of it")

        ceilings = recorded_ceilings(folder) or {}
        family = _instruction(rung)
        extra = get(rung).extra                # rungs 03-07: one CTA of 8 warps of 64x64 per SM
        tiles = extra.get("tiles", {})
        warps, wm, wn = extra.get("threads", 256) // 32, tiles.get("wm", 64), tiles.get("wn", 64)
        values = {"fp32": ceilings.get("fp32_tflops"),
                  "mma_sync_bound": (rung_bound(ceilings, (warps, wm, wn)) or {}).get("tflops"),
                  "mma_sync_peak": ceilings.get("mma_sync_tflops"),
                  "wgmma_peak": ceilings.get("wgmma_tflops")}
        if ceilings:
            print(f"RECORDED ceilings on the {ceilings['gpu']} ({ceilings['file']}, {ceilings['date'][:10]}), the "
                  f"roofs of {family if family != 'fp32' else 'FP32 arithmetic on the CUDA cores'}:")
        else:
            print("No recorded ceilings (`hgemm-course ceilings` on a GPU records them).")
        peak = ceilings.get("mma_sync_peak") or {}
        shown = False
        for key, label, recorded_as in _ROOFS[family]:
            label = label.format(warps=warps, wm=wm, wn=wn)
            if key == "mma_sync_peak" and peak:
                label += f", {peak['warps_per_sm']} warps of {peak['warp_tile'][0]}x{peak['warp_tile'][1]}"
            if values[key] is None:
                out["skipped"].append(recorded_as.format(warps=warps, wm=wm, wn=wn))
                continue
            if not shown:
                print(f"  {'roof':<48}{'TFLOP/s':>9}{'rung ' + rung + ' is':>14}")
                shown = True
            if row["tflops"] > values[key]:
                out["above"].append(key)
                out["roofs"][key] = {"label": label, "tflops": values[key], "pct": None}
                print(f"  {label:<48}{values[key]:>9.1f}{'above it':>14}")
                continue
            pct = 100.0 * row["tflops"] / values[key]
            out["roofs"][key] = {"label": label, "tflops": values[key], "pct": pct}
            print(f"  {label:<48}{values[key]:>9.1f}{pct:>13.1f}%")
        for key in out["above"]:
            print(f"  the rung ran above the {out['roofs'][key]['label']}: a roof bounds what the instruction can do, "
                  "so that measurement of it is wrong (too low), not the rung; `hgemm-course ceilings` re-measures it")
        if out["skipped"]:
            print(f"  skipped, not in the ceilings record: {', '.join(out['skipped'])}; `hgemm-course ceilings` "
                  "on a GPU records them")
        if out["roofs"]:
            print("  the roofs were timed in other runs than the rung, each kernel at the clock it got (chapter 08); "
                  "only the ratio to the vendor baseline is from the same run, and SM cycles, where a profile is recorded, do not move "
                  "with the clock")

    _show_profile(rung, size, folder, out)
    return out


def _show_profile(rung: str, size: int, folder, out: dict, model_note: str | None = None) -> None:
    """Print the rung's recorded profile at size^3 and its cycles against cuBLAS's and the mma.sync floor, into ``out``."""
    from ..measurement import profile

    record = profile.recorded_profile(rung, M=size, folder=None if folder is None else Path(folder) / "profiles")
    if record is None:
        print(f"No recorded profile of rung {rung} at {size}^3: `hgemm-course profile {rung} --size {size}` "
              "on a GPU records one.")
    else:
        out["profile"] = record
        text = profile.describe(record)
        if text:
            print(text)
        out["cycles"] = _place_in_cycles(rung, size, record, profile, folder, model_note=model_note)


def place_in_cycles(rung: str, size: int = 8192, *, folder=None) -> dict:
    """Where an mma.sync or wgmma rung stands at ``size``^3 in the one unit no clock moves: its newest bench record's
    matrix work per SM cycle (its timing build's median launch, :func:`stretch_row`) against each roof of its
    instruction in the newest ceilings record, each roof's loop counted in its own SM cycles; the % of the vendor
    baseline, from the launches alternated with it, with its p10-p90; then the recorded profile, as
    :func:`place_on_ceilings` prints it. Returns ``{"rung", "size", "flop_per_cycle", "roofs", "pct_vendor", ...}``."""
    from ..measurement.ceilings import rung_bound
    from ..measurement.roofline import recorded_ceilings

    out: dict = {"rung": rung, "size": size, "flop_per_cycle": None, "roofs": {}, "profile": None}
    rows = [r for r in load_records(folder) if r["rung"] == rung and r["M"] == r["N"] == r["K"] == size
            and r.get("launch_clocks")]
    stretch = stretch_row(with_samples(rows[:1], folder)[0]) if rows else None
    if stretch is None:
        print(f"No recorded bench of rung {rung} at {size}^3 with its launches' cycles: `hgemm-course bench {rung} "
              f"--sizes {size}` on a GPU records one.")
    else:
        row, sms = rows[0], target.RECORDED.sm_count
        per_cycle = 2 * size**3 / (stretch["mcycles"] * 1e6 * sms)
        out.update(flop_per_cycle=per_cycle, pct_vendor=stretch["pct"], file=row["file"])
        print(f"RECORDED on the {row['gpu']} ({row['file']}, {row['date'][:10]}): rung {rung} at {size}^3, its timing "
              f"build's median launch: {stretch['mcycles']:.3f} Mcycles at {stretch['ghz']:.3f} GHz, {per_cycle:,.0f} "
              f"flop per SM cycle ({sms} SMs); {stretch['pct']:.1f}% of {vendors.baseline_label([row])} "
              f"(p10-p90 {stretch['pct_p10']:.1f}-{stretch['pct_p90']:.1f}), launches alternated")
        ceilings = recorded_ceilings(folder) or {}
        extra = get(rung).extra
        tiles = extra.get("tiles", {})
        warps, wm, wn = extra.get("threads", 256) // 32, tiles.get("wm", 64), tiles.get("wn", 64)
        roofs = []
        if _instruction(rung) == "mma.sync":
            bound = rung_bound(ceilings, (warps, wm, wn))
            if bound:
                roofs.append((f"mma.sync loop, {warps} warps/SM of {wm}x{wn}, ldmatrix", bound))
            peak = ceilings.get("mma_sync_peak") or {}
            best = next((r for r in ceilings.get("mma_sync_bound", ()) if r["feed"] == "registers"
                         and r["warps_per_sm"] == peak.get("warps_per_sm")
                         and list(r["warp_tile"]) == list(peak.get("warp_tile", ()))), None)
            if best:
                roofs.append((f"mma.sync loop, {best['warps_per_sm']} warps of {best['warp_tile'][0]}x"
                              f"{best['warp_tile'][1]}, registers", best))
        elif ceilings.get("wgmma_flop_per_sm_cycle"):
            roofs.append(("wgmma loop", {"flop_per_sm_cycle": ceilings["wgmma_flop_per_sm_cycle"]}))
        roofs = [(label, r) for label, r in roofs if r.get("flop_per_sm_cycle")]
        if roofs:
            print(f"RECORDED ceilings on the {ceilings['gpu']} ({ceilings['file']}, {ceilings['date'][:10]}), in flop "
                  "per SM cycle, which no clock moves:")
            print(f"  {'roof':<48}{'flop/SM cycle':>14}{'rung ' + rung + ' is':>14}")
            for label, r in roofs:
                pct = 100 * per_cycle / r["flop_per_sm_cycle"]
                out["roofs"][label] = {"flop_per_cycle": r["flop_per_sm_cycle"], "pct": pct}
                print(f"  {label:<48}{r['flop_per_sm_cycle']:>14,.0f}{pct:>13.1f}%")
        else:
            print("No recorded ceilings with their cycles (`hgemm-course ceilings` on a GPU records them).")
    _show_profile(rung, size, folder, out, model_note="a model fitted to the measured loops, not a measured loop")
    return out


def _place_in_cycles(rung: str, size: int, record: dict, profile, folder, *, model_note: str | None = None) -> dict | None:
    """Print the rung's profiled SM cycles against cuBLAS's at the same size and, for the mma.sync rungs,
    against the fewest cycles mma.sync allows their tiling (:func:`hgemm_course.sim.issue.gemm_floor_cycles`):
    comparisons no clock moves. Returns the numbers, or None without a cuBLAS profile at that size."""
    from ..sim.issue import gemm_floor_cycles

    rows = profile.cycle_ratios(size, folder=None if folder is None else Path(folder) / "profiles")
    row = next((r for r in rows if r["rung"] == rung), None)
    if row is None:
        print(f"No recorded cuBLAS profile at {size}^3 to count cycles against: `hgemm-course profile cublas "
              f"--size {size}` on a GPU records one.")
        return None
    out = {"cycles": row["cycles"], "cublas_cycles": row["cublas_cycles"], "pct_cublas_cycles": row["pct_cublas_cycles"]}
    print(f"In SM cycles, which no clock moves: rung {rung} {row['cycles']:,.0f}, cuBLAS {row['cublas_cycles']:,.0f} "
          f"({row['cublas_file']}): {row['pct_cublas_cycles']:.1f}% of cuBLAS.")
    extra = get(rung).extra
    if rung[:2].isdigit() and int(rung[:2]) < 9 and "tiles" in extra:
        t = extra["tiles"]
        floor = gemm_floor_cycles(size, size, size, (t["bm"], t["bn"]), extra.get("threads", 256) // 32,
                                  (t["wm"], t["wn"]))
        out.update(floor_cycles=floor["cycles"], pct_of_floor=100.0 * floor["cycles"] / row["cycles"],
                   floor_pct_cublas=100.0 * row["cublas_cycles"] / floor["cycles"])
        note = model_note or ("a model, not the measured bound in the table above, which is in TFLOP/s at "
                              "the clock its own kernel ran at")
        print(f"The sim.issue model ({note}) puts the floor of mma.sync at this tiling ({t['bm']}x{t['bn']} "
              f"tiles, {floor['waves']} waves) at {floor['cycles']:,.0f} cycles, {out['floor_pct_cublas']:.1f}% of "
              f"cuBLAS's cycles; the rung takes {row['cycles'] / floor['cycles']:.2f}x the floor's cycles.")
    return out


def compare_or_show(rung_a: str, rung_b: str, size: int, *, repeats: int = 30) -> list:
    """Whether rung ``rung_b`` takes fewer SM cycles and less time than rung ``rung_a`` at ``size``^3, as verdicts
    computed from the measurements (:mod:`hgemm_course.measurement.verdict`), printed and returned.

    On a GPU that runs both: the two alternated launch by launch (the time verdict, from each pair's ratio),
    then each alternated with its timing build (the cycles verdict), the measurements and verdicts written as a
    ``compare`` report (:func:`measurement_folder`) that the label names. Otherwise: the cycles verdict from the
    recorded runs of both at that size, labelled as recorded."""
    a, b = get(rung_a), get(rung_b)
    if target.runnable() is not None and verification.refusal_here(a) is None and verification.refusal_here(b) is None:
        import cupy

        folder = measurement_folder()
        for rung in (a, b):
            verification.verify(rung, size, size, size).raise_if_failed()
        sets = timing.input_sets(size, size, size, cupy.cuda.Device().attributes["L2CacheSize"])
        paired = timing.time_paired(b.launch, a.launch, sets, warmup=5, repeats=repeats)
        clocked = [timing.time_with_clock(rung.launch, sets) for rung in (a, b)]
        ratios = [tb / ta for tb, ta in zip(paired.fn_ms, paired.reference_ms)]
        found = [verdict.compare_paired(f"rung {a.id}", f"rung {b.id}", ratios,
                                        f"time at {size}^3, launches alternated (b / a per pair)")]
        cycles = {rung.id: [c.cycles for c in run.launches] for rung, run in zip((a, b), clocked)} if all(clocked) else {}
        if cycles:
            found.append(verdict.compare(f"rung {a.id}", cycles[a.id], f"rung {b.id}", cycles[b.id],
                                         f"SM cycles at {size}^3"))
        path = write_report({"rungs": [a.id, b.id], "M": size, "N": size, "K": size, "a_ms": list(paired.reference_ms),
                             "b_ms": list(paired.fn_ms), "cycles": cycles, "verdicts": [str(v) for v in found]},
                            kind="compare", folder=folder)
        print(f"{measured_label(target.runnable(), path)}, rungs {a.id} and {b.id} at {size}^3:")
    else:
        rows = {r["rung"]: r for r in load_records() if r["rung"] in (a.id, b.id)
                and r["M"] == r["N"] == r["K"] == size and str(r.get("date", "")) >= HOLD_SINCE}
        judged = verdict.compare_records(rows[a.id], rows[b.id]) if len(rows) == 2 else None
        if judged is None:
            print(f"No recorded run of rungs {a.id} and {b.id} at {size}^3 with their cycles: "
                  f"`hgemm-course bench {a.id} {b.id} --sizes {size}` on a GPU measures them.")
            return []
        files = ", ".join(sorted({rows[a.id]["file"], rows[b.id]["file"]}))
        print(f"RECORDED on the {rows[a.id]['gpu']} ({files}):")
        found = [judged]
    for judged in found:
        print(judged)
    return found



ABLATION_03_TO_04 = Path("tuning") / "2026-12-02" / "ablate_03_to_04.json"   # under results/


def show_ablation(path: Path | str = ABLATION_03_TO_04, against: dict[str, str | None] | None = None) -> list:
    """A recorded ablation (research/ablate_03_to_04.py, research/ablate_hopper.py): per step, its SM cycles and
    clock at each size, its % of the vendor baseline and the ncu counters the run took, then each step's cycles against the
    step before (or ``against``'s) as verdicts (:func:`hgemm_course.course.ablation.show`). Returns the verdicts."""
    from . import ablation

    return ablation.show(path, against)


L2_PROMOTION = Path("tuning") / "2026-12-02" / "l2_promotion" / "ablate_l2_promotion.json"   # under results/


def show_l2_promotion(path: Path | str = L2_PROMOTION) -> list:
    """The recorded L2-promotion ablation of rung 07 (research/ablate_l2_promotion.py): per promotion, SM cycles,
    clock and % of the vendor baseline at each size, and ncu's DRAM bytes, L2 hit rate and L2 sectors per request of one
    8192^3 launch; then each promotion's cycles against none's at the largest size, as verdicts."""
    from . import ablation

    path, prov, rows = ablation.load(path)
    sizes = sorted({int(n) for row in rows for n in row["timing"]})
    print(ablation.heading(path, prov, rows))
    print(f"{'L2 promotion':<14}" + "".join(f"{f'{n}^3: Mcycles  GHz  %vendor':>30}" for n in sizes)
          + f"{'DRAM MB':>10}{'L2 hit %':>10}{'sectors/req':>12}")
    for row in rows:
        cells = "".join(f"{t['cycles'] / 1e6:>16.3f}{t['clock_ghz']:>6.3f}{t['pct_cublas']:>8.1f}"
                        for t in (row["timing"][str(n)] for n in sizes))
        ncu = next(iter(row.get("ncu", {}).values()), {})
        sectors, requests = ncu.get("lts__t_sectors_srcunit_tex_op_read.sum"), ncu.get("lts__t_requests_srcunit_tex_op_read.sum")
        extra = (f"{ncu['dram__bytes_read.sum'] / 1e6:>10,.0f}{ncu['lts__t_sector_hit_rate.pct']:>10.1f}"
                 f"{sectors / requests:>12.2f}" if ncu and sectors and requests else "")
        label = f"{row['l2_promotion']} B" if row["l2_promotion"] else "none"
        print(f"{label:<14}{cells}{extra}")
    n = str(sizes[-1])
    baseline = next(row for row in rows if row["l2_promotion"] == 0)
    found = [verdict.compare("no promotion", ablation.cycles_at(baseline, n), f"{row['l2_promotion']} B promotion",
                             ablation.cycles_at(row, n), f"SM cycles at {n}^3")
             for row in rows if row["l2_promotion"] and ablation.cycles_at(row, n)]
    if not found:
        print("This run kept each promotion's median cycles only, not its launches', so it gives no spread to judge "
              "the differences by: `python3 research/ablate_l2_promotion.py` on a GPU measures them with it.")
    for judged in found:
        print(judged)
    return found


# ---------------------------------------------------------------- what changes from one rung to the next

# Comments go before a kernel's code is read for its ring and grid: a comment may say what the code does not.
_CPP_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_REFILL = re.compile(r"\bkt \+ STAGES - (\d+)")              # rungs 07, 09: one loop refills slice kt + STAGES - d
_RELEASE = re.compile(r"\((?:kt|it) - (\d+)\) % STAGES")      # the consumers free slice kt - d while kt runs
_TILE_WALK = re.compile(r"for \(int t = \w+; t < tiles; t \+= \w+\)")   # a persistent CTA's walk over the tiles
_INCLUDE = re.compile(r'^#include "(\w+)\.cuh"', re.M)


def _kernel_code(rung) -> str:
    return _CPP_COMMENT.sub("", rung.kernel_path.read_text())


def _prefetch(code: str) -> str:
    """How many slices ahead of the one being computed the ring loads, as the kernel's code computes it: a kernel
    whose one loop refills slice kt + STAGES - d loads d slices' worth less than the ring holds; a producer that
    refills each stage as soon as the consumers free slice kt - d (while slice kt runs) loads STAGES - d ahead."""
    m = _REFILL.search(code) or _RELEASE.search(code)
    if m is None:
        raise ValueError("the kernel's code names neither a refill of slice kt + STAGES - d nor a release of slice "
                         "kt - d; rung_parameters cannot read its prefetch distance")
    return f"STAGES - {m[1]}"


def rung_parameters(rung_id: str) -> dict[str, str]:
    """A wgmma- or mma.sync-rung's design parameters, as text, from the ladder's own definitions sized for the
    recorded H200 (:data:`target.RECORDED`): its module's TILES, SUPER and extra facts, its default kernel (threads,
    dynamic shared memory; compiled with NVRTC for the registers that, with them, set the CTAs per SM by
    :func:`hgemm_course.sim.occupancy_report`) and its kernel source (the PTX snippet headers it includes, how far
    ahead its ring loads, whether its CTAs walk the tiles, how C leaves). No GPU is needed."""
    from ..sim.occupancy import hardware_of, occupancy_report

    rung = get(rung_id)
    module = importlib.import_module(rung.launch.__module__)
    tiles, extra, code = module.TILES, rung.extra, _kernel_code(rung)
    t = target.RECORDED
    with target.use(t):
        kern = rung.instantiations(t)[0]
        registers = kern.compile().resources_of(kern.name_expression).registers
    occ = occupancy_report(kern.threads, registers, kern.smem_bytes, **hardware_of(t))
    consumers = extra.get("consumers")
    after = extra.get("registers_after_setmaxnreg")
    if "wgmma" in rung.needs:
        mma = f"wgmma m64n{tiles.bn}k16, issued by a warpgroup"
    else:
        mma = f"mma.sync m16n8k16, {tiles.wm}x{tiles.wn} of C per warp"
    ahead = _prefetch(code)
    cluster = extra.get("cluster_m", 1)
    return {
        "features used": ", ".join(rung.needs),
        "PTX snippet headers": " ".join(h for h in _INCLUDE.findall(code) if h != "common"),
        "MMA": mma,
        "tile of C per CTA (BM x BN)": f"{tiles.bm}x{tiles.bn}",
        "k-slice (BK)": str(tiles.bk),
        "threads per CTA": f"{kern.threads} ({kern.threads // 32} warps)",
        "warp roles": (f"1 producer + {consumers} consumer warpgroups" if consumers
                       else "every warp computes; thread 0 also issues TMA"),
        "registers after setmaxnreg": f"producer {after['producer']}, consumers {after['consumer']}" if after else "-",
        "dynamic shared memory": f"{kern.smem_bytes // 1024} KiB",
        "CTAs per SM": f"{occ['ctas_per_sm']} (limited by {', '.join(occ['limited_by']).replace('_', ' ')})",
        "ring stages (STAGES)": str(tiles.stages),
        "slices loaded ahead": f"{tiles.stages - int(ahead.rsplit(' ', 1)[1])} ({ahead})",
        "super tile (SUPER_M x SUPER_N)": "x".join(map(str, module.SUPER)) if hasattr(module, "SUPER") else "-",
        "grid": "persistent: each CTA walks tiles" if _TILE_WALK.search(code) else "one CTA per tile",
        "cluster": f"{cluster} CTAs along M, B multicast" if cluster > 1 else "none",
        "epilogue": ("stmatrix to shared memory, TMA store" if "tma_store_2d" in code
                     else "st.global from registers"),
    }


def rung_changes(rung_a: str, rung_b: str) -> list[dict]:
    """Print every design parameter (:func:`rung_parameters`) that differs from rung ``rung_a`` to rung ``rung_b``,
    then the ones that stay; returns the changes, ``{"parameter", rung_a, rung_b}`` each, in table order."""
    a, b = rung_parameters(rung_a), rung_parameters(rung_b)
    changed = [{"parameter": p, rung_a: a[p], rung_b: b[p]} for p in a if a[p] != b[p]]
    width = max(len(a[p]) for p in a) + 2
    t = target.RECORDED
    print(f"rung {rung_a} -> rung {rung_b}, sized for {t.arch} ({t.gpu}): {len(changed)} of {len(a)} parameters differ")
    print(f"{'parameter':<32}{'rung ' + rung_a:<{width}}rung {rung_b}")
    for row in changed:
        print(f"{row['parameter']:<32}{row[rung_a]:<{width}}{row[rung_b]}")
    print("the same in both: " + "; ".join(f"{p} {a[p]}" for p in a if a[p] == b[p]))
    return changed


# ---------------------------------------------------------------- the same rung across sizes

FULL_WAVES = 0.9    # the fraction of SM-tile slots a size's tiles must fill for size_sweep to count its waves full


def size_sweep(*rungs: str, sizes=(1024, 2048, 4096, 8192), folder=None, one_stretch: bool = False) -> dict:
    """The H800 post's test of wave quantization on the course's own records: is a rung's throughput flat across
    sizes? Per rung, from its newest recorded runs that held the stream (HOLD_SINCE) at sizes^3: TFLOP/s, the vendor
    baseline timed alongside (named in the table's heading), % of it, SM cycles and clock (where its timing build logged them), FLOP per SM cycle, and
    how full its waves are: tiles of C against the SM-tile slots (SMs x CTAs per SM, :func:`rung_parameters`) of
    the waves they take. Then, as verdicts (:func:`verdict.compare`), each size's SM cycles scaled to the largest
    size's work against the largest size's, and one line on the sizes whose tiles fill at least FULL_WAVES of their
    slots: flat where all of them are level with the largest. With ``one_stretch``, TFLOP/s, Mcycles and GHz are one
    stretch's, the timing build's (:func:`stretch_row`), and % vendor is the median pair's, with no vendor column.
    Returns ``{rung: {"rows", "verdicts", "flat"}}``."""
    sms = target.RECORDED.sm_count
    out = {}
    for rung in rungs:
        rows = {r["M"]: r for r in load_records(folder) if r["rung"] == rung and r["M"] == r["N"] == r["K"]
                and r["M"] in sizes and str(r.get("date", "")) >= HOLD_SINCE}
        if not rows:
            print(f"No recorded run of rung {rung} at {', '.join(map(str, sizes))} that held the stream: "
                  f"`hgemm-course bench {rung} --sizes {' '.join(map(str, sizes))}` on a GPU records one.")
            continue
        params = rung_parameters(rung)
        bm, bn = map(int, params["tile of C per CTA (BM x BN)"].split("x"))
        slots = sms * int(params["CTAs per SM"].split()[0])
        files = sorted({r["file"] for r in rows.values()})
        print(f"RECORDED on the {next(iter(rows.values()))['gpu']} ({', '.join(files)}): rung {rung}, "
              f"{bm}x{bn} tiles, {slots} SM-tile slots ({sms} SMs x {slots // sms}); vendor: "
              f"{vendors.baseline_label(rows.values(), per_shape=True)}")
        print(f"{'size':>6}{'TFLOP/s':>9}{'' if one_stretch else 'vendor':>8}{'% vendor':>10}{'Mcycles':>9}{'GHz':>7}"
              f"{'FLOP/SM-cycle':>15}{'tiles':>7}{'waves':>7}{'slots used':>12}")
        shown = []
        for n in sorted(rows):
            r = rows[n]
            tiles = -(-n // bm) * -(-n // bn)
            waves = -(-tiles // slots)
            used = tiles / (waves * slots)
            row = {"size": n, "tflops": r["tflops"], "cublas_tflops": r["cublas_tflops"], "pct_cublas": r["pct_cublas"],
                   "cycles": r.get("cycles"), "clock_ghz": r.get("clock_ghz"), "tiles": tiles, "waves": waves,
                   "slots_used": used, "launch_cycles": verdict.cycles_of(r), "file": r["file"]}
            per_cycle = 2 * n**3 / (row["cycles"] * sms) if row["cycles"] else None
            row["flop_per_sm_cycle"] = per_cycle
            shown.append(row)
            stretch = stretch_row(with_samples([r], folder)[0]) if one_stretch else None
            if stretch is not None:
                row.update(tflops=stretch["tflops"], pct_cublas=stretch["pct"], cycles=stretch["mcycles"] * 1e6,
                           clock_ghz=stretch["ghz"])
                per_cycle = row["flop_per_sm_cycle"] = 2 * n**3 / (row["cycles"] * sms)
            clocked = (f"{row['cycles'] / 1e6:>9.3f}{row['clock_ghz']:>7.3f}{per_cycle:>15,.0f}" if row["cycles"]
                       else f"{'-':>9}{'-':>7}{'-':>15}")
            vendor = "" if one_stretch else f"{r['cublas_tflops']:.1f}"
            print(f"{n:>6}{row['tflops']:>9.1f}{vendor:>8}{row['pct_cublas']:>9.1f}%{clocked}"
                  f"{tiles:>7}{waves:>7}{used:>12.1%}")
        largest = shown[-1]
        judged = []                           # (verdict, row): each size against the largest
        for row in shown[:-1]:
            if row["launch_cycles"] and largest["launch_cycles"]:
                scale = (largest["size"] / row["size"]) ** 3
                judged.append((verdict.compare(f"{largest['size']}^3", largest["launch_cycles"], f"{row['size']}^3",
                                               [c * scale for c in row["launch_cycles"]],
                                               f"SM cycles per {largest['size']}^3 of work, rung {rung}"), row))
        found = [v for v, _ in judged]
        for v in found:
            print(v)
        full = [v for v, row in judged if row["slots_used"] >= FULL_WAVES]
        flat = None
        if full:
            flat = all(v.outcome == "level" for v in full)
            apart = [v.b for v in full if v.outcome != "level"]
            said = ("flat: each is level with" if flat else
                    f"not flat: {', '.join(apart)} {'differs' if len(apart) == 1 else 'differ'} beyond the spread from")
            print(f"rung {rung} at the sizes whose tiles fill at least {FULL_WAVES:.0%} of their SM-tile slots "
                  f"({', '.join(v.b for v in full)}, against {largest['size']}^3): {said} {largest['size']}^3 in SM "
                  "cycles per unit of work")
        out[rung] = {"rows": shown, "verdicts": found, "flat": flat}
    return out


# ---------------------------------------------------------------- two configurations of one tuning sweep

def tune_verdicts(rung: str, label_a: str, label_b: str, *, path=None, folder=None) -> list:
    """Verdicts on two configurations of a recorded ``hgemm-course tune`` run (the newest of ``rung``, or the file
    ``path``), one per shape both were timed at. Where the run alternated each configuration launch by launch with
    the vendor baseline, each launch's time over its paired baseline launch's is what is compared, so that the clock drift they
    shared cancels; otherwise each launch's time. Printed and returned."""
    from ..measurement.records import load_runs

    if path is None:
        runs = [(p, d) for p, d in load_runs(folder, kind="tune") if d["provenance"].get("rung") == rung]
        if not runs:
            print(f"No recorded tune run of rung {rung}: `hgemm-course tune {rung}` on a GPU records one.")
            return []
        path, data = runs[-1]
    else:
        path = Path(path)
        data = json.loads(path.read_text())
    by = {(r["label"], r["M"], r["N"], r["K"]): r for r in data["records"]}
    print(f"RECORDED on the {data['provenance']['gpu']} ({path.name}, {data['provenance']['date'][:10]}): "
          f"{label_b} against {label_a}")
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
    for judged in found:
        print(judged)
    return found


STALLS_SHOWN = ("long_scoreboard", "barrier", "wait", "gmma", "mio_throttle", "short_scoreboard")


def profiles_side_by_side(*rungs: str, size: int = 8192, stalls=STALLS_SHOWN, folder=None,
                          shape: tuple[int, int, int] | None = None) -> list[dict]:
    """The newest recorded profile (``hgemm-course profile``) of each rung at size^3 (or ``shape``, M x N x K; a
    rung may also be ``plan``, ``cublas`` or ``cublaslt``), side by side: SM cycles and
    clock, tensor pipe and issue slots, warps per SM, DRAM read, L2 hit rate, and the share of stalled warps on
    each reason in ``stalls`` (of all reasons but ``selected``, :func:`hgemm_course.measurement.profile.top_stalls`). With two
    or more rungs, each one's SM cycles against the first's: one profiled launch each, so a reading without a
    spread (:func:`compare_or_show` gives the verdict). Returns the profiles shown."""
    from ..measurement import profile

    M, N, K = shape or (size, size, size)
    where = f"{size}^3" if shape is None else f"{M}x{N}x{K}"
    option = f"--size {size}" if shape is None else f"--shape {where}"
    records = []
    for rung in rungs:
        record = profile.recorded_profile(rung, M, N, K, folder=folder)
        if record is None:
            print(f"No recorded profile of rung {rung} at {where}: `hgemm-course profile {rung} {option}` "
                  "on a GPU records one.")
        else:
            records.append(record)
    if not records:
        return []
    print(f"RECORDED profiles on the {records[0]['gpu']} at {where}, one launch each (ncu --clock-control none):")
    for r in records:
        print(f"  rung {r['rung']}: {r['file']} ({r['date'][:10]}), {r['kernel'].removeprefix('void ').split('(')[0]}")
    shares = [{s["reason"]: s["share_pct"] for s in profile.top_stalls(r["stalls"], n=len(r["stalls"]))}
              for r in records]
    rows = [("SM cycles", lambda r, _: f"{r['cycles']:,.0f}"),
            ("SM clock (MHz)", lambda r, _: f"{r['sm_clock_mhz']:,.0f}"),
            ("tensor pipe active (% of active cycles)", lambda r, _: f"{r['tensor_pipe_active_pct']:.1f}"),
            ("issue slots busy (%)", lambda r, _: f"{r['issue_active_pct']:.1f}"),
            ("warps per SM (achieved)", lambda r, _: f"{r['warps_per_sm']:.1f}"),
            ("DRAM read (MB)", lambda r, _: f"{r['dram_read_bytes'] / 1e6:,.0f}"),
            ("L2 hit rate, lts__t_sector_hit_rate (%)", lambda r, _: f"{r['l2_hit_pct']:.1f}")]
    rows += [(f"stalled warps on {reason} (%)", lambda r, s, reason=reason: f"{s.get(reason, 0.0):.1f}")
             for reason in stalls]
    widths = [max(12, len(r["rung"]) + 7) for r in records]     # "rung cublaslt" keeps a space before it
    print(f"{'':<42}" + "".join(f"{'rung ' + r['rung']:>{w}}" for r, w in zip(records, widths)))
    for label, cell in rows:
        print(f"{label:<42}" + "".join(f"{cell(r, s):>{w}}" for r, s, w in zip(records, shares, widths)))
    first = records[0]
    for r in records[1:]:
        change = r["cycles"] / first["cycles"] - 1
        print(f"rung {r['rung']} takes {abs(change):.1%} {'fewer' if change < 0 else 'more'} SM cycles than rung "
              f"{first['rung']} in these profiles (one launch each: a reading, without a spread)")
    return records


# ---------------------------------------------------------------- a kernel's code on the page, read from its file

_BANNER = re.compile(r"^(\s*)// ---- ([^:]+):")


def _source_file(where: str) -> Path:
    """``where`` as a file: a rung id ("04") names its kernel, a snippet header's name ("ldmatrix") its file under
    ptx_snippets/, anything else is a path."""
    if re.fullmatch(r"\d\d", where):
        return get(where).kernel_path
    snippet = PTX_SNIPPETS_DIR / f"{where}.cuh"
    return snippet if snippet.exists() else Path(where)


def source_excerpt(text: str, name: str) -> str:
    """The part of a CUDA source named ``name``: a banner section (``// ---- main loop: ...`` up to the next
    banner or the end of its block), or the function or lambda ``name`` with the comment lines and ``template``
    line above it, through its closing brace. A ValueError names what the source lacks."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _BANNER.match(line)
        if m and m[2].strip() == name:
            indent, end = len(m[1]), len(lines)
            for j in range(i + 1, len(lines)):
                stripped = lines[j].lstrip()
                if _BANNER.match(lines[j]) or (stripped and not stripped.startswith("#")
                                                and len(lines[j]) - len(stripped) < indent):
                    end = j
                    break
            return "\n".join(lines[i:end]).rstrip() + "\n"
    head = re.compile(rf"\b{re.escape(name)}\s*(?:\(|=\s*\[)")
    for i, line in enumerate(lines):
        if not head.search(line) or line.lstrip().startswith("//"):
            continue
        rest = "\n".join(lines[i:])
        opening, ending = rest.find("{"), rest.find(";")
        if opening < 0 or 0 <= ending < opening:
            continue                                   # a call or a declaration, not the definition
        depth, end = 0, None
        for j in range(i, len(lines)):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth == 0 and "{" in "\n".join(lines[i:j + 1]):
                end = j
                break
        start = i
        while start > 0 and (lines[start - 1].lstrip().startswith(("//", "template")) and lines[start - 1].strip()):
            start -= 1
        return "\n".join(lines[start:end + 1]) + "\n"
    raise ValueError(f"the source has no banner '// ---- {name}:' and no definition of {name}")


def source_lines(text: str, first: str, last: str) -> str:
    """The lines of a source from the first that contains ``first`` through the next that contains ``last``: a
    stretch of a kernel's body that no banner or function names. A ValueError names what is missing."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if first in line), None)
    end = None if start is None else next((i for i in range(start, len(lines)) if last in lines[i]), None)
    if end is None:
        raise ValueError(f"the source has no line with {first!r} followed by one with {last!r}")
    return "\n".join(lines[start:end + 1]) + "\n"


def show_lines(where: str, first: str, last: str) -> str:
    """Print :func:`source_lines` of a kernel or snippet source as it compiles, under the file's name; returns it."""
    from ..check.generate import without_markers

    path = _source_file(where)
    out = f"// {_shown_name(path)}\n{source_lines(without_markers(path.read_text()), first, last)}"
    print(out, end="")
    return out


def _shown_name(path: Path) -> str:
    try:
        return path.resolve().relative_to(PACKAGE_DIR.parent).as_posix()
    except ValueError:
        return str(path)


def show_source(where: str, *names: str) -> str:
    """Print each named part (:func:`source_excerpt`) of a kernel or snippet source as it compiles (without the
    exercise's region markers), under the file's name; returns what it printed."""
    from ..check.generate import without_markers

    path = _source_file(where)
    text = without_markers(path.read_text())
    shown = _shown_name(path)
    out = "\n".join(f"// {shown}: {name}\n{source_excerpt(text, name)}" for name in names)
    print(out, end="")
    return out


# ---------------------------------------------------------------- a recorded table from one stretch of launches


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


# ---------------------------------------------------------------- chapter 00's measured ceilings


def ceilings_rows(record: dict) -> list[dict]:
    """The measured ceilings of a ceilings record, each with what sets it: the FP32 FMA loop, each wgmma loop and the
    fastest mma.sync loop (its operands in registers) with their flops per SM cycle and the clock they ran at (so
    TFLOP/s = flop/cycle x SMs x clock), cuBLAS fp16 at the record's GEMM size, and the copy bandwidth; ``roof`` marks
    the compute roof the roofline uses (:func:`hgemm_course.measurement.roofline.compute_roof`)."""
    from ..measurement.roofline import compute_roof

    roof = compute_roof(record)
    rows = [{"name": "FP32 CUDA cores, FMA loop", "value": record["fp32_tflops"], "unit": "TFLOP/s",
             "datasheet": record.get("datasheet_fp32_tflops")}]
    for r in record.get("wgmma_peak", ()):
        groups = f"{r['warpgroups']} warpgroup{'s' if r['warpgroups'] > 1 else ''}"
        rows.append({"name": f"wgmma loop, {groups} of m64n{r['n']}k16", "value": r["tflops"], "unit": "TFLOP/s",
                     "flop_per_cycle": r["flop_per_sm_cycle"], "ghz": r["clock_ghz"],
                     "datasheet": record.get("datasheet_fp16_tflops")})
    best = max((r for r in record.get("mma_sync_bound", ()) if r["feed"] == "registers"),
               key=lambda r: r["tflops"], default=None)
    if best is not None:
        tile = "x".join(map(str, best["warp_tile"]))
        rows.append({"name": f"mma.sync loop, {best['warps_per_sm']} warps of {tile}", "value": best["tflops"],
                     "unit": "TFLOP/s", "flop_per_cycle": best["flop_per_sm_cycle"], "ghz": best["clock_ghz"],
                     "datasheet": record.get("datasheet_fp16_tflops")})
    for row in rows:
        row["roof"] = row["value"] == roof["tflops"]
    n = record["gemm_size"]
    rows.append({"name": f"cuBLAS fp16 at {n}^3 (a kernel, not a roof)", "value": record["cublas_tflops"],
                 "unit": "TFLOP/s", "datasheet": record.get("datasheet_fp16_tflops"), "roof": False})
    rows.append({"name": "copy, device to device (read + write)", "value": record["bandwidth_gbs"], "unit": "GB/s",
                 "datasheet": record.get("datasheet_bandwidth_gbs"), "roof": False})
    return rows


def show_ceilings(record: dict) -> list[dict]:
    """Print :func:`ceilings_rows` as a table; returns the rows."""
    rows = ceilings_rows(record)
    print(f"{'ceiling':<46} {'measured':>9} {'':<7} {'flop/SM cycle':>13} {'SM clock':>9} {'datasheet':>9}")
    for r in rows:
        per_cycle = f"{r['flop_per_cycle']:13,.0f}" if r.get("flop_per_cycle") else f"{'-':>13}"
        clock = f"{r['ghz']:6.3f} GHz" if r.get("ghz") else f"{'-':>9}"
        sheet = f"{r['datasheet']:9.1f}" if r.get("datasheet") else f"{'-':>9}"
        print(f"{r['name']:<46} {r['value']:9.1f} {r['unit']:<7} {per_cycle} {clock} {sheet}"
              + ("   <- the roofline's compute roof" if r["roof"] else ""))
    return rows


def compare_step_with_rung(path: Path | str, label: str, rung_id: str, size: int):
    """The SM-cycles verdict of a recorded ablation's step ``label`` against rung ``rung_id``'s newest recorded bench
    launches at ``size``^3 (two runs, each launch's cycles logged by its timing build, which no clock moves),
    printed under the two files; returns it, or None (printed) where either side kept no launches there."""
    from . import ablation

    path, prov, rows = ablation.load(path)
    step = next(row for row in rows if row["label"] == label)
    record = next((r for r in load_records() if r["rung"] == rung_id and r["M"] == r["N"] == r["K"] == size
                   and str(r.get("date", "")) >= HOLD_SINCE and r.get("launch_clocks")), None)
    ours = ablation.cycles_at(step, str(size))
    if record is None or not ours:
        print(f"No recorded launches of both {label} and rung {rung_id} at {size}^3.")
        return None
    judged = verdict.compare(label, ours, f"rung {rung_id}", [c["cycles"] for c in record["launch_clocks"]],
                             f"SM cycles at {size}^3, two runs")
    print(f"RECORDED on the {prov['gpu']} (results/{path.relative_to(results_dir()).as_posix()}, "
          f"results/{record['file']}):\n{judged}")
    return judged


# ---------------------------------------------------------------- chapters 07-10: stress runs, one-stretch variants,
#                                                                  profile against timing, ptxas's wgmma reports

_STRESS = re.compile(r"^(?P<label>.+?): (?P<passed>\d+) of (?P<runs>\d+) verifications at (?P<shape>\d+x\d+x\d+) passed")


def stress_runs(path: Path | str) -> list[dict]:
    """The verification stress runs of a text record under results/ (one line per build: ``<label>: P of R
    verifications at MxNxK passed[; first failure ...]``), as ``{"label", "passed", "runs", "shape"}`` each."""
    path = Path(path)
    if not path.is_absolute():
        path = results_dir() / path
    rows = []
    for line in path.read_text().splitlines():
        m = _STRESS.match(line)
        if m:
            rows.append({"label": m["label"], "passed": int(m["passed"]), "runs": int(m["runs"]), "shape": m["shape"]})
    return rows


def show_stress(path: Path | str, names: dict[str, str]) -> list[dict]:
    """Print the stress runs of ``path`` (:func:`stress_runs`) whose labels ``names`` maps to what the chapter calls
    each build, in ``names``' order, under the file's path; then, where the first build named failed some runs, for
    each build that passed every run the chance that it would have if it failed as often: how far the runs settle it."""
    path = Path(path)
    full = path if path.is_absolute() else results_dir() / path
    rows = {r["label"]: r for r in stress_runs(full)}
    shown = [{**rows[label], "name": name} for label, name in names.items() if label in rows]
    print(f"RECORDED on the H200 ({_shown_path(full)}), each build verified again and again at one shape:")
    for r in shown:
        print(f"  {r['name']:<52} {r['passed']:>3} of {r['runs']} at {r['shape']} right")
    if shown and shown[0]["passed"] < shown[0]["runs"]:
        base = shown[0]
        rate = base["passed"] / base["runs"]
        for r in shown[1:]:
            if r["passed"] == r["runs"]:
                print(f"{r['name']}: had it passed {base['passed']} in {base['runs']} as {base['name']} did, "
                      f"{r['runs']} passes in a row had a chance of {rate ** r['runs']:.1e}")
    return shown


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


def show_limits_stretch(names: dict[str, str] | None = None, *, data: dict | None = None,
                        label: str | None = None) -> list[dict]:
    """A ``limits`` run's variants (:func:`limits_stretch_rows`) as one table with its provenance under it, then
    each timed variant's SM cycles against the default's as verdicts: ``data`` as just measured (``label`` its
    provenance line), or else the newest recorded run. ``names`` relabels variants for the page. Returns the rows,
    each with its ``verdict`` where it has one."""
    from ..measurement.records import load_runs

    if data is None:
        runs = load_runs(kind="limits")
        if not runs:
            print("No recorded chapter-08 run: `hgemm-course limits` on the H200 records one.")
            return []
        path, run = runs[-1]
        data = run["records"][0]
        label = f"recorded on the {run['provenance']['gpu']}, {run['provenance']['date'][:10]}, results/{path.name}"
    rows = limits_stretch_rows(data)
    names = names or {}
    for r in rows:
        r["name"] = names.get(r["variant"], r["variant"])
        r["tile"] = f"{r['tiles'][0]}x{r['tiles'][1]}" if r.get("tiles") else "-"   # BM, BN, BK, WM, WN, STAGES
    width = max(len(r["name"]) for r in rows) + 2
    print(f"{'variant':<{width}}{'tile':>8}{'stages':>7}{'KiB':>6}{'regs':>5}{'CTAs/SM':>8}{'ms':>7}{'Mcycles':>8}"
          f"{'GHz':>7}{'TFLOP/s':>8}{'% vendor':>9}{'(p10-p90)':>13}   (n={data['size']})")
    base = next((r for r in rows if r["variant"] == "default" and "ms" in r), None)
    for r in rows:
        stages = r["tiles"][5] if r.get("tiles") else "-"
        head = f"{r['name']:<{width}}{r['tile']:>8}{stages:>7}{r['smem_bytes'] // 1024:>6}"
        if "ms" not in r:
            print(f"{head}  {r['why']}")
            continue
        spread = f"({r['pct_p10']:.1f}-{r['pct_p90']:.1f})"
        print(f"{head}{r['registers']:>5}{r['ctas_per_sm']:>8}{r['ms']:>7.3f}{r['mcycles']:>8.3f}{r['ghz']:>7.3f}"
              f"{r['tflops']:>8.1f}{r['pct']:>8.1f}%{spread:>13}")
    print(f"{label}; " + STRETCH_NOTE.replace("the rung's timing build", "each variant's timing build"))
    for r in rows:
        if base is not None and r is not base and "cycles" in r:
            r["verdict"] = verdict.compare(base["name"], base["cycles"], r["name"], r["cycles"],
                                           f"SM cycles at {data['size']}^3")
            print(r["verdict"])
    return rows


def profile_against_timing(*rungs: str, size: int = 8192, folder=None) -> list[dict]:
    """Each rung's SM cycles at ``size``^3 by the two instruments the course has: its newest recorded profile (one
    launch of the plain build under ncu, caches flushed: its duration times its SM clock) and its newest bench
    record's timing build (the median launch of the busiest SM's cycles, each CTA logging its start and end), with
    the ratio of the two and, from that bench stretch, the timing build's time over the plain build's. Returns
    ``{"rung", "profile_cycles", "timing_cycles", "ratio", "timed_over_plain", ...}`` per rung."""
    from ..measurement import profile

    out = []
    for rung in rungs:
        prof = profile.recorded_profile(rung, size, folder=None if folder is None else Path(folder) / "profiles")
        rows = [r for r in load_records(folder) if r["rung"] == rung and r["M"] == r["N"] == r["K"] == size
                and r.get("launch_clocks") and str(r.get("date", "")) >= HOLD_SINCE]
        stretch = stretch_row(with_samples(rows[:1], folder)[0]) if rows else None
        if prof is None or stretch is None:
            print(f"rung {rung}: no recorded profile and timed run at {size}^3 to set side by side")
            continue
        out.append({"rung": rung, "profile_cycles": prof["cycles"], "profile_file": prof["file"],
                    "profile_mhz": prof["sm_clock_mhz"], "timing_cycles": stretch["mcycles"] * 1e6,
                    "timing_ghz": stretch["ghz"], "timing_file": rows[0]["file"],
                    "ratio": prof["cycles"] / (stretch["mcycles"] * 1e6),
                    "timed_over_plain": rows[0].get("timing_build_ratio")})
    print(f"RECORDED on the H200 at {size}^3: SM cycles of the same kernel by two instruments")
    print(f"{'rung':<5}{'ncu, one launch':>16}{'MHz':>7}{'timing build':>14}{'GHz':>7}{'ncu / timing':>14}"
          f"{'timed / plain':>15}")
    for r in out:
        plain = f"{r['timed_over_plain']:.3f}" if r["timed_over_plain"] else "-"
        print(f"{r['rung']:<5}{r['profile_cycles']:>16,.0f}{r['profile_mhz']:>7,.0f}{r['timing_cycles']:>14,.0f}"
              f"{r['timing_ghz']:>7.3f}{r['ratio']:>14.3f}{plain:>15}")
    for r in out:
        print(f"  rung {r['rung']}: profile results/profiles/{r['profile_file']}, timing build results/{r['timing_file']}")
    return out


_WGMMA_REPORT = re.compile(r"\((C75\d\d)\) (.*?)(?: in (?:the )?function '[^']*')?(?: in line \d+)?$")


def wgmma_reports(log: str) -> list[dict]:
    """ptxas's reports on the wgmma pipeline in a compile log (codes C75xx: a wait it injected, wgmma it
    serialized), ``{"code", "message", "count"}`` each, one per distinct message, the function's mangled name cut."""
    seen: dict[tuple[str, str], int] = {}
    for line in log.splitlines():
        m = _WGMMA_REPORT.search(line.strip())
        if m:
            message = re.sub(r"around line \d+", "around line N", m[2]).rstrip(" .")
            seen[(m[1], message)] = seen.get((m[1], message), 0) + 1
    return [{"code": code, "message": message, "count": n} for (code, message), n in seen.items()]


def compile_edited(rung_id: str, old: str, new: str):
    """Rung ``rung_id``'s default kernel compiled for the recorded H200 with the one line ``old`` of its source
    replaced by ``new`` (a probe of what the compiler makes of a change, never launched). A ValueError says when
    ``old`` is not exactly one line of the source."""
    from ..library.build import KERNELS_DIR, compile_cuda

    rung = get(rung_id)
    text = rung.kernel_path.read_text()
    if text.count(old) != 1:
        raise ValueError(f"{old!r} occurs {text.count(old)} times in {rung.kernel_path.name}, not once")
    with target.use(target.RECORDED):
        return compile_cuda(text.replace(old, new), name_expressions=rung.name_expressions[:1],
                            include_dirs=(KERNELS_DIR,))
