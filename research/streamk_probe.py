"""Question: does rung 12 (stream-K) compute C right on every shape, bit-identically from launch to launch,
and how does it time against rung 11 and cuBLAS, for each number of whole waves it divides by K?
Result file: results/probes/streamk_probe/streamk_probe_<gpu>_<date>.json (written with --record; --out DIR writes it
there instead)."""
from __future__ import annotations

import argparse

import cupy

from hgemm_course.measurement import clocks, records, timing, vendors, verification
from hgemm_course.library.ladder import get, r12_streamk

VERIFY_SHAPES = [(257, 136, 72), (128, 256, 64), (64, 64, 16384), (1000, 1992, 8192), (300, 5000, 1000),
                 (1024, 1024, 1024), (3072, 3072, 3072), (2048, 2048, 16384), (4096, 4096, 4096), (5000, 3000, 2000)]
TIME_SHAPES = [(3072, 3072, 3072), (4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 16384),
               (3072, 3072, 16384), (6144, 4096, 4096)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=None, help="write the report to this folder")
    ap.add_argument("--record", action="store_true", help="write it to the recorded results/probes/streamk_probe/")
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    report = {"verify": [], "repeat": [], "timing": []}
    for sk in (0, 1, 2):
        for M, N, K in VERIFY_SHAPES:
            a, b, seed = verification.random_inputs(M, N, K, xp=cupy)
            c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
            r12_streamk.launch(a, b, c, sk_waves=sk)
            res = verification.compare(c, cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32)), K=K, rung="12",
                                       seed=seed)
            report["verify"].append({"sk_waves": sk, "shape": [M, N, K], "passed": res.passed,
                                     "rel_fro_err": res.rel_fro_err, "summary": res.summary()})
            print(f"verify sk={sk} {M}x{N}x{K}: {res.summary()}", flush=True)
    for M, N, K in [(3072, 3072, 3072), (2048, 2048, 16384), (1000, 1992, 8192)]:
        a, b, _ = verification.random_inputs(M, N, K, xp=cupy)
        first = cupy.empty((M, N), dtype=cupy.float16)
        r12_streamk.launch(a, b, first)
        same = 0
        for _ in range(50):
            c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
            r12_streamk.launch(a, b, c)
            same += bool(cupy.array_equal(c.view(cupy.uint16), first.view(cupy.uint16)))
        report["repeat"].append({"shape": [M, N, K], "bit_identical_of_50": same})
        print(f"repeat {M}x{N}x{K}: {same}/50 bit-identical", flush=True)
    clock = clocks.sm_clock_reader()
    rung11 = get("11")
    for M, N, K in TIME_SHAPES:
        sets = timing.input_sets(M, N, K, 60 << 20)
        timing.settle(vendors.cublas, sets)
        variants = {"11": rung11.launch}
        for sk in (0, 1, 2):
            variants[f"12 sk_waves={sk}"] = lambda a, b, c, sk=sk: r12_streamk.launch(a, b, c, sk_waves=sk)
        for name, fn in variants.items():
            t = timing.time_paired(fn, vendors.cublas, sets, warmup=5, repeats=args.repeats, clock=clock)
            got = t.summary()
            report["timing"].append({"variant": name, "shape": [M, N, K], **got})
            print(f"time {M}x{N}x{K} {name:>14}: {got['ms']:.3f} ms, {got['pct_cublas']:5.1f}% of cuBLAS "
                  f"(clock {got['sm_clock_mhz_median']} MHz)", flush=True)
        del sets
        cupy.get_default_memory_pool().free_all_blocks()
    if args.out or args.record:
        print("written", records.write_probe(report, probe="streamk_probe", folder=args.out))
    print("\nsummary")
    for t in report["timing"]:
        print(f"{'x'.join(map(str, t['shape'])):>18} {t['variant']:>14} {t['pct_cublas']:6.1f}%")
    print("verify failures:", sum(not v["passed"] for v in report["verify"]))


if __name__ == "__main__":
    main()
