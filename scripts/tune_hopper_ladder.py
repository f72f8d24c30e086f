"""Verify and time the Hopper ladder (rung 09, TMA + wgmma) and its tile/stage variants against
cuBLAS and rung 07 in one process on the GPU; print a short table last, write everything as JSON.

    python3 scripts/tune_hopper_ladder.py --out DIR [--sizes 2048 4096 8192]
    python3 scripts/tune_hopper_ladder.py --sanitize     # tiny sizes, rung 09 once (compute-sanitizer)

The verification, timing and table are scripts/tune_mma_ladder.py's (its run_tuning, with this
ladder's variants and shapes): every variant is verified (fresh random inputs, NaN-poisoned C,
relative Frobenius error against FP32) at the shapes below and at every timed size before its
time counts; a variant that fails is reported as FAILED and never timed. The SASS of rung 09's
default is checked for HGMMA (Hopper's warpgroup MMA) where cuobjdump is on the PATH.
"""
from __future__ import annotations

import argparse
import json
import os
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
from hgemm_course.ladder import r09_wgmma  # noqa: E402
from hgemm_course.ladder.r09_wgmma import WgmmaTiles  # noqa: E402

VERIFY_SHAPES = ((128, 128, 128), (1000, 1000, 1024), (4096, 2048, 1024), (8192, 128, 4096), (257, 136, 64),
                 (4096, 4096, 4096))
SANITIZE_SHAPES = ((200, 136, 136), (256, 512, 128))


def variants(_which: str = "") -> list[dict]:
    """Rung 07's and 09's defaults, then 09's tile/stage/super-tile variants."""
    t = WgmmaTiles
    out = [{"rung": "07", "label": "default", "kwargs": {}}, {"rung": "09", "label": "default", "kwargs": {}}]
    for label, kw in (("128x128 s3 super 8x4 (2 CTA/SM)", {"tiles": t(128, 128, 64, 3), "super_mn": (8, 4)}),
                      ("128x128 s4 super 8x4", {"tiles": t(128, 128, 64, 4), "super_mn": (8, 4)}),
                      ("128x128 s4 super 16x2", {"tiles": t(128, 128, 64, 4)}),
                      ("128x128 s5", {"tiles": t(128, 128, 64, 5)}),
                      ("64x256 s4", {"tiles": t(64, 256, 64, 4)})):
        out.append({"rung": "09", "label": label, "kwargs": kw})
    return out


def config_of(kwargs: dict) -> dict:
    return {k: (v.__dict__ if isinstance(v, WgmmaTiles) else v) for k, v in kwargs.items()}


def sass_summary() -> dict:
    """Counts of the tensor-core instructions in the SASS of rung 09's default (needs cuobjdump)."""
    if shutil.which("cuobjdump") is None:
        return {"cuobjdump": "not on the PATH"}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k09.cubin"
        path.write_bytes(r09_wgmma.kernel().compile().cubin)
        sass = subprocess.run(["cuobjdump", "--dump-sass", str(path)], capture_output=True, text=True).stdout
    return {name: len(re.findall(rf"\b{name}\b", sass)) for name in ("HGMMA", "HMMA", "UTMALDG", "LDSM")}


def run_sanitize() -> int:
    """Rung 09's default (2 CTAs per SM) and its 4-stage variant (1 CTA per SM) once per tiny shape;
    non-zero exit on a wrong result."""
    import cupy

    bad = 0
    for label, kw in (("default", {}), ("128x128 s4", {"tiles": WgmmaTiles(128, 128, 64, 4)})):
        for (M, N, K) in SANITIZE_SHAPES:
            a, b, _ = harness.random_inputs(M, N, K, seed=M + N + K, xp=cupy)
            reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
            r = mma.verify_on(lambda a, b, c: r09_wgmma.launch(a, b, c, **kw), a, b, reference, "09")
            print(f"rung 09 {label} {M}x{N}x{K}: {'ok' if r['passed'] else 'FAILED'} rel {r['rel_fro_err']:.2e}",
                  flush=True)
            bad += not r["passed"]
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for tune_hopper.json and its table")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--sanitize", action="store_true")
    args = p.parse_args(argv)
    if args.sanitize:
        return run_sanitize()
    if args.repeats < 20:
        p.error("--repeats must be at least 20: a median needs enough samples.")
    # run_tuning reads its module's variant list and verification shapes: hand it this ladder's.
    mma.variants, mma.TAIL_SHAPES = variants, VERIFY_SHAPES
    args.set = "hopper"
    t0 = time.time()
    out = mma.run_tuning(args)
    for entry, v in zip(out["variants"], variants()):
        entry["config"] = config_of(v["kwargs"])
    out["sass_09_default"] = sass_summary()
    out["provenance"] = results.provenance({"script": "scripts/tune_hopper_ladder.py", "argv": sys.argv[1:],
                                            "sizes": args.sizes, "repeats": args.repeats,
                                            "wall_s": round(time.time() - t0, 1)})
    table = mma.format_table(out, args.sizes)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tune_hopper.json").write_text(json.dumps(out, indent=1, default=str) + "\n")
    prov = out["provenance"]
    header = (f"# {prov['date']}  {prov['gpu']}  driver {prov['driver']}  CUDA runtime {prov['cuda_runtime']}  "
              f"NVRTC {prov['nvrtc']}  cupy {prov['packages'].get('cupy-cuda13x')}\n"
              f"# median of {args.repeats} launches per size (CUDA events), cuBLAS = cupy.matmul fp16 in the same run\n"
              f"# SASS of rung 09's default: {json.dumps(out['sass_09_default'])}\n")
    (folder / "tune_hopper_table.txt").write_text(header + table + "\n")
    print(header + table)
    return 0 if all(e.get("passed") for e in out["variants"] if "refused" not in e) else 1


if __name__ == "__main__":
    sys.exit(main())
