"""The learner's side of ex02_outer_product: the learner's Numba CUDA device function run inside a small kernel of the
course's, built like rung 02's tiled kernel around its outer-product loop. Only data goes back; the verdict is
:mod:`.ex02_outer_product`'s, in the caller.

The kernel is one block of THREADS_Y x THREADS_X threads. They copy the seed's a_tile and b_tile
(:func:`.ex02_outer_product.inputs`) into shared memory; each thread sets its acc to its own random starting value (the
sum of the k-slices before) and a_frag and b_frag to NaN (registers not loaded yet), calls the learner's function, and
writes acc out. Three runs, each a call from the caller:

- ``run="kernel"`` (:func:`run`, in the check's child): under the Numba CUDA simulator, each thread as a block of
  its own (:func:`_simulated_kernel`); every thread's acc.
- ``run="trace"`` (:func:`run`, in the check's child): thread (ty, tx) alone under the simulator, the tiles, acc and
  frags replaced by arrays that record, each element of its acc as the sum of products it was given,
  each factor named (``a_tile[r, k]``, ``b_tile[k, c]``, acc's starting value, a frag element never loaded), and which
  tile elements it wrote. None where the learner's code does what a recorded value cannot (a cast, a comparison).
- ``python -m hgemm_course.check.outer_product_run REQUEST OUT`` (:func:`main`, a process of its own that the caller
  starts, with the simulator off): the kernel compiled by Numba's CUDA compiler to PTX for the target, and, where a
  GPU here runs it, launched there; its PTX and every thread's acc, written to the file OUT as JSON.

Imported by the check's child before the learner's file (:attr:`.feedback.Exercise.runner`), this module switches the
simulator on there, so that the file's ``from numba import cuda`` gets it.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import threading
from pathlib import Path

SIM_THREAD_STACK_BYTES = 2 << 20  # the simulator runs each CUDA thread as a Python thread: at the stack size a
                                  # shell's limit gives (64 MiB or unlimited on some machines) they overrun the check's
                                  # memory limit, so each gets 2 MiB
if __name__ != "__main__":        # the check's child: the simulator, before the learner's file imports numba
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    threading.stack_size(SIM_THREAD_STACK_BYTES)

from numba import cuda, float32   # noqa: E402  (a kernel's ``cuda`` is a global: the simulator swaps it)

from ..library.ladder.k02_tiled import BK, BM, BN, THREADS, THREADS_X, THREADS_Y, TM, TN  # noqa: E402
from .ex02_outer_product import inputs  # noqa: E402

MAX_TERMS = 512                   # products one traced value may hold before the trace gives up


def _kernel(outer_products):
    """The course's kernel around ``outer_products``, for the simulator or the compiler."""
    @cuda.jit
    def outer_product_kernel(a, b, acc0, out):
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        tid = ty * THREADS_X + tx
        a_tile = cuda.shared.array((BM, BK), float32)     # (BM, BK) slice of A
        b_tile = cuda.shared.array((BK, BN), float32)     # (BK, BN) slice of B
        acc = cuda.local.array((TM, TN), float32)         # (TM, TN) outputs of this thread
        a_frag = cuda.local.array(TM, float32)            # (TM,)
        b_frag = cuda.local.array(TN, float32)            # (TN,)
        for idx in range(tid, BM * BK, THREADS):
            a_tile[idx // BK, idx % BK] = a[idx // BK, idx % BK]
        for idx in range(tid, BK * BN, THREADS):
            b_tile[idx // BN, idx % BN] = b[idx // BN, idx % BN]
        for i in range(TM):
            a_frag[i] = float32(math.nan)
            for j in range(TN):
                acc[i, j] = acc0[ty, tx, i, j]
        for j in range(TN):
            b_frag[j] = float32(math.nan)
        cuda.syncthreads()
        outer_products(a_tile, b_tile, acc, a_frag, b_frag, ty, tx)
        for i in range(TM):
            for j in range(TN):
                out[ty, tx, i, j] = acc[i, j]

    return outer_product_kernel


def _simulated_kernel(outer_products):
    """The same work for the simulator, one thread per block: block (tx, ty) is thread (ty, tx), and the tiles are
    read where they lie. The simulator runs a block's threads as Python threads, all at once; 256 of them overran
    what a check's process may start on the H200's machine ("can't start new thread"), one at a time does not.
    Nothing here needs the block's threads together: the tiles are filled before the learner's function runs and
    each thread writes only its own acc."""
    @cuda.jit
    def outer_product_kernel(a, b, acc0, out):
        tx, ty = cuda.blockIdx.x, cuda.blockIdx.y
        acc = cuda.local.array((TM, TN), float32)
        a_frag = cuda.local.array(TM, float32)
        b_frag = cuda.local.array(TN, float32)
        for i in range(TM):
            a_frag[i] = float32(math.nan)
            for j in range(TN):
                acc[i, j] = acc0[ty, tx, i, j]
        for j in range(TN):
            b_frag[j] = float32(math.nan)
        outer_products(a, b, acc, a_frag, b_frag, ty, tx)
        for i in range(TM):
            for j in range(TN):
                out[ty, tx, i, j] = acc[i, j]

    return outer_product_kernel


def run(outer_products, *, run: str, seed: int, ty: int | None = None, tx: int | None = None):
    """One run of the learner's ``outer_products`` under the simulator (the check's child): ``run="kernel"``, every
    thread's acc, (THREADS_Y, THREADS_X, TM, TN); ``run="trace"``, what thread (``ty``, ``tx``) did (:func:`_trace`)."""
    import numpy as np

    a, b, acc0 = inputs(seed)
    if run == "trace":
        return _trace(outer_products, a, b, acc0, ty, tx)
    out = np.full_like(acc0, np.nan)
    try:
        _simulated_kernel(outer_products)[(THREADS_X, THREADS_Y), 1](a, b, acc0, out)
    except NotImplementedError as exc:         # the stub: its hint, without the simulator's thread prefix
        raise NotImplementedError(re.sub(r"^tid=\[[^]]*\] ctaid=\[[^]]*\]:? ?", "", str(exc))) from None
    return out


# ------------------------------------------------------------------------------------------------ the trace

class TraceLimit(Exception):
    """A traced value grew past :data:`MAX_TERMS` products."""


class Traced:
    """A value as the sum of the products it was made of: ``terms``, each a sorted tuple of named factors."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple):
        if len(terms) > MAX_TERMS:
            raise TraceLimit(f"a value made of more than {MAX_TERMS} products")
        self.terms = terms

    @staticmethod
    def of(value) -> "Traced":
        if isinstance(value, Traced):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) and type(value).__module__ != "numpy":
            raise TypeError(f"a traced value meets {type(value).__name__}")
        return Traced(()) if value == 0 else Traced(((("const",),),))

    def __add__(self, other):
        return Traced(self.terms + Traced.of(other).terms)

    __radd__ = __add__

    def __neg__(self):
        return Traced(tuple(tuple(sorted(term + (("neg",),))) for term in self.terms))

    def __sub__(self, other):
        return self + -Traced.of(other)

    def __rsub__(self, other):
        return Traced.of(other) + -self

    def __mul__(self, other):
        other = Traced.of(other)
        if len(self.terms) * len(other.terms) > MAX_TERMS:
            raise TraceLimit(f"a value made of more than {MAX_TERMS} products")
        return Traced(tuple(tuple(sorted(x + y)) for x in self.terms for y in other.terms))

    __rmul__ = __mul__


class TracedArray:
    """An array of traced values: a tile (reads give named factors; writes are recorded), or acc and the frags
    (they hold what is stored; their starting elements are named)."""

    def __init__(self, name: str, shape: tuple, start, writes: list | None = None):
        self.name, self.shape, self.ndim = name, shape, len(shape)
        self._start, self._values, self._writes = start, {}, writes

    def _index(self, key) -> tuple:
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != self.ndim or not all(isinstance(k, int) or type(k).__module__ == "numpy" for k in key):
            raise TypeError(f"{self.name}[{key}]: the trace reads one element at a time")
        out = []
        for axis, (k, size) in enumerate(zip(key, self.shape)):
            k = int(k)
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {size}")
            out.append(k % size)
        return tuple(out)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key):
        if self.ndim == 2 and not isinstance(key, tuple):
            return _Row(self, key)
        index = self._index(key)
        if index in self._values:
            return self._values[index]
        return Traced((((self._start, *index),),))

    def __setitem__(self, key, value):
        index = self._index(key)
        if self._writes is not None:
            self._writes.append([self.name, *index])
        self._values[index] = Traced.of(value)


class _Row:
    """``acc[i]`` of a 2-D traced array, so that ``acc[i][j]`` reads and writes as ``acc[i, j]``."""

    def __init__(self, array: TracedArray, i):
        self.array, self.i = array, i
        self.shape, self.ndim = array.shape[1:], 1

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, j):
        return self.array[self.i, j]

    def __setitem__(self, j, value):
        self.array[self.i, j] = value


def _trace(outer_products, a, b, acc0, ty: int, tx: int) -> dict:
    """What thread (``ty``, ``tx``) did: ``{"acc": [[terms of acc[i, j]] ...], "wrote": [[tile, r, c], ...]}`` (the
    first 16 tile writes), each term a list of factors ``[name, index...]``: ``a_tile``, ``b_tile``, ``acc`` (its
    starting value), ``a_frag``/``b_frag`` (an element never loaded), ``const``, ``neg``. ``{"acc": None, "why": ...}``
    where the learner's code does with a traced value what the trace cannot follow."""
    found: dict = {}

    @cuda.jit
    def traced_kernel(mine):             # one thread: the one traced
        y, x = mine
        writes: list = []
        acc = TracedArray("acc", (TM, TN), "acc")
        arrays = (TracedArray("a_tile", (BM, BK), "a_tile", writes), TracedArray("b_tile", (BK, BN), "b_tile", writes),
                  acc, TracedArray("a_frag", (TM,), "a_frag"), TracedArray("b_frag", (TN,), "b_frag"))
        outer_products(*arrays, y, x)
        found["acc"] = [[[list(f) for f in term] for term in acc[i, j].terms] for i in range(TM) for j in range(TN)]
        found["wrote"] = writes[:16]

    try:
        traced_kernel[1, 1]((ty, tx))
    except Exception as exc:  # what the learner's code does with a traced value that the trace cannot follow
        return {"acc": None, "why": re.sub(r"^tid=\[[^]]*\] ctaid=\[[^]]*\]:? ?", "", f"{type(exc).__name__}: {exc}")}
    flat = found["acc"]
    return {"acc": [flat[i * TN:(i + 1) * TN] for i in range(TM)], "wrote": found["wrote"]}


# ------------------------------------------------------------------------- compiled, and run on a GPU here

def main(argv: list[str]) -> int:
    """The compile (and GPU) run: ``REQUEST`` is JSON ``{"path", "function", "seed", "arch", "gpu"}``; the answer
    written to ``OUT`` is ``{"ptx", "acc", "ran_on", "not_run"}``, or ``{"import_failed"}`` or ``{"compile_error"}``."""
    request, out = json.loads(argv[0]), Path(argv[1])
    out.write_text(json.dumps(_compiled(request)))
    return 0


def _compiled(request: dict) -> dict:
    from numba.core import types

    from ..library import target
    from .feedback import Failure
    from .loader import load_module

    source = Path(request["path"])
    sys.path.append(str(source.parent))        # after the standard library and site-packages: shadows nothing
    try:
        learner = getattr(load_module(source), request["function"])
    except Failure as failure:
        return {"import_failed": failure.message}
    except AttributeError:
        return {"import_failed": f"{source} defines no {request['function']}()."}
    inlined = cuda.jit(device=True, inline="always")(getattr(learner, "py_func", learner))
    kernel = _kernel(inlined)
    cc = target.capability(request["arch"]) + (("a",) if request["arch"].endswith("a") else ())
    matrix, block = types.float32[:, ::1], types.float32[:, :, :, ::1]
    try:
        ptx, _ = cuda.compile_ptx(kernel.py_func, (matrix, matrix, block, block), cc=cc)
    except Exception as exc:  # a typing or lowering error of Numba's, in the learner's code
        return {"compile_error": f"{type(exc).__name__}: {exc}"}
    answer = {"ptx": ptx, "acc": None, "ran_on": None, "not_run": None}
    here = target.runnable() if request["gpu"] else None
    if here is None:
        answer["not_run"] = "the simulator is on (NUMBA_ENABLE_CUDASIM=1)" if not request["gpu"] else "there is no GPU here"
        return answer
    import numpy as np

    a, b, acc0 = inputs(request["seed"])
    result = cuda.to_device(np.full_like(acc0, np.nan))
    kernel[1, (THREADS_X, THREADS_Y)](cuda.to_device(a), cuda.to_device(b), cuda.to_device(acc0), result)
    answer["acc"], answer["ran_on"] = result.copy_to_host().tolist(), here.describe()
    return answer


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
