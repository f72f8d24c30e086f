"""How rungs 04-07 feed mma.sync: time kernel sources side by side on the GPU, each verified first.

    python3 scripts/ablate_mma_feeding.py --out DIR [--sizes 4096 8192] [--only LABEL ...]
    python3 scripts/ablate_mma_feeding.py --launch LABEL --size 8192     # one warm-up + one launch, for ncu

A variant is a rung's launcher (its tiles, super tile, tensor maps) with the kernel source swapped
for another file that defines the same template: the source committed before a change (kept
under .ablate/, which git ignores), or the current one. Every variant is verified (fresh random
inputs, NaN-poisoned C, FP32 reference) at tail shapes and at each timed size before it is timed;
cuBLAS is timed between the variants in the same process and the ratios use its median.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from importlib import import_module
from pathlib import Path

from hgemm_course import harness, results
from hgemm_course.ladder.nvrtc_kernel import MmaTiles

ROOT = Path(__file__).resolve().parent.parent
ABLATE = ROOT / ".ablate"
TAIL_SHAPES = ((257, 136, 64), (1000, 1000, 1024), (4096, 2048, 1024), (128, 128, 128))
MODULES = {"04": "r04_mma_sync", "05": "r05_swizzle", "06": "r06_supertile", "07": "r07_tma"}
PAIR = MmaTiles(bm=128, bn=128, bk=64, wm=64, wn=64, stages=3)     # 4 warps: two CTAs fit on an SM


def variants() -> list[dict]:
    """(label, rung, source file or None for the current kernel, launcher keyword arguments)."""
    out = []
    for rung, stem in (("04", "k04_mma_sync"), ("05", "k05_swizzle"), ("06", "k06_supertile")):
        out += [{"label": f"{rung} before", "rung": rung, "source": ABLATE / f"{stem}_base.cu", "kwargs": {}},
                {"label": f"{rung} now", "rung": rung, "source": None, "kwargs": {}},
                {"label": f"{rung} copies in one burst", "rung": rung, "source": ABLATE / f"{stem}_burst.cu",
                 "kwargs": {}}]
    out += [{"label": "07 before", "rung": "07", "source": ABLATE / "k07_tma_base.cu", "kwargs": {}},
            {"label": "07 now", "rung": "07", "source": None, "kwargs": {}},
            {"label": "07 before 128x128 2CTA/SM", "rung": "07", "source": ABLATE / "k07_tma_base.cu",
             "kwargs": {"tiles": PAIR}},
            {"label": "07 now 128x128 2CTA/SM", "rung": "07", "source": None, "kwargs": {"tiles": PAIR}}]
    return [v for v in out if v["source"] is None or v["source"].is_file()]


def launcher(variant: dict):
    """launch(a, b, c) through the rung's own launcher with the kernel source swapped."""
    module = import_module(f"hgemm_course.ladder.{MODULES[variant['rung']]}")
    kernel = module.kernel(**variant["kwargs"])
    if variant["source"] is not None:
        kernel = dataclasses.replace(kernel, source=str(variant["source"]))
    tiles = variant["kwargs"].get("tiles", module.TILES)

    def launch(a, b, c):
        extra = ()
        if variant["rung"] == "07":
            M, K = a.shape
            extra = module._maps(a.data.ptr, M, K, b.data.ptr, b.shape[1], tiles.bm, tiles.bk)
        kernel.launch(a, b, c, *extra)

    return kernel, launch


def verify(launch, M, N, K):
    import cupy

    a, b, seed = harness.random_inputs(M, N, K, xp=cupy)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    launch(a, b, c)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    return harness.compare(c, reference, K=K, seed=seed)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--only", nargs="+", help="labels to run (default: all)")
    p.add_argument("--launch", help="launch this variant once after a warm-up (for ncu) and exit")
    p.add_argument("--size", type=int, default=8192)
    args = p.parse_args()
    import cupy

    table = {v["label"]: v for v in variants()}
    if args.launch:
        kernel, launch = launcher(table[args.launch])
        n = args.size
        a, b, _ = harness.random_inputs(n, n, n, xp=cupy)
        c = cupy.full((n, n), cupy.nan, dtype=cupy.float16)
        launch(a, b, c)
        launch(a, b, c)
        cupy.cuda.runtime.deviceSynchronize()
        print(f"{args.launch}: {kernel.name_expression} launched twice at {n}^3")
        return 0

    chosen = [table[label] for label in args.only] if args.only else list(table.values())
    inputs = {n: [harness.random_inputs(n, n, n, xp=cupy)[:2] + (cupy.empty((n, n), cupy.float16),)
                  for _ in range(2 if n <= 4096 else 1)] for n in args.sizes}

    def cublas(a, b, c):
        cupy.matmul(a, b, out=c)

    cublas_ms = {n: [] for n in args.sizes}
    rows = []
    for v in chosen:
        kernel, launch = launcher(v)
        res = kernel.compile().resources_of(kernel.name_expression)
        row = {"label": v["label"], "rung": v["rung"], "kernel": kernel.name_expression,
               "source": str(v["source"].relative_to(ROOT)) if v["source"] else "current",
               "registers": res.registers, "spill_bytes": res.spills, "timing": {}}
        checks = [verify(launch, *shape) for shape in (*TAIL_SHAPES, *((n, n, n) for n in args.sizes))]
        row["verified"] = all(c.passed for c in checks)
        row["verify"] = [c.summary() for c in checks]
        if row["verified"]:
            for n in args.sizes:
                cublas_ms[n] += harness.time_launches(cublas, inputs[n], warmup=3, repeats=args.repeats)
                ms = statistics.median(harness.time_launches(launch, inputs[n], warmup=3, repeats=args.repeats))
                row["timing"][n] = {"ms": ms, "tflops": harness.tflops(n, n, n, ms)}
        rows.append(row)
        print(f"{v['label']}: regs {res.registers}, spills {res.spills}, verified {row['verified']}, "
              + ", ".join(f"{n}: {t['tflops']:.1f} TF/s" for n, t in row["timing"].items()), flush=True)
    cublas = {n: statistics.median(ms) for n, ms in cublas_ms.items() if ms}
    for row in rows:
        for n, t in row["timing"].items():
            t["pct_cublas"] = 100.0 * cublas[n] / t["ms"]
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        prov = results.provenance({"script": "scripts/ablate_mma_feeding.py", "sizes": args.sizes,
                                   "repeats": args.repeats})
        (args.out / "ablate_mma_feeding.json").write_text(json.dumps(
            {"provenance": prov, "cublas_ms": cublas, "variants": rows}, indent=1) + "\n")
    print(f"\n{'variant':<28}{'regs':>5}{'spill':>6}  " + "".join(f"{f'{n}^3 TF/s (% cuBLAS)':>24}" for n in args.sizes))
    print(f"{'cuBLAS':<41}" + "".join(f"{harness.tflops(n, n, n, cublas[n]):>24.1f}" for n in cublas))
    for row in rows:
        cells = "".join(f"{row['timing'][n]['tflops']:>15.1f} ({row['timing'][n]['pct_cublas']:5.1f}%)"
                        if n in row["timing"] else f"{'FAILED verification':>24}" for n in args.sizes)
        print(f"{row['label']:<28}{row['registers']:>5}{row['spill_bytes']:>6}  {cells}")
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
