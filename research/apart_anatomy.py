# Question: where does rung 12 split-K apart's time go beyond its k-iterations, against cuBLASLt at the same shapes?
"""Times, at each shape where the plan splits apart, its launch whole and torch.matmul (cuBLASLt), with CUDA
events over back-to-back launches, inputs rotated past the L2 (needs a GPU); ``--ncu`` launches each twice for
Nsight Compute. The record of 2026-12-03T151455 was taken when split apart was two kernels (commit 4744937): it
times the first kernel and the adder after it apart too ("first_us", "adder_us"); the adding has since moved into
the first kernel, so only "whole_us" remains.

    python research/apart_anatomy.py --record     # the report to the recorded results/probes/apart_anatomy/
    python research/apart_anatomy.py --out DIR    # or to DIR
    python research/apart_anatomy.py --ncu 256x256x65536     # one launch of each, for ncu to profile
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import cupy

import hgemm_course
from hgemm_course.library import device, plan
from hgemm_course.measurement import clocks, records, timing, vendors, verification
from hgemm_course.library.ladder import r12_streamk as r12

SHAPES = ["256x256x65536", "512x512x16384", "384x768x24576", "100x1000x9992", "200x136x20000",
          "32x4096x14336", "32x2048x16384"]
LAUNCHES = 40


def parts(M, N, K, sets):
    """{"whole": a call of no arguments per input set} of the plan's split-apart launch; None where it runs none."""
    p = plan.plan(M, N, K)
    opts = dict(p.options)
    if not opts.get("apart"):
        return None, p
    tiles, sup, cons = opts["tiles"], opts["super_mn"], opts["consumers"]
    return {"whole": [r12.launch(a, b, c, tiles, sup, 1, cons, 0, apart=True) for a, b, c in sets]}, p


def time_us(calls, rounds=7):
    """Median over rounds of the mean time of LAUNCHES back-to-back calls, rotating over the input sets."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for call in calls:
        call()
    per = []
    for _ in range(rounds):
        start.record()
        for i in range(LAUNCHES):
            calls[i % len(calls)]()
        end.record()
        end.synchronize()
        per.append(cupy.cuda.get_elapsed_time(start, end) * 1e3 / LAUNCHES)
    return statistics.median(per), min(per), max(per)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, help="folder for the report")
    ap.add_argument("--record", action="store_true", help="write it to the recorded results/probes/apart_anatomy/")
    ap.add_argument("--shapes", nargs="+", default=SHAPES)
    ap.add_argument("--ncu", default=None, help="MxNxK: launch each part twice, for ncu")
    args = ap.parse_args()
    device.require_gpu("apart anatomy")
    torch_mm = vendors.vendors().get(vendors.CUBLASLT_NAME)
    l2 = cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"]
    if args.ncu:
        M, N, K = (int(x) for x in args.ncu.split("x"))
        a = cupy.random.uniform(-1, 1, (M, K), dtype=cupy.float32).astype(cupy.float16)
        b = cupy.random.uniform(-1, 1, (K, N), dtype=cupy.float32).astype(cupy.float16)
        c = cupy.empty((M, N), cupy.float16)
        for _ in range(2):
            hgemm_course.gemm(a, b, out=c)
            torch_mm(a, b, c)
        cupy.cuda.Device().synchronize()
        return 0
    rows = []
    clock = clocks.sm_clock_reader()
    for shape in args.shapes:
        M, N, K = (int(x) for x in shape.split("x"))
        sets = []
        for _ in range(timing.input_sets_needed(M, N, K, l2)):
            a = cupy.random.uniform(-1, 1, (M, K), dtype=cupy.float32).astype(cupy.float16)
            b = cupy.random.uniform(-1, 1, (K, N), dtype=cupy.float32).astype(cupy.float16)
            sets.append((a, b, cupy.empty((M, N), cupy.float16)))
        calls, p = parts(M, N, K, sets)
        if calls is None:
            print(f"{shape}: the plan runs no split apart here ({p.reason[:60]})")
            continue
        ref = sets[0][0].astype(cupy.float32) @ sets[0][1].astype(cupy.float32)
        c = sets[0][2]
        c.fill(cupy.nan)
        calls["whole"][0]()
        check = verification.compare(c, ref, K=K)
        row = {"M": M, "N": N, "K": K, "tiles": [p.options["tiles"].bm, p.options["tiles"].bn],
               "check": str(check), "input_sets": len(sets)}
        for name, fns in calls.items():
            row[name + "_us"] = time_us(fns)
        row["torch_us"] = time_us([(lambda s=s: torch_mm(*s)) for s in sets])
        reading = clock()
        row["sm_clock_mhz"] = reading.mhz if reading else None
        rows.append(row)
        w, t = row["whole_us"][0], row["torch_us"][0]
        print(f"{shape:>14} {row['tiles'][0]}x{row['tiles'][1]}: split apart {w:6.1f} us, torch {t:6.1f} us "
              f"({t / w:.0%})  {str(check)[:40]}")
    if args.out or args.record:
        print("recorded", records.write_probe({"rows": rows}, probe="apart_anatomy", folder=args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
