"""The timing build of a rung: each CTA's start and end in its SM's cycles and in nanoseconds.

A launch's time is what a user gets, and it moves with the SM clock, which the GPU lowers by what a
kernel draws against its power limit. A launch's cycles do not move with the clock, so cycles are
what explain a kernel, and cycles over nanoseconds, both read on the SM that ran the CTAs, is the
clock the launch ran at. The kernel side is ``ptx_snippets/cta_clock.cuh``: every NVRTC rung declares
``const CtaClock cta_clock;`` first, which compiles to nothing unless the defines below are given.
The Numba rungs (01, 02) get the same log from :func:`numba_timing_kernel`, which puts the same
stamps around the body their plain kernel runs.

    with timing_builds():
        rung.launch(a, b, c)           # launches the timing build of the kernel the rung picks

:func:`hgemm_course.measurement.timing.time_with_clock` alternates the plain and the timing build launch by
launch, so that each record shows that the log costs no time, and reads the clocks of the last
``SLOTS`` launches.
"""
from __future__ import annotations

import dataclasses
import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import device

SLOTS = 16          # launches the device log keeps, the last ones (launch i in row i % SLOTS)
CAPACITY = 16384    # CTAs per launch it logs: 16384^3 in 128x128 tiles; a larger grid is not timed

# One CTA of one launch, as cta_clock.cuh's CtaClockEntry lays it out; the build checks its size.
ENTRY = np.dtype([("start_cycles", "<u8"), ("end_cycles", "<u8"), ("start_ns", "<u8"), ("end_ns", "<u8"),
                  ("smid", "<u4"), ("launch", "<u4")])
DEFINES = ("-DHGEMM_CTA_CLOCK", f"-DHGEMM_CTA_CLOCK_SLOTS={SLOTS}", f"-DHGEMM_CTA_CLOCK_CAPACITY={CAPACITY}",
           f"-DHGEMM_CTA_CLOCK_ENTRY_BYTES={ENTRY.itemsize}")


@dataclass(frozen=True)
class LaunchClock:
    """One launch as its CTAs logged it."""

    cycles: int     # the busiest SM's cycles, from its first CTA's start to its last CTA's end
    ns: int         # the launch on the global timer, from the first CTA's start to the last CTA's end
    ghz: float      # the SMs' busy cycles over their busy nanoseconds: the clock the launch ran at
    sms: int        # SMs that ran at least one CTA
    ctas: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def launch_clock(entries: np.ndarray) -> LaunchClock:
    """The clock of one launch from its CTAs' entries (an array of :data:`ENTRY`).

    Each SM counts its own cycles, so spans are taken per SM: from the first start to the last end
    of the CTAs it ran, in its cycles and on the global timer alike."""
    if len(entries) == 0:
        raise ValueError("a launch with no CTAs logged has no clock")
    sms, sm_of = np.unique(entries["smid"], return_inverse=True)
    spans = {}
    for field, pick in (("start_cycles", np.minimum), ("end_cycles", np.maximum),
                        ("start_ns", np.minimum), ("end_ns", np.maximum)):
        per_sm = np.full(len(sms), np.iinfo(np.uint64).max if pick is np.minimum else 0, dtype=np.uint64)
        pick.at(per_sm, sm_of, entries[field])
        spans[field] = per_sm.astype(np.int64)
    cycles = spans["end_cycles"] - spans["start_cycles"]
    ns = spans["end_ns"] - spans["start_ns"]
    if (cycles <= 0).any() or (ns <= 0).any():
        raise ValueError("a CTA's end precedes its start: the log holds a launch that had not finished")
    return LaunchClock(cycles=int(cycles.max()), ns=int(entries["end_ns"].max() - entries["start_ns"].min()),
                       ghz=float(cycles.sum() / ns.sum()), sms=len(sms), ctas=len(entries))


def last_launches(log: np.ndarray, started: int, ctas: int) -> list[LaunchClock]:
    """The clocks of the last launches in a device log (an array of :data:`ENTRY`, ``SLOTS`` rows of
    ``CAPACITY``), given the CTAs started since it was zeroed and the CTAs per launch. A row whose CTAs
    do not all belong to one launch (a launch still running, or none) is left out."""
    launches = started // ctas
    clocks = []
    for launch in range(max(0, launches - SLOTS), launches):
        row = log[launch % SLOTS][:ctas]
        if (row["launch"] == launch).all():
            clocks.append(launch_clock(row))
    return clocks


_state = threading.local()


@contextmanager
def timing_builds():
    """Inside it, every launch of a rung runs its kernel's timing build (not on Numba's simulator)."""
    previous = timing_builds_on()
    _state.on = True
    try:
        yield
    finally:
        _state.on = previous


def timing_builds_on() -> bool:
    return getattr(_state, "on", False)


def timing_build_of(kernel):
    """The timing build of a ``TemplateKernel``; noted as the one launched (:func:`timing_build_launched`)."""
    timed = _timing_build(kernel)
    _state.last = timed
    return timed


def timing_build_launched(launch, operands):
    """Calls ``launch(*operands)`` inside :func:`timing_builds` and gives what it launched: the timing build of an
    NVRTC rung's kernel (a ``TemplateKernel``), the :class:`NumbaLog` a Numba rung's timing build wrote, or None where
    it launched neither (cuBLAS, or a Numba rung on the simulator)."""
    _state.last = None
    with timing_builds():
        launch(*operands)
    return _state.last


@lru_cache(maxsize=None)
def _timing_build(kernel):
    return dataclasses.replace(kernel, options=(*kernel.options, *DEFINES))


class DeviceLog:
    """The log of one timing build's module as loaded on the current GPU (``nvrtc_kernel.loaded_module``)."""

    def __init__(self, module):
        self._started = module.get_global("cta_clock_started")
        self._log = module.get_global("cta_clock_log")

    def zero(self) -> None:
        """Numbers the next launch 0 (queued on the current stream)."""
        self._started.memset_async(0, 4)

    def read(self, ctas: int) -> list[LaunchClock]:
        """The clocks of the last launches of ``ctas`` CTAs (waits for the GPU)."""
        import cupy

        cupy.cuda.get_current_stream().synchronize()
        started = np.zeros(1, np.uint32)
        self._started.copy_to_host(started.ctypes.data, 4)
        log = np.zeros((SLOTS, CAPACITY), ENTRY)
        self._log.copy_to_host(log.ctypes.data, log.nbytes)
        return last_launches(log, int(started[0]), ctas)


# ---------------------------------------------------------------- the Numba rungs
# Numba's timing kernel takes its log as arguments, sized to its grid (rung 01 at 4096^3 has 65536 CTAs, past
# CAPACITY), and writes each ENTRY as ENTRY_WORDS uint64 words, as ENTRY lays it out in little-endian memory: the
# four stamps in ENTRY's order, then smid in the last word's low half and launch in its high half.
ENTRY_WORDS = ENTRY.itemsize // 8
START_CYCLES, END_CYCLES, START_NS, END_NS, SMID_AND_LAUNCH = range(ENTRY_WORDS)
# numba.cuda, once the first Numba timing kernel is built (Numba is imported only after NUMBA_ENABLE_CUDASIM is
# settled). A global of this module, not a local, because Numba's simulator runs a kernel by swapping the numba.cuda
# among its module's globals for a simulated one.
cuda = None


def numba_log_entries(words: np.ndarray) -> np.ndarray:
    """A Numba timing kernel's log (uint64 words, ``(..., ctas, ENTRY_WORDS)``) as an array of :data:`ENTRY`
    (``(..., ctas)``), for :func:`last_launches`."""
    words = np.ascontiguousarray(words, dtype="<u8")
    if words.shape[-1] != ENTRY_WORDS:
        raise ValueError(f"a Numba log holds {ENTRY_WORDS} words per CTA, not {words.shape[-1]}")
    return words.view(ENTRY)[..., 0]


@lru_cache(maxsize=None)
def _numba_readers():
    """cta_clock.cuh's clock64_now and smid_now and timer.cuh's globaltimer_ns for Numba kernels, which have no
    %clock64, %globaltimer or %smid of their own: each a ``mov`` from the register, as inline PTX that Numba's own
    compiler emits into the kernel. (A foreign CUDA C function would be a call: ten registers more on rung 01, two
    CTAs fewer per SM, and PTX of NVRTC's ISA version, which an older driver cannot link.)"""
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    def reader(register: str, bits: int, clobbers: str = ""):
        @intrinsic
        def read(typingctx):
            def codegen(context, builder, signature, args):
                asm = ir.InlineAsm(ir.FunctionType(ir.IntType(bits), []), f"mov.u{bits} $0, %{register};",
                                   ("=l" if bits == 64 else "=r") + clobbers, side_effect=True)
                return builder.call(asm, [])

            return (types.uint64 if bits == 64 else types.uint32)(), codegen

        return read

    # clock64: the memory clobber keeps every load and store on its side, as clock64_now's does
    return reader("clock64", 64, ",~{memory}"), reader("globaltimer", 64), reader("smid", 32)


@lru_cache(maxsize=None)
def numba_timing_kernel(body):
    """The timing build of a Numba rung whose kernel runs ``body(a, b, c)`` (a ``cuda.jit(device=True)`` function) in
    every thread: ``kernel(a, b, c, log, started)`` runs the same body between the stamps of cta_clock.cuh's CtaClock,
    into ``log`` (uint64, ``(SLOTS, CTAs, ENTRY_WORDS)``), counting the CTAs started in ``started`` (uint32, ``(1,)``).
    The end stamps follow the body, so a thread that returns from it early still comes back to its warp's stamp."""
    global cuda
    from numba import cuda, uint32, uint64

    clock64_now, globaltimer_ns, smid_now = _numba_readers()

    @cuda.jit
    def timed(a, b, c, log, started):
        # (row, CTA) of this CTA's entry, for the end stamps: kept in shared memory, not in registers across the body
        where = cuda.shared.array(2, uint32)
        # The first thread claims the CTA's row and stamps the start; the barrier orders its reset of the end
        # stamps before any warp's atomic max on them.
        if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.threadIdx.z == 0:
            cta = uint32(cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z))
            ctas = uint32(cuda.gridDim.x * cuda.gridDim.y * cuda.gridDim.z)
            launch = cuda.atomic.add(started, 0, uint32(1)) // ctas
            row = launch % uint32(SLOTS)
            where[0] = row
            where[1] = cta
            entry = log[row, cta]
            entry[SMID_AND_LAUNCH] = uint64(smid_now()) | (uint64(launch) << uint64(32))
            entry[END_CYCLES] = 0
            entry[END_NS] = 0
            entry[START_NS] = globaltimer_ns()
            entry[START_CYCLES] = clock64_now()
        cuda.syncthreads()
        body(a, b, c)
        # Every warp's first lane stamps its end; the latest stamp is the CTA's end.
        if (cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)) % 32 == 0:
            cycles = clock64_now()
            ns = globaltimer_ns()
            entry = log[where[0], where[1]]
            cuda.atomic.max(entry, END_CYCLES, cycles)
            cuda.atomic.max(entry, END_NS, ns)

    return timed


class NumbaLog:
    """The log of a Numba rung's timing build on the current GPU, for ``ctas`` CTAs per launch: ``words`` and
    ``started``, the arguments :func:`numba_timing_kernel`'s kernel takes after A, B and C."""

    def __init__(self, ctas: int):
        import cupy
        from numba import cuda

        self.ctas = ctas
        self.device = cupy.cuda.runtime.getDevice()
        self._words = cupy.zeros((SLOTS, ctas, ENTRY_WORDS), cupy.uint64)
        self._started = cupy.zeros(1, cupy.uint32)
        # Numba's views, made once, so that no launch imports the arrays again or waits on their stream.
        self.words = cuda.as_cuda_array(self._words, sync=False)
        self.started = cuda.as_cuda_array(self._started, sync=False)

    def zero(self) -> None:
        """Numbers the next launch 0 (queued on the current stream)."""
        self._started.fill(0)

    def read(self, ctas: int) -> list[LaunchClock]:
        """The clocks of the last launches of ``ctas`` CTAs (waits for the GPU)."""
        import cupy

        cupy.cuda.get_current_stream().synchronize()
        return last_launches(numba_log_entries(self._words.get()), int(self._started.get()[0]), ctas)


def _numba_log(ctas: int) -> NumbaLog:
    """This thread's Numba log for grids of ``ctas`` CTAs on the current GPU, kept from launch to launch."""
    import cupy

    log = getattr(_state, "numba_log", None)
    if log is None or log.ctas != ctas or log.device != cupy.cuda.runtime.getDevice():
        log = _state.numba_log = NumbaLog(ctas)
    return log


@lru_cache(maxsize=None)
def _quiet_small_grids() -> None:
    """Numba warns of low occupancy on every launch of fewer CTAs than it likes; the course launches small
    shapes on purpose (tails, tests), and a warning per launch would bury a chapter's table."""
    try:
        from numba.cuda.core import config
    except ImportError:           # older numba-cuda keeps it in numba.core
        from numba.core import config
    config.CUDA_LOW_OCCUPANCY_WARNINGS = 0


def launch_numba(kernel, body, grid, block, stream, *operands) -> None:
    """A Numba rung's launch: ``kernel[grid, block, stream](*operands)``. Inside :func:`timing_builds` it launches
    the timing build of ``body``, the function ``kernel`` runs (:func:`numba_timing_kernel`), into the grid's
    :class:`NumbaLog`, noted as the one launched (:func:`timing_build_launched`); not on Numba's simulator, which
    runs no inline PTX."""
    _quiet_small_grids()
    if not timing_builds_on() or device.cudasim_enabled():
        kernel[grid, block, stream](*operands)
        return
    log = _numba_log(math.prod(grid))
    numba_timing_kernel(body)[grid, block, stream](*operands, log.words, log.started)
    _state.last = log
