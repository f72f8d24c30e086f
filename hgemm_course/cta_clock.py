"""The timing build of a rung: each CTA's start and end in its SM's cycles and in nanoseconds.

A launch's time is what a user gets, and it moves with the SM clock, which the GPU lowers by what a
kernel draws against its power limit. A launch's cycles do not move with the clock, so cycles are
what explain a kernel, and cycles over nanoseconds, both read on the SM that ran the CTAs, is the
clock the launch ran at. The kernel side is ``ptx_snippets/cta_clock.cuh``: every NVRTC rung declares
``const CtaClock cta_clock;`` first, which compiles to nothing unless the defines below are given.

    with timing_builds():
        rung.launch(a, b, c)           # launches the timing build of the kernel the rung picks

:func:`hgemm_course.harness.time_with_clock` alternates the plain and the timing build launch by
launch, so that each record shows that the log costs no time, and reads the clocks of the last
``SLOTS`` launches.
"""
from __future__ import annotations

import dataclasses
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

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
    """Inside it, every launch of an NVRTC rung runs its kernel's timing build."""
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
    """Calls ``launch(*operands)`` inside :func:`timing_builds` and gives the timing build it launched, or None
    where it launched none (a Numba rung)."""
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
