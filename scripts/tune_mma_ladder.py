"""Build, verify and time the mma.sync ladder (rungs 03-07) and tile/stage/super-tile variants
against cuBLAS in one process on the GPU; print a short table last, write everything as JSON.

    python3 scripts/tune_mma_ladder.py --out DIR [--set quick|full] [--sizes 2048 4096 8192]
    python3 scripts/tune_mma_ladder.py --sanitize      # tiny sizes, every rung once (compute-sanitizer)
    python3 scripts/tune_mma_ladder.py --profile 8192  # one launch per rung 04-07 (ncu)

Every variant is verified (fresh random inputs, NaN-poisoned C, relative Frobenius error
against an FP32 reference) at tail sizes and at every timed size before its time counts;
a variant that fails is reported as FAILED and never timed. Timing: CUDA events around each
launch, warm-up first, median of --repeats launches, input sets rotated so that A and B
stream through more than L2 holds; cuBLAS (cupy.matmul on float16) is timed at each size
before and after the variants, and the ratios use the median of all its samples.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from importlib import import_module
from pathlib import Path


from hgemm_course import harness, results
from hgemm_course.ladder import get
from hgemm_course.ladder.nvrtc_kernel import MmaTiles

RUNG_IDS = ("03", "04", "05", "06", "07")
TAIL_SHAPES = ((257, 136, 64), (1000, 1000, 1024), (4096, 2048, 1024), (128, 128, 128))
SANITIZE_SHAPES = ((200, 136, 136), (256, 512, 128))


def tiles(bm, bn, bk, wm, wn, stages):
    return MmaTiles(bm, bn, bk, wm, wn, stages)


def variants(which: str) -> list[dict]:
    """(rung, label, launch keyword arguments); the first of each rung is its registered default."""
    out = [{"rung": r, "label": "default", "kwargs": {}} for r in RUNG_IDS]
    if which == "defaults":
        return out
    t = tiles
    quick = [
        ("03", "128x256 w64x64 s2", {"tiles": t(128, 256, 64, 64, 64, 2)}),
        ("03", "128x128 w64x32 bk32 s2 (seed v7)", {"tiles": t(128, 128, 32, 64, 32, 2)}),
        ("04", "128x256 s4", {"tiles": t(128, 256, 64, 64, 64, 4)}),
        ("04", "256x128 s3", {"tiles": t(256, 128, 64, 64, 64, 3)}),
        ("04", "128x128 4w s3", {"tiles": t(128, 128, 64, 64, 64, 3)}),
        ("05", "128x256 s3", {"tiles": t(128, 256, 64, 64, 64, 3)}),
        ("05", "256x128 s4", {"tiles": t(256, 128, 64, 64, 64, 4)}),
        ("05", "128x128 4w s3", {"tiles": t(128, 128, 64, 64, 64, 3)}),
        ("05", "128x128 4w s4", {"tiles": t(128, 128, 64, 64, 64, 4)}),
        ("06", "super 8x4", {"super_mn": (8, 4)}),
        ("06", "super 4x8", {"super_mn": (4, 8)}),
        ("06", "super 32x1", {"super_mn": (32, 1)}),
        ("06", "super 1x64 (row-major)", {"super_mn": (1, 64)}),
        ("07", "s3", {"tiles": t(128, 256, 64, 64, 64, 3)}),
        ("07", "super 8x4", {"super_mn": (8, 4)}),
        ("07", "256x128 s4", {"tiles": t(256, 128, 64, 64, 64, 4)}),
        ("07", "128x128 4w s3", {"tiles": t(128, 128, 64, 64, 64, 3)}),
    ]
    full = quick + [
        ("03", "128x256 w64x64 s4", {"tiles": t(128, 256, 64, 64, 64, 4)}),
        ("03", "128x128 4w s3", {"tiles": t(128, 128, 64, 64, 64, 3)}),
        ("04", "128x256 s2", {"tiles": t(128, 256, 64, 64, 64, 2)}),
        ("06", "super 16x4", {"super_mn": (16, 4)}),
        ("06", "super 8x2", {"super_mn": (8, 2)}),
        ("07", "super 4x8", {"super_mn": (4, 8)}),
        ("07", "super 32x1", {"super_mn": (32, 1)}),
    ]
    wide, tall = t(128, 256, 64, 64, 64, 4), t(256, 128, 64, 64, 64, 4)
    wide3, tall3 = t(128, 256, 64, 64, 64, 3), t(256, 128, 64, 64, 64, 3)
    square3, square4 = t(128, 128, 64, 64, 64, 3), t(128, 128, 64, 64, 64, 4)
    round2 = [
        ("03", "256x128 s3", {"tiles": tall3}),
        ("03", "128x256 s4", {"tiles": wide}),
        ("04", "128x256 s4", {"tiles": wide}),
        ("04", "256x128 s3", {"tiles": tall3}),
        ("04", "256x128 s4", {"tiles": tall}),
        ("05", "128x256 s3", {"tiles": wide3}),
        ("05", "256x128 s4", {"tiles": tall}),
        ("05", "256x128 s3", {"tiles": tall3}),
    ]
    for tl, tiles_ in (("128x256 s4", wide), ("256x128 s4", tall), ("256x128 s3", tall3)):
        for sm, sn in ((16, 2), (32, 1), (8, 4), (4, 8), (2, 16), (1, 64)):
            round2.append(("06", f"{tl} super {sm}x{sn}", {"tiles": tiles_, "super_mn": (sm, sn)}))
    for tl, tiles_ in (("128x256 s3", wide3), ("128x256 s4", wide), ("256x128 s4", tall), ("256x128 s3", tall3)):
        for sm, sn in ((16, 2), (32, 1), (8, 4), (4, 8), (1, 64)):
            round2.append(("07", f"{tl} super {sm}x{sn}", {"tiles": tiles_, "super_mn": (sm, sn)}))
    for tl, tiles_ in (("128x128 4w s3 (2 CTA/SM)", square3), ("128x128 4w s4", square4)):
        for sm, sn in ((16, 2), (8, 8)):
            round2.append(("07", f"{tl} super {sm}x{sn}", {"tiles": tiles_, "super_mn": (sm, sn)}))
    chosen = {"quick": quick, "full": full, "round2": round2}[which]
    out += [{"rung": r, "label": label, "kwargs": kw} for r, label, kw in chosen]
    return out


def module_of(rung_id: str):
    return import_module(get(rung_id).launch.__module__)


def describe(v: dict) -> dict:
    """Compile the variant and report what ptxas says: registers, spills, smem, threads."""
    mod = module_of(v["rung"])
    kernel = mod.kernel(**v["kwargs"])
    res = kernel.compile().resources_of(kernel.name_expression)
    return {"name": kernel.name_expression, "threads": kernel.threads, "smem_dynamic": kernel.smem_bytes,
            "registers": res.registers, "spills": res.spills, "stack_frame": res.stack_frame,
            "smem_static": res.smem_static}


def ctas_per_sm(v: dict) -> int | str:
    """Resident CTAs per SM by the driver's occupancy calculator (informational)."""
    from cuda.bindings import driver

    kernel = module_of(v["rung"]).kernel(**v["kwargs"])
    fn = kernel.function()
    try:
        err, n = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            driver.CUfunction(fn.kernel.ptr), kernel.threads, kernel.smem_bytes)
    except (TypeError, AttributeError) as e:         # a cupy/cuda-bindings without these handles
        return f"n/a ({e})"
    return int(n) if err == driver.CUresult.CUDA_SUCCESS else f"n/a ({err.name})"


def launcher(v: dict):
    mod = module_of(v["rung"])
    return lambda a, b, c: mod.launch(a, b, c, **v["kwargs"])


def gpu_inputs(M, N, K, seed):
    """Uniform(-1, 1) fp16 A and B drawn on the GPU (fast enough for the large timing sets)."""
    import cupy

    rs = cupy.random.RandomState(seed)
    a = (rs.random_sample((M, K), dtype=cupy.float32) * 2 - 1).astype(cupy.float16)
    b = (rs.random_sample((K, N), dtype=cupy.float32) * 2 - 1).astype(cupy.float16)
    return a, b


def verify_on(fn, a, b, reference, label: str) -> dict:
    """One launch on NaN-poisoned C, compared with the FP32 reference on the GPU (the harness's
    tolerances; its host-side compare runs only on a failure, to name the first wrong element)."""
    import cupy

    M, K = a.shape
    c = cupy.full((M, b.shape[1]), cupy.nan, dtype=cupy.float16)
    fn(a, b, c)
    c32 = c.astype(cupy.float32)
    nonfinite = int(cupy.count_nonzero(~cupy.isfinite(c32)))
    ref_max = float(cupy.abs(reference).max()) or 1.0
    rel = float(cupy.linalg.norm(c32 - reference) / (cupy.linalg.norm(reference) or 1.0)) if not nonfinite else float("inf")
    max_err = float(cupy.abs(c32 - reference).max()) / ref_max if not nonfinite else float("inf")
    passed = nonfinite == 0 and rel <= harness.REL_FRO_TOL and max_err <= harness.MAX_ERR_TOL
    first_bad = None if passed else harness.compare(c, reference, K=K, rung=label).first_bad
    return {"M": M, "N": b.shape[1], "K": K, "rel_fro_err": rel, "max_err": max_err,
            "nonfinite": nonfinite, "first_bad": first_bad, "passed": passed}


class Problem:
    """One timed size: rotating input sets, the FP32 reference of set 0, cuBLAS samples."""

    def __init__(self, M, N, K, l2_bytes, seed):
        import cupy

        self.shape = (M, N, K)
        n_sets = harness.input_sets_needed(M, N, K, l2_bytes, factor=4, cap=16)
        self.sets = []
        for i in range(n_sets):
            a, b = gpu_inputs(M, N, K, seed + i)
            self.sets.append((a, b, cupy.empty((M, N), dtype=cupy.float16)))
        a, b, _ = self.sets[0]
        self.reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
        self.cublas_samples: list[float] = []

    def time_cublas(self, repeats):
        import cupy

        self.cublas_samples += harness.time_launches(lambda a, b, c: cupy.matmul(a, b, out=c), self.sets,
                                                     warmup=3, repeats=repeats)


def run_tuning(args) -> dict:
    import cupy

    from hgemm_course import device

    gpu = device.require_gpu("Tuning the mma.sync ladder")
    chosen = variants(args.set)
    tail_refs = {}
    for (M, N, K) in TAIL_SHAPES:
        a, b, _ = harness.random_inputs(M, N, K, seed=M * 7 + N * 3 + K, xp=cupy)
        tail_refs[(M, N, K)] = (a, b, cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32)))

    out = {"variants": []}
    for v in chosen:
        entry = {"rung": v["rung"], "label": v["label"],
                 "config": {k: (val.__dict__ if isinstance(val, MmaTiles) else val) for k, val in v["kwargs"].items()}}
        try:
            entry.update(describe(v))
        except ValueError as e:                       # the launcher refused the configuration
            entry["refused"] = str(e)
            out["variants"].append(entry)
            print(f"[{v['rung']} {v['label']}] refused: {e}", flush=True)
            continue
        fn = launcher(v)
        try:
            entry["ctas_per_sm"] = ctas_per_sm(v)
            entry["verify"] = [verify_on(fn, a, b, ref, v["rung"]) for (a, b, ref) in tail_refs.values()]
        except Exception as e:                        # a host-side failure of one variant (say, its tensor maps)
            entry.update(ctas_per_sm=None, verify=[], error=repr(e))
        entry["passed"] = bool(entry["verify"]) and all(r["passed"] for r in entry["verify"])
        entry["timing"] = {}
        print(f"[{v['rung']} {v['label']}] {entry['name']} regs={entry['registers']} spills={entry['spills']} "
              f"smem={entry['smem_dynamic']} ctas/SM={entry['ctas_per_sm']} verify="
              + ("ok" if entry["passed"] else "FAILED " + entry.get("error", json.dumps(entry["verify"]))), flush=True)
        out["variants"].append(entry)

    for n in args.sizes:
        problem = Problem(n, n, n, gpu.l2_bytes, seed=1000 + n)
        problem.time_cublas(args.repeats)
        for entry, v in zip(out["variants"], chosen):
            if not entry.get("passed"):
                continue
            fn = launcher(v)
            a, b, _ = problem.sets[0]
            check = verify_on(fn, a, b, problem.reference, v["rung"])
            if not check["passed"]:
                entry["passed"] = False
                entry["verify"].append(check)
                print(f"[{v['rung']} {v['label']}] FAILED at {n}: {json.dumps(check)}", flush=True)
                continue
            samples = harness.time_launches(fn, problem.sets, warmup=3, repeats=args.repeats)
            ms = statistics.median(samples)
            entry["timing"][str(n)] = {"ms": ms, "tflops": harness.tflops(n, n, n, ms), "samples_ms": samples,
                                       "rel_fro_err": check["rel_fro_err"], "input_sets": len(problem.sets)}
        problem.time_cublas(args.repeats)             # again after the variants: drift shows in the spread
        cms = statistics.median(problem.cublas_samples)
        out.setdefault("cublas", {})[str(n)] = {"ms": cms, "tflops": harness.tflops(n, n, n, cms),
                                                "samples_ms": problem.cublas_samples,
                                                "input_sets": len(problem.sets)}
        for entry in out["variants"]:
            t = entry.get("timing", {}).get(str(n))
            if t:
                t["pct_cublas"] = 100.0 * cms / t["ms"]
        del problem
        cupy.get_default_memory_pool().free_all_blocks()
        print(f"size {n} done: cuBLAS {harness.tflops(n, n, n, cms):.1f} TFLOP/s", flush=True)
    return out


def format_table(out: dict, sizes) -> str:
    head = f"{'rung':<4} {'variant':<34} {'regs':>4} {'CTA/SM':>6} " + " ".join(
        f"{f'{n} TF/s (%cuBLAS)':>20}" for n in sizes)
    rows = [head, f"{'':<4} {'cuBLAS (cupy.matmul fp16)':<34} {'':>4} {'':>6} " + " ".join(
        f"{out['cublas'][str(n)]['tflops']:>20.1f}" for n in sizes)]
    for e in out["variants"]:
        if "refused" in e:
            rows.append(f"{e['rung']:<4} {e['label']:<34} refused: {e['refused'][:60]}")
            continue
        cells = []
        for n in sizes:
            t = e["timing"].get(str(n))
            cells.append(f"{t['tflops']:>10.1f} ({t['pct_cublas']:5.1f}%)" if t else f"{'FAILED' if not e['passed'] else '-':>20}")
        rows.append(f"{e['rung']:<4} {e['label']:<34} {e['registers']:>4} {str(e['ctas_per_sm']):>6} " + " ".join(cells))
    return "\n".join(rows)


def run_sanitize() -> int:
    """Every rung's default once per tiny shape; non-zero exit on a wrong result."""
    import cupy

    bad = 0
    for rung_id in RUNG_IDS:
        fn = launcher({"rung": rung_id, "kwargs": {}})
        for (M, N, K) in SANITIZE_SHAPES:
            a, b, _ = harness.random_inputs(M, N, K, seed=M + N + K, xp=cupy)
            try:
                r = verify_on(fn, a, b, cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32)), rung_id)
            except Exception as e:                    # report it and go on with the other rungs
                print(f"rung {rung_id} {M}x{N}x{K}: FAILED {e!r}", flush=True)
                bad += 1
                continue
            print(f"rung {rung_id} {M}x{N}x{K}: {'ok' if r['passed'] else 'FAILED'} rel {r['rel_fro_err']:.2e}",
                  flush=True)
            bad += not r["passed"]
    return 1 if bad else 0


PROFILED = (("05", "256x128 s4"), ("06", "256x128 s4 super 16x2"), ("07", "128x256 s3 super 16x2"),
            ("07", "128x128 4w s3 (2 CTA/SM) super 16x2"))


def run_profile(n: int) -> int:
    """One launch of each of rungs 04-07 (defaults) and a few round-2 variants at n^3, for ncu;
    each launch is preceded by a line naming it, in the order ncu reports them."""
    import cupy

    a, b = gpu_inputs(n, n, n, seed=7)
    c = cupy.empty((n, n), dtype=cupy.float16)
    by_label = {(v["rung"], v["label"]): v for v in variants("round2")}
    chosen = [{"rung": r, "label": "default", "kwargs": {}} for r in RUNG_IDS[1:]] + [by_label[k] for k in PROFILED]
    for v in chosen:
        print(f"profile: rung {v['rung']} {v['label']}: {module_of(v['rung']).kernel(**v['kwargs']).name_expression}",
              flush=True)
        launcher(v)(a, b, c)
        cupy.cuda.runtime.deviceSynchronize()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for tune.json and tune_table.txt")
    p.add_argument("--set", choices=("defaults", "quick", "full", "round2"), default="quick")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--sanitize", action="store_true")
    p.add_argument("--profile", type=int, default=0, metavar="N")
    args = p.parse_args(argv)
    if args.sanitize:
        return run_sanitize()
    if args.profile:
        return run_profile(args.profile)
    if args.repeats < 20:
        p.error("--repeats must be at least 20: a median needs enough samples.")
    t0 = time.time()
    out = run_tuning(args)
    out["provenance"] = results.provenance({"script": "scripts/tune_mma_ladder.py", "argv": sys.argv[1:],
                                            "sizes": args.sizes, "repeats": args.repeats,
                                            "wall_s": round(time.time() - t0, 1)})
    return write_run_files(out, format_table(out, args.sizes), Path(args.out), "tune", args.repeats)


def write_run_files(out: dict, table: str, folder: Path, stem: str, repeats: int, extra_header: str = "") -> int:
    """Write <stem>.json and <stem>_table.txt (a provenance header, then the table), print the table
    last, and return the exit status: 0 when every variant that was not refused passed verification."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.json").write_text(json.dumps(out, indent=1, default=str) + "\n")
    prov = out["provenance"]
    header = (f"# {prov['date']}  {prov['gpu']}  driver {prov['driver']}  CUDA runtime {prov['cuda_runtime']}  "
              f"NVRTC {prov['nvrtc']}  cupy {prov['packages'].get('cupy-cuda13x')}\n"
              f"# median of {repeats} launches per size (CUDA events), cuBLAS = cupy.matmul fp16 in the same run\n"
              + extra_header)
    (folder / f"{stem}_table.txt").write_text(header + table + "\n")
    print(header + table)
    return 0 if all(e.get("passed") for e in out["variants"] if "refused" not in e) else 1


if __name__ == "__main__":
    sys.exit(main())
