"""``gemm(a, b)``: the course's kernels as a library call, as fast as launching the kernel by hand.

What a call does, and what it leaves out on purpose:

- checks the operands (dtype, 2-D, row-major, shapes that chain, the rung's multiples) with
  messages that name the fix; the shape rules are checked once per shape and rung. Without a rung named, a
  shape off the default rung's multiples (N or K not a multiple of 8: TMA needs rows of 16-byte multiples) is
  not refused: A and B are copied into the interiors of zero-bordered buffers kept per GPU, stream and shape (the
  ragged N or K rounded up to whole 64-wide tiles, :func:`hgemm_course.library.padded.shape`), and C's corner is copied
  out of a kept one, one launch each way (:func:`_gemm_padded`, :mod:`hgemm_course.library.padded`),
  which costs those bytes;
- allocates C with ``cupy.empty`` or writes into ``out``, never filling it first: every kernel
  writes every element of C (verification proves it by poisoning C with NaN before it compares);
- launches on the device the operands live on, on CuPy's current stream, without a sync;
- reuses what the rungs cache per shape and pointer: loaded kernels, grids, tensor maps; and with ``out``,
  the whole launch: a call whose CuPy operands have the pointers, shapes, rung, GPU and stream of an earlier
  call checks their kinds, dtypes and layouts and launches the kernel with the arguments worked out then
  (:func:`_launch_again`), so it costs the host about what the bare kernel launch does; on a padded shape the
  call's three launches (the copies in, the kernel, the copy out) are kept as one CUDA graph.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from . import cta_clock, device, padded, target
from .errors import NoGPUError
from .ladder import Rung, get, registry
from .plan import plan

# The rungs gemm() runs when none is named, the first this GPU runs: the plan (rung 11 or 12 per shape,
# plan.py) where the GPU has wgmma; else the newest mma.sync rung it runs (07 with TMA, else 06); else the
# Numba rung 02, which runs on any CUDA GPU and under the Numba CUDA simulator.
_PLANNED = "11"
_DEFAULTS = (_PLANNED, "07", "06", "02")


def gemm(a, b, rung: str | int | None = None, *, out=None):
    """C = A @ B with one rung's kernel: fp16 row-major A (M, K) and B (K, N) in, fp16 C (M, N) out.

    ``rung`` defaults to the fastest choice this machine has: on a GPU with wgmma (H100/H200) the plan
    for the shape (:func:`hgemm_course.library.plan.plan`: rung 11 or rung 12, on the tiles and the split by K its model
    finds fastest there, from 128x256 tiles down to 64x64 and 128x192 in one wave; ``hgemm-course plan MxNxK``
    says which and why); on other GPUs from sm_80 the
    newest mma.sync rung they run (07 where they have TMA, else 06, sized for their shared memory); the
    Numba rung 02 on older GPUs and under the Numba CUDA simulator. CuPy inputs stay on their GPU, and the kernel
    runs on CuPy's current stream without waiting for it; NumPy inputs are copied over and C comes
    back as NumPy. ``out``, an fp16 (M, N) array of the same kind and device, receives C.
    Without ``rung``, a shape off the default rung's multiples (N or K not a multiple of 8 on the TMA rungs) runs
    on zero-bordered copies of A and B in buffers kept per GPU, stream and shape, C copied out of a padded result;
    a rung named refuses such a shape, naming the padding. Raises TypeError / ValueError naming the fix for bad input, and :class:`NoGPUError` when the
    rung needs a GPU this machine lacks.
    """
    if out is not None and _launch_again(a, b, out, rung):
        return out
    if rung is not None and (isinstance(rung, bool) or not isinstance(rung, (str, int, np.integer))):
        raise TypeError(f"rung must be a rung's id such as '11' or 11 (or None for this machine's fastest), not a "
                        f"{type(rung).__name__}; `hgemm-course list` lists the rungs.")
    r = _rung(rung)
    on_gpu = _is_cupy(a)
    if on_gpu != _is_cupy(b):
        raise TypeError("a and b live in different places (one NumPy, one CuPy); pass both as the same kind.")
    M, N, K = _check_operands(a, b, r, pad=rung is None)
    if out is not None:
        _check_out(out, M, N, on_gpu)
    if rung is None and r.padded_shape(M, N, K) != (M, N, K) and not (device.cudasim_enabled() and r.cudasim):
        _require_gpu_for(r.id)
        return _gemm_padded(a, b, out, r, on_gpu)
    if device.cudasim_enabled() and r.cudasim:
        if on_gpu:
            raise TypeError("Under NUMBA_ENABLE_CUDASIM=1 pass NumPy arrays: the simulator runs on the CPU.")
        c = np.empty((M, N), np.float16) if out is None else out
        r.launch(a, b, c)
        return c
    _require_gpu_for(r.id)
    launch = plan(M, N, K).launch if rung is None and r.id == _PLANNED else r.launch
    if not on_gpu:
        import cupy

        c = _launch_on_gpu(launch, cupy.asarray(a), cupy.asarray(b), None)
        return c.get() if out is None else c.get(out=out)
    return _launch_on_gpu(launch, a, b, out, rung)


def _launch_on_gpu(launch, a, b, out, rung_asked=None):
    import cupy

    where = a.device.id
    for name, x in (("b", b), ("out", out)):
        if x is not None and x.device.id != where:
            raise ValueError(f"a is on GPU {where} but {name} is on GPU {x.device.id}; put all three on one GPU "
                             f"(inside `with cupy.cuda.Device({where}):` use cupy.asarray({name})).")
    if where == cupy.cuda.runtime.getDevice():
        c = cupy.empty((a.shape[0], b.shape[1]), cupy.float16) if out is None else out
        again = launch(a, b, c)
        if out is not None and callable(again):
            _keep_again(a, b, out, rung_asked, again)
        return c
    with cupy.cuda.Device(where):
        return _launch_on_gpu(launch, a, b, out, rung_asked)


# The launches gemm(out=) has made, each as a call of no arguments (the rungs' launchers return them), keyed by
# _again_key: at most AGAIN_CACHED, the oldest dropped first. A launch holds the operands' pointers, not the
# arrays: memory freed and handed to new arrays of the same shapes is launched on correctly, as the tensor maps
# cached per pointer are (tensormap.py).
AGAIN_CACHED = 1024
_again: dict[tuple, Callable[[], None]] = {}
_cupy = None                    # the cupy module, once a launch was kept
_F16 = np.dtype(np.float16)


def _again_key(a, b, out, rung) -> tuple:
    """What a kept launch is valid for: the three operands' pointers and shapes, the rung asked for, and the
    current GPU and stream (rung 12's workspace is one per stream)."""
    return (a.data.ptr, b.data.ptr, out.data.ptr, a.shape, b.shape, out.shape, rung,
            _cupy.cuda.runtime.getDevice(), _cupy.cuda.get_current_stream().ptr)


def _keep_again(a, b, out, rung, again: Callable[[], None]) -> None:
    global _cupy
    if _cupy is None:
        import cupy

        _cupy = cupy
    if len(_again) >= AGAIN_CACHED:
        del _again[next(iter(_again))]
    _again[_again_key(a, b, out, rung)] = again


def _launch_again(a, b, out, rung) -> bool:
    """Launch C = A @ B into ``out`` as an earlier call with these pointers, shapes, rung, GPU and stream did,
    after checking what could differ between two such calls (each operand a CuPy array, of fp16, row-major);
    False, launching nothing, where no such call was kept or a check fails, and the full checks then run."""
    if _cupy is None or cta_clock.timing_builds_on():
        return False
    ndarray = _cupy.ndarray
    if type(a) is not ndarray or type(b) is not ndarray or type(out) is not ndarray:
        return False
    try:
        again = _again.get(_again_key(a, b, out, rung))
    except TypeError:           # a rung of an unhashable type: the full checks name it
        return False
    if (again is None or a.dtype != _F16 or b.dtype != _F16 or out.dtype != _F16
            or not (a.flags.c_contiguous and b.flags.c_contiguous and out.flags.c_contiguous)):
        return False
    again()
    return True


def _gemm_padded(a, b, out, r: Rung, on_gpu: bool):
    """C = A @ B for a shape off rung ``r``'s multiples, on the operands' GPU: A and B copied into the corners of
    zero-bordered buffers of the rung's multiples (the zeros add nothing to the sums), the planned kernel run on
    them, and C's (M, N) corner copied into ``out`` or a new array (:func:`_launch_padded`). With CuPy operands and
    ``out``, the call's launches are kept as one (:func:`_keep_again`), and a call with the same pointers, shapes,
    GPU and stream makes them again with no other work."""
    import cupy

    (M, K), N = a.shape, b.shape[1]
    with cupy.cuda.Device(a.device.id if on_gpu else cupy.cuda.runtime.getDevice()):
        a_gpu, b_gpu = (a, b) if on_gpu else (cupy.asarray(a), cupy.asarray(b))
        c = out if on_gpu and out is not None else cupy.empty((M, N), cupy.float16)
        keep = on_gpu and out is not None and not cta_clock.timing_builds_on()
        again, kept = _launch_padded(a_gpu, b_gpu, c, padded.shape(r, M, N, K), keep)
        if again is not None:
            _keep_again(a, b, out, None, again)
            kept.kept[_again_key(a, b, out, None)] = again
            if len(kept.kept) > AGAIN_CACHED:       # forget those _keep_again has dropped since
                kept.kept = {k: v for k, v in kept.kept.items() if _again.get(k) is v}
        if not on_gpu:
            return c.get() if out is None else c.get(out=out)
        return c


def _launch_padded(a, b, c, shape: tuple[int, int, int], keep: bool):
    """Launch C = A @ B through the kept buffers of the padded ``shape`` (padded.buffers): one launch copies A and
    B into their interiors, the planned kernel runs on the padded shape (through gemm(out=), so its launch is kept
    per the buffers' pointers), one launch copies C's corner out; an operand already of the padded shape is used
    as it is. Returns (the three launches again as one call of no arguments, one CUDA graph where they can be
    (padded.as_graph), or None unless ``keep``; the buffers)."""
    (M, K), N = a.shape, b.shape[1]
    kept = padded.buffers(M, N, K, shape, _forget_padded)
    a_p = a if kept.a is None else kept.a                       # (Mp, Kp)
    b_p = b if kept.b is None else kept.b                       # (Kp, Np)
    c_p = c if kept.c is None else kept.c                       # (Mp, Np)
    copies_in = [(x, x_p) for x, x_p in ((a, kept.a), (b, kept.b)) if x_p is not None]
    launches = [padded.copy_corners(copies_in, keep)] if copies_in else []
    gemm(a_p, b_p, out=c_p)
    launches.append(_again.get(_again_key(a_p, b_p, c_p, None)) if keep and _cupy is not None else None)
    if kept.c is not None:
        launches.append(padded.copy_corners([(kept.c, c)], keep))
    if not keep or None in launches:
        return None, kept
    launches = tuple(launches)

    def again() -> None:
        for launch in launches:
            launch()

    return padded.as_graph(launches, kept.stream) or again, kept


def _forget_padded(dropped: padded.Buffers) -> None:
    """The kept launches that use buffers the padded cache dropped go too: they would keep the buffers alive."""
    for key, again in dropped.kept.items():
        if _again.get(key) is again:
            del _again[key]


def _is_cupy(x) -> bool:
    return type(x).__module__.startswith("cupy")


def _check_operands(a, b, r: Rung, pad: bool = False) -> tuple[int, int, int]:
    """(M, N, K) after the per-call checks; the shape rules are checked once per (rung, shape). ``pad``: the rung's
    multiples are left to padding (:func:`_gemm_padded`), only dimensions below 1 are refused."""
    for name, x in (("a", a), ("b", b)):
        if not hasattr(x, "dtype") or not hasattr(x, "shape"):
            raise TypeError(f"{name} must be a NumPy or CuPy array, not {type(x).__name__}.")
        if isinstance(x, np.ma.MaskedArray):
            raise TypeError(f"{name} is a masked array, whose mask the GEMM would ignore; pass {name}.filled(0) to "
                            f"multiply the masked entries as zeros, or np.asarray({name}) for the data as it is.")
        if x.dtype != np.float16:
            raise TypeError(f"{name} has dtype {x.dtype}; the GEMM takes float16. Convert with {name}.astype(np.float16).")
        if x.ndim != 2:
            raise ValueError(f"{name} is {x.ndim}-D with shape {tuple(x.shape)}; pass a 2-D matrix.")
        if not x.flags.c_contiguous:
            raise ValueError(f"{name} is not C-contiguous (row-major); pass {name}.copy() or np.ascontiguousarray({name}).")
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"Inner dimensions differ: a is {M}x{K}, b is {K2}x{N}; a.shape[1] must equal b.shape[0].")
    key = (r.multiple_m, r.multiple_n, r.multiple_k, M, N, K, pad)     # all that Rung.check_shape reads
    if key not in _shapes_checked:
        r.check_shape(*(r.padded_shape(M, N, K) if pad else (M, N, K)))   # padded: only sizes below 1 are refused
        _shapes_checked.add(key)
    return M, N, K


_shapes_checked: set[tuple[int, ...]] = set()   # (rung's multiples, M, N, K) that passed its rules


def _check_out(out, M: int, N: int, on_gpu: bool) -> None:
    if isinstance(out, np.ma.MaskedArray):
        raise TypeError("out is a masked array, whose mask the GEMM would neither read nor write; pass a plain "
                        "array, e.g. np.empty((M, N), np.float16), and mask C afterwards.")
    if _is_cupy(out) != on_gpu or not hasattr(out, "flags"):
        kind = "CuPy" if on_gpu else "NumPy"
        package = type(out).__module__.split(".")[0]
        got = type(out).__name__ if package == "builtins" else f"{package}.{type(out).__name__}"
        raise TypeError(f"out must be a {kind} array like a and b, not a {got}.")
    if out.dtype != np.float16 or out.shape != (M, N) or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float16 array of shape ({M}, {N}); got {out.dtype} "
                         f"{tuple(out.shape)}{'' if out.flags.c_contiguous else ', not contiguous'}. "
                         f"Allocate it with empty(({M}, {N}), dtype=float16).")


@lru_cache(maxsize=None)
def _rung(rung: str | int | None) -> Rung:
    """The rung by id, or this machine's default; cached, so a call costs one dictionary lookup."""
    if rung is not None:
        return get(rung)
    here = target.runnable()
    rungs = registry()
    if here is None:
        return rungs[_DEFAULTS[-1]]
    return next(rungs[r] for r in _DEFAULTS if rungs[r].refusal(here) is None)


@lru_cache(maxsize=None)
def _require_gpu_for(rung_id: str) -> None:
    """Raise :class:`NoGPUError` unless this machine has a GPU the rung runs on (asked once per rung)."""
    r = get(rung_id)
    info, reason, _ = device.probe_gpu()
    if info is None:
        hint = (" Or run it on the CPU: set NUMBA_ENABLE_CUDASIM=1 before Python starts "
                "(`NUMBA_ENABLE_CUDASIM=1 python your_script.py`).") if r.cudasim else ""
        raise NoGPUError(f"Rung {r.id} ({r.slug}) needs {r.needs_gpu}; this machine has none: {reason}.{hint}")
    here = target.runnable()
    why = None if here is None else r.refusal(here)
    if why is not None:
        raise NoGPUError(f"{why[0].upper()}{why[1:]}. gemm(a, b) without a rung runs the fastest one this GPU has.")
