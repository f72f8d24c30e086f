# Question: on the shapes users bring (small M, small cubes, LLM projections, misaligned rows, K-light and K-heavy),
# how does gemm() compare with the faster of cupy.matmul (cuBLAS) and torch.matmul (cuBLASLt), which of rung 11's
# and rung 12's smaller tiles would pay there, and what does a call cost the host?
"""Times gemm(), cupy.matmul, torch.matmul and candidate kernels over a list of shapes on one GPU (needs a GPU).

Per shape: every variant is verified once (C poisoned with NaN, FP32 reference), then timed in rounds, the
variants in a fresh random order each round, 20 launches each queued behind a stream hold, inputs rotated past
the L2. Per-call host time is timed apart, inside a hold, so the loop measures Python and the driver only.

    python research/vendor_probe.py [--out DIR]

The report goes to the recorded results/probes/vendor_probe/ (records.write_probe), or to --out.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import statistics
from dataclasses import replace
from pathlib import Path

import cupy

import hgemm_course
from hgemm_course.measurement import records, timing, vendors, verification
from hgemm_course.library.ladder import r11_persistent as r11
from hgemm_course.library.ladder import r12_streamk as r12

SHAPES = [
    # M sweep at N = K = 4096
    *[(m, 4096, 4096) for m in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)],
    # small cubes
    *[(n, n, n) for n in (256, 384, 512, 768, 1024, 1536, 2048)],
    # LLM projections (decode and prefill)
    (16, 11008, 4096), (64, 28672, 8192), (128, 8192, 28672), (2048, 11008, 4096), (2048, 4096, 11008),
    (1024, 28672, 8192), (512, 8192, 8192),
    # rows off 128-byte boundaries
    (1000, 1000, 1000), (4096, 4096, 7000), (4096, 4096, 9000), (2048, 7000, 4096), (3000, 5000, 7000),
    # K-light and K-heavy
    (8192, 8192, 256), (4096, 4096, 128), (512, 512, 16384), (1024, 1024, 32768), (256, 256, 65536),
    (8192, 8192, 8192),
]
BIG_FLOPS = 2 * 4096 ** 3          # candidates are timed only below this


def tiles(bm, bn, stages):
    return replace(r11.TILES, bm=bm, bn=bn, stages=stages)


def candidates(M, N, K):
    """name -> launcher of C = A @ B, for the smaller tiles of rungs 11 and 12, and rung 12 split apart."""
    out = {}
    for bm, bn, st in ((64, 64, 8), (64, 128, 8), (64, 256, 5), (128, 128, 6)):
        cons = 1 if bm == 64 else 2
        t = tiles(bm, bn, st)
        one_wave = -(-M // bm) * -(-N // bn) <= 132
        sup = (1, 1) if one_wave else (8, 2)
        out[f"r11 {bm}x{bn}"] = (lambda t=t, sup=sup, cons=cons: lambda a, b, c: r11.launch(
            a, b, c, t, sup, None, 1, cons))()
        out[f"r12 {bm}x{bn} sk0"] = (lambda t=t, cons=cons: lambda a, b, c: r12.launch(
            a, b, c, t, (8, 2), 1, cons, 0))()
        out[f"r12 {bm}x{bn} apart"] = (lambda t=t, cons=cons: lambda a, b, c: r12.launch(
            a, b, c, t, (8, 2), 1, cons, 0, apart=True))()
    for bn in (192, 256):                     # 192: three 64-column panels of B, so no clusters of two
        t = tiles(128, bn, 4)
        one_wave = -(-M // 128) * -(-N // bn) <= 132
        out[f"r11 128x{bn}"] = (lambda t=t, sup=(1, 1) if one_wave else (8, 2): lambda a, b, c: r11.launch(
            a, b, c, t, sup, None, 1, 2))()
    wide = tiles(128, 256, 4)                 # rung 12's own tiles, split apart too
    out["r12 128x256 apart"] = lambda a, b, c: r12.launch(a, b, c, wide, (8, 2), 1, 2, 0, apart=True)
    return out


def torch_matmul():
    """torch.matmul (cuBLASLt) on views of the CuPy arrays, as bench times it; None without PyTorch."""
    return vendors.vendors().get(vendors.CUBLASLT_NAME)


def torch_version():
    try:
        import torch
    except ImportError:
        return None
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "cublaslt": "torch.matmul"}


def inputs(M, N, K, l2):
    sets = []
    for _ in range(timing.input_sets_needed(M, N, K, l2)):
        a = cupy.random.uniform(-1, 1, (M, K), dtype=cupy.float32).astype(cupy.float16)
        b = cupy.random.uniform(-1, 1, (K, N), dtype=cupy.float32).astype(cupy.float16)
        sets.append((a, b, cupy.empty((M, N), cupy.float16)))
    return sets


def verified(fn, a, b, reference, K):
    c = cupy.full(reference.shape, cupy.nan, cupy.float16)
    fn(a, b, c)
    return verification.compare(c, reference, K=K)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, help="folder for the report (default: the recorded results/probes/vendor_probe/)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", type=int, default=None, help="first N shapes")
    p.add_argument("--host-only", action="store_true", help="time the host's cost per call only, no shapes")
    p.add_argument("--shapes", nargs="+", default=None, help="MxNxK shapes instead of the list, candidates timed")
    p.add_argument("--skip-host", action="store_true", help="skip the host's cost per call")
    args = p.parse_args()
    gpu = hgemm_course.library.device.require_gpu("probe")
    torch_mm = torch_matmul()
    rng = random.Random(0)
    gemm = lambda a, b, c: hgemm_course.gemm(a, b, out=c)           # noqa: E731
    libraries = {"cupy": vendors.cublas, **({"torch": torch_mm} if torch_mm else {})}

    # host time per call, where the kernel is shorter than the call
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from api_vs_launch import kernel_call

    from hgemm_course.library.plan import planned_rung

    host, profile_text = {}, ""
    for M, N, K in () if args.skip_host else ((256, 256, 256), (16, 4096, 4096), (2048, 2048, 2048), (1000, 1000, 1000),
                                               (256, 256, 65536), (200, 136, 20000)):
        a, b, c = inputs(M, N, K, 0)[0]
        fns = {"gemm_out": gemm, **libraries, "kernel": (lambda k: lambda a, b, c: k())(kernel_call(planned_rung(), a, b, c))}
        for fn in fns.values():
            fn(a, b, c)
        # host microseconds per call, the calls queued behind a stream hold, the callers' holds taken in turn
        host[f"{M}x{N}x{K}"] = dict(zip(fns, timing.host_us_paired(tuple(fns.values()), a, b, c)))
        print("host us", M, N, K, {k: round(v, 1) for k, v in host[f"{M}x{N}x{K}"].items()}, flush=True)
        if M == 256:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(2000):
                gemm(a, b, c)
            prof.disable()
            cupy.cuda.get_current_stream().synchronize()
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
            profile_text = buf.getvalue()
            print(profile_text[:6000], flush=True)

    rows, path = [], None
    shapes = [] if args.host_only else SHAPES[:args.only] if args.only else SHAPES
    if args.shapes:
        shapes = [tuple(int(x) for x in shape.lower().split("x")) for shape in args.shapes]
    for M, N, K in shapes:
        sets = inputs(M, N, K, gpu.l2_bytes)
        a, b, _ = sets[0]
        reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
        variants = {**libraries, "plan": gemm}
        if 2 * M * N * K <= BIG_FLOPS or args.shapes:
            variants.update(candidates(M, N, K))
        checks = {}
        for name, fn in list(variants.items()):
            try:
                chk = verified(fn, a, b, reference, K)
            except Exception as exc:             # a refused configuration: left out, with its reason
                checks[name] = f"refused: {exc}"
                del variants[name]
                continue
            checks[name] = chk.summary()
            if not chk.passed:
                print(f"WRONG {name} {M}x{N}x{K}: {chk.summary()}", flush=True)
                del variants[name]
        del reference
        ms = {name: [] for name in variants}
        for fn in variants.values():
            timing.time_launches(fn, sets, warmup=3, repeats=3)
        for _ in range(args.rounds):
            for name in rng.sample(list(variants), len(variants)):
                ms[name].append(statistics.median(timing.time_launches(variants[name], sets, warmup=2, repeats=20)))
        vendor_ms = [min(ms[v][i] for v in libraries) for i in range(args.rounds)]
        row = {"M": M, "N": N, "K": K, "input_sets": len(sets), "ms": ms, "checks": checks,
               "vendor_ms": vendor_ms,
               "pct_best_vendor": {name: 100 * statistics.median(v / m for v, m in zip(vendor_ms, ms[name]))
                                   for name in variants}}
        rows.append(row)
        best = sorted(row["pct_best_vendor"].items(), key=lambda kv: -kv[1])
        fast = min(libraries, key=lambda v: statistics.median(ms[v]))
        print(f"{M:>6}x{N:>6}x{K:>6} vendor {fast} {statistics.median(vendor_ms) * 1e3:8.1f} us | "
              + " ".join(f"{k}={v:.0f}" for k, v in best), flush=True)
        del sets
        cupy.get_default_memory_pool().free_all_blocks()
        path = write(args.out, path, host, profile_text, rows)     # after every shape: a run cut short keeps it
    path = write(args.out, path, host, profile_text, rows)
    print("wrote", path)
    return 0


def write(folder: Path | None, path: Path | None, host: dict, profile_text: str, rows: list) -> Path:
    """The report so far, written with provenance (again to ``path``, once a first call has made it)."""
    return records.write_probe({"host_us": host, "profile": profile_text, "rows": rows}, probe="vendor_probe",
                               folder=folder, extra={"torch": torch_version()}, replace=path)


if __name__ == "__main__":
    raise SystemExit(main())
