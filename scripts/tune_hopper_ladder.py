"""Verify and time the Hopper ladder (rungs 09, TMA + wgmma, and 10, warp specialization) and their
tile/stage variants against cuBLAS in one process on the GPU; print a short table last, write
everything as JSON.

    python3 scripts/tune_hopper_ladder.py --out DIR [--set 10] [--sizes 2048 4096 8192]
    python3 scripts/tune_hopper_ladder.py --set 09        # rung 09's tuning rounds (with rung 07)
    python3 scripts/tune_hopper_ladder.py --sanitize      # tiny sizes, the set's rung once (compute-sanitizer)

The verification, timing and table are scripts/tune_mma_ladder.py's (its run_tuning, with this
ladder's variants and shapes): every variant is verified (fresh random inputs, NaN-poisoned C,
relative Frobenius error against FP32) at the shapes below and at every timed size before its
time counts; a variant that fails is reported as FAILED and never timed. The SASS of the rungs'
defaults is checked for HGMMA (Hopper's warpgroup MMA) and USETMAXREG (setmaxnreg) where
cuobjdump is on the PATH.

With --interleave R, the verified variants are timed once more, in turn with cuBLAS: R rounds of
10 launches of each per size. At 8192 the H200 clocks down as it heats (cuBLAS ran 1.45 ms before
the variants and 1.74 ms after them in one run), and a variant timed between two cuBLAS batches
then gets a ratio that depends on when it ran; in turn, the drift falls on all of them alike.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import tune_mma_ladder as mma  # noqa: E402  (the verify/time/table code of the mma.sync ladder)

from hgemm_course import harness, results  # noqa: E402
from hgemm_course.ladder import r09_wgmma, r10_warp_specialized  # noqa: E402
from hgemm_course.ladder.r09_wgmma import WgmmaTiles  # noqa: E402
from hgemm_course.ladder.r10_warp_specialized import WarpSpecializedTiles  # noqa: E402

VERIFY_SHAPES = ((128, 128, 128), (1000, 1000, 1024), (4096, 2048, 1024), (8192, 128, 4096), (257, 136, 64),
                 (4096, 4096, 4096))
SANITIZE_SHAPES = ((200, 136, 136), (256, 512, 128))


def variants(which: str = "10") -> list[dict]:
    """Set "09": rung 07's and 09's defaults, then 09's tile/stage/super-tile variants. Set "10":
    rung 09's and 10's defaults, then 10's (tile width, stages, super tile)."""
    if which == "09":
        t = WgmmaTiles
        out = [{"rung": "07", "label": "default", "kwargs": {}}, {"rung": "09", "label": "default", "kwargs": {}}]
        chosen = (("128x128 s3 super 8x4 (2 CTA/SM)", {"tiles": t(128, 128, 64, 3), "super_mn": (8, 4)}),
                  ("128x128 s4 super 8x4", {"tiles": t(128, 128, 64, 4), "super_mn": (8, 4)}),
                  ("128x128 s4 super 16x2", {"tiles": t(128, 128, 64, 4)}),
                  ("128x128 s5", {"tiles": t(128, 128, 64, 5)}),
                  ("64x256 s4", {"tiles": t(64, 256, 64, 4)}))
    else:
        w = WarpSpecializedTiles
        out = [{"rung": "09", "label": "default", "kwargs": {}}, {"rung": "10", "label": "default", "kwargs": {}}]
        chosen = (("128x256 s3", {"tiles": w(128, 256, 64, 3)}),
                  ("128x256 s4 super 8x4", {"tiles": w(128, 256, 64, 4), "super_mn": (8, 4)}),
                  ("256x128 s4", {"tiles": w(256, 128, 64, 4)}),
                  ("128x128 s6", {"tiles": w(128, 128, 64, 6)}))
    return out + [{"rung": which, "label": label, "kwargs": kw} for label, kw in chosen]


def config_of(kwargs: dict) -> dict:
    return {k: (v.__dict__ if isinstance(v, WgmmaTiles) else v) for k, v in kwargs.items()}


def sass_summary(module) -> dict:
    """Counts of the tensor-core and setmaxnreg instructions in the SASS of a rung's default (needs cuobjdump)."""
    if shutil.which("cuobjdump") is None:
        return {"cuobjdump": "not on the PATH"}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "kernel.cubin"
        path.write_bytes(module.kernel().compile().cubin)
        sass = subprocess.run(["cuobjdump", "--dump-sass", str(path)], capture_output=True, text=True).stdout
    return {name: len(re.findall(rf"\b{name}\b", sass)) for name in ("HGMMA", "HMMA", "UTMALDG", "LDSM", "USETMAXREG")}


def run_interleaved(out: dict, chosen: list[dict], sizes, rounds: int) -> dict:
    """cuBLAS and every verified variant timed in turn, ``rounds`` x 10 launches each per size;
    medians, TFLOP/s and % of the interleaved cuBLAS median, by size and variant label."""
    import cupy

    from hgemm_course import device

    l2 = device.require_gpu("Interleaved timing").l2_bytes
    fns = [("cuBLAS", lambda a, b, c: cupy.matmul(a, b, out=c))]
    fns += [(f"{v['rung']} {v['label']}", mma.launcher(v)) for e, v in zip(out["variants"], chosen) if e.get("passed")]
    result = {}
    for n in sizes:
        problem = mma.Problem(n, n, n, l2, seed=2000 + n)
        samples = {label: [] for label, _ in fns}
        for _ in range(rounds):
            for label, fn in fns:
                samples[label] += harness.time_launches(fn, problem.sets, warmup=1, repeats=10)
        cublas_ms = statistics.median(samples["cuBLAS"])
        result[str(n)] = {label: {"ms": statistics.median(x), "tflops": harness.tflops(n, n, n, statistics.median(x)),
                                  "pct_cublas": 100.0 * cublas_ms / statistics.median(x), "samples_ms": x}
                          for label, x in samples.items()}
        del problem
        cupy.get_default_memory_pool().free_all_blocks()
    return result


def format_interleaved(result: dict, sizes, rounds: int) -> str:
    labels = list(result[str(sizes[0])])
    rows = [f"# interleaved: {rounds} rounds x 10 launches of each, in turn; % of the interleaved cuBLAS median",
            f"{'variant':<39} " + " ".join(f"{f'{n} TF/s (%cuBLAS)':>20}" for n in sizes)]
    for label in labels:
        cells = [result[str(n)][label] for n in sizes]
        rows.append(f"{label:<39} " + " ".join(f"{c['tflops']:>10.1f} ({c['pct_cublas']:5.1f}%)" for c in cells))
    return "\n".join(rows)


def run_sanitize(which: str) -> int:
    """Set "09": rung 09's default (2 CTAs per SM) and its 4-stage variant (1 CTA per SM). Set "10":
    rung 10's default (128x256) and its 256x128 variant (two m64 products per consumer). Each once per
    tiny shape; non-zero exit on a wrong result."""
    import cupy

    module = r09_wgmma if which == "09" else r10_warp_specialized
    second = (("128x128 s4", {"tiles": WgmmaTiles(128, 128, 64, 4)}) if which == "09"
              else ("256x128 s4", {"tiles": WarpSpecializedTiles(256, 128, 64, 4)}))
    bad = 0
    for label, kw in (("default", {}), second):
        for (M, N, K) in SANITIZE_SHAPES:
            a, b, _ = harness.random_inputs(M, N, K, seed=M + N + K, xp=cupy)
            reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
            r = mma.verify_on(lambda a, b, c, kw=kw: module.launch(a, b, c, **kw), a, b, reference, which)
            print(f"rung {which} {label} {M}x{N}x{K}: {'ok' if r['passed'] else 'FAILED'} rel {r['rel_fro_err']:.2e}",
                  flush=True)
            bad += not r["passed"]
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for tune_hopper.json and its table")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--set", choices=("09", "10"), default="10", help="which rung and its variants")
    p.add_argument("--sanitize", action="store_true")
    p.add_argument("--interleave", type=int, default=0, metavar="R",
                   help="then time the verified variants in turn with cuBLAS, R rounds of 10 launches each")
    args = p.parse_args(argv)
    if args.sanitize:
        return run_sanitize(args.set)
    if args.repeats < 20:
        p.error("--repeats must be at least 20: a median needs enough samples.")
    # run_tuning reads its module's variant list and verification shapes: hand it this ladder's.
    mma.variants, mma.TAIL_SHAPES = variants, VERIFY_SHAPES
    t0 = time.time()
    out = mma.run_tuning(args)
    for entry, v in zip(out["variants"], variants(args.set)):
        entry["config"] = config_of(v["kwargs"])
    out["sass_defaults"] = {"09": sass_summary(r09_wgmma)}
    if args.set == "10":
        out["sass_defaults"]["10"] = sass_summary(r10_warp_specialized)
    if args.interleave:
        out["interleaved"] = run_interleaved(out, variants(args.set), args.sizes, args.interleave)
    out["provenance"] = results.provenance({"script": "scripts/tune_hopper_ladder.py", "argv": sys.argv[1:],
                                            "sizes": args.sizes, "repeats": args.repeats,
                                            "interleave_rounds": args.interleave,
                                            "wall_s": round(time.time() - t0, 1)})
    table = mma.format_table(out, args.sizes)
    if args.interleave:
        table += "\n" + format_interleaved(out["interleaved"], args.sizes, args.interleave)
    return mma.write_run_files(out, table, Path(args.out), "tune_hopper", args.repeats,
                               f"# SASS of the defaults: {json.dumps(out['sass_defaults'])}\n")


if __name__ == "__main__":
    sys.exit(main())
