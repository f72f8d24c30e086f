# Question: does the bank model's 8-way ldmatrix conflict on rung 04's rows without padding hold on the H200?
# Results: results/model_banks_linear_nvidia-h200_20261129T182234.json, results/ncu/linear_probe_h200_20261129T1822.csv.
"""Rung 04 without its padding: the linear (unswizzled, unpadded) layout the bank model is checked on.

    python3 research/linear_variant_probe.py [--size 2048] [--dry-run]
    ncu -k regex:^k04_linear --launch-skip 1 --launch-count 1 --metrics ... python3 research/linear_variant_probe.py
    python3 research/linear_variant_probe.py --model [--size 2048]

The variant is rung 04's own source with the 8 halves of padding set to 0 (rows of BK and BN
halves, as `sim.banks` calls "linear") and the kernel renamed, launched with rung 04's tiles.
It is still a correct GEMM, only a slow one: every ldmatrix meets an 8-way bank conflict.
The run verifies it (NaN-poisoned C, FP32 reference) after the profiled launches.
``--model`` prints what ``sim.main_loop_bank_conflicts(layout="linear")`` predicts for it.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from hgemm_course.library.ladder import r04_mma_sync
from hgemm_course.library.ladder.nvrtc_kernel import TemplateKernel, cdiv
from hgemm_course.library.paths import KERNELS_DIR

PADDED = ("constexpr int A_LD = BK + 8;", "constexpr int B_LD = BN + 8;")
LINEAR = ("constexpr int A_LD = BK + 0;", "constexpr int B_LD = BN + 0;")


def linear_source() -> str:
    """Rung 04's kernel with the padding removed and the kernel renamed k04_linear."""
    text = (KERNELS_DIR / r04_mma_sync.SOURCE).read_text()
    for old, new in zip(PADDED, LINEAR):
        if old not in text:
            raise RuntimeError(f"{r04_mma_sync.SOURCE} no longer contains {old!r}; update this probe.")
        text = text.replace(old, new)
    return text.replace("k04_mma_sync(", "k04_linear(")


def linear_kernel() -> TemplateKernel:
    t = r04_mma_sync.TILES
    smem = t.stages * (t.bm * t.bk + t.bk * t.bn) * 2
    return TemplateKernel("k04_linear.cu", "k04_linear", (*t.template_args, False), t.threads, smem,
                          grid=lambda M, N: (cdiv(N, t.bn), cdiv(M, t.bm)))


def model(n: int) -> dict:
    from hgemm_course.sim import main_loop_bank_conflicts

    t = r04_mma_sync.TILES
    r = main_loop_bank_conflicts(t.bm, t.bn, t.bk, t.bm // t.wm, t.bn // t.wn, layout="linear", M=n, N=n, K=n)
    return r["per_kernel"]


def run(n: int) -> int:
    import cupy

    from hgemm_course.measurement import verification
    from hgemm_course.library.build import compile_cuda

    kernel = linear_kernel()
    compiled = compile_cuda(linear_source(), name_expressions=(kernel.name_expression,))
    fn = compiled.function(kernel.name_expression)
    fn.max_dynamic_shared_size_bytes = kernel.smem_bytes
    a, b, seed = verification.random_inputs(n, n, n, xp=cupy)
    c = cupy.full((n, n), cupy.nan, dtype=cupy.float16)
    args = (a, b, c, np.int32(n), np.int32(n), np.int32(n))
    for _ in range(2):                     # a warm-up, then the launch ncu profiles
        fn(kernel.grid(n, n), (kernel.threads,), args, shared_mem=kernel.smem_bytes)
    cupy.cuda.runtime.deviceSynchronize()
    check = verification.compare(c, cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32)), K=n, rung="04-linear",
                                 seed=seed)
    print(f"{kernel.name_expression}: {check.summary()}", file=sys.stderr)
    return 0 if check.passed else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--model", action="store_true", help="print the bank model's prediction as JSON")
    p.add_argument("--dry-run", action="store_true", help="compile the variant here, launch nothing")
    args = p.parse_args(argv)
    if args.model:
        print(json.dumps(model(args.size), indent=1))
        return 0
    if args.dry_run:
        from hgemm_course.library.build import compile_cuda

        kernel = linear_kernel()
        res = compile_cuda(linear_source(), name_expressions=(kernel.name_expression,)).resources_of(kernel.name_expression)
        print(f"{kernel.name_expression}: {res.registers} registers, {kernel.smem_bytes} bytes of shared memory, "
              f"{res.spills} bytes spilled")
        return 0
    return run(args.size)


if __name__ == "__main__":
    sys.exit(main())
