# Question: is rung 11 right on the H200 in every configuration (clusters, 1 consumer, few CTAs), and how fast against 10?
# Results: results/tuning/2026-11-29_h200_hopper_r11_verify_rung11.json, results/tuning/2026-12-01/verify_rung11_round{3,4}.json;
# from now on results/probes/verify_rung11_h200/ (the report) and results/logs/verify_rung11_h200/ (its table).
"""Verify rung 11 (persistent grid, TMA-store epilogue) on the H200, then time rungs 10 and 11 against
cuBLAS; print a short table last, write everything as JSON with provenance.

    timeout 300 python3 research/verify_rung11_h200.py [--out DIR] [--budget 240] [--sizes 2048 4096 8192]

Verification comes first and runs smallest first, one line per check as it finishes: fresh random
fp16 inputs, NaN-poisoned C, relative Frobenius error against cupy.matmul in FP32 (< 1e-3, max error
< 4e-3 of max |ref|), the first wrong element named on a failure. Besides the default launch, a grid
of 1 or 3 CTAs makes each CTA walk many tiles (the ring's parities carry over from tile to tile), and
the 256x128 variant puts two m64 products on each consumer. Every timed size is verified for both
rungs before it is timed.

A hung kernel cannot be interrupted, so nothing here waits on one blindly: each check polls a CUDA
event for at most --check-budget seconds and otherwise writes what it has and exits (3); the whole
run has a --budget after which faulthandler prints every thread's stack and exits (1).

Timing is hgemm_course.measurement.bench.bench's: each rung verified again and timed with CUDA events per launch,
--rounds x 10 launches after a warm-up, cuBLAS timed before and after each rung in the same process,
input sets rotated past L2, medians.
Exit status: 0 when everything was right, 1 on any wrong result or error, 3 on a hang.
"""
from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hgemm_course.measurement import bench, verification
from hgemm_course.library.paths import results_dir
from hgemm_course.measurement.records import write_probe
from hgemm_course.library.ladder import get, r10_warp_specialized, r11_persistent
from hgemm_course.library.ladder.r10_warp_specialized import WarpSpecializedTiles

# (rung, (M, N, K), launch keyword arguments, label), smallest work first.
CHECKS = (
    ("11", (128, 256, 64), {}, "default"),
    ("11", (257, 136, 64), {}, "default"),
    ("11", (257, 136, 64), {"cluster_m": 1, "max_ctas": 1}, "1 CTA"),
    ("11", (1000, 1000, 1024), {}, "default"),
    ("11", (1000, 1000, 1024), {"cluster_m": 1, "max_ctas": 1}, "1 CTA"),
    ("11", (1000, 1000, 1024), {"cluster_m": 1, "max_ctas": 3}, "3 CTAs"),
    ("11", (1000, 1000, 1024), {"tiles": WarpSpecializedTiles(256, 128, 64, 3)}, "256x128 s3"),
    ("11", (8192, 128, 4096), {}, "default"),
    ("11", (4096, 2048, 1024), {}, "default"),
    ("11", (4096, 2048, 1024), {"cluster_m": 1, "max_ctas": 7}, "7 CTAs"),
    # clusters of 2 sharing B by multicast: an odd tile-row count (257 rows: 3 tiles, the last cluster's
    # second CTA computes past M), one or two clusters walking every tile, both tile shapes
    ("11", (128, 256, 64), {"cluster_m": 2}, "cluster 2"),
    ("11", (257, 136, 64), {"cluster_m": 1}, "cluster 1"),
    ("11", (257, 136, 64), {"cluster_m": 2}, "cluster 2"),
    ("11", (257, 136, 64), {"cluster_m": 2, "max_ctas": 2}, "1 cluster"),
    ("11", (1000, 1000, 1024), {"cluster_m": 2}, "cluster 2"),
    ("11", (1000, 1000, 1024), {"cluster_m": 2, "max_ctas": 4}, "2 clusters"),
    ("11", (1000, 1000, 1024), {"cluster_m": 2, "tiles": WarpSpecializedTiles(256, 128, 64, 3)}, "256x128 c2"),
    ("11", (1000, 1000, 1024), {"cluster_m": 2, "tiles": WarpSpecializedTiles(128, 128, 64, 4),
                                "super_mn": (8, 4)}, "128x128 c2"),
    ("11", (8192, 128, 4096), {"cluster_m": 2}, "cluster 2"),
    ("11", (4096, 2048, 1024), {"cluster_m": 2}, "cluster 2"),
    # one consumer warpgroup (seed 001's 1p1c), with and without clusters
    ("11", (257, 136, 72), {"consumers": 1, "tiles": WarpSpecializedTiles(64, 256, 64, 4)}, "1 consumer"),
    ("11", (1000, 1000, 1024), {"consumers": 1, "tiles": WarpSpecializedTiles(128, 128, 64, 5), "cluster_m": 1,
                                "max_ctas": 3}, "1 consumer 3 CTAs"),
    ("11", (4096, 2048, 1024), {"consumers": 1, "tiles": WarpSpecializedTiles(64, 256, 64, 4)}, "1 consumer"),
)
MODULES = {"10": r10_warp_specialized, "11": r11_persistent}
OTHER_CLUSTER = {"cluster_m": 3 - r11_persistent.CLUSTER_M}     # timed beside the default: with clusters or without


class Hang(RuntimeError):
    pass


def wait_for_gpu(what: str, budget_s: float) -> float:
    """Seconds until the work queued so far has finished, polling an event; Hang past budget_s."""
    import cupy

    done = cupy.cuda.Event(disable_timing=True)
    done.record()
    t0 = time.perf_counter()
    while not done.done:
        if time.perf_counter() - t0 > budget_s:
            raise Hang(f"{what} has not finished after {budget_s:.0f} s: the kernel hangs")
        time.sleep(0.0005)
    return time.perf_counter() - t0


def check(rung: str, a, b, reference, kwargs: dict, budget_s: float) -> dict:
    """One launch on NaN-poisoned C, compared on the GPU; the host compare names the first wrong element."""
    import cupy

    M, K = a.shape
    N = b.shape[1]
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    wait_for_gpu("setting up", budget_s)
    MODULES[rung].launch(a, b, c, **kwargs)
    seconds = wait_for_gpu(f"rung {rung} at {M}x{N}x{K} {kwargs}", budget_s)
    c32 = c.astype(cupy.float32)
    nonfinite = int(cupy.count_nonzero(~cupy.isfinite(c32)))
    ref_max = float(cupy.abs(reference).max()) or 1.0
    finite = nonfinite == 0
    rel = float(cupy.linalg.norm(c32 - reference) / (cupy.linalg.norm(reference) or 1.0)) if finite else float("inf")
    max_err = float(cupy.abs(c32 - reference).max()) / ref_max if finite else float("inf")
    passed = finite and rel < verification.REL_FRO_TOL and max_err <= verification.MAX_ERR_TOL
    first_bad = None if passed else verification.compare(c, reference, K=K, rung=rung).first_bad
    return {"rel_fro_err": rel, "max_err": max_err, "nonfinite": nonfinite, "first_bad": first_bad,
            "passed": passed, "seconds": round(seconds, 4)}


def all_checks(sizes) -> list[tuple]:
    timed = [(rung, (n, n, n), kwargs, label) for n in sorted(sizes)
             for rung, kwargs, label in (("11", {}, "default"), ("11", OTHER_CLUSTER, "other cluster"), ("10", {}, "default"))]
    return sorted(CHECKS + tuple(timed), key=lambda c: c[1][0] * c[1][1] * c[1][2])


def sass_counts() -> dict:
    """Instruction counts in the SASS of rung 11's default (needs cuobjdump)."""
    if shutil.which("cuobjdump") is None:
        return {"cuobjdump": "not on the PATH"}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k11.cubin"
        path.write_bytes(r11_persistent.kernel().compile().cubin)
        sass = subprocess.run(["cuobjdump", "--dump-sass", str(path)], capture_output=True, text=True,
                              check=False).stdout
    return {name: len(re.findall(rf"\b{name}\b", sass)) for name in ("HGMMA", "UTMALDG", "UTMASTG", "STSM",
                                                                      "USETMAXREG", "STG")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT"), help="folder for the report and its table (default: the "
                   "recorded results/probes/verify_rung11_h200/ and results/logs/verify_rung11_h200/)")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--rounds", type=int, default=3, help="timed launches per rung and size, in tens (3 -> median of 30)")
    p.add_argument("--budget", type=float, default=240.0, help="seconds for the whole run")
    p.add_argument("--check-budget", type=float, default=20.0, help="seconds one check may take on the GPU")
    args = p.parse_args(argv)
    faulthandler.dump_traceback_later(args.budget, exit=True)
    t0 = time.time()
    folder = Path(args.out) if args.out else results_dir() / "logs" / "verify_rung11_h200"     # the table
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    out = {"checks": [], "rung_11": {"tiles": r11_persistent.TILES.__dict__, "super_tile": r11_persistent.SUPER,
                                     "smem_bytes": r11_persistent.smem_bytes(r11_persistent.TILES)}}

    def write() -> None:
        report = json.loads(json.dumps({k: v for k, v in out.items() if k != "provenance"}, default=str))
        written[:] = [write_probe(report, probe="verify_rung11_h200", folder=args.out, replace=written[0] if written
                                  else None, extra={"argv": sys.argv[1:], "wall_s": round(time.time() - t0, 1)})]
        out["provenance"] = json.loads(written[0].read_text())["provenance"]

    import cupy

    status = 0
    reference_of = {}
    for rung, (M, N, K), kwargs, label in all_checks(args.sizes):
        entry = {"rung": rung, "label": label, "M": M, "N": N, "K": K, "kwargs": repr(kwargs)}
        try:
            if (M, N, K) not in reference_of:
                reference_of.clear()
                cupy.get_default_memory_pool().free_all_blocks()
                a, b, _ = verification.random_inputs(M, N, K, seed=M + 3 * N + 7 * K, xp=cupy)
                reference_of[(M, N, K)] = (a, b, cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32)))
            a, b, reference = reference_of[(M, N, K)]
            entry.update(check(rung, a, b, reference, kwargs, args.check_budget))
        except Hang as exc:
            entry.update(passed=False, error=str(exc))
            out["checks"].append(entry)
            print(f"HANG  rung {rung} {label:<11} {M}x{N}x{K}: {exc}", flush=True)
            write()
            os._exit(3)
        except Exception as exc:  # noqa: BLE001  (a refused launch or a sticky CUDA error: report, stop, fail)
            entry.update(passed=False, error=f"{type(exc).__name__}: {exc}")
        out["checks"].append(entry)
        ok = entry["passed"]
        detail = (f"rel {entry['rel_fro_err']:.2e} max {entry['max_err']:.2e}" if "rel_fro_err" in entry
                  else entry.get("error", ""))
        if not ok and entry.get("first_bad"):
            detail += f"; first wrong element {entry['first_bad']}"
        print(f"{'ok   ' if ok else 'WRONG'} rung {rung} {label:<11} {M}x{N}x{K}: {detail}", flush=True)
        if not ok:
            status = 1
            if "error" in entry:
                break                         # the CUDA context may be unusable after an error
    reference_of.clear()
    write()

    out["sass_rung_11"] = sass_counts()
    table = ""
    if status == 0:
        other = dataclasses.replace(get("11"), id=f"11 cluster {OTHER_CLUSTER['cluster_m']}",
                                    launch=functools.partial(r11_persistent.launch, **OTHER_CLUSTER))
        records = bench.bench([get("10"), get("11"), other], args.sizes, repeats=10 * args.rounds, progress=False)
        out["bench"] = [r.as_dict() for r in records]
        table = bench.format_table(records)
    write()
    faulthandler.cancel_dump_traceback_later()

    prov = out["provenance"]
    passed = sum(c["passed"] for c in out["checks"])
    header = (f"# {prov['date']}  {prov['gpu']}  driver {prov['driver']}  CUDA runtime {prov['cuda_runtime']}  "
              f"NVRTC {prov['nvrtc']}  cupy {prov['packages'].get('cupy-cuda13x')}\n"
              f"# verification: {passed} of {len(out['checks'])} checks right"
              f"{'' if status == 0 else ' -- WRONG RESULTS, nothing timed'}; SASS of rung 11: "
              f"{json.dumps(out['sass_rung_11'])}\n"
              f"# wall {prov['wall_s']} s\n")
    (folder / f"{written[0].stem}_table.txt").write_text(header + table + "\n")
    print(header + table, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
