"""Question: where rung 11's 128 x 256 tiles make too few tiles to fill the GPU's waves (1-3 waves), do
128 x 128 tiles (twice the tiles, each half the work) serve better, in rung 11 or in rung 12, than what
gemm()'s plan runs today? And how much slower is a 128 x 128 tile per FLOP where both tile sizes fill their
waves alike (4096^3: 3.88 and 7.76 waves, 97% of the slots each)? And at such shapes, how do rung 11 with and
without clusters and rung 12's splits (sk_waves 0-2) rank, against the plan's pick (--variants)? Which of rung 06's
super tiles leaves rung 11 fewest empty launch positions, and does that show in time ("11 super ...")? Do cuBLAS-
like tiles of other widths (256x128; 128x192, wgmma's n192; 128x64 for small shapes) serve where 128x256 fills its
waves poorly? Do the 128 x 128 tiles fill their waves better on shorter super tiles, as the 128 x 256 ones do
("... super MxN")?
Every variant is verified first (random inputs, C poisoned with NaN, FP32 reference) on odd shapes.
Result file: results/probes/tile_probe/tile_probe_<gpu>_<date>.json (written with --record; --out DIR writes it
there instead)."""
from __future__ import annotations

import argparse
from dataclasses import replace
from functools import partial

import cupy

from hgemm_course.measurement import clocks, records, timing, vendors, verification
from hgemm_course.library.ladder import r11_persistent, r12_streamk
from hgemm_course.library.ladder.r10_warp_specialized import WarpSpecializedTiles
from hgemm_course.library.plan import _launch_planned, plan

SQUARE_128 = WarpSpecializedTiles(bm=128, bn=128, bk=64, stages=6)   # 6 stages: 226 KiB of shared memory
TALL_256 = WarpSpecializedTiles(bm=256, bn=128, bk=64, stages=3)     # cuBLAS's tile at 4096^3; 3 stages: 208 KiB
WIDE_192 = WarpSpecializedTiles(bm=128, bn=192, bk=64, stages=4)     # 4 stages: 194 KiB; three B panels, no pairs
NARROW_64 = WarpSpecializedTiles(bm=128, bn=64, bk=64, stages=8)     # cuBLAS's tile at 1024^3; 8 stages: 210 KiB
VARIANTS = {
    "plan": _launch_planned,
    "11": r11_persistent.launch,
    "11 no cluster": partial(r11_persistent.launch, cluster_m=1),
    "12 sk0": partial(r12_streamk.launch, sk_waves=0),
    "12 sk1": partial(r12_streamk.launch, sk_waves=1),
    "12 sk2": partial(r12_streamk.launch, sk_waves=2),
    "12 no cluster sk0": partial(r12_streamk.launch, cluster_m=1, sk_waves=0),
    "12 no cluster sk1": partial(r12_streamk.launch, cluster_m=1, sk_waves=1),
    "11 128x128": partial(r11_persistent.launch, tiles=SQUARE_128),
    "11 128x128 no cluster": partial(r11_persistent.launch, tiles=SQUARE_128, cluster_m=1),
    "11 128x128 s4 no cluster": partial(r11_persistent.launch, tiles=replace(SQUARE_128, stages=4), cluster_m=1),
    **{f"11 128x128 s4 no cluster super {m}x{n}": partial(r11_persistent.launch, tiles=replace(SQUARE_128, stages=4),
                                                           cluster_m=1, super_mn=(m, n))
       for m, n in ((1, 1), (4, 2), (8, 2), (8, 1))},
    "12 128x128 sk0": partial(r12_streamk.launch, tiles=SQUARE_128, sk_waves=0),
    "12 128x128 sk1": partial(r12_streamk.launch, tiles=SQUARE_128, sk_waves=1),
    "12 128x128 no cluster sk0": partial(r12_streamk.launch, tiles=SQUARE_128, cluster_m=1, sk_waves=0),
    "12 128x128 no cluster sk1": partial(r12_streamk.launch, tiles=SQUARE_128, cluster_m=1, sk_waves=1),
    "11 256x128": partial(r11_persistent.launch, tiles=TALL_256),
    "11 256x128 no cluster": partial(r11_persistent.launch, tiles=TALL_256, cluster_m=1),
    "12 256x128 sk0": partial(r12_streamk.launch, tiles=TALL_256, sk_waves=0),
    "11 super 8x2": partial(r11_persistent.launch, super_mn=(8, 2)),
    "11 super 4x2": partial(r11_persistent.launch, super_mn=(4, 2)),
    "11 super 8x1": partial(r11_persistent.launch, super_mn=(8, 1)),
    "11 super 2x1": partial(r11_persistent.launch, super_mn=(2, 1)),
    "11 128x192": partial(r11_persistent.launch, tiles=WIDE_192, cluster_m=1),
    "12 128x192 sk0": partial(r12_streamk.launch, tiles=WIDE_192, cluster_m=1, sk_waves=0),
    "12 128x192 sk1": partial(r12_streamk.launch, tiles=WIDE_192, cluster_m=1, sk_waves=1),
    **{f"11 128x64 s{s} no cluster super 1x1": partial(r11_persistent.launch, tiles=replace(NARROW_64, stages=s),
                                                        cluster_m=1, super_mn=(1, 1)) for s in (4, 8)},
    "11 128x64 s8 no cluster": partial(r11_persistent.launch, tiles=NARROW_64, cluster_m=1),
}
FIRST_RUN = ["plan", "11 128x128", "11 128x128 no cluster", "12 128x128 sk0", "12 128x128 sk1"]
VERIFY_SHAPES = [(257, 136, 72), (1000, 1992, 1024), (640, 768, 4096), (3000, 2000, 1000), (2304, 2304, 2048)]
TIME_SHAPES = [(4096, 4096, 4096), (2304, 2304, 2048), (2048, 2560, 1024), (3072, 3072, 3072),
               (3072, 2048, 4096), (2560, 2560, 4096), (3584, 3584, 2048), (2304, 4608, 8192),
               (3072, 3072, 16384), (2048, 2048, 4096), (7168, 7168, 2048), (5120, 5120, 5120)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=None, help="write the report to this folder")
    ap.add_argument("--record", action="store_true", help="write it to the recorded results/probes/tile_probe/")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--variants", nargs="+", default=FIRST_RUN, choices=list(VARIANTS))
    ap.add_argument("--shapes", nargs="+", default=None, help="MxNxK to time (default: TIME_SHAPES)")
    ap.add_argument("--rounds", type=int, default=1, help="time the variants this many times in turn (A B A B ..)")
    args = ap.parse_args()
    variants = {name: VARIANTS[name] for name in args.variants}
    time_shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes] if args.shapes else TIME_SHAPES
    report = {"verify": [], "timing": []}
    for name, fn in variants.items():
        for M, N, K in VERIFY_SHAPES:
            a, b, seed = verification.random_inputs(M, N, K, xp=cupy)
            c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
            fn(a, b, c)
            res = verification.compare(c, cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32)), K=K, rung=name,
                                       seed=seed)
            report["verify"].append({"variant": name, "shape": [M, N, K], "passed": res.passed,
                                     "rel_fro_err": res.rel_fro_err, "summary": res.summary()})
            print(f"verify {name} {M}x{N}x{K}: {res.summary()}", flush=True)
    failed = {v["variant"] for v in report["verify"] if not v["passed"]}
    clock = clocks.sm_clock_reader()
    for M, N, K in time_shapes:
        sets = timing.input_sets(M, N, K, 60 << 20)
        timing.settle(vendors.cublas, sets)
        for rnd, (name, fn) in ((r, v) for r in range(args.rounds) for v in variants.items()):
            if name in failed:
                continue
            t = timing.time_paired(fn, vendors.cublas, sets, warmup=5, repeats=args.repeats, clock=clock)
            got = t.summary()
            p = plan(M, N, K)
            report["timing"].append({"variant": name, "shape": [M, N, K], **got,
                                     "plan": f"rung {p.rung} {p.options_text()}", "round": rnd})
            print(f"time {M}x{N}x{K} {name:>22}: {got['ms']:.4f} ms, {got['pct_cublas']:5.1f}% of cuBLAS "
                  f"(clock {got['sm_clock_mhz_median']} MHz)", flush=True)
        del sets
        cupy.get_default_memory_pool().free_all_blocks()
    if args.out or args.record:
        print("written", records.write_probe(report, probe="tile_probe", folder=args.out))
    print("\nsummary (% of cuBLAS, paired)")
    shapes = list(dict.fromkeys(tuple(t["shape"]) for t in report["timing"]))
    names = [n for n in variants if n not in failed]
    print(f"{'shape':>16} " + " ".join(f"{n:>14.14}" for n in names))
    for s in shapes:
        for rnd in range(args.rounds):
            row = {t["variant"]: t["pct_cublas"] for t in report["timing"] if tuple(t["shape"]) == s and t["round"] == rnd}
            print(f"{'x'.join(map(str, s)):>16} " + " ".join(f"{row.get(n, float('nan')):14.1f}" for n in names))
    print("verify failures:", sorted(failed) or "none")


if __name__ == "__main__":
    main()
