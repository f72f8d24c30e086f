"""Launch one configuration of one rung a few times, for Nsight Compute to profile.

    python3 scripts/profile_target.py --rung 06 --size 8192 [--super 16 2] [--mnk M N K] [--launches 1]
    ncu -k regex:^k05_swizzle --launch-skip 1 --launch-count 1 ... python3 scripts/profile_target.py --rung 05

Fresh random fp16 inputs (``harness.random_inputs``), C poisoned with NaN, one warm-up launch,
then ``--launches`` launches through the rung's own launcher with its own tile constants;
``--super`` overrides the super tile of a rung whose launcher takes ``super_mn`` (06 and up).
Prints the kernel's name expression. Afterwards the result is checked (every element
written, every 61st row against an FP32 reference, computed after the profiled launches by
kernels that are not the rung's) and a wrong result exits 1. ``--dry-run`` checks the
arguments and prints the kernel without a GPU. Exits 2, with a sentence naming the fix, on
bad arguments.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import sys

from hgemm_course import device, harness
from hgemm_course.ladder import get, registry

VERIFY_ROW_STEP = 61     # rows checked against the reference: a prime stride meets every tile row


def takes_super(rung) -> bool:
    return "super_mn" in inspect.signature(rung.launch).parameters


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rung", required=True, help="rung id: any NVRTC rung (03 and up)")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--size", type=int, default=2048, help="M = N = K (default 2048)")
    shape.add_argument("--mnk", type=int, nargs=3, metavar=("M", "N", "K"))
    p.add_argument("--super", type=int, nargs=2, metavar=("SUPER_M", "SUPER_N"),
                   help="super tile in output tiles, for rungs whose launcher takes super_mn")
    p.add_argument("--cluster", type=int, help="CTAs per cluster along M, for rung 11 (cluster_m)")
    p.add_argument("--launches", type=int, default=1, help="launches after the warm-up (default 1)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments, print the kernel, launch nothing")
    args = p.parse_args(argv)

    try:
        rung = get(args.rung)
    except ValueError as e:
        p.error(str(e))
    if rung.backend != "nvrtc":
        p.error(f"rung {rung.id} ({rung.slug}) is a Numba kernel; this script profiles the NVRTC rungs, "
                "whose launchers own a TemplateKernel.")
    M, N, K = args.mnk or (args.size,) * 3
    try:
        rung.check_shape(M, N, K)
    except ValueError as e:
        p.error(str(e))
    if args.launches < 1:
        p.error(f"--launches {args.launches}: launch at least once after the warm-up.")
    overrides = {}
    if args.super:
        if not takes_super(rung):
            p.error(f"rung {rung.id} ({rung.slug}) has no super tiles: its launcher takes no super_mn, so drop "
                    f"--super (rungs {', '.join(r.id for r in registry().values() if takes_super(r))} take it).")
        overrides["super_mn"] = tuple(args.super)
    if args.cluster:
        if "cluster_m" not in inspect.signature(rung.launch).parameters:
            p.error(f"rung {rung.id} ({rung.slug}) has no clusters: only rung 11's launcher takes cluster_m.")
        overrides["cluster_m"] = args.cluster
    try:
        kernel = importlib.import_module(rung.launch.__module__).kernel(**overrides)
    except ValueError as e:
        p.error(str(e))
    return args, rung, (M, N, K), overrides, kernel


def main(argv=None) -> int:
    args, rung, (M, N, K), overrides, kernel = parse_args(argv)
    grid = kernel.grid(M, N)
    print(f"rung {rung.id} {kernel.name_expression} M={M} N={N} K={K} grid={grid} block=({kernel.threads},) "
          f"smem={kernel.smem_bytes} launches=1+{args.launches}", flush=True)
    if args.dry_run:
        return 0

    try:
        device.require_gpu("profile_target.py")
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    import cupy

    a, b, seed = harness.random_inputs(M, N, K, xp=cupy)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    for _ in range(1 + args.launches):
        rung.launch(a, b, c, **overrides)
    cupy.cuda.runtime.deviceSynchronize()

    unwritten = int((~cupy.isfinite(c)).sum())
    rows = cupy.arange(0, M, VERIFY_ROW_STEP)
    reference = cupy.matmul(a[rows].astype(cupy.float32), b.astype(cupy.float32))
    result = harness.compare(c[rows], reference, K=K, rung=rung.id, seed=seed)
    print(f"{result.summary()} ({len(rows)} rows checked), unwritten or non-finite in all of C: {unwritten}",
          flush=True)
    if unwritten or not result.passed:
        print(f"rung {rung.id} computed a wrong C: the profile of this launch is not worth reading "
              f"(reproduce with harness.verify('{rung.id}', {M}, {N}, {K}, seed={seed})).", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
