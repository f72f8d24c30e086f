"""Verify, then time: the course's only way of running a kernel for a number.

``verify`` draws fresh random fp16 inputs on every call (never zeros), poisons C
with NaN before the launch, and compares with an FP32 reference by relative
error, counting elements the kernel left unwritten. ``bench`` verifies each rung
at each size first, then times it with CUDA events in the same process against
the faster vendor library at that size: cuBLAS (``cupy.matmul`` on float16) or,
where PyTorch is installed (the ``compare`` extra), cuBLASLt (``torch.matmul``),
rotating several input sets when A and B together would stay in L2.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from ..library import cta_clock, device, target
from ..library.errors import NoGPUError
from ..library.ladder import Rung, get

# fp16 output rounding alone gives a relative error near 2^-11 / sqrt(3) = 2.8e-4;
# FP32 accumulation in another order adds far less. Anything past these is a bug.
REL_FRO_TOL = 1e-3
MAX_ERR_TOL = 4e-3   # max |C - ref| over max |ref|


MIN_REPEATS = 20                   # the fewest timed launches whose median bench trusts

CUBLAS_NAME = "cuBLAS (cupy.matmul)"          # the vendor baselines (vendors()), by the names records give them
CUBLASLT_NAME = "cuBLASLt (torch.matmul)"


def baseline_name(record: dict) -> str:
    """The vendor baseline a record's cublas_* and pct_cublas* fields are of: its ``vendor`` where it has one, and
    cuBLAS through cupy.matmul for the records written before bench chose the faster vendor at each shape."""
    return record.get("vendor") or CUBLAS_NAME


class VerificationError(AssertionError):
    """A rung computed the wrong thing. The message names the first wrong element."""


class NotForThisGPU(NoGPUError):
    """This machine's GPU (or the ``--as`` target) cannot run the rung; the message says why, in one line."""


SHOWN_INSTEAD = "; its recorded H200 figures are shown instead"


def why_not_here(rung: Rung) -> str | None:
    """Why the GPU here (or the target run here with ``--as``) cannot run ``rung``, in one line; None where it
    can, and where there is no GPU (the callers that need one say so themselves)."""
    here = target.runnable()
    return None if here is None else rung.refusal(here)


def refusal_here(rung: Rung) -> str | None:
    """:func:`why_not_here`'s line, saying that the recorded H200 figures are shown instead."""
    why = why_not_here(rung)
    return None if why is None else why + SHOWN_INSTEAD


def require_runs_here(rung: Rung) -> None:
    """Raise :class:`NotForThisGPU` with :func:`refusal_here`'s line where the rung cannot run here."""
    if (why := refusal_here(rung)) is not None:
        raise NotForThisGPU(why)


@dataclass
class VerifyResult:
    rung: str
    M: int
    N: int
    K: int
    seed: int
    rel_fro_err: float
    max_err: float
    nonfinite: int                  # NaN (unwritten: C was poisoned) or inf elements
    first_bad: dict | None = None   # {"row", "col", "expected", "got"}
    backend: str = "gpu"

    @property
    def passed(self) -> bool:
        return self.nonfinite == 0 and self.rel_fro_err <= REL_FRO_TOL and self.max_err <= MAX_ERR_TOL

    def summary(self) -> str:
        verdict = "ok" if self.passed else "FAILED"
        text = (f"rung {self.rung} {self.M}x{self.N}x{self.K}: {verdict}  rel. error {self.rel_fro_err:.2e}, "
                f"max error {self.max_err:.2e}, unwritten/non-finite {self.nonfinite}")
        if not self.passed and self.first_bad:
            b = self.first_bad
            text += f"; first wrong element C[{b['row']}, {b['col']}] expected {b['expected']:.5g} got {b['got']:.5g}"
        return text

    def raise_if_failed(self) -> "VerifyResult":
        if not self.passed:
            raise VerificationError(self.summary() + f" (reproduce with seed={self.seed})")
        return self


def random_inputs(M: int, N: int, K: int, *, seed: int | None = None, xp=np):
    """Uniform(-1, 1) fp16 A (M,K) and B (K,N); returns (a, b, seed)."""
    seed = int(np.random.SeedSequence(seed).generate_state(1)[0]) if seed is None else seed
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    return xp.asarray(a), xp.asarray(b), seed


def compare(c, reference, *, K: int, rung: str = "?", seed: int = -1, backend: str = "gpu") -> VerifyResult:
    """Compare an fp16 result with an FP32 reference (NumPy or CuPy arrays)."""
    c32 = np.asarray(_to_host(c), dtype=np.float32)
    ref = np.asarray(_to_host(reference), dtype=np.float32)
    M, N = ref.shape
    bad_mask = ~np.isfinite(c32)
    nonfinite = int(bad_mask.sum())
    diff = np.where(bad_mask, np.inf, np.abs(c32 - ref))
    ref_norm = float(np.linalg.norm(ref)) or 1.0
    rel_fro = float(np.linalg.norm(np.where(bad_mask, 0.0, c32 - ref)) / ref_norm) if nonfinite == 0 else math.inf
    ref_max = float(np.abs(ref).max()) or 1.0
    max_err = float(diff.max()) / ref_max
    first_bad = None
    wrong = bad_mask | (diff > MAX_ERR_TOL * ref_max)
    if wrong.any():
        row, col = map(int, np.argwhere(wrong)[0])
        first_bad = {"row": row, "col": col, "expected": float(ref[row, col]), "got": float(c32[row, col])}
    return VerifyResult(rung, M, N, K, seed, rel_fro, max_err, nonfinite, first_bad, backend)


def _to_host(x):
    return x.get() if hasattr(x, "get") else x


def _use_simulator(rung: Rung) -> bool:
    if device.cudasim_enabled():
        if not rung.cudasim:
            raise RuntimeError(
                f"Rung {rung.id} ({rung.slug}) does not run under the Numba CUDA simulator "
                "(NUMBA_ENABLE_CUDASIM=1): only the Numba rungs 01-02 do. Unset the variable on a GPU machine."
            )
        return True
    return False


def run_rung(rung: Rung, a, b):
    """C = A @ B on the rung's device; C is poisoned with NaN first so unwritten elements show."""
    if _use_simulator(rung):
        xp = np
    else:
        import cupy as xp
    c = xp.full((a.shape[0], b.shape[1]), xp.nan, dtype=xp.float16)
    rung.launch(a, b, c)
    return c


def verify(rung: Rung | str, M: int, N: int, K: int, *, seed: int | None = None) -> VerifyResult:
    """Run a rung once on fresh random inputs and compare with an FP32 reference."""
    rung = get(rung) if not isinstance(rung, Rung) else rung
    rung.check_shape(M, N, K)
    simulated = _use_simulator(rung)
    if simulated:
        xp = np
    else:
        device.require_gpu(f"Verifying rung {rung.id}")
        require_runs_here(rung)
        import cupy as xp
    a, b, seed = random_inputs(M, N, K, seed=seed, xp=xp)
    c = run_rung(rung, a, b)
    reference = xp.matmul(a.astype(xp.float32), b.astype(xp.float32))
    return compare(c, reference, K=K, rung=rung.id, seed=seed, backend="cudasim" if simulated else "gpu")


# ---------------------------------------------------------------- timing


@dataclass
class BenchRecord:
    rung: str
    M: int
    N: int
    K: int
    ms: float                  # median over samples
    tflops: float
    # The cublas_* and pct_cublas* fields are of the vendor baseline this rung was paired with (``vendor``): the
    # faster of the vendor libraries at this shape. Records written before there was a choice have no ``vendor``
    # field and mean cuBLAS through cupy.matmul (baseline_name).
    cublas_ms: float           # median of the baseline's launches paired with this rung's
    cublas_tflops: float
    pct_cublas: float          # 100 x baseline median / rung median, both from the same stretch of time
    samples_ms: list[float] = field(default_factory=list)
    cublas_samples_ms: list[float] = field(default_factory=list)
    input_sets: int = 1
    rel_fro_err: float = 0.0
    paired: bool = True        # samples alternate rung, cuBLAS, rung, ... (older records: one cuBLAS run per size)
    # NVML's SM clock read while each pair's rung launch ran, and while its cuBLAS launch ran (None where the
    # launch had ended before the reading came back), and whether NVML said the power cap held the clock down
    # then. NVML's figure lags: the clock a launch ran at is its SM cycles (ncu) over its time (viz clocks).
    sm_clock_mhz: list[int | None] = field(default_factory=list)
    pct_cublas_pairwise: float | None = None  # median over pairs of cuBLAS ms / rung ms
    cublas_sm_clock_mhz: list[int | None] = field(default_factory=list)
    power_capped: list[bool | None] = field(default_factory=list)
    cublas_power_capped: list[bool | None] = field(default_factory=list)
    # From the rung's timing build (cta_clock.py), alternated launch by launch with the plain build: each of
    # its last launches' clock as its CTAs logged it (cycles, ns, ghz, sms, ctas), and the timing build's
    # median ms over the plain build's in those pairs (1.00: the log costs no time). Empty / None where the
    # rung has no timing build (an NVRTC grid over cta_clock.CAPACITY) or bench ran without clocks.
    launch_clocks: list[dict] = field(default_factory=list)
    timing_build_ratio: float | None = None
    vendor: str = CUBLAS_NAME  # the vendor library the rung was paired with (a key of vendors())
    # Each vendor's median ms at this shape, from timing the vendors against each other (time_paired) to pick the
    # faster; None where one vendor library alone is present.
    vendor_ms: dict[str, float] | None = None
    host_us: float | None = None         # host microseconds per call of the rung's launch (host_us_paired)
    vendor_host_us: float | None = None  # the same for the vendor's call
    vendors_host_us: dict[str, float] | None = None   # the same for each vendor library present, by name

    @property
    def cycles(self) -> float | None:
        """The median over the timing build's logged launches of the busiest SM's cycles."""
        return statistics.median(c["cycles"] for c in self.launch_clocks) if self.launch_clocks else None

    @property
    def clock_ghz(self) -> float | None:
        """The median clock those launches ran at (their SMs' cycles over nanoseconds)."""
        return statistics.median(c["ghz"] for c in self.launch_clocks) if self.launch_clocks else None

    def as_dict(self) -> dict:
        return {**asdict(self), "cycles": self.cycles, "clock_ghz": self.clock_ghz}


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


def warmup_launches(warmup: int, inputs) -> int:
    """Untimed launches before the timed ones: ``warmup``, and at least one on every input set. A launcher
    caches what it works out per buffer (the TMA rungs' tensor maps); a timed launch that found its
    buffers new would wait for that host work inside its CUDA events, which for a kernel of tens of
    microseconds is most of what they measure (on the H200, rung 12 at 2048 x 2560 x 1024 timed 80 us a
    launch while most of its input sets were new to it, 29 us once it had seen them all:
    results/tile_probe_nvidia-h200_20261201T165037.json, "plan" and "12 sk1")."""
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


@dataclass(frozen=True)
class ClockReading:
    """One NVML reading: the SM clock in MHz and whether the software power cap was lowering it."""
    mhz: int
    power_capped: bool


def sm_clock_reader():
    """A function that returns a :class:`ClockReading` of the current GPU as NVML sees it now, or None where
    NVML is missing (the GPU is found by its PCI bus id, so CUDA_VISIBLE_DEVICES cannot mix GPUs up)."""
    try:
        import cupy
        from cuda.bindings import nvml

        nvml.init_v2()
        handle = nvml.device_get_handle_by_pci_bus_id_v2(cupy.cuda.Device().pci_bus_id)
    except Exception:  # no NVML library, an older cuda-bindings, no GPU: the clock is simply not recorded
        return lambda: None
    power_cap = int(nvml.ClocksEventReasons.EVENT_REASON_SW_POWER_CAP)

    def read() -> ClockReading | None:
        try:
            mhz = int(nvml.device_get_clock_info(handle, nvml.ClockType.CLOCK_SM))
            return ClockReading(mhz, bool(int(nvml.device_get_current_clocks_event_reasons(handle)) & power_cap))
        except Exception:
            return None
    return read


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


@dataclass(frozen=True)
class VendorChoice:
    """The vendor baseline a shape's rungs are paired with: its name (a key of :func:`vendors`) and, where several
    vendors were timed against each other to choose it, each one's median ms (None where one alone is present)."""
    name: str
    ms: dict[str, float] | None = None


def choose_vendor(fns: dict, inputs, *, warmup: int = 5, repeats: int = 30) -> VendorChoice:
    """The faster of the vendor GEMMs ``fns`` (name -> fn, as :func:`vendors` gives) on these input sets: each vendor
    after the first is timed paired with the first (:func:`time_paired`), and the lowest median wins."""
    names = list(fns)
    if len(names) == 1:
        return VendorChoice(names[0])
    first, ms = names[0], {}
    for other in names[1:]:
        t = time_paired(fns[first], fns[other], inputs, warmup=warmup, repeats=repeats)
        ms.setdefault(first, statistics.median(t.fn_ms))
        ms[other] = statistics.median(t.reference_ms)
    return VendorChoice(min(names, key=ms.__getitem__), ms)


def _shapes(sizes) -> list[tuple[int, int, int]]:
    return [(s, s, s) if isinstance(s, int) else tuple(s) for s in sizes]


def pick_vendors(sizes, *, repeats: int = 30, warmup: int = 5) -> dict[tuple[int, int, int], VendorChoice]:
    """The faster vendor baseline at each size (n or (M, N, K)), chosen as :func:`bench` chooses it, for callers that
    time several things at one shape against one baseline (``tune``: every configuration against the same one)."""
    import cupy

    gpu = device.require_gpu("Choosing the vendor baseline")
    fns, out = vendors(), {}
    for M, N, K in _shapes(sizes):
        sets = input_sets(M, N, K, gpu.l2_bytes)
        settle(cublas, sets)
        out[(M, N, K)] = choose_vendor(fns, sets, warmup=warmup, repeats=repeats)
        del sets
        forget_torch_views()
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def bench(rungs, sizes, *, repeats: int = 30, warmup: int = 5, progress: bool = True,
          failures: list | None = None, skipped: list | None = None, clocks: bool = True,
          baselines: dict | None = None) -> list[BenchRecord]:
    """Verify then time each rung at each size (M, N, K) or n (for n^3) against the faster vendor library at that
    size in this process, paired: the rung's launches alternate with the baseline's (:func:`time_paired`), and its %
    of the baseline is the ratio of the two medians.

    The baseline at each shape: where several vendor libraries are present (:func:`vendors`), they are first timed
    against each other there (:func:`choose_vendor`) and the faster is paired with every rung; the record names it
    (``vendor``) and keeps each one's median (``vendor_ms``). ``baselines`` ({(M, N, K): :class:`VendorChoice`}, as
    :func:`pick_vendors` returns) gives the choice instead, for the shapes it has. Each record also has the host's
    microseconds per call of the rung's launch and of the baseline's, timed in turn (:func:`host_us_paired`).

    A rung that fails verification is never timed: :class:`VerificationError` is raised, or,
    when a ``failures`` list is given, its :class:`VerifyResult` is appended there and the
    other rungs go on. Sizes past a rung's ``max_bench_size`` are skipped for that rung. A rung this GPU
    cannot run raises :class:`NotForThisGPU` before anything runs or, when a ``skipped`` list is given, goes
    there as (rung, :func:`why_not_here`'s line) and the others run.

    With ``clocks`` (the default), each rung is then timed against its own timing build
    (:func:`time_with_clock`): the record gets its launches' cycles and clock, and what the log cost.
    """
    import cupy
    from tqdm import tqdm

    gpu = device.require_gpu("Benchmarking")
    rungs = [get(r) if not isinstance(r, Rung) else r for r in rungs]
    refused = [(r, why) for r in rungs if (why := why_not_here(r)) is not None]
    if refused and skipped is None:
        raise NotForThisGPU(refused[0][1] + SHOWN_INSTEAD)
    if skipped is not None:
        skipped.extend(refused)
    rungs = [r for r in rungs if all(r is not other for other, _ in refused)]
    shapes = _shapes(sizes)
    if repeats < MIN_REPEATS:
        raise ValueError(f"repeats={repeats}: a median needs at least {MIN_REPEATS} timed runs.")
    jobs = [(shape, rung) for shape in shapes for rung in rungs
            if rung.max_bench_size is None or max(shape) <= rung.max_bench_size]
    records = []
    if not jobs:
        return records
    bar = tqdm(total=len(jobs), desc="bench", disable=not progress, unit="run")
    clock = sm_clock_reader()
    fns = vendors()
    for M, N, K in [shape for shape in shapes if any(job == shape for job, _ in jobs)]:
        sets = input_sets(M, N, K, gpu.l2_bytes)
        n_sets = len(sets)
        settle(cublas, sets)
        given = (baselines or {}).get((M, N, K))
        choice = given if given is not None else choose_vendor(fns, sets, warmup=warmup, repeats=repeats)
        baseline = fns[choice.name]
        for rung in [r for shape, r in jobs if shape == (M, N, K)]:
            bar.set_postfix_str(f"rung {rung.id} {M}x{N}x{K}")
            check = verify(rung, M, N, K)
            if not check.passed:
                if failures is None:
                    check.raise_if_failed()
                failures.append(check)
                bar.update()
                continue
            t = time_paired(rung.launch, baseline, sets, warmup=warmup, repeats=repeats, clock=clock)
            clocked = time_with_clock(rung.launch, sets, warmup=warmup) if clocks else None
            host_us, *each_host_us = host_us_paired((rung.launch, *fns.values()), *sets[0])
            vendors_host_us = dict(zip(fns, each_host_us))
            ms, cms = statistics.median(t.fn_ms), statistics.median(t.reference_ms)
            records.append(BenchRecord(
                rung.id, M, N, K, ms, tflops(M, N, K, ms), cms, tflops(M, N, K, cms), 100.0 * cms / ms,
                t.fn_ms, t.reference_ms, n_sets, check.rel_fro_err, True,
                [c and c.mhz for c in t.fn_clocks],
                100.0 * statistics.median(c / r for r, c in zip(t.fn_ms, t.reference_ms)),
                [c and c.mhz for c in t.reference_clocks],
                [c and c.power_capped for c in t.fn_clocks], [c and c.power_capped for c in t.reference_clocks],
                [c.as_dict() for c in clocked.launches] if clocked else [], clocked.ratio if clocked else None,
                vendor=choice.name, vendor_ms=choice.ms, host_us=host_us, vendor_host_us=vendors_host_us[choice.name],
                vendors_host_us=vendors_host_us))
            bar.update()
        del sets
        forget_torch_views()
        cupy.get_default_memory_pool().free_all_blocks()
    bar.close()
    return records


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

def format_table(records) -> str:
    """A fixed-width table: rung, size, ms, TFLOP/s, the vendor baseline's TFLOP/s, % of it and, where the records
    have them, the host's microseconds per call of the rung and of the baseline, and (bench's timing build) each
    launch's SM cycles, the clock it ran at and the timing build's time over the plain build's; under it, the line
    of :func:`baseline_note`. (NVML's clock readings are left out: NVML lags the clock a launch runs at, which is
    its cycles over its time.)"""
    records = [r if isinstance(r, dict) else r.as_dict() for r in records]
    clocked = any(r.get("cycles") for r in records)
    host = any(r.get("host_us") is not None for r in records)
    head = f"{'rung':<5} {'M x N x K':>20} {'ms':>9} {'TFLOP/s':>9} {'vendor':>9} {'% vendor':>9}"
    head += f" {'host us':>8} {'vendor host us':>14}" if host else ""
    rows = [head + (f" {'Mcycles':>9} {'GHz':>6} {'timed/plain':>11}" if clocked else "")]
    for r in records:
        shape = f"{r['M']}x{r['N']}x{r['K']}"
        row = (f"{r['rung']:<5} {shape:>20} {r.get('ms', float('nan')):>9.3f} "
               f"{r['tflops']:>9.1f} {r['cublas_tflops']:>9.1f} {r['pct_cublas']:>8.1f}%")
        if host:
            us, vus = r.get("host_us"), r.get("vendor_host_us")
            row += f" {f'{us:.1f}' if us is not None else '-':>8} {f'{vus:.1f}' if vus is not None else '-':>14}"
        if clocked:
            cycles, ghz, ratio = r.get("cycles"), r.get("clock_ghz"), r.get("timing_build_ratio")
            row += (f" {cycles / 1e6:>9.3f} {ghz:>6.3f} {ratio:>11.3f}" if cycles and ghz and ratio
                    else f" {'-':>9} {'-':>6} {'-':>11}")
        rows.append(row)
    if records:
        rows.append(baseline_note(records))
    return "\n".join(rows)
