"""hgemm-course: write an FP16 GEMM for NVIDIA GPUs, one idea at a time, measured against cuBLAS.

>>> import hgemm_course
>>> [r["rung"] for r in hgemm_course.rungs()][:2]
['01', '02']
>>> c = hgemm_course.gemm(a, b, rung="05")      # doctest: +SKIP  (fp16 row-major in, fp16 out)
"""
from __future__ import annotations

__version__ = "0.1.0"


class NoGPUError(RuntimeError, ValueError):
    """A rung needs a GPU (or a newer one) that this machine does not have."""


def rungs() -> list[dict]:
    """The ladder: id, chapter, title, idea and what each rung needs (GPU arch, CUDASIM or not)."""
    from .ladder import registry

    return [r.as_dict() for r in registry().values()]


def gemm(a, b, rung: str = "05"):
    """C = A @ B with one rung's kernel: fp16 row-major A (M,K) and B (K,N) in, fp16 C (M,N) out.

    NumPy inputs come back as NumPy, CuPy inputs as CuPy. Under the Numba CUDA
    simulator (NUMBA_ENABLE_CUDASIM=1) rungs 01-02 run on NumPy arrays without a GPU.
    Raises TypeError / ValueError naming the fix for bad input, and
    :class:`NoGPUError` when the rung needs a GPU this machine lacks.
    """
    from . import device
    from .harness import check_inputs, run_rung
    from .ladder import get

    r = get(rung)
    check_inputs(a, b, r)
    on_device = [type(x).__module__.split(".")[0] == "cupy" for x in (a, b)]
    if on_device[0] != on_device[1]:
        raise TypeError("a and b live in different places (one NumPy, one CuPy); pass both as the same kind.")
    if device.cudasim_enabled() and r.cudasim:
        if on_device[0]:
            raise TypeError("Under NUMBA_ENABLE_CUDASIM=1 pass NumPy arrays: the simulator runs on the CPU.")
        return run_rung(r, a, b, poison=False)
    info, reason, _ = device.probe_gpu()
    if info is None:
        hint = " Set NUMBA_ENABLE_CUDASIM=1 before importing numba to run it on the CPU." if r.cudasim else ""
        raise NoGPUError(f"Rung {r.id} ({r.slug}) needs {r.needs_gpu}; this machine has none: {reason}.{hint}")
    if r.arch != "any" and info.compute_capability < _arch_capability(r.arch):
        raise NoGPUError(f"Rung {r.id} ({r.slug}) needs {r.arch}; {info.name} is {info.arch}.")
    import cupy

    c = run_rung(r, cupy.asarray(a), cupy.asarray(b), poison=False)
    return c if on_device[0] else cupy.asnumpy(c)


def _arch_capability(arch: str) -> tuple[int, int]:
    digits = arch.removeprefix("sm_").rstrip("a")
    return int(digits[:-1]), int(digits[-1])
