"""Verify, then time: ``bench`` verifies each rung at each size first, then times it with CUDA events in the same
process against the faster vendor library at that size, cuBLAS (``cupy.matmul`` on float16) or, where PyTorch is
installed (the ``compare`` extra), cuBLASLt (``torch.matmul``), rotating several input sets when A and B together
would stay in L2; :func:`format_table` prints its records."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from ..library import device
from ..library.ladder import Rung, get
from . import timing, vendors, verification
from .clocks import sm_clock_reader
from .shapes import as_shapes
from .text_table import Column, cell, text_table
from .timing import MIN_REPEATS, tflops
from .vendors import CUBLAS_NAME, baseline_note


@dataclass
class BenchRecord:
    rung: str
    M: int
    N: int
    K: int
    ms: float                  # median over samples
    tflops: float
    # The cublas_* and pct_cublas* fields are of the vendor baseline this rung was paired with (``vendor``): the
    # faster of the vendor libraries at this shape. Records written before there was a choice have no ``vendor``
    # field and mean cuBLAS through cupy.matmul (baseline_name).
    cublas_ms: float           # median of the baseline's launches paired with this rung's
    cublas_tflops: float
    pct_cublas: float          # 100 x baseline median / rung median, both from the same stretch of time
    samples_ms: list[float] = field(default_factory=list)
    cublas_samples_ms: list[float] = field(default_factory=list)
    input_sets: int = 1
    rel_fro_err: float = 0.0
    paired: bool = True        # samples alternate rung, cuBLAS, rung, ... (older records: one cuBLAS run per size)
    # NVML's SM clock read while each pair's rung launch ran, and while its cuBLAS launch ran (None where the
    # launch had ended before the reading came back), and whether NVML said the power cap held the clock down
    # then. NVML's figure lags: the clock a launch ran at is its SM cycles (ncu) over its time (viz clocks).
    sm_clock_mhz: list[int | None] = field(default_factory=list)
    pct_cublas_pairwise: float | None = None  # median over pairs of cuBLAS ms / rung ms
    cublas_sm_clock_mhz: list[int | None] = field(default_factory=list)
    power_capped: list[bool | None] = field(default_factory=list)
    cublas_power_capped: list[bool | None] = field(default_factory=list)
    # From the rung's timing build (cta_clock.py), alternated launch by launch with the plain build: each of
    # its last launches' clock as its CTAs logged it (cycles, ns, ghz, sms, ctas), and the timing build's
    # median ms over the plain build's in those pairs (1.00: the log costs no time). Empty / None where the
    # rung has no timing build (an NVRTC grid over cta_clock.CAPACITY) or bench ran without clocks.
    launch_clocks: list[dict] = field(default_factory=list)
    timing_build_ratio: float | None = None
    vendor: str = CUBLAS_NAME  # the vendor library the rung was paired with (a key of vendors())
    # Each vendor's median ms at this shape, from timing the vendors against each other (time_paired) to pick the
    # faster; None where one vendor library alone is present.
    vendor_ms: dict[str, float] | None = None
    host_us: float | None = None         # host microseconds per call of the rung's launch (host_us_paired)
    vendor_host_us: float | None = None  # the same for the vendor's call
    vendors_host_us: dict[str, float] | None = None   # the same for each vendor library present, by name

    @property
    def cycles(self) -> float | None:
        """The median over the timing build's logged launches of the busiest SM's cycles."""
        return statistics.median(c["cycles"] for c in self.launch_clocks) if self.launch_clocks else None

    @property
    def clock_ghz(self) -> float | None:
        """The median clock those launches ran at (their SMs' cycles over nanoseconds)."""
        return statistics.median(c["ghz"] for c in self.launch_clocks) if self.launch_clocks else None

    def as_dict(self) -> dict:
        return {**asdict(self), "cycles": self.cycles, "clock_ghz": self.clock_ghz}


def bench(rungs, sizes, *, repeats: int = 30, warmup: int = 5, progress: bool = True,
          failures: list | None = None, skipped: list | None = None, clocks: bool = True,
          baselines: dict | None = None) -> list[BenchRecord]:
    """Verify then time each rung at each size (M, N, K) or n (for n^3) against the faster vendor library at that
    size in this process, paired: the rung's launches alternate with the baseline's (:func:`.timing.time_paired`), and
    its % of the baseline is the ratio of the two medians.

    The baseline at each shape: where several vendor libraries are present (:func:`.vendors.vendors`), they are first
    timed against each other there (:func:`.vendors.choose_vendor`) and the faster is paired with every rung; the
    record names it (``vendor``) and keeps each one's median (``vendor_ms``). ``baselines`` ({(M, N, K):
    :class:`.vendors.VendorChoice`}, as :func:`.vendors.pick_vendors` returns) gives the choice instead, for the shapes
    it has. Each record also has the host's microseconds per call of the rung's launch and of the baseline's, timed in
    turn (:func:`.timing.host_us_paired`).

    A rung that fails verification is never timed: :class:`.verification.VerificationError` is raised, or,
    when a ``failures`` list is given, its :class:`.verification.VerifyResult` is appended there and the
    other rungs go on. Sizes past a rung's ``max_bench_size`` are skipped for that rung. A rung this GPU
    cannot run raises :class:`.verification.NotForThisGPU` before anything runs or, when a ``skipped`` list is given,
    goes there as (rung, :func:`.verification.why_not_here`'s line) and the others run.

    With ``clocks`` (the default), each rung is then timed against its own timing build
    (:func:`.timing.time_with_clock`): the record gets its launches' cycles and clock, and what the log cost.
    """
    import cupy
    from tqdm import tqdm

    gpu = device.require_gpu("Benchmarking")
    rungs = [get(r) if not isinstance(r, Rung) else r for r in rungs]
    refused = [(r, why) for r in rungs if (why := verification.why_not_here(r)) is not None]
    if refused and skipped is None:
        raise verification.NotForThisGPU(refused[0][1] + verification.SHOWN_INSTEAD)
    if skipped is not None:
        skipped.extend(refused)
    rungs = [r for r in rungs if all(r is not other for other, _ in refused)]
    shapes = as_shapes(sizes)
    if repeats < MIN_REPEATS:
        raise ValueError(f"repeats={repeats}: a median needs at least {MIN_REPEATS} timed runs.")
    jobs = [(shape, rung) for shape in shapes for rung in rungs
            if rung.max_bench_size is None or max(shape) <= rung.max_bench_size]
    records = []
    if not jobs:
        return records
    bar = tqdm(total=len(jobs), desc="bench", disable=not progress, unit="run")
    clock = sm_clock_reader()
    fns = vendors.vendors()
    for M, N, K in [shape for shape in shapes if any(job == shape for job, _ in jobs)]:
        sets = timing.input_sets(M, N, K, gpu.l2_bytes)
        n_sets = len(sets)
        timing.settle(vendors.cublas, sets)
        given = (baselines or {}).get((M, N, K))
        choice = given if given is not None else vendors.choose_vendor(fns, sets, warmup=warmup, repeats=repeats)
        baseline = fns[choice.name]
        for rung in [r for shape, r in jobs if shape == (M, N, K)]:
            bar.set_postfix_str(f"rung {rung.id} {M}x{N}x{K}")
            check = verification.verify(rung, M, N, K)
            if not check.passed:
                if failures is None:
                    check.raise_if_failed()
                failures.append(check)
                bar.update()
                continue
            t = timing.time_paired(rung.launch, baseline, sets, warmup=warmup, repeats=repeats, clock=clock)
            clocked = timing.time_with_clock(rung.launch, sets, warmup=warmup) if clocks else None
            host_us, *each_host_us = timing.host_us_paired((rung.launch, *fns.values()), *sets[0])
            vendors_host_us = dict(zip(fns, each_host_us))
            ms, cms = statistics.median(t.fn_ms), statistics.median(t.reference_ms)
            records.append(BenchRecord(
                rung.id, M, N, K, ms, tflops(M, N, K, ms), cms, tflops(M, N, K, cms), 100.0 * cms / ms,
                t.fn_ms, t.reference_ms, n_sets, check.rel_fro_err, True,
                [c and c.mhz for c in t.fn_clocks],
                100.0 * statistics.median(c / r for r, c in zip(t.fn_ms, t.reference_ms)),
                [c and c.mhz for c in t.reference_clocks],
                [c and c.power_capped for c in t.fn_clocks], [c and c.power_capped for c in t.reference_clocks],
                [c.as_dict() for c in clocked.launches] if clocked else [], clocked.ratio if clocked else None,
                vendor=choice.name, vendor_ms=choice.ms, host_us=host_us, vendor_host_us=vendors_host_us[choice.name],
                vendors_host_us=vendors_host_us))
            bar.update()
        del sets
        vendors.forget_torch_views()
        cupy.get_default_memory_pool().free_all_blocks()
    bar.close()
    return records


def format_table(records) -> str:
    """A fixed-width table: rung, size, ms, TFLOP/s, the vendor baseline's TFLOP/s, % of it and, where the records
    have them, the host's microseconds per call of the rung and of the baseline, and (bench's timing build) each
    launch's SM cycles, the clock it ran at and the timing build's time over the plain build's; under it, the line
    of :func:`.vendors.baseline_note`. (NVML's clock readings are left out: NVML lags the clock a launch runs at, which is
    its cycles over its time.)"""
    records = [r if isinstance(r, dict) else r.as_dict() for r in records]
    clocked = any(r.get("cycles") for r in records)
    host = any(r.get("host_us") is not None for r in records)
    columns = [Column("rung", 5, "<"), Column("M x N x K", 20), Column("ms", 9), Column("TFLOP/s", 9),
               Column("vendor", 9), Column("% vendor", 9)]
    columns += [Column("host us", 8), Column("vendor host us", 14)] if host else []
    columns += [Column("Mcycles", 9), Column("GHz", 6), Column("timed/plain", 11)] if clocked else []
    rows = []
    for r in records:
        row = [r["rung"], f"{r['M']}x{r['N']}x{r['K']}", cell(r.get("ms", float("nan")), ".3f"), cell(r["tflops"], ".1f"),
               cell(r["cublas_tflops"], ".1f"), f"{r['pct_cublas']:.1f}%"]
        if host:
            row += [cell(r.get("host_us"), ".1f"), cell(r.get("vendor_host_us"), ".1f")]
        if clocked:
            cycles, ghz, ratio = r.get("cycles"), r.get("clock_ghz"), r.get("timing_build_ratio")
            row += [f"{cycles / 1e6:.3f}", f"{ghz:.3f}", f"{ratio:.3f}"] if cycles and ghz and ratio else [None] * 3
        rows.append(row)
    table = text_table(columns, rows)
    return f"{table}\n{baseline_note(records)}" if records else table
