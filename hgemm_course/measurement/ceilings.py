"""The ceiling chain, measured (``hgemm-course ceilings``): how fast a GEMM could run here, roof by roof.

FP32 CUDA cores (an FMA microbenchmark) -> mma.sync bound at a rung's warps and warp tiles
(rung 05's inner loop with no global traffic, fragments from registers or by ldmatrix) ->
mma.sync register peak -> cuBLAS fp16 -> the datasheet's dense fp16 tensor figure, beside the
copy bandwidth as the memory roof. The kernels live in kernels/ceilings.cu; the model that
explains the mma.sync figures is :mod:`hgemm_course.sim.issue`.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from ..library import device, target
from ..library.build import CompiledModule, compile_cuda
from ..sim.issue import FEEDS, compare_with_measured

SOURCE = "ceilings.cu"

# Datasheet figures, not measured, shown only beside an H200's measurements: NVIDIA H200 Tensor Core GPU
# datasheet, H200 SXM column
# ("FP16 Tensor Core 1,979 TFLOPS" is with sparsity: dense is half; FP32 67 TFLOPS; HBM3e 4.8 TB/s).
DATASHEET_FP16_TFLOPS = 989.4
DATASHEET_FP32_TFLOPS = 67.0
DATASHEET_BANDWIDTH_GBS = 4800.0
DATASHEET_SOURCE = "NVIDIA H200 datasheet (SXM): dense fp16 tensor, FP32, HBM3e bandwidth"

FMA_THREADS = 1024
FMA_CTAS_PER_SM = 2                  # 2048 threads: the most an H200's SM holds (others: fma_ctas_per_sm)
FMA_CHAINS = 8                       # independent FMAs per thread and iteration
FMA_A, FMA_B = 0.999, 0.001          # x -> a x + b stays finite for any number of iterations
FMA_PROBE_ITERATIONS = 4096          # about 0.3 ms on an H200: long enough to scale from

BK = 64                              # halves per shared row: 128 bytes, rung 05's k-slice
BOUND_PROBE_SLICES = 256             # about 0.3 ms for 8 warps of 64x64 on an H200
# (warps per SM, WM, WN): rungs 04-07 (256x128 CTA tiles, 8 warps of 64x64, one CTA per SM),
# more warps of half the tile, fewer warps, and a 32-row tile.
BOUND_SHAPES = ((8, 64, 64), (16, 64, 32), (4, 64, 64), (8, 32, 64))
RUNG_SHAPE = BOUND_SHAPES[0]


@dataclass(frozen=True)
class BoundConfig:
    """One instantiation of ``mma_bound``: one CTA of ``warps_per_sm`` warps per SM, each warp a
    (wm, wn) accumulator tile, its fragments fed from registers or by ldmatrix."""

    warps_per_sm: int
    wm: int
    wn: int
    feed: str

    @property
    def name_expression(self) -> str:
        return f"mma_bound<{self.warps_per_sm}, {self.wm}, {self.wn}, {BK}, Feed::{self.feed}>"

    @property
    def label(self) -> str:
        return f"{self.warps_per_sm} warps of {self.wm}x{self.wn}, {self.feed}"

    @property
    def flops_per_slice(self) -> int:
        """Flops of one CTA over one BK-wide k-slice."""
        return self.warps_per_sm * 2 * self.wm * self.wn * BK


BOUND_CONFIGS = tuple(BoundConfig(w, m, n, feed) for w, m, n in BOUND_SHAPES for feed in FEEDS)
NEEDS = ("ldmatrix", "mma.sync")      # the mma.sync bounds; the FMA kernel runs anywhere


# The wgmma peak (kernels/wgmma_peak.cu, sm_90a only): (warpgroups per CTA, N of m64nNk16), one CTA per SM;
# rungs 10-12 run two consumer warpgroups of m64n256, rung 09 one CTA of m64n128 per warpgroup.
WGMMA_SOURCE = "wgmma_peak.cu"
WGMMA_CONFIGS = ((2, 256), (1, 256), (2, 128))
WGMMA_BK = 64                        # halves per k-slice of the peak loop (PEAK_BK in the kernel)
WGMMA_PROBE_SLICES = 4096            # about 1 ms on an H200
WGMMA_NEEDS = ("wgmma",)


def wgmma_name(warpgroups: int, n: int) -> str:
    return f"wgmma_peak<{warpgroups}, {n}>"


def compile_wgmma_peak(t: target.Target | None = None) -> CompiledModule:
    """kernels/wgmma_peak.cu for ``t`` (default: the current one), every WGMMA_CONFIGS instantiated; ValueError
    with the refusal on a target without wgmma."""
    t = t or target.current()
    if (why := t.refusal("the wgmma peak", WGMMA_NEEDS)) is not None:
        raise ValueError(why)
    return compile_cuda(WGMMA_SOURCE, name_expressions=tuple(wgmma_name(*c) for c in WGMMA_CONFIGS),
                        arch=t.build_arch(WGMMA_NEEDS))


def measure_wgmma(warpgroups: int, n: int, module: CompiledModule, sm_count: int, *, target_ms: float = 10.0,
                  repeats: int = 20) -> dict:
    """One ``wgmma_peak`` record: TFLOP/s of one CTA per SM of ``warpgroups`` warpgroups issuing m64n{n}k16, the
    clock it ran at, and its flops per SM cycle, which no clock moves."""
    import cupy

    fn = module.function(wgmma_name(warpgroups, n))
    threads = 128 * warpgroups
    out = cupy.empty(sm_count * threads, dtype=cupy.float32)
    cycles = cupy.zeros(sm_count, dtype=cupy.int64)

    def launch(k_slices):
        fn((sm_count,), (threads,), (out, cycles, np.int32(k_slices)))

    k_slices, ms = _timed_at_length(launch, WGMMA_PROBE_SLICES, target_ms=target_ms, repeats=repeats)
    flops_per_cta = warpgroups * 2 * 64 * n * WGMMA_BK * k_slices
    sm_cycles = float(np.median(cycles.get()))
    return {"warpgroups": warpgroups, "n": n, "tflops": sm_count * flops_per_cta / (ms * 1e-3) / 1e12, "ms": ms,
            "k_slices": k_slices, "clock_ghz": sm_cycles / (ms * 1e6), "flop_per_sm_cycle": flops_per_cta / sm_cycles,
            "registers": module.resources_of(wgmma_name(warpgroups, n)).registers}


def fma_ctas_per_sm(t: target.Target) -> int:
    """CTAs of FMA_THREADS that fill one SM of ``t`` with threads."""
    return max(1, t.threads_per_sm // FMA_THREADS)


def fma_name(ctas_per_sm: int = FMA_CTAS_PER_SM) -> str:
    return f"fma_peak<{FMA_THREADS}, {ctas_per_sm}, {FMA_CHAINS}>"


FMA_NAME = fma_name()


def compile_ceilings(t: target.Target | None = None) -> CompiledModule:
    """kernels/ceilings.cu for the target ``t`` (default: the current one) with the FMA kernel and every
    mma.sync bound configuration instantiated."""
    t = t or target.current()
    if (why := t.refusal("the ceiling chain's mma.sync bounds", NEEDS)) is not None:
        raise ValueError(why)
    names = (fma_name(fma_ctas_per_sm(t)), *(c.name_expression for c in BOUND_CONFIGS))
    return compile_cuda(SOURCE, name_expressions=names, arch=t.build_arch(NEEDS))


def _timed_at_length(launch, count: int, *, target_ms: float, repeats: int) -> tuple[int, float]:
    """Scale a kernel's loop count from ``count`` until a launch takes about ``target_ms``;
    returns (count, median milliseconds over ``repeats`` launches)."""
    from .timing import time_launches

    probe = statistics.median(time_launches(launch, [(count,)], warmup=1, repeats=3))
    count = max(count, round(count * target_ms / probe))
    return count, statistics.median(time_launches(launch, [(count,)], warmup=2, repeats=repeats))


def measure_fp32(module: CompiledModule, sm_count: int, *, ctas_per_sm: int = FMA_CTAS_PER_SM, target_ms: float = 10.0,
                 repeats: int = 20) -> dict:
    """FP32 CUDA-core TFLOP/s: every SM full of threads, each running independent FMA chains."""
    import cupy

    fn = module.function(fma_name(ctas_per_sm))
    blocks = sm_count * ctas_per_sm
    out = cupy.empty(blocks * FMA_THREADS, dtype=cupy.float32)

    def launch(iterations):
        fn((blocks,), (FMA_THREADS,), (out, np.float32(FMA_A), np.float32(FMA_B), np.int32(iterations)))

    iterations, ms = _timed_at_length(launch, FMA_PROBE_ITERATIONS, target_ms=target_ms, repeats=repeats)
    flops = 2 * FMA_CHAINS * iterations * blocks * FMA_THREADS
    return {"fp32_tflops": flops / (ms * 1e-3) / 1e12, "fp32_ms": ms, "fp32_iterations": iterations}


def measure_bound(config: BoundConfig, module: CompiledModule, sm_count: int, *, target_ms: float = 10.0,
                  repeats: int = 20) -> dict:
    """One ``mma_sync_bound`` record: TFLOP/s of one CTA per SM running ``config``, and the SM clock it ran at."""
    import cupy

    fn = module.function(config.name_expression)
    threads = config.warps_per_sm * 32
    out = cupy.empty(sm_count * threads, dtype=cupy.float32)
    cycles = cupy.zeros(sm_count, dtype=cupy.int64)       # clock cycles of each CTA's main loop

    def launch(k_slices):
        fn((sm_count,), (threads,), (out, cycles, np.int32(k_slices)))

    k_slices, ms = _timed_at_length(launch, BOUND_PROBE_SLICES, target_ms=target_ms, repeats=repeats)
    return {"warps_per_sm": config.warps_per_sm, "warp_tile": [config.wm, config.wn], "feed": config.feed,
            "tflops": sm_count * config.flops_per_slice * k_slices / (ms * 1e-3) / 1e12, "ms": ms,
            "k_steps": k_slices * BK // 16, "clock_ghz": float(np.median(cycles.get())) / (ms * 1e6),
            "flop_per_sm_cycle": config.flops_per_slice * k_slices / float(np.median(cycles.get())),
            "registers": module.resources_of(config.name_expression).registers}


def measure_ceilings(*, copy_bytes: int = 2 * 2**30, gemm_size: int = 8192, repeats: int = 30,
                     target_ms: float = 10.0, progress: bool = True) -> dict:
    """The whole chain on this GPU (30-60 s): copy bandwidth, cuBLAS fp16, FP32 CUDA cores, and
    every configuration of :data:`BOUND_CONFIGS`; the record ``hgemm-course ceilings`` writes."""
    import cupy
    from tqdm import tqdm

    from .timing import tflops, time_launches
    from .verification import random_inputs

    gpu = device.require_gpu("Measuring the ceilings")
    here = target.current()
    module = compile_ceilings(here)              # refuses a GPU without mma.sync before anything runs
    wgmma = None if here.refusal("the wgmma peak", WGMMA_NEEDS) else compile_wgmma_peak(here)
    bar = tqdm(total=3 + len(BOUND_CONFIGS) + (len(WGMMA_CONFIGS) if wgmma else 0), desc="ceilings", unit="roof",
               disable=not progress)
    bar.set_postfix_str("copy bandwidth")
    src = cupy.random.random(copy_bytes // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    copy_ms = statistics.median(time_launches(lambda s, d: d.__setitem__(Ellipsis, s), [(src, dst)],
                                              warmup=3, repeats=repeats))
    del src, dst
    bar.update()
    bar.set_postfix_str(f"cuBLAS {gemm_size}^3")
    a, b, _ = random_inputs(gemm_size, gemm_size, gemm_size, xp=cupy)
    c = cupy.empty((gemm_size, gemm_size), dtype=cupy.float16)
    gemm_ms = statistics.median(time_launches(lambda a, b, c: cupy.matmul(a, b, out=c), [(a, b, c)],
                                              warmup=5, repeats=repeats))
    del a, b, c
    bar.update()
    bar.set_postfix_str("FP32 FMA")
    fp32 = measure_fp32(module, gpu.sm_count, ctas_per_sm=fma_ctas_per_sm(here), target_ms=target_ms, repeats=repeats)
    bar.update()
    bounds = []
    for config in BOUND_CONFIGS:
        bar.set_postfix_str(f"mma.sync {config.label}")
        bounds.append(measure_bound(config, module, gpu.sm_count, target_ms=target_ms, repeats=repeats))
        bar.update()
    peaks = []
    for warpgroups, n in WGMMA_CONFIGS if wgmma else ():
        bar.set_postfix_str(f"wgmma {warpgroups} x m64n{n}")
        peaks.append(measure_wgmma(warpgroups, n, wgmma, gpu.sm_count, target_ms=target_ms, repeats=repeats))
        bar.update()
    bar.close()
    wgmma_record = {}
    if peaks:
        best = max(peaks, key=lambda r: r["flop_per_sm_cycle"])
        wgmma_record = {"wgmma_peak": peaks, "wgmma_tflops": best["tflops"],
                        "wgmma_flop_per_sm_cycle": best["flop_per_sm_cycle"]}
    peak = max((r for r in bounds if r["feed"] == "registers"), key=lambda r: r["tflops"])
    datasheet = "H200" in gpu.name              # the figures below are the H200's; another GPU's are not quoted
    return {**fp32, "mma_sync_bound": bounds, "mma_sync_tflops": peak["tflops"],
            "mma_sync_peak": {"warps_per_sm": peak["warps_per_sm"], "warp_tile": peak["warp_tile"]},
            "gemm_size": gemm_size, "cublas_ms": gemm_ms,
            "cublas_tflops": tflops(gemm_size, gemm_size, gemm_size, gemm_ms),
            "datasheet_fp16_tflops": DATASHEET_FP16_TFLOPS if datasheet else None,
            "datasheet_fp32_tflops": DATASHEET_FP32_TFLOPS if datasheet else None,
            "datasheet_bandwidth_gbs": DATASHEET_BANDWIDTH_GBS if datasheet else None,
            "datasheet_source": DATASHEET_SOURCE if datasheet else None,
            "copy_bytes": copy_bytes, "copy_ms": copy_ms, "bandwidth_gbs": 2 * copy_bytes / copy_ms / 1e6,
            "repeats": repeats, **wgmma_record}


def rung_bound(record: dict, shape: tuple[int, int, int] = RUNG_SHAPE) -> dict | None:
    """The ``mma_sync_bound`` entry of a rung's (warps per SM, WM, WN), by default the course rungs' 03-07,
    fed by ldmatrix as they are (None if the record has none)."""
    warps, wm, wn = shape
    return next((r for r in record.get("mma_sync_bound", ())
                 if r["warps_per_sm"] == warps and list(r["warp_tile"]) == [wm, wn] and r["feed"] == "ldmatrix"), None)


def roofs(record: dict) -> list[dict]:
    """The compute roofs of a ceilings record, lowest first: ``{'name', 'tflops', 'measured', 'datasheet'}``
    (``datasheet``: the figure NVIDIA quotes for that unit). Roofs an older record lacks are left out."""
    fp16 = record.get("datasheet_fp16_tflops")
    out = []
    if "fp32_tflops" in record:
        out.append({"name": "FP32 CUDA cores", "tflops": record["fp32_tflops"], "measured": True,
                    "datasheet": record.get("datasheet_fp32_tflops")})
    if (bound := rung_bound(record)) is not None:
        out.append({"name": f"mma.sync bound, {RUNG_SHAPE[0]} warps of {RUNG_SHAPE[1]}x{RUNG_SHAPE[2]}",
                    "tflops": bound["tflops"], "measured": True, "datasheet": fp16})
    if "mma_sync_tflops" in record:
        warps, (wm, wn) = record["mma_sync_peak"]["warps_per_sm"], record["mma_sync_peak"]["warp_tile"]
        out.append({"name": f"mma.sync register peak, {warps} warps of {wm}x{wn}", "tflops": record["mma_sync_tflops"],
                    "measured": True, "datasheet": fp16})
    if "wgmma_tflops" in record:
        best = max(record["wgmma_peak"], key=lambda r: r["flop_per_sm_cycle"])
        out.append({"name": f"wgmma peak, {best['warpgroups']} warpgroups of m64n{best['n']}k16",
                    "tflops": record["wgmma_tflops"], "measured": True, "datasheet": fp16})
    out.append({"name": "cuBLAS fp16", "tflops": record["cublas_tflops"], "measured": True, "datasheet": fp16})
    if fp16:
        out.append({"name": "datasheet dense fp16 tensor", "tflops": fp16, "measured": False, "datasheet": fp16})
    return out


def format_ceilings(record: dict) -> str:
    """The chain as a table, roof by roof against the datasheet, then each mma.sync bound beside the model."""
    lines = [f"{'roof':<44} {'measured':>9} {'datasheet':>10}"]
    for roof in roofs(record):
        measured = f"{roof['tflops']:9.1f}" if roof["measured"] else f"{'-':>9}"
        share = f" ({100 * roof['tflops'] / roof['datasheet']:.0f}%)" if roof["measured"] and roof["datasheet"] else ""
        sheet = f"{roof['datasheet']:10.1f}" if roof["datasheet"] else f"{'-':>10}"
        lines.append(f"{roof['name']:<44} {measured} {sheet}{share}  TFLOP/s")
    sheet_bw = record.get("datasheet_bandwidth_gbs")
    share = f" ({100 * record['bandwidth_gbs'] / sheet_bw:.0f}%)" if sheet_bw else ""
    lines.append(f"{'copy bandwidth (read + write)':<44} {record['bandwidth_gbs']:9.0f} "
                 f"{sheet_bw or '-':>10}{share}  GB/s")
    if record.get("mma_sync_bound"):
        lines += ["", f"{'mma.sync bound: warps/SM':<25} {'warp tile':>9} {'feed':>10} {'TFLOP/s':>8} {'model':>7} "
                      f"{'model binds at':<16} {'SM clock':>8} {'regs':>5}"]
        for r, m in zip(record["mma_sync_bound"], compare_with_measured(record["mma_sync_bound"])):
            tile = f"{r['warp_tile'][0]}x{r['warp_tile'][1]}"
            lines.append(f"{r['warps_per_sm']:>24}  {tile:>9} {r['feed']:>10} {r['tflops']:8.1f} "
                         f"{m['model_tflops']:7.1f} {m['bound']:<16} {r['clock_ghz']:6.2f}GHz {r['registers']:>5}")
    per_cycle = [(f"mma.sync, {r['warps_per_sm']} warps of {r['warp_tile'][0]}x{r['warp_tile'][1]}, {r['feed']}", r)
                 for r in record.get("mma_sync_bound", ()) if "flop_per_sm_cycle" in r]
    per_cycle += [(f"wgmma, {r['warpgroups']} warpgroups of m64n{r['n']}k16", r) for r in record.get("wgmma_peak", ())]
    if per_cycle:
        # mma.sync (HMMA) and wgmma (HGMMA) keep the tensor pipe "active" at different rates of work, so the
        # instructions compare by the matrix work an SM does per cycle
        lines += ["", f"{'flops per SM cycle, which the clock does not move':<52} {'flop/cycle':>10} {'SM clock':>9}"]
        lines += [f"{label:<52} {r['flop_per_sm_cycle']:>10.0f} {r['clock_ghz']:7.2f}GHz" for label, r in per_cycle]
    return "\n".join(lines)
