"""A kernel launch with its arguments packed once, for ``gemm(out=)``'s repeated calls.

CuPy's ``Function.__call__`` turns every argument into the bytes the kernel reads, on every launch. A
:class:`PackedLaunch` writes them once into one host buffer, with the array of pointers into it that
``cuLaunchKernel`` takes (its ``kernelParams``), and then launches through cuda.bindings' driver API with
nothing left to convert. An argument that changes between calls (rung 12's epoch) is written into its slot
in place with :meth:`PackedLaunch.put`. On the H200 a kept launch cost the host about what CuPy's own call of
the same kernel costs (13.0 against 12.7 us at 256^3, results/tuning/2026-12-03/host_path): there the driver's
launch, not the conversion, is most of a call.
"""
from __future__ import annotations

import numpy as np

SLOT_ALIGN = 64            # bytes between slots' starts: a tensor map's alignment, and more than any scalar's


def argument_bytes(value) -> bytes:
    """The bytes a kernel parameter holds for ``value``: a CuPy array's device pointer, or a NumPy scalar's or
    record's (a tensor map) own bytes. A bare Python int has no width of its own and is refused."""
    data = getattr(value, "data", None)
    if hasattr(data, "ptr"):
        return np.uint64(data.ptr).tobytes()
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        return value.tobytes()
    raise TypeError(f"a kernel argument must be a CuPy array or a NumPy scalar (np.int32(...), ...), "
                    f"not {type(value).__name__}: the kernel's parameter has a width a bare {type(value).__name__} "
                    "does not state.")


class PackedLaunch:
    """``fn(grid, block, args, shared_mem=smem)`` (a CuPy ``Function``'s launch) on ``stream`` (by default CuPy's
    current stream of now), as one call of no arguments.

    The first call packs the arguments; each call then costs one ``cuLaunchKernel``. Where the driver refuses it
    (this thread has no current context, or the launch itself fails) the launch goes through CuPy instead, which
    makes the device's context current or raises CuPy's error naming the failure."""

    def __init__(self, fn, grid: tuple, block: tuple, args: tuple, shared_mem: int = 0, stream: int | None = None):
        if stream is None:
            import cupy

            stream = cupy.cuda.get_current_stream().ptr
        self.fn, self.grid, self.block, self.shared_mem, self.stream = fn, tuple(grid), tuple(block), shared_mem, stream
        self.args = list(args)
        self._call = None                   # cuLaunchKernel and its arguments, once packed
        self._slots: list[np.ndarray] = []  # each argument's bytes inside the packed buffer

    def _pack(self) -> None:
        from cuda.bindings import driver

        raw = [argument_bytes(a) for a in self.args]
        offsets = np.cumsum([0] + [-(-len(r) // SLOT_ALIGN) * SLOT_ALIGN for r in raw])
        self._buffer = np.zeros(int(offsets[-1]) + SLOT_ALIGN, np.uint8)
        start = -self._buffer.ctypes.data % SLOT_ALIGN
        self._slots = [self._buffer[start + o:start + o + len(r)] for o, r in zip(offsets, raw)]
        for slot, r in zip(self._slots, raw):
            slot[:] = np.frombuffer(r, np.uint8)
        self._pointers = np.array([s.ctypes.data for s in self._slots], np.uint64)
        grid = (*self.grid, 1, 1)[:3]
        block = (*self.block, 1, 1)[:3]
        function = getattr(self.fn, "kernel", self.fn)     # a RawKernel's loaded Function, which holds the pointer
        self._call = (driver.cuLaunchKernel, (driver.CUfunction(function.ptr), *grid, *block, self.shared_mem,
                                              driver.CUstream(self.stream), self._pointers.ctypes.data, 0))

    def put(self, index: int, value) -> None:
        """Change argument ``index`` for the next calls: a value of the same width as the one it replaces."""
        raw = argument_bytes(value)
        if len(raw) != len(argument_bytes(self.args[index])):
            raise ValueError(f"argument {index} was {len(argument_bytes(self.args[index]))} bytes, not {len(raw)}.")
        self.args[index] = value
        if self._slots:
            self._slots[index][:] = np.frombuffer(raw, np.uint8)

    def __call__(self) -> None:
        if self._call is None:
            self._pack()
        launch, arguments = self._call
        err, = launch(*arguments)
        if err:
            self.fn(self.grid, self.block, tuple(self.args), shared_mem=self.shared_mem)
