"""Timing a launch with CUDA events: input sets rotated past L2, warm-up on every set, the card settled, the launches
queued behind a :class:`StreamHold` so that the events measure the GPU and not the host, launches paired with a
reference launch by launch (:func:`time_paired`) or with the kernel's own timing build (:func:`time_with_clock`), and
the host's own microseconds per call (:func:`host_us_paired`)."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..library import cta_clock, device
from .clocks import ClockReading
from .verification import random_inputs

MIN_REPEATS = 20                   # the fewest timed launches whose median bench trusts

def input_sets_needed(M: int, N: int, K: int, l2_bytes: int, *, factor: int = 4, cap: int = 32) -> int:
    """Enough distinct (A, B) pairs that cycling through them streams factor x L2 of data."""
    pair = 2 * (M * K + K * N)
    return max(1, min(cap, math.ceil(factor * l2_bytes / pair)))


def input_sets(M: int, N: int, K: int, l2_bytes: int) -> list[tuple]:
    """The (A, B, C) device arrays a timing rotates through: fresh random A and B, enough of them that the
    rotation streams several times the L2 (:func:`input_sets_needed`), and an empty C each."""
    import cupy

    sets = []
    for _ in range(input_sets_needed(M, N, K, l2_bytes)):
        a, b, _ = random_inputs(M, N, K, xp=cupy)
        sets.append((a, b, cupy.empty((M, N), dtype=cupy.float16)))
    return sets


def warmup_launches(warmup: int, inputs) -> int:
    """Untimed launches before the timed ones: ``warmup``, and at least one on every input set. A launcher
    caches what it works out per buffer (the TMA rungs' tensor maps); a timed launch that found its
    buffers new would wait for that host work inside its CUDA events, which for a kernel of tens of
    microseconds is most of what they measure (on the H200, rung 12 at 2048 x 2560 x 1024 timed 80 us a
    launch while most of its input sets were new to it, 29 us once it had seen them all:
    results/probes/tile_probe/tile_probe_nvidia-h200_20261201T165037.json, "plan" and "12 sk1")."""
    return max(warmup, len(inputs))


SETTLE_S = 0.5


def settle(fn, inputs, seconds: float = SETTLE_S) -> None:
    """Keep the GPU busy with ``fn`` for ``seconds`` before the first rung of a shape is timed. The card sets
    its clock by the power it draws, and the power drawn just after the light work of making the inputs is
    not the steady state: timed at once, the first rung read up to 4.5 points lower than the same kernel
    timed second (results/bench_nvidia-h200_20261201T170715_869dab.json, 16384 x 16384 x 1024, "plan" and
    "11" both rung 11 there)."""
    import time

    import cupy

    stream = cupy.cuda.get_current_stream()
    end, i = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        fn(*inputs[i % len(inputs)])
        i += 1
        if i % 4 == 0:
            stream.synchronize()       # the host waits on the GPU, so the loop measures GPU time
    stream.synchronize()


HOLD_TIMEOUT_S = 10.0     # a hold the host never released lets its stream go after this long
HOLD_LAUNCHES = 64        # timed launches (or pairs) queued behind one hold: far below the launch queue's depth


class StreamHold:
    """Holds the current stream while the host queues the launches to be timed, then lets them run back to back.

    The host takes 10-30 us to prepare a GEMM launch from Python. A kernel that runs for less drains the
    queue: the GPU waits for the host, and the CUDA event recorded before a launch fires while the host is
    still preparing it, so the event pair counts host time as the kernel's (without a hold the H200 timed
    cuBLAS at 1024^3 at 28 us a launch, 77 TFLOP/s: results/bench_nvidia-h200_20261201T171133_179c48.json).
    ``with StreamHold():`` launches a one-thread kernel (kernels/hold.cu) that waits until the block ends;
    the launches queued inside the block then find their predecessors already queued. :meth:`timed_out`
    says, once the stream has drained, whether a hold gave up waiting (the host took over HOLD_TIMEOUT_S)."""

    _words = None                 # host memory mapped into the GPU: [the last ticket released, timed out]
    _tickets = 0

    def __enter__(self) -> "StreamHold":
        import ctypes

        import cupy

        cls = StreamHold
        if cls._words is None:
            ptr = cupy.cuda.runtime.hostAlloc(8, cupy.cuda.runtime.hostAllocMapped)
            cls._words = (ctypes.c_uint32 * 2).from_address(ptr)   # kept for the process: 8 bytes
        cls._tickets += 1
        self.ticket = cls._tickets
        address = ctypes.addressof(cls._words)  # one address for host and GPU: CUDA's unified addressing
        _hold_function()((1,), (1,), (np.uint64(address), np.uint32(self.ticket), np.uint64(address + 4),
                                      np.uint64(int(HOLD_TIMEOUT_S * 1e9))))
        return self

    def __exit__(self, *exc) -> None:
        StreamHold._words[0] = self.ticket

    @staticmethod
    def timed_out() -> bool:
        """Whether a hold since the last call gave up waiting; call it after the stream has drained."""
        words = StreamHold._words
        if words is None or not words[1]:
            return False
        words[1] = 0
        return True


def _hold_function():
    import cupy

    return _loaded_hold_function(cupy.cuda.Device().id)


@lru_cache(maxsize=None)
def _loaded_hold_function(device_id: int):
    """The hold kernel, loaded once per GPU and kept: a module must outlive the holds still waiting in a stream."""
    from ..library.build import compile_cuda

    return compile_cuda("hold.cu", name_expressions=("hold_stream",)).function("hold_stream")


def _held_batches(count: int):
    """range(count) in batches of at most HOLD_LAUNCHES, each to be queued behind its own hold."""
    return [range(i, min(i + HOLD_LAUNCHES, count)) for i in range(0, count, HOLD_LAUNCHES)]


def _warn_if_a_hold_timed_out() -> None:
    if StreamHold.timed_out():
        import warnings

        warnings.warn(f"A stream hold waited {HOLD_TIMEOUT_S:.0f} s for the host to queue its launches and let "
                      "them go: those launches may have waited for the host inside their CUDA events.")


def time_launches(fn, inputs, *, warmup: int, repeats: int) -> list[float]:
    """Milliseconds per launch, one CUDA event pair around each, inputs rotated, the launches queued behind
    a :class:`StreamHold` so that the events measure the GPU, not the host. The warm-up launches at least
    once on every input set (see :func:`warmup_launches`)."""
    import cupy

    for i in range(warmup_launches(warmup, inputs)):
        fn(*inputs[i % len(inputs)])
    starts = [cupy.cuda.Event() for _ in range(repeats)]
    ends = [cupy.cuda.Event() for _ in range(repeats)]
    for batch in _held_batches(repeats):
        with StreamHold():
            for i in batch:
                starts[i].record()
                fn(*inputs[i % len(inputs)])
                ends[i].record()
    ends[-1].synchronize()
    _warn_if_a_hold_timed_out()
    return [cupy.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends)]


HOST_CALLS = 48           # calls queued behind one hold while the host is timed
HOST_HOLDS = 9            # holds, each timed apart; the median counts


def host_us_per_call(fn, a, b, c, *, calls: int = HOST_CALLS, holds: int = HOST_HOLDS) -> float:
    """Microseconds the host spends per call of ``fn(a, b, c)``: ``calls`` calls queued behind one
    :class:`StreamHold`, so the GPU runs none of them while the host is timed and a full queue never makes the
    host wait, timed with ``time.perf_counter``; the median over ``holds`` holds, the stream drained between them.
    A kernel shorter than this runs at the host's pace when called one call after another."""
    return host_us_paired((fn,), a, b, c, calls=calls, holds=holds)[0]


def host_us_paired(fns, a, b, c, *, calls: int = HOST_CALLS, holds: int = HOST_HOLDS) -> list[float]:
    """:func:`host_us_per_call` of each of ``fns``, their holds taken in turn (one hold of each, ``holds`` times), so
    that what slows the host for a while (another process, the CPU's clock) weighs on all of them alike."""
    import time

    import cupy

    stream = cupy.cuda.get_current_stream()
    per_call = [[] for _ in fns]
    for _ in range(holds):
        for fn, times in zip(fns, per_call):
            with StreamHold():
                start = time.perf_counter()
                for _ in range(calls):
                    fn(a, b, c)
                times.append((time.perf_counter() - start) / calls * 1e6)
            stream.synchronize()
    _warn_if_a_hold_timed_out()
    return [statistics.median(times) for times in per_call]


@dataclass
class PairedTiming:
    """What :func:`time_paired` measured: milliseconds per launch of each side, and the clock readings taken
    while each launch ran (None where there was no reader, or the launch had ended before the reading came back)."""
    fn_ms: list[float]
    reference_ms: list[float]
    fn_clocks: list[ClockReading | None]
    reference_clocks: list[ClockReading | None]

    def summary(self) -> dict:
        """The medians a probe records: ms, cublas_ms (the reference's), pct_cublas, sm_clock_mhz_median."""
        ms, cms = statistics.median(self.fn_ms), statistics.median(self.reference_ms)
        mhz = statistics.median([c.mhz for c in self.fn_clocks if c] or [0])
        return {"ms": ms, "cublas_ms": cms, "pct_cublas": 100 * cms / ms, "sm_clock_mhz_median": mhz}


def _read_during(clock, launch_began, launch_ended):
    """``clock()`` as soon as the GPU has passed ``launch_began``, kept only if ``launch_ended`` had not been
    reached when the reading came back: a GPU left idle runs at its highest clock, which says nothing."""
    while not launch_began.done:
        pass
    reading = clock()
    return None if launch_ended.done else reading


def time_paired(fn, reference, inputs, *, warmup: int, repeats: int, clock=None) -> PairedTiming:
    """Milliseconds per launch of ``fn`` and of ``reference``, alternated launch by launch (fn on input set i,
    then reference on set i + half the sets, rotating, so neither finds the other's operands in L2), one CUDA
    event pair around each. Clock drift then moves both sides of a pair alike, so the ratio of the two
    medians holds where two medians taken minutes apart would not. The host queues the pairs behind a
    :class:`StreamHold` and lets them go together: launched one by one, a short kernel would wait for the
    host's next launch, and the event before it would count that host time as the kernel's. While the
    queue drains, ``clock()`` is read
    during each launch. NVML's figure and its power-cap flag trail the hardware, which sets each kernel's
    clock by what it draws: the clock a launch ran at is its SM cycles over its time (``viz clocks``)."""
    import cupy

    half = len(inputs) // 2
    for i in range(warmup_launches(warmup, inputs)):
        fn(*inputs[i % len(inputs)])
        reference(*inputs[(i + half) % len(inputs)])
    events = [[cupy.cuda.Event() for _ in range(3)] for _ in range(repeats)]
    for batch in _held_batches(repeats):
        with StreamHold():
            for i in batch:
                start, middle, end = events[i]
                start.record()
                fn(*inputs[i % len(inputs)])
                middle.record()
                reference(*inputs[(i + half) % len(inputs)])
                end.record()
    fn_clocks, ref_clocks = [], []
    for start, middle, end in events:
        fn_clocks.append(_read_during(clock, start, middle) if clock else None)
        ref_clocks.append(_read_during(clock, middle, end) if clock else None)
    events[-1][2].synchronize()
    _warn_if_a_hold_timed_out()
    return PairedTiming([cupy.cuda.get_elapsed_time(start, middle) for start, middle, _ in events],
                        [cupy.cuda.get_elapsed_time(middle, end) for _, middle, end in events],
                        fn_clocks, ref_clocks)


@dataclass
class ClockedTiming:
    """What :func:`time_with_clock` measured: ms per launch of the plain and the timing build, alternated,
    and the clocks of the timing build's last launches as their CTAs logged them."""
    plain_ms: list[float]
    timed_ms: list[float]
    launches: list  # of cta_clock.LaunchClock

    @property
    def ratio(self) -> float:
        """The timing build's median time over the plain build's: what the log costs (1.00: nothing)."""
        return statistics.median(self.timed_ms) / statistics.median(self.plain_ms)

    def summary(self) -> dict:
        """What a record keeps: each launch's clock (``launch_clocks``), their median ``cycles`` and ``clock_ghz``,
        and ``timing_build_ratio``."""
        return {"launch_clocks": [c.as_dict() for c in self.launches],
                "cycles": statistics.median(c.cycles for c in self.launches) if self.launches else None,
                "clock_ghz": statistics.median(c.ghz for c in self.launches) if self.launches else None,
                "timing_build_ratio": self.ratio}


def time_with_clock(launch, inputs, *, warmup: int = 5, repeats: int = MIN_REPEATS) -> ClockedTiming | None:
    """The plain build and the timing build of the kernel ``launch`` runs, alternated launch by launch
    (:func:`time_paired`), and the cycles and clock of the timing build's last launches: an NVRTC rung's timing
    build logs into its module, a Numba rung's (01, 02) into a :class:`cta_clock.NumbaLog` sized to its grid. None
    on Numba's simulator, where ``launch`` runs none of the ladder's kernels (cuBLAS), or where an NVRTC kernel's
    grid has more CTAs than its log holds."""
    if device.cudasim_enabled():
        return None
    from cupy.cuda import runtime

    from ..library.ladder.nvrtc_kernel import loaded_module

    def timed(*operands):
        with cta_clock.timing_builds():
            launch(*operands)

    launched = cta_clock.timing_build_launched(launch, inputs[0])
    if launched is None:
        return None
    if isinstance(launched, cta_clock.NumbaLog):
        log, ctas = launched, launched.ctas
    else:
        a, b, _ = inputs[0]
        ctas = math.prod(launched.grid(a.shape[0], b.shape[1]))
        if ctas > cta_clock.CAPACITY:
            return None
        log = cta_clock.DeviceLog(loaded_module(launched, runtime.getDevice()))
    log.zero()
    t = time_paired(launch, timed, inputs, warmup=warmup, repeats=repeats)
    return ClockedTiming(t.fn_ms, t.reference_ms, log.read(ctas))


def tflops(M: int, N: int, K: int, ms: float) -> float:
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12

