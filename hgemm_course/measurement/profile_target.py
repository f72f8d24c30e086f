"""The process Nsight Compute profiles (``python -m hgemm_course.measurement.profile_target``): one launch
configuration of a rung, or of cuBLAS, cuBLASLt or gemm()'s plan, launched once to warm up and ``--launches``
more, then C checked. :func:`launch_config` turns a rung and its launcher overrides into the kernel launched, a
ValueError naming the fix for anything the rung cannot run; :mod:`.profile` runs ncu over this process."""
from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from dataclasses import replace

from . import vendors, verification
from ..library import device
from ..library.ladder import get, registry
from ..library.ladder.nvrtc_kernel import launched_kernel

VERIFY_ROW_STEP = 61            # rows checked against the reference: a prime stride meets every tile row
VERIFIED = "C verified after the profiled launch"
WRONG_C = "computed a wrong C"


CUBLAS = "cublas"
# cuBLAS names its GEMM kernels nvjet_* on Hopper (sm90_xmma_gemm_* / cutlass_* elsewhere); the profiled
# process launches no other kernel of such a name before its verification
CUBLAS_KERNELS = "nvjet|gemm|cutlass"


class CublasTarget:
    """cuBLAS's fp16 GEMM as ``cupy.matmul`` calls it, profiled as the rungs are."""
    id = CUBLAS
    slug = "cuBLAS through cupy.matmul"
    kernels = CUBLAS_KERNELS

    @staticmethod
    def launch(a, b, c):
        import cupy

        cupy.matmul(a, b, out=c)


class CublasLtTarget:
    """cuBLASLt's fp16 GEMM as ``torch.matmul`` calls it (the ``compare`` extra). Where it splits K it launches a
    reduction kernel after the GEMM kernel; ncu profiles the GEMM kernel only, so its duration leaves that out."""
    id = "cublaslt"
    slug = "cuBLASLt through torch.matmul"
    kernels = CUBLAS_KERNELS

    @staticmethod
    def launch(a, b, c):
        fn = vendors.vendors().get(vendors.CUBLASLT_NAME)
        if fn is None:
            raise RuntimeError("Profiling cuBLASLt needs PyTorch: pip install -e \".[compare]\".")
        fn(a, b, c)


class PlanTarget:
    """What ``gemm(a, b, out=c)`` launches for the shape on a Hopper GPU: rung 11 or 12 as the plan picks them."""
    id = "plan"
    slug = "gemm()'s plan"
    kernels = "^k1[12]_(persistent|streamk)"     # the GEMM kernel (rung 12 split apart adds its pieces inside it)

    @staticmethod
    def launch(a, b, c):
        from ..library.api import gemm

        gemm(a, b, out=c)


# The targets that are no rung of the ladder: launched whole, their kernel found by name (``kernels``).
TARGETS = {t.id: t for t in (CublasTarget, CublasLtTarget, PlanTarget)}


def rung_id(rung: str) -> str:
    """A rung's id as the records hold it ("5" -> "05"), or "cublas", "cublaslt", "plan"."""
    return rung.lower() if rung.lower() in TARGETS else get(rung).id


# ---------------------------------------------------------------------------- the launch

def launch_config(rung_id: str, M: int, N: int, K: int, *, super_mn: tuple[int, int] | None = None,
                  cluster_m: int | None = None, tiles: tuple[int, int] | None = None):
    """(rung, launcher overrides, TemplateKernel) of one profiled launch; a ValueError naming the fix for
    anything the rung cannot run. ``rung_id`` "cublas", "cublaslt" or "plan" (:data:`TARGETS`) gives a launch that
    picks its own kernel, so no TemplateKernel (None)."""
    if rung_id.lower() in TARGETS:
        target = TARGETS[rung_id.lower()]()
        if super_mn is not None or cluster_m is not None or tiles is not None:
            raise ValueError(f"{target.slug} picks its own tiles and launch order: drop --tiles, --super and "
                             "--cluster to profile it.")
        return target, {}, None
    rung = get(rung_id)
    if rung.backend != "nvrtc":
        raise ValueError(f"rung {rung.id} ({rung.slug}) is a Numba kernel; profiles cover the NVRTC rungs, "
                         "whose launchers own a TemplateKernel.")
    rung.check_shape(M, N, K)
    takes = inspect.signature(rung.launch).parameters
    overrides = {}
    if super_mn is not None:
        if "super_mn" not in takes:
            with_super = ", ".join(r.id for r in registry().values()
                                   if "super_mn" in inspect.signature(r.launch).parameters)
            raise ValueError(f"rung {rung.id} ({rung.slug}) has no super tiles: its launcher takes no super_mn, so drop "
                             f"--super (rungs {with_super} take it).")
        overrides["super_mn"] = tuple(super_mn)
    if cluster_m is not None:
        if "cluster_m" not in takes:
            raise ValueError(f"rung {rung.id} ({rung.slug}) has no clusters: only rung 11's launcher takes cluster_m.")
        overrides["cluster_m"] = cluster_m
    module = importlib.import_module(rung.launch.__module__)
    if tiles is not None:
        if "tiles" not in takes:
            raise ValueError(f"rung {rung.id} ({rung.slug}) has fixed tiles: its launcher takes no tiles, so drop --tiles.")
        overrides["tiles"] = replace(module.TILES, bm=int(tiles[0]), bn=int(tiles[1]))
    return rung, overrides, launched_kernel(module, M, N, K, **overrides)


def variant_label(overrides: dict) -> str:
    """"default", "super 16x2", "cluster 2", "super 16x2, cluster 2": the launcher settings a profile changed."""
    parts = []
    if "tiles" in overrides:
        parts.append(f"tiles {overrides['tiles'].bm}x{overrides['tiles'].bn}")
    if "super_mn" in overrides:
        parts.append("super {}x{}".format(*overrides["super_mn"]))
    if "cluster_m" in overrides:
        parts.append(f"cluster {overrides['cluster_m']}")
    return ", ".join(parts) or "default"


def _target_args(argv=None):
    p = argparse.ArgumentParser(description="Launch one configuration of one rung a few times, for Nsight "
                                            "Compute to profile; a wrong C exits 1.")
    p.add_argument("--rung", required=True, help="rung id: any NVRTC rung (03 and up), or cublas, cublaslt, plan")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--size", type=int, default=2048, help="M = N = K (default 2048)")
    shape.add_argument("--mnk", type=int, nargs=3, metavar=("M", "N", "K"))
    p.add_argument("--super", type=int, nargs=2, metavar=("SUPER_M", "SUPER_N"),
                   help="super tile in output tiles, for rungs whose launcher takes super_mn")
    p.add_argument("--cluster", type=int, help="CTAs per cluster along M, for rung 11 (cluster_m)")
    p.add_argument("--tiles", type=int, nargs=2, metavar=("BM", "BN"), help="CTA tile, for rungs whose launcher "
                   "takes tiles (default: the rung's own)")
    p.add_argument("--launches", type=int, default=1, help="launches after the warm-up (default 1)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments, print the kernel, launch nothing")
    args = p.parse_args(argv)
    if args.launches < 1:
        p.error(f"--launches {args.launches}: launch at least once after the warm-up.")
    M, N, K = args.mnk or (args.size,) * 3
    try:
        rung, overrides, kernel = launch_config(args.rung, M, N, K, super_mn=args.super, cluster_m=args.cluster,
                                                tiles=args.tiles)
    except ValueError as e:
        p.error(str(e))
    return args, rung, (M, N, K), overrides, kernel


def target_main(argv=None) -> int:
    """The process ncu profiles: one warm-up launch, ``--launches`` more, then C checked (every element
    written, every 61st row against an FP32 reference that kernels other than the rung's compute after the
    profiled launches). Exits 1 on a wrong C, 2 (a sentence naming the fix) on bad arguments."""
    args, rung, (M, N, K), overrides, kernel = _target_args(argv)
    if kernel is None:
        print(f"{rung.slug} M={M} N={N} K={K} launches=1+{args.launches}", flush=True)
    else:
        print(f"rung {rung.id} {kernel.name_expression} M={M} N={N} K={K} grid={kernel.grid(M, N)} "
              f"block=({kernel.threads},) smem={kernel.smem_bytes} launches=1+{args.launches}", flush=True)
    if args.dry_run:
        return 0

    try:
        device.require_gpu("The profile target")
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    import cupy

    a, b, seed = verification.random_inputs(M, N, K, xp=cupy)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    for _ in range(1 + args.launches):
        rung.launch(a, b, c, **overrides)
    cupy.cuda.runtime.deviceSynchronize()

    unwritten = int((~cupy.isfinite(c)).sum())
    rows = cupy.arange(0, M, VERIFY_ROW_STEP)
    reference = cupy.matmul(a[rows].astype(cupy.float32), b.astype(cupy.float32))
    result = verification.compare(c[rows], reference, K=K, rung=rung.id, seed=seed)
    print(f"{result.summary()} ({len(rows)} rows checked), unwritten or non-finite in all of C: {unwritten}",
          flush=True)
    if unwritten or not result.passed:
        print(f"rung {rung.id} {WRONG_C}: the profile of this launch is not worth reading "
              f"(reproduce with verification.verify('{rung.id}', {M}, {N}, {K}, seed={seed})).", file=sys.stderr)
        return 1
    print(VERIFIED, flush=True)
    return 0




if __name__ == "__main__":
    sys.exit(target_main())
