# Question: what TMA's L2 promotion (the size of the L2 fill a tensor-map load asks for) does to rung 07.
# Results: results/tuning/2026-12-02/ablate_l2_promotion* (JSON with provenance; ncu CSVs).
"""Rung 07 with its tensor maps encoded for L2 promotion of 256 bytes (the rung's), 128 bytes and none.

    python3 research/ablate_l2_promotion.py --record [--sizes 4096 8192] [--ncu-size 8192]     # or --out DIR
    python3 research/ablate_l2_promotion.py --launch 128 --size 8192       # two launches, for ncu

A promotion asks L2 to fetch from DRAM in pieces of that size around each miss, so that the neighbouring
sectors a box will read next are already there. Each variant is verified, then alternated launch by launch
with cuBLAS and with its timing build (cycles and clock, hgemm_course/library/cta_clock.py); ncu counts DRAM bytes,
L2 hit rate and L2 sectors read.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
from pathlib import Path

from hgemm_course.library import tensormap
from hgemm_course.library.paths import raw_dir
from hgemm_course.measurement import ncu as ncu_csv, profile, records, timing, vendors, verification
from hgemm_course.library.ladder import r07_tma

PROMOTIONS = (256, 128, 0)
NCU_METRICS = (ncu_csv.SM_CLOCK, "sm__cycles_elapsed.max", "dram__bytes_read.sum", "lts__t_sector_hit_rate.pct",
               "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_requests_srcunit_tex_op_read.sum",
               ncu_csv.SCALAR_METRICS["duration_ns"])


def launch_with(promotion: int):
    kernel = r07_tma.kernel()
    tiles = r07_tma.tiles_for(kernel.target)

    def launch(a, b, c):
        (M, K), N = a.shape, b.shape[1]
        maps = (tensormap.encode(dataclasses.replace(
                    tensormap.TileMap2D(a.data.ptr, M, K, K * 2, tiles.bm, tiles.bk), l2_promotion=promotion)),
                tensormap.encode(dataclasses.replace(
                    tensormap.TileMap2D(b.data.ptr, K, N, N * 2, tiles.bk, 64), l2_promotion=promotion)))
        r07_tma.kernel().launch(a, b, c, *maps)
    return launch


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="folder for the report and ncu's CSVs")
    p.add_argument("--record", action="store_true", help="write the report to the recorded "
                   "results/probes/ablate_l2_promotion/ and ncu's CSVs to results/ncu/ablate_l2_promotion/")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--ncu-size", type=int, default=0)
    p.add_argument("--launch", type=int, help="launch with this promotion twice at --size and exit (for ncu)")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--reread", type=Path, metavar="DIR",
                   help="fill the ncu fields of DIR/ablate_l2_promotion.json from the CSVs beside it, and exit")
    args = p.parse_args()
    raw = args.out or (raw_dir("ablate_l2_promotion") if args.record else None)     # ncu's CSVs
    if args.reread:
        path = args.reread / "ablate_l2_promotion.json"
        data = json.loads(path.read_text())
        size = data["provenance"]["ncu_size"]
        for row in data["variants"]:
            got = ncu_csv.read_raw(args.reread / f"ncu_l2_promotion_{row['l2_promotion']}_{size}.csv")[0]["metrics"]
            row["ncu"] = {str(size): {m: got.get(m) for m in NCU_METRICS}}
        data["provenance"]["ncu_reread"] = "ncu fields read from the CSVs by --reread"
        path.write_text(json.dumps(data, indent=1) + "\n")
        return 0
    import cupy

    if args.launch is not None:
        a, b, _ = verification.random_inputs(args.size, args.size, args.size, xp=cupy)
        c = cupy.empty((args.size, args.size), cupy.float16)
        for _ in range(2):
            launch_with(args.launch)(a, b, c)
        cupy.cuda.runtime.deviceSynchronize()
        return 0
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    rows = []
    for promotion in PROMOTIONS:
        launch = launch_with(promotion)
        row = {"l2_promotion": promotion, "timing": {}, "verify": []}
        for M, N, K in ((1000, 1000, 1024), *((n, n, n) for n in args.sizes)):
            a, b, seed = verification.random_inputs(M, N, K, xp=cupy)
            c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
            launch(a, b, c)
            check = verification.compare(c, cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32)), K=K, seed=seed)
            row["verify"].append(check.summary())
            if not check.passed:
                raise SystemExit(check.summary())
        for n in args.sizes:
            sets = timing.input_sets(n, n, n, l2)
            t = timing.time_paired(launch, vendors.cublas, sets, warmup=5, repeats=args.repeats)
            clocked = timing.time_with_clock(launch, sets)
            ms, cms = statistics.median(t.fn_ms), statistics.median(t.reference_ms)
            row["timing"][n] = {"ms": ms, "cublas_ms": cms, "pct_cublas": 100 * cms / ms,
                                "pct_cublas_pairs": [100 * c / f for f, c in zip(t.fn_ms, t.reference_ms)],
                                **clocked.summary()}
        if args.ncu_size and raw:
            raw.mkdir(parents=True, exist_ok=True)
            log = raw / f"ncu_l2_promotion_{promotion}_{args.ncu_size}.csv"
            subprocess.run([profile.require_ncu(), "--clock-control", "none", "--cache-control", "all",
                            "--print-units", "base", "--csv", "--page", "raw", "--metrics", ",".join(NCU_METRICS),
                            "-k", "regex:^k07", "--launch-skip", "1", "--launch-count", "1", "--log-file", str(log),
                            sys.executable, __file__, "--launch", str(promotion), "--size", str(args.ncu_size)],
                           check=True, capture_output=True)
            got = ncu_csv.read_raw(log)[0]["metrics"]
            row["ncu"] = {args.ncu_size: {m: got.get(m) for m in NCU_METRICS}}
        rows.append(row)
        print(f"L2 promotion {promotion:>3} B: " + ", ".join(
            f"{n}: {t['pct_cublas']:.1f}% of cuBLAS, {t['cycles'] / 1e6:.3f} Mcycles at {t['clock_ghz']:.3f} GHz"
            for n, t in row["timing"].items()), flush=True)
    if args.out or args.record:
        print("written", records.write_probe({"variants": rows}, probe="ablate_l2_promotion", folder=args.out,
                                             extra={"sizes": args.sizes, "repeats": args.repeats,
                                                    "ncu_size": args.ncu_size}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
