"""The vendor baselines every rung is timed against: cuBLAS through ``cupy.matmul`` always, and cuBLASLt through
``torch.matmul`` where PyTorch is installed (the ``compare`` extra); the faster of them at each shape
(:func:`choose_vendor`), and the words that say which baseline a record's "% of" figures are of (:func:`baseline_label`,
:func:`baseline_note`)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..library import device
from .shapes import as_shapes
from . import timing

CUBLAS_NAME = "cuBLAS (cupy.matmul)"          # the vendor baselines (vendors()), by the names records give them
CUBLASLT_NAME = "cuBLASLt (torch.matmul)"


def baseline_name(record: dict) -> str:
    """The vendor baseline a record's cublas_* and pct_cublas* fields are of: its ``vendor`` where it has one, and
    cuBLAS through cupy.matmul for the records written before bench chose the faster vendor at each shape."""
    return record.get("vendor") or CUBLAS_NAME


def cublas(a, b, c) -> None:
    """cuBLAS's fp16 GEMM, one of the vendor baselines (:func:`vendors`): C = A @ B through ``cupy.matmul``."""
    import cupy

    cupy.matmul(a, b, out=c)


VIEW_CACHE_SIZE = 256     # torch views kept: more than the input sets of one shape (3 arrays x 32 sets)
_torch_views: dict[int, tuple] = {}          # id(cupy array) -> (the array, its torch tensor)
_torch_streams: dict[int, object] = {}       # CuPy stream pointer -> torch.cuda.ExternalStream


def _torch_view(x):
    """A zero-copy torch tensor of the CuPy array ``x`` (DLPack), made once per array and kept. The entry keeps
    ``x`` and is used only for that very array, so a new array that got a freed one's id gets its own view."""
    import torch

    entry = _torch_views.get(id(x))
    if entry is None or entry[0] is not x:
        if len(_torch_views) >= VIEW_CACHE_SIZE:
            del _torch_views[next(iter(_torch_views))]           # the oldest view goes
        entry = _torch_views[id(x)] = (x, torch.from_dlpack(x))
    return entry[1]


def forget_torch_views() -> None:
    """Drop the kept torch views (and with them the CuPy arrays they hold), e.g. before freeing a shape's inputs."""
    _torch_views.clear()


def cublaslt(a, b, c) -> None:
    """cuBLASLt's fp16 GEMM, the other vendor baseline: C = A @ B through ``torch.matmul`` on zero-copy views of the
    CuPy arrays, on CuPy's current stream. PyTorch's default stream is CUDA's legacy null stream, which is CuPy's
    null stream too; on any other CuPy stream the call runs inside ``torch.cuda.ExternalStream`` of that stream."""
    import cupy
    import torch

    ptr = cupy.cuda.get_current_stream().ptr
    if ptr == 0:
        torch.matmul(_torch_view(a), _torch_view(b), out=_torch_view(c))
        return
    stream = _torch_streams.get(ptr)
    if stream is None:
        stream = _torch_streams[ptr] = torch.cuda.ExternalStream(ptr)
    with torch.cuda.stream(stream):
        torch.matmul(_torch_view(a), _torch_view(b), out=_torch_view(c))


def vendors() -> dict:
    """The vendor GEMMs present, name -> fn(a, b, c), in order: cuBLAS through cupy.matmul always, then cuBLASLt
    through torch.matmul where PyTorch imports (the ``compare`` extra; the course never needs it otherwise)."""
    out = {CUBLAS_NAME: cublas}
    try:
        import torch  # noqa: F401
    except ImportError:
        return out
    out[CUBLASLT_NAME] = cublaslt
    return out


def torch_installed() -> bool:
    """Whether PyTorch can be imported here, found without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except ValueError:          # a module "torch" without a spec
        return True


@dataclass(frozen=True)
class VendorChoice:
    """The vendor baseline a shape's rungs are paired with: its name (a key of :func:`vendors`) and, where several
    vendors were timed against each other to choose it, each one's median ms (None where one alone is present)."""
    name: str
    ms: dict[str, float] | None = None


def choose_vendor(fns: dict, inputs, *, warmup: int = 5, repeats: int = 30) -> VendorChoice:
    """The faster of the vendor GEMMs ``fns`` (name -> fn, as :func:`vendors` gives) on these input sets: each vendor
    after the first is timed paired with the first (:func:`.timing.time_paired`), and the lowest median wins."""
    names = list(fns)
    if len(names) == 1:
        return VendorChoice(names[0])
    first, ms = names[0], {}
    for other in names[1:]:
        t = timing.time_paired(fns[first], fns[other], inputs, warmup=warmup, repeats=repeats)
        ms.setdefault(first, statistics.median(t.fn_ms))
        ms[other] = statistics.median(t.reference_ms)
    return VendorChoice(min(names, key=ms.__getitem__), ms)


def pick_vendors(sizes, *, repeats: int = 30, warmup: int = 5) -> dict[tuple[int, int, int], VendorChoice]:
    """The faster vendor baseline at each size (n or (M, N, K)), chosen as :func:`.bench.bench` chooses it, for callers that
    time several things at one shape against one baseline (``tune``: every configuration against the same one)."""
    import cupy

    gpu = device.require_gpu("Choosing the vendor baseline")
    fns, out = vendors(), {}
    for M, N, K in as_shapes(sizes):
        sets = timing.input_sets(M, N, K, gpu.l2_bytes)
        timing.settle(cublas, sets)
        out[(M, N, K)] = choose_vendor(fns, sets, warmup=warmup, repeats=repeats)
        del sets
        forget_torch_views()
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def _shape_list(shapes) -> str:
    return ", ".join(f"{m}x{n}x{k}" for m, n, k in sorted(shapes))


def _faster_of(names) -> str:
    """"the faster of cuBLAS and cuBLASLt": the vendors by their libraries' names, cuBLAS first."""
    order = [CUBLAS_NAME, CUBLASLT_NAME]
    names = sorted(set(names), key=lambda n: (order.index(n) if n in order else len(order), n))
    short = [n.split(" (")[0] for n in names]
    return "the faster of " + (" and ".join([", ".join(short[:-1]), short[-1]]) if len(short) > 1 else short[0])


def baseline_label(records, *, per_shape: bool = False) -> str:
    """What the records' "% of" figures (pct_cublas) are of, for a figure's axis or title and a table's header: the
    vendor every record was paired with ("cuBLAS (cupy.matmul)" for the records without a ``vendor``, written before
    bench chose the faster vendor), and where they differ "the faster of cuBLAS and cuBLASLt at each shape", followed,
    with ``per_shape``, by which vendor at which shapes (with the rungs, at a shape whose records name both).
    ``records``: dicts (results.load_records rows, run-file records) or BenchRecords."""
    records = [r if isinstance(r, dict) else r.as_dict() for r in records]
    at: dict[str, dict] = {}              # vendor -> {(M, N, K): {rungs}}
    for r in records:
        shape = (r.get("M"), r.get("N"), r.get("K"))
        at.setdefault(baseline_name(r), {}).setdefault(shape, set()).add(str(r.get("rung", "?")))
    if len(at) <= 1:
        return next(iter(at), CUBLAS_NAME)
    label = f"{_faster_of(at)} at each shape"
    if not per_shape:
        return label
    shared = {s for s in set().union(*at.values()) if sum(s in shapes for shapes in at.values()) > 1}

    def where(shapes: dict) -> str:
        return ", ".join(_shape_list([s]) + (f" (rung {', '.join(sorted(shapes[s]))})" if s in shared else "")
                         for s in sorted(shapes))
    return f"{label}: " + "; ".join(f"{name} at {where(shapes)}" for name, shapes in at.items())


BASELINE_WIDTH = 160      # a per-shape baseline label longer than this is told in counts instead


def baseline_in_brief(records, where: str = "each row's own in its vendor field: --json") -> str:
    """:func:`baseline_label` with ``per_shape``, or, where that runs past ``BASELINE_WIDTH`` characters, how many
    shapes each vendor was the baseline at, and in brackets ``where`` each record's own is told."""
    records = [r if isinstance(r, dict) else r.as_dict() for r in records]
    label = baseline_label(records, per_shape=True)
    if len(label) <= BASELINE_WIDTH:
        return label
    shapes: dict[str, set] = {}
    for r in records:
        shapes.setdefault(baseline_name(r), set()).add((r.get("M"), r.get("N"), r.get("K")))
    return (f"{baseline_label(records)}: " + "; ".join(f"{name} at {len(s)} shapes" for name, s in shapes.items())
            + f" ({where})")


def baseline_note(records) -> str:
    """One line that names the vendor baseline the records' rungs were paired with (:func:`baseline_label`, shape by
    shape where it differs), whether several vendors were timed to choose it, or cuBLAS alone (with how to time
    cuBLASLt too, where PyTorch is not installed)."""
    records = [r if isinstance(r, dict) else r.as_dict() for r in records]
    timed = list(dict.fromkeys(name for r in records for name in (r.get("vendor_ms") or {})))
    label = baseline_in_brief(records)
    if len({baseline_name(r) for r in records}) > 1:
        return f"baseline: {label}"
    if len(timed) > 1:
        return f"baseline: {label}, {_faster_of(timed)} at every shape"
    if label != CUBLAS_NAME:
        return f"baseline: {label}"
    hint = "" if torch_installed() else (
        "; install the `compare` extra (pip install 'hgemm-course[compare]') to time cuBLASLt too")
    return f"baseline: {CUBLAS_NAME} only{hint}"
