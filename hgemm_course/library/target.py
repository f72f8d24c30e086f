"""The one description of the GPU the course builds for: its architecture, its limits and its features.

Everything that depends on the GPU reads a :class:`Target`: the build (which architecture to compile
for, cubin or PTX), the rungs (which features they need, what tile and ring fit its shared memory), the
verification and timing, ``gemm()``, the plan, the chapters and the checkers. No other module names an architecture or
a shared-memory size.

A target comes from one of three places:

- the GPU present (:func:`present`), read from the driver's device attributes;
- a name (:func:`named`, ``--arch sm_89``): the architecture's limits from the CUDA programming guide's
  table of compute capabilities, with the SM count and L2 of one typical GPU of it, said which;
- a name run here (``--as sm_89``): that target's code, built as PTX for the lowest architecture the
  rung needs, JIT-compiled by the driver for the GPU present (:meth:`Target.run_here`).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from functools import lru_cache

from . import device

KIB = 1024
MIB = 1024 * 1024

# Each feature the rungs use: the lowest architecture that has it, and how a learner recognises it.
FEATURES = {
    "cp.async": ("sm_80", "cp.async (sm_80 and later)"),
    "ldmatrix": ("sm_80", "ldmatrix (sm_80 and later)"),
    "mma.sync": ("sm_80", "mma.sync m16n8k16 (sm_80 and later)"),
    "tma": ("sm_90", "TMA loads with mbarrier expect-tx (sm_90 and later: H100/H200, B200, RTX 50)"),
    "clusters": ("sm_90", "thread-block clusters with TMA multicast (sm_90 and later)"),
    "wgmma": ("sm_90a", "wgmma (sm_90a only: H100/H200)"),
    "setmaxnreg": ("sm_90a", "setmaxnreg (sm_90a only: H100/H200)"),
}

# The course's architectures from the oldest up; "a" marks a feature set that runs on that one
# architecture only (sm_90a code does not run on sm_100 or sm_120).
ARCH_ORDER = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120")


def capability(arch: str) -> tuple[int, int]:
    """``"sm_89"`` -> (8, 9); ``"sm_90a"`` -> (9, 0); ``"sm_120"`` -> (12, 0)."""
    digits = arch.removeprefix("sm_").removeprefix("compute_").rstrip("a")
    if not digits.isdigit() or len(digits) < 2:
        raise ValueError(f"{arch!r} is not an architecture; name one like sm_80, sm_89, sm_90a or sm_120.")
    return int(digits[:-1]), int(digits[-1])


def arch_of(cc: tuple[int, int]) -> str:
    """The architecture the course compiles for on a GPU of compute capability ``cc``: Hopper's wgmma
    needs the arch-specific sm_90a; every other GPU takes its plain sm_XY."""
    return f"sm_{cc[0]}{cc[1]}" + ("a" if cc == (9, 0) else "")


def features_of(arch: str) -> frozenset[str]:
    """The features of :data:`FEATURES` that code built for ``arch`` may use."""
    cc = capability(arch)
    have = set()
    for feature, (lowest, _) in FEATURES.items():
        if lowest.endswith("a"):
            if arch == lowest:          # arch-specific: that architecture alone
                have.add(feature)
        elif cc >= capability(lowest):
            have.add(feature)
    return frozenset(have)


def lowest_arch(needs) -> str:
    """The oldest architecture whose code has every feature in ``needs`` (sm_75 for none): the PTX a
    rung is built as when a newer GPU is to JIT-compile it."""
    arches = [FEATURES[n][0] for n in needs]
    return max(arches, key=ARCH_ORDER.index, default=ARCH_ORDER[0])


@dataclass(frozen=True)
class Target:
    """One GPU, or one architecture standing for its GPUs, as far as the course's kernels care."""

    arch: str                   # what code is built for: sm_80, sm_89, sm_90a, sm_120, ...
    gpu: str                    # the GPU's name, or the typical GPUs of a named architecture
    smem_per_block: int         # bytes of shared memory one CTA may opt in to
    smem_per_sm: int            # bytes of shared memory of one SM
    regs_per_sm: int            # 32-bit registers of one SM
    threads_per_sm: int         # resident threads of one SM
    sm_count: int
    l2_bytes: int
    present: bool = False       # the GPU of this machine (False: a named architecture)
    run_from_ptx: bool = False  # built as PTX for each rung's lowest architecture, JIT-compiled for the GPU present
    host: "Target | None" = None  # with run_from_ptx: the GPU present, which runs this target's code

    @property
    def capability(self) -> tuple[int, int]:
        return capability(self.arch)

    @property
    def features(self) -> frozenset[str]:
        return features_of(self.arch)

    def missing(self, needs) -> list[str]:
        """The features of ``needs`` this target lacks, in ``needs``'s order."""
        return [n for n in needs if n not in self.features]

    def refusal(self, what: str, needs) -> str | None:
        """None if the target has every feature of ``needs``; else one line saying what ``what`` needs and
        what this GPU is (``rung 09 (wgmma) needs wgmma (sm_90a only: H100/H200); this RTX 4090 is sm_89``).
        Of the features it lacks, the line names those of the newest architecture: the ones that decide."""
        lacking = self.missing(needs)
        if not lacking:
            if self.host is not None and (why := self.host.refusal(what, needs)) is not None:
                return f"{why}, so it cannot run {self.arch}'s code for it"
            return None
        newest = max((FEATURES[n][0] for n in lacking), key=ARCH_ORDER.index)
        named = " and ".join(FEATURES[n][1] for n in lacking if FEATURES[n][0] == newest)
        have = f"{self.describe()} is {self.arch}" if self.present else f"{self.arch} ({self.gpu}) does not have it"
        return f"{what} needs {named}; {have}"

    def describe(self) -> str:
        """``this RTX 4090`` for a GPU present, ``the sm_89 target (RTX 4090, L4)`` for a named one."""
        return f"this {self.gpu}" if self.present else f"the {self.arch} target ({self.gpu})"

    def label(self) -> str:
        """:meth:`describe` with the architecture: ``this NVIDIA GeForce RTX 4090 (sm_89)``, ``the sm_89 target
        (RTX 4090, L4)``."""
        return f"{self.describe()} ({self.arch})" if self.present else self.describe()

    def build_arch(self, needs) -> str:
        """The architecture to compile a kernel with features ``needs`` for: the target's own, or, when it
        runs from PTX, the lowest that has them."""
        return lowest_arch(needs) if self.run_from_ptx else self.arch

    def run_here(self) -> "Target":
        """This named target's code run on the GPU present: each rung sized for this target's limits and
        built as PTX for its lowest architecture, which the driver JIT-compiles (``verify --as sm_89``). A rung
        runs so only where both this target and the GPU present have its features (:meth:`refusal`)."""
        here = present()
        if here is None:
            raise RuntimeError(f"--as {self.arch} runs {self.arch}'s code on this machine's GPU, and there is none: "
                               f"{device.probe_gpu()[1]}. Use `--arch {self.arch}` to compile for it without a GPU.")
        return replace(self, run_from_ptx=True, host=here)

    def as_dict(self) -> dict:
        return {"arch": self.arch, "gpu": self.gpu, "smem_per_block": self.smem_per_block,
                "smem_per_sm": self.smem_per_sm, "regs_per_sm": self.regs_per_sm,
                "threads_per_sm": self.threads_per_sm, "sm_count": self.sm_count, "l2_bytes": self.l2_bytes,
                "features": sorted(self.features), "present": self.present, "run_from_ptx": self.run_from_ptx,
                "run_on": self.host.gpu if self.host else None}


# Named architectures. Shared memory, registers and threads per SM are the architecture's, from the CUDA
# C++ Programming Guide's table of compute capabilities; the SM count and L2 are those of the GPU named
# first, for the models that need them (waves, L2), not a measurement.
KNOWN: dict[str, Target] = {t.arch: t for t in (
    Target("sm_75", "Tesla T4, RTX 20", 64 * KIB, 64 * KIB, 65536, 1024, 40, 4 * MIB),
    Target("sm_80", "A100", 163 * KIB, 164 * KIB, 65536, 2048, 108, 40 * MIB),
    Target("sm_86", "RTX 3090, A10", 99 * KIB, 100 * KIB, 65536, 1536, 82, 6 * MIB),
    Target("sm_89", "RTX 4090, L4", 99 * KIB, 100 * KIB, 65536, 1536, 128, 72 * MIB),
    Target("sm_90a", "H100, H200", 227 * KIB, 228 * KIB, 65536, 2048, 132, 60 * MIB),
    Target("sm_100", "B200", 227 * KIB, 228 * KIB, 65536, 2048, 148, 126 * MIB),
    Target("sm_120", "RTX 5080, RTX 5090", 99 * KIB, 100 * KIB, 65536, 1536, 84, 64 * MIB),
)}
# The GPU whose runs the course records (results/): what a machine with no GPU compiles for.
RECORDED = KNOWN["sm_90a"]


def named(arch: str) -> Target:
    """A target by its architecture: ``sm_89`` (or ``89``, ``sm89``, ``compute_89``)."""
    key = arch.strip().lower().replace("compute_", "sm_")
    if not key.startswith("sm_"):
        key = "sm_" + key.removeprefix("sm")
    if key == "sm_90":
        key = "sm_90a"          # the course builds Hopper code as sm_90a: wgmma needs it
    if key not in KNOWN:
        raise ValueError(f"No target {arch!r}: the course knows {', '.join(KNOWN)}.")
    return KNOWN[key]


@lru_cache(maxsize=8)
def _target_of(info: device.GpuInfo) -> Target:
    return Target(arch_of(info.compute_capability), info.name, info.smem_per_block_optin, info.smem_per_sm,
                  info.regs_per_sm, info.threads_per_sm or KNOWN.get(arch_of(info.compute_capability), RECORDED).threads_per_sm,
                  info.sm_count, info.l2_bytes, present=True)


def present() -> Target | None:
    """The target of this machine's GPU (device 0), or None without one (or under the Numba CUDA simulator)."""
    if device.cudasim_enabled():
        return None
    info = device.probe_gpu()[0]
    return None if info is None else _target_of(info)


_chosen: list[Target] = []       # set by use(): --arch / --as


def current() -> Target:
    """The target everything builds for: the one chosen with :func:`use`, else the GPU present, else the
    recorded H200's (so a machine with no GPU compiles what the recorded runs ran)."""
    if _chosen:
        return _chosen[-1]
    return present() or RECORDED


def sizing(needs) -> Target:
    """The target whose limits size a rung with features ``needs``: the current one where it has them,
    else the recorded H200's (a rung the current target cannot run is refused for its features, not sized)."""
    t = current()
    return RECORDED if t.missing(needs) else t


def runnable() -> Target | None:
    """The target kernels run on here: :func:`current` when a GPU is present to run it, else None."""
    t = current()
    return t if (t.present or t.run_from_ptx) else None


@contextlib.contextmanager
def use(target: Target):
    """Build (and, for a :meth:`Target.run_here` target, run) for ``target`` inside the block."""
    _chosen.append(target)
    try:
        yield target
    finally:
        _chosen.pop()
