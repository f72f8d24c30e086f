# Question: what hgemm_course.gemm() costs over launching each tensor-core rung's kernel by hand (H200).
# Results: results/api_nvidia-h200_20261201T064356_b6ade6.json (within 0.8% for rungs 03-11 at 4096^3, 8192^3).
"""What `hgemm_course.gemm` costs over launching the kernel by hand, per tensor-core rung (needs a GPU).

Each rung runs, pipelined (no sync between calls, the same inputs), in these ways, in a fresh random
order every round so that the power-limited clock's drift falls alike on all of them:

  kernel      the loaded kernel called with its grid, block and arguments worked out beforehand
  launch      the rung's launcher into a preallocated C (what bench times)
  gemm_out    hgemm_course.gemm(a, b, rung, out=c)
  gemm        hgemm_course.gemm(a, b, rung): C from CuPy's pool with cupy.empty
  fill_first  cupy.full(0) then the launcher: what gemm() did before it stopped filling C (timed in
              a second alternation with `kernel` only: its light, memory-bound fill lets the clock
              rise, which would favour whatever ran next)

Before timing, gemm(out=) is verified against an FP32 reference with `out` poisoned with NaN. Host
cost is timed apart, on a 256^3 product whose kernel is shorter than the call, so the loop measures
Python and the driver only. Prints a table and writes one record per (rung, size): the medians of
each variant's time per call relative to `kernel` in the same round, and the host microseconds.

    python research/api_vs_launch.py --sizes 4096 8192 --out results/
"""
from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import cupy
import numpy as np

import hgemm_course
from hgemm_course.measurement import records, verification
from hgemm_course.library.ladder import get, registry
from hgemm_course.library.ladder.nvrtc_kernel import TemplateKernel


def kernel_call(rung, a, b, c):
    """The bare kernel launch behind a rung's launcher, with grid, block and arguments worked out once:
    the launcher runs once with TemplateKernel.launch replaced by a recorder of what it was asked."""
    asked = {}
    real_launch = TemplateKernel.launch
    TemplateKernel.launch = lambda kern, *operands: asked.update(kern=kern, operands=operands)
    try:
        rung.launch(a, b, c)
    finally:
        TemplateKernel.launch = real_launch
    kern, (a, b, c, *extra) = asked["kern"], asked["operands"]
    M, K = a.shape
    N = b.shape[1]
    fn, grid, block = kern.function(), kern.grid(M, N), (kern.threads,)
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K), *extra)
    return lambda: fn(grid, block, args, shared_mem=kern.smem_bytes)


def time_variants(variants: dict, calls: int, rounds: int, rng: random.Random) -> dict:
    """Per variant: (median ms per call, median of its ratio to ``kernel`` in the same round)."""
    ms = {k: [] for k in variants}
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for f in variants.values():                 # warm-up: compile, load, encode, allocate
        f()
    cupy.cuda.get_current_stream().synchronize()
    for _ in range(rounds):
        for name in rng.sample(list(variants), len(variants)):
            f = variants[name]
            start.record()
            for _ in range(calls):
                f()
            stop.record()
            stop.synchronize()
            ms[name].append(cupy.cuda.get_elapsed_time(start, stop) / calls)
    return {k: (statistics.median(v), statistics.median(x / y for x, y in zip(v, ms["kernel"])))
            for k, v in ms.items()}


def host_us(f, calls: int = 500, repeats: int = 5) -> float:
    """Median microseconds of Python and driver time per call of ``f`` (its kernel must be shorter)."""
    times = []
    for _ in range(repeats):
        cupy.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rungs", nargs="*", help="default: every NVRTC rung this GPU runs")
    p.add_argument("--sizes", nargs="+", type=int, default=[4096, 8192], help="M = N = K (default: 4096 8192)")
    p.add_argument("--calls", type=int, default=20, help="pipelined calls per timed batch (default 20)")
    p.add_argument("--rounds", type=int, default=11, help="batches per variant (default 11)")
    p.add_argument("--out", type=Path, help="folder for the JSON record (default: print only)")
    args = p.parse_args()
    rungs = [get(r) for r in args.rungs] or [r for r in registry().values() if r.backend == "nvrtc"]
    rng = random.Random(0)
    small = verification.random_inputs(256, 256, 256, seed=2, xp=cupy)[:2]
    rows = []
    for n in args.sizes:
        a, b, _ = verification.random_inputs(n, n, n, seed=1, xp=cupy)
        reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
        c = cupy.empty((n, n), cupy.float16)
        for rung in rungs:
            c.fill(cupy.nan)
            hgemm_course.gemm(a, b, rung.id, out=c)
            check = verification.compare(c, reference, K=n, rung=rung.id, seed=1, backend="gpu")
            if not check.passed:
                print(f"rung {rung.id} at {n}^3: gemm(out=) is wrong: {check}")
                return 1
            kernel = kernel_call(rung, a, b, c)
            timed = time_variants({"kernel": kernel, "launch": lambda: rung.launch(a, b, c),
                                   "gemm_out": lambda: hgemm_course.gemm(a, b, rung.id, out=c),
                                   "gemm": lambda: hgemm_course.gemm(a, b, rung.id)}, args.calls, args.rounds, rng)
            timed.update(time_variants({"kernel": kernel, "fill_first": lambda: rung.launch(
                a, b, cupy.full((n, n), 0, cupy.float16))}, args.calls, args.rounds, rng))
            c_small = cupy.empty((256, 256), cupy.float16)
            row = {"rung": rung.id, "M": n, "N": n, "K": n, "calls": args.calls, "rounds": args.rounds,
                   "host_us": {"kernel": host_us(kernel_call(rung, *small, c_small)),
                               "launch": host_us(lambda: rung.launch(*small, c_small)),
                               "gemm_out": host_us(lambda: hgemm_course.gemm(*small, rung.id, out=c_small)),
                               "gemm": host_us(lambda: hgemm_course.gemm(*small, rung.id))}}
            for name, (ms, ratio) in timed.items():
                row[f"{name}_ms"] = ms
                row[f"{name}_vs_kernel"] = ratio
            rows.append(row)
            print(f"{rung.id} {n:5d}  " + "  ".join(f"{k} {ms:.4f} ms ({ratio:.3f}x)" for k, (ms, ratio) in timed.items())
                  + "  host us " + " ".join(f"{k} {v:.1f}" for k, v in row["host_us"].items()), flush=True)
    print("\nrung  size   kernel ms  launch/kernel  gemm(out=)/kernel  gemm()/kernel  fill-first/kernel  "
          "host us: launch  gemm(out=)")
    for r in rows:
        print(f"{r['rung']:>4} {r['M']:5d}  {r['kernel_ms']:9.4f}  {r['launch_vs_kernel']:13.3f}  "
              f"{r['gemm_out_vs_kernel']:17.3f}  {r['gemm_vs_kernel']:13.3f}  {r['fill_first_vs_kernel']:17.3f}  "
              f"{r['host_us']['launch']:15.1f}  {r['host_us']['gemm_out']:10.1f}")
    if args.out:
        print("wrote", records.write_run(rows, kind="api", folder=args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
