"""What ``hgemm-course verify``, ``bench``, ``tune``, ``ceilings`` and ``limits`` do: run rungs (or the ceiling
probes) on this GPU, print what they measured and write it as a run (:mod:`hgemm_course.measurement.records`).

Each ``*_command`` takes the command's options as keywords, prints, and returns the exit status: 0 done, 1 a
verification failed (or nothing could be timed), 2 refused. A refusal the package raises (ValueError,
RuntimeError) is printed in one line by the CLI. Folders are checked before a run starts, not after it.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..library import device
from .shapes import shapes_text

SIM_SHAPE = (48, 40, 72)             # M, N, K: tails in every dimension, a few seconds in the simulator
# The Numba CUDA simulator runs one Python thread per element of C: 256 x 256 x 1 took 13 s a rung, 128 x 128 x 512
# 27 s. verify refuses more under NUMBA_ENABLE_CUDASIM=1 (each operand then holds at most 2^22 elements, 8 MiB).
SIM_MAX_OUTPUTS = 2**16              # M x N
SIM_MAX_MACS = 2**22                 # M x N x K
VERIFY_SIZES = ((257, 136, 72), (1024, 1024, 1024))   # tails in M, N and K (multiples of 8: rungs 03-11), then square
DEFAULT_BENCH_SIZES = tuple((n, n, n) for n in (1024, 2048, 4096, 8192))
TUNE_SIZES = ((4096, 4096, 4096), (8192, 8192, 8192))


def checked_rungs(ids, shapes) -> list:
    """The rungs named by ``ids`` ("plan": ``gemm(a, b, out=c)`` itself, so that its time and host cost per call are
    what a user's call costs), each checked against every (M, N, K) shape before anything runs: an unknown rung or a
    shape a rung cannot take is a ValueError that names the fix."""
    from dataclasses import replace

    from ..library.ladder import get
    from ..library.plan import planned_rung

    rungs = [replace(planned_rung(), launch=_gemm_out) if str(rid).lower() == "plan" else get(rid) for rid in ids]
    for rung in rungs:
        for shape in shapes:
            rung.check_shape(*shape)
            M, N, K = shape
            if rung.cudasim and device.cudasim_enabled() and (M * N > SIM_MAX_OUTPUTS or M * N * K > SIM_MAX_MACS):
                raise ValueError(
                    f"{shapes_text([shape])} is too big for the Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1), which "
                    f"runs a Python thread per element of C: it takes at most {SIM_MAX_OUTPUTS} (2^16) elements of C "
                    f"(M x N) and {SIM_MAX_MACS} (2^22) multiply-adds (M x N x K), half a minute a rung; give a "
                    f"smaller size, e.g. {shapes_text([SIM_SHAPE])}, or verify this one on a GPU.")
    return rungs


def _gemm_out(a, b, c):
    from ..library.api import gemm

    return gemm(a, b, out=c)


def verify_command(rung_ids=None, sizes=None, *, seed: int | None = None, out_dir: Path | None = None,
                   record: bool = False) -> int:
    """Verify rungs (default: every rung this machine runs; rungs 01-02 under the simulator) at each size."""
    from dataclasses import asdict

    from .verification import verify, why_not_here
    from ..library.ladder import registry
    from .records import run_folder, write_run

    simulated = device.cudasim_enabled()           # then only rungs 01-02 run, on small sizes
    sizes = sizes or ([SIM_SHAPE] if simulated else VERIFY_SIZES)
    ids = rung_ids or [r.id for r in registry().values() if r.cudasim or not simulated]
    folder = run_folder(out_dir, record=record) if (out_dir or record) else None
    failed, results, rungs = 0, [], checked_rungs(ids, sizes)
    refused = [(rung, why) for rung in rungs if not simulated and (why := why_not_here(rung)) is not None]
    for rung, why in refused:
        print(f"skip: {why}", flush=True)
    for rung in [r for r in rungs if all(r is not other for other, _ in refused)]:
        for M, N, K in sizes:
            result = verify(rung, M, N, K, seed=seed)
            print(result.summary() + ("" if result.passed else f" (repeat with --seed {result.seed})"), flush=True)
            failed += not result.passed
            results.append(result)
    if folder is not None and results:
        rows = [{**asdict(r), "passed": r.passed} for r in results]
        print(f"written to {write_run(rows, kind='verify', folder=folder)}")
    if failed:
        return 1
    return 2 if refused and not results else 0


def bench_command(rung_ids=None, sizes=None, *, repeats: int = 30, out_dir: Path | None = None,
                  record: bool = False, as_json: bool = False) -> int:
    """Verify, then time rungs (default: every rung) against the faster vendor library at each size; print the table
    (with the line naming that baseline) or the JSON records and write the run."""
    from .bench import bench, format_table
    from ..library.ladder import registry
    from .records import load_records, run_folder, write_run

    folder = run_folder(out_dir, record=record)
    sizes = sizes or DEFAULT_BENCH_SIZES
    rungs = checked_rungs(rung_ids or list(registry()), sizes)
    failures, skipped = [], []
    records = bench(rungs, sizes, repeats=repeats, progress=not as_json, failures=failures, skipped=skipped)
    for _, why in skipped:
        print(f"skip: {why}", file=sys.stderr)
    for failed in failures:
        print(f"verification failed, not timed: {failed.summary()} (seed={failed.seed})", file=sys.stderr)
    if not records:
        return 2 if skipped and not failures else 1
    path = write_run(records, folder=folder)
    if as_json:
        print(json.dumps([r for r in load_records(path.parent) if r["file"] == path.name], indent=1))
    else:
        print(format_table(records))
        print(f"\nwritten to {path}")
    return 1 if failures else 0


def tune_command(rung_id: str, sizes=None, *, tiles=None, stages=None, supers=None, clusters=None, consumers=None,
                 repeats: int = 30, dry_run: bool = False, out_dir: Path | None = None, record: bool = False) -> int:
    """Sweep a rung's configurations (``dry_run``: only list them) and time those that run against the faster vendor
    library at each size. Without
    a folder to write to, or a GPU that runs the rung, refused in one line before the sweep is planned."""
    from . import tune
    from .vendors import baseline_note
    from .verification import require_runs_here
    from .records import run_folder, write_run

    rung_id = tune.get(rung_id).id          # "11", 11 and "11_persistent" alike
    if not dry_run:
        folder = run_folder(out_dir, record=record)
        device.require_gpu(f"Tuning rung {rung_id}")
        require_runs_here(tune.get(rung_id))
    configs = tune.sweep(rung_id, tiles=tiles, stages=stages, supers=supers, clusters=clusters, consumers=consumers)
    runnable, skipped = tune.plan(rung_id, configs)
    for cfg, reason in skipped:
        print(f"skip {cfg.label}: {reason}", file=sys.stderr)
    print(f"rung {rung_id}: {len(runnable)} of {len(configs)} configurations can run", file=sys.stderr)
    if dry_run:
        for cfg in runnable:
            kernel = tune.build(rung_id, cfg)
            print(f"run  {cfg.label}: {kernel.threads} threads, {kernel.smem_bytes} B of shared memory")
        return 0
    records, _, failures = tune.run(rung_id, sizes or TUNE_SIZES, runnable, repeats=repeats)
    for cfg, failed in failures:
        print(f"verification failed, not timed: {cfg.label}: {failed.summary()} (seed={failed.seed})", file=sys.stderr)
    if not records:
        return 1
    chosen = tune.best(records)
    default = tune.default_config(rung_id)
    path = write_run(records, kind="tune", folder=folder,
                     extra={"rung": rung_id, "skipped": [[c.label, r] for c, r in skipped],
                            "failed": [[c.label, f.summary()] for c, f in failures],
                            "default": default.label, "best": chosen[0] if chosen else None})
    print(tune.format_tune_table(records))
    print(baseline_note(records))
    if chosen:
        print(f"\nbest: {tune.TuneConfig(**chosen[0]).label} ({chosen[1]:.1f}% of the vendor baseline, geometric mean); "
              f"the rung's default: {default.label}")
    print(f"written to {path}")
    return 1 if failures else 0


def ceilings_command(*, out_dir: Path | None = None, record: bool = False) -> int:
    """Measure the ceiling chain on this GPU and write it; without a GPU, say where the recorded chain is (exit 2)."""
    from .records import run_folder, write_run

    folder = run_folder(out_dir, record=record)
    info, reason, _ = device.probe_gpu()
    if info is None:
        print(f"hgemm-course ceilings: measuring needs an NVIDIA GPU and this machine has none ({reason}); "
              "run it on a GPU machine (scripts/h200.sh does), or read the recorded chain with "
              "hgemm_course.measurement.roofline.recorded_ceilings()", file=sys.stderr)
        return 2
    from .ceilings import format_ceilings, measure_ceilings

    ceilings = measure_ceilings()
    path = write_run([ceilings], kind="ceilings", folder=folder)
    print(f"The ceiling chain on the {info.name}:\n{format_ceilings(ceilings)}\nwritten to {path}")
    return 0


def limits_command(size: int = 8192, *, out_dir: Path | None = None, record: bool = False) -> int:
    """Chapter 08's experiments at M = N = K = ``size``: they time rung 07's variants, so they need a GPU that runs it."""
    from .verification import require_runs_here
    from ..library.ladder import get
    from .limits import format_limits, run_all
    from .records import run_folder

    folder = run_folder(out_dir, record=record)
    device.require_gpu("Chapter 08's experiments")
    require_runs_here(get("07"))
    path, data = run_all(n=size, folder=folder)
    print(format_limits(data))
    print(f"written to {path}")
    return 0
