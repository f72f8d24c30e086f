"""Run a learner's kernel source through a rung's launcher: the child process of a kernel exercise's
GPU check, which only produces C; the parent compares it with its own reference.

    python -m hgemm_course.check.gpu_run 07 exercises/ex07_mbarrier.cu --out DIR --shapes 1000x1000x1000 257x136x72

For each shape it makes the inputs the parent makes too (:func:`hgemm_course.measurement.verification.random_inputs` with
seed ``--seed`` + the shape's index), launches the kernel on an output poisoned with NaN, saves C as
``DIR/c<i>.npy`` and writes one JSON line to ``DIR/results.jsonl``: ``{"shape", "seed", "c", "kernels"}``,
the last the instantiations launched with their architecture, which the parent compares with what its
CPU part compiled. When the CUDA context breaks (an illegal address, say) the line is ``{"shape",
"error"}`` and the run stops: after such an error the context is unusable. Exit status 0, or 3 after a
CUDA error. The report goes to a file, not to stdout, where the kernel's own printf also writes. Run it
in a child process: a kernel that hangs or crashes takes this process down, not the caller's.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from pathlib import Path


def learner_launch(rung_id: str, source: Path, launched: list | None = None):
    """The rung's ``launch(a, b, c)`` with its kernel compiled from ``source`` instead of the
    rung's own file: same template instantiation, geometry, shared memory and tensor maps.
    Each kernel the launcher builds is appended to ``launched``."""
    from ..library.ladder import get

    rung = get(rung_id)
    module = importlib.import_module(rung.launch.__module__)
    original = module.kernel

    def kernel(*args, **kwargs):
        built = dataclasses.replace(original(*args, **kwargs), source=str(source))
        if launched is not None:
            launched.append(built)
        return built

    module.kernel = kernel
    return rung, module.launch


def _parse_shape(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.lower().split("x")]
    return (parts[0],) * 3 if len(parts) == 1 else tuple(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hgemm_course.check.gpu_run", description=__doc__.splitlines()[0])
    parser.add_argument("rung")
    parser.add_argument("source", type=Path)
    parser.add_argument("--shapes", nargs="+", default=["1000x1000x1000"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="the folder for results.jsonl and C of each shape")
    parser.add_argument("--as", dest="as_arch", metavar="ARCH",
                        help="run that target's code on this GPU (target.named(ARCH).run_here())")
    args = parser.parse_args(argv)
    if args.as_arch is None:
        return _run(args)
    from ..library import target

    with target.use(target.named(args.as_arch).run_here()):
        return _run(args)


def _run(args) -> int:
    import cupy
    import numpy as np

    from ..library.build import CompileError
    from ..measurement.verification import random_inputs

    launched: list = []
    rung, launch = learner_launch(args.rung, args.source, launched)
    report = (args.out / "results.jsonl").open("w")
    for i, text in enumerate(args.shapes):
        M, N, K = _parse_shape(text)
        seed = args.seed + i
        launched.clear()
        try:
            rung.check_shape(M, N, K)
            a, b, _ = random_inputs(M, N, K, seed=seed, xp=cupy)
            c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)     # poisoned: unwritten elements show
            launch(a, b, c)
            cupy.cuda.runtime.deviceSynchronize()
            np.save(args.out / f"c{i}.npy", cupy.asnumpy(c), allow_pickle=False)
        except CompileError as exc:
            _write(report, {"shape": [M, N, K], "error": f"does not compile: {exc}"})
            return 3
        except Exception as exc:  # a CUDA error: the context is gone, so stop here
            name = type(exc).__name__
            text = str(exc)
            if "illegal" in text.lower() or "ILLEGAL" in text:
                text = (f"the kernel made an illegal memory access on {M}x{N}x{K} ({name}: {text}). An address "
                        "outside the matrices or outside shared memory: check the offsets you compute.")
            elif "misaligned" in text.lower():
                text = (f"the kernel made a misaligned access on {M}x{N}x{K} ({name}: {text}). ldmatrix, cp.async "
                        "and mbarriers need aligned shared-memory addresses.")
            else:
                text = f"the run on {M}x{N}x{K} failed: {name}: {text}"
            _write(report, {"shape": [M, N, K], "error": text})
            return 3
        kernels = [{"name_expression": k.name_expression, "arch": k.arch} for k in launched]
        _write(report, {"shape": [M, N, K], "seed": seed, "c": f"c{i}.npy", "kernels": kernels})
    return 0


def _write(report, line: dict) -> None:
    report.write(json.dumps(line) + "\n")
    report.flush()


if __name__ == "__main__":
    sys.exit(main())
