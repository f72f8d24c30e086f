"""What ``hgemm-course tour`` does, the course's main job: the machine, every CUDA kernel compiled for its target,
then on a GPU every rung verified and timed against cuBLAS (and drawn), without one rungs 01-02 under the Numba
CUDA simulator; last, the recorded H200 ladder in brief (``hgemm-course results`` has all of it).

The tour without a GPU must switch the simulator on (NUMBA_ENABLE_CUDASIM) before Numba is first imported, so
nothing here imports Numba before :func:`_tour_without_gpu` runs.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ..library import device
from ..measurement.commands import DEFAULT_BENCH_SIZES, SIM_SHAPE

NEXT_STEPS = ("Next: open chapter 00 with `jupyter lab chapters/` (jupyter comes with the dev extra), "
              "then try an exercise: `hgemm-course check ex05_swizzle`.")


def tour_command(sizes=None, *, out_dir: Path | None = None, record: bool = False) -> int:
    """The tour; 1 when a kernel failed to compile or a rung failed verification. ``record`` (writing the GPU's run
    into the recorded results/) is refused before anything runs unless this is an H200 run with complete
    provenance, as ``bench --record`` is; so is an ``out_dir`` that cannot be written, where there is a GPU."""
    from ..library import target
    from ..measurement.records import format_ladder_summary, ladder_summary, run_folder
    from .target_report import compile_report_rows, format_compile_rows

    report = device.machine_report()
    folder = run_folder(out_dir, record=record) if report.gpu or record else None
    print(device.format_report(report))
    t = target.current()
    print(f"\n== Every CUDA kernel compiled for {t.label()}, each sized for it (NVRTC, no GPU needed) ==")
    rows = compile_report_rows(t)
    print(format_compile_rows(rows))
    failures = sum("error" in r for r in rows)
    if report.gpu is None:
        failures += _tour_without_gpu()
    else:
        failures += _tour_with_gpu(sizes or DEFAULT_BENCH_SIZES, folder)
    print("\n== Recorded H200 results (from results/, not measured now) ==")
    print(format_ladder_summary(ladder_summary()))
    print(f"\n{NEXT_STEPS}")
    return 1 if failures else 0


def _tour_without_gpu() -> int:
    """Rungs 01-02 verified under the Numba CUDA simulator on SIM_SHAPE; the count of failures."""
    print("\n== Rungs 01-02 under the Numba CUDA simulator (no GPU here) ==")
    if "numba" in sys.modules and not device.cudasim_enabled():
        print("Numba was imported before the simulator could be switched on; run `NUMBA_ENABLE_CUDASIM=1 hgemm-course tour`.")
        return 1
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    from ..measurement.verification import verify
    from ..library.ladder import registry

    failed = 0
    for rung in registry().values():
        if rung.cudasim:
            result = verify(rung, *SIM_SHAPE)
            print(result.summary() + "  (simulated)")
            failed += not result.passed
    return failed


def _tour_with_gpu(sizes, folder: Path) -> int:
    """Every rung this GPU runs verified and timed against cuBLAS at ``sizes``, the run written to ``folder`` and
    drawn beside it; one line per rung it cannot run. The count of failures (1 when nothing was timed)."""
    import matplotlib

    from ..measurement.bench import bench, format_table
    from ..measurement.verification import SHOWN_INSTEAD
    from ..library.ladder import registry
    from ..measurement.records import load_records, write_run

    print("\n== Verify and time every rung this GPU runs against cuBLAS ==")
    failures, skipped = [], []
    records = bench(list(registry()), sizes, repeats=30, failures=failures, skipped=skipped)
    for _, why in skipped:
        print(f"skip: {why}{SHOWN_INSTEAD}")
    for failed in failures:
        print(f"verification failed, not timed: {failed.summary()} (seed={failed.seed})")
    if not records:
        return 1
    path = write_run(records, folder=folder)
    print(format_table(records))
    print(f"written to {path}")
    matplotlib.use("Agg")
    from ..viz import FIGURES

    plot = path.with_suffix(".png")
    FIGURES["ladder"](records=[r for r in load_records(path.parent) if r["file"] == path.name]).savefig(
        plot, dpi=120, bbox_inches="tight")
    print(f"plot of this run: {plot}")
    return len(failures)
