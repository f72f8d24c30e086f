"""The launcher shared by the NVRTC rungs: instantiate a kernel template, compile once, launch with CuPy.

A rung module owns its tile constants: it builds a :class:`TemplateKernel` with them,
checks them with sentences a learner can act on, and hands ``launch`` to its ``Rung``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Callable

import numpy as np

from .. import cta_clock
from ..build import CompiledModule, compile_cuda, nvrtc_builds
from ..target import Target, current, lowest_arch
from .packed import PackedLaunch


@dataclass(frozen=True)
class TemplateKernel:
    """``source`` defines ``template <int...> __global__ void kernel(A, B, C, M, N, K, ...)``."""

    source: str                          # file name under hgemm_course/library/kernels/
    kernel: str                          # template name, e.g. "k03_wmma"
    template_args: tuple[int | bool, ...]  # in the template's order; a bool renders as true / false
    threads: int                         # threads per CTA
    smem_bytes: int                      # dynamic shared memory per CTA
    grid: Callable[[int, int], tuple]    # (M, N) -> grid dims
    needs: tuple[str, ...] = ()          # the target features the source uses (target.FEATURES)
    target: Target | None = None         # what it is built for; None: target.current() when it compiles
    smem_layout: str | None = None       # the C++ struct the kernel lays its shared memory out as, e.g.
                                         # "TmaRing<128, 128, 64, 3>" (kernels/common.cuh)
    smem_aligned: bool = True            # smem_bytes holds SMEM_ALIGN bytes of slack besides the struct, for
                                         # aligned_smem (the TMA rungs); False: the struct alone (smem_as, 03-06)
    options: tuple[str, ...] = ()        # extra compiler options: the timing build's defines (cta_clock.py)

    @property
    def name_expression(self) -> str:
        args = (str(a).lower() if isinstance(a, bool) else str(a) for a in self.template_args)
        return f"{self.kernel}<{', '.join(args)}>"

    @property
    def smem_check(self) -> str | None:
        """A name expression that compiles only if ``smem_bytes`` is sizeof(``smem_layout``), plus SMEM_ALIGN
        where the kernel aligns the struct (``smem_aligned``): the launcher's budget and the kernel's struct
        cannot disagree (common.cuh, launch_smem_bytes and launch_smem_bytes_exact)."""
        if not self.smem_layout:
            return None
        check = "launch_smem_bytes" if self.smem_aligned else "launch_smem_bytes_exact"
        return f"&{check}<{self.smem_layout}, {self.smem_bytes}>"

    @property
    def arch(self) -> str:
        """The architecture it compiles for: its target's own (a cubin), or the lowest that has its features
        (PTX the driver JIT-compiles) where the target runs from PTX or this NVRTC does not know its arch."""
        arch = (self.target or current()).build_arch(self.needs)
        return arch if nvrtc_builds(arch) else lowest_arch(self.needs)

    def compile(self) -> CompiledModule:
        names = (self.name_expression, self.smem_check) if self.smem_layout else (self.name_expression,)
        return compile_cuda(self.source, name_expressions=names, arch=self.arch, options=self.options)

    @cached_property
    def _functions(self) -> dict:
        """The loaded kernel per GPU id, kept on the instance: looking it up by the dataclass's hash would cost
        a hash of every field on every launch."""
        return {}

    def function(self):
        """The loaded kernel on the current GPU, compiled once and loaded once per GPU (launches stay cheap)."""
        from cupy.cuda import runtime

        device_id = runtime.getDevice()
        fn = self._functions.get(device_id)
        if fn is None:
            fn = self._functions[device_id] = _loaded_function(self, device_id)
        return fn

    def launch(self, a, b, c, *extra_args) -> Callable[[], None] | None:
        """C = A @ B for row-major fp16 CuPy arrays; ``extra_args`` follow M, N, K (tensor maps, ...). Inside
        ``cta_clock.timing_builds()`` it launches its timing build instead, and notes which kernel ran.

        Returns the same launch again as a call of no arguments (None for a timing build): a
        :class:`~hgemm_course.library.ladder.packed.PackedLaunch` of the loaded kernel, its grid and its arguments, with
        A, B and C as bare pointers, so that holding it keeps no array alive, packed once into the bytes the
        driver reads. ``gemm(out=)`` keeps it per operands' pointers and shapes (api.py)."""
        M, K, N = check_operands(a, b, c)
        timing = cta_clock.timing_builds_on()
        kernel = cta_clock.timing_build_of(self) if timing else self
        fn, grid, block, smem = kernel.function(), kernel.grid(M, N), (kernel.threads,), kernel.smem_bytes
        fn(grid, block, (a, b, c, np.int32(M), np.int32(N), np.int32(K), *extra_args), shared_mem=smem)
        if timing:
            return None
        args = (np.uint64(a.data.ptr), np.uint64(b.data.ptr), np.uint64(c.data.ptr),
                np.int32(M), np.int32(N), np.int32(K), *extra_args)
        return PackedLaunch(fn, grid, block, args, smem)


def launched_kernel(rung_module, M: int, N: int, K: int, **overrides) -> TemplateKernel:
    """The kernel a rung module's launcher runs for an M x N x K product with these launcher
    keyword arguments: its ``kernel_for`` where it picks by shape (rungs 04-06: no tail guards on
    whole tiles), else its ``kernel``."""
    if hasattr(rung_module, "kernel_for"):
        return rung_module.kernel_for(M, N, K, **overrides)
    return rung_module.kernel(**overrides)


def check_operands(a, b, c) -> tuple[int, int, int]:
    """(M, K, N) of C = A @ B, after checking that the three are row-major fp16 matrices that fit."""
    for name, x in (("A", a), ("B", b), ("C", c)):
        if x.ndim != 2 or x.dtype != np.float16 or not x.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous 2-D float16 array; got {x.ndim}-D {x.dtype}"
                             f"{'' if x.flags.c_contiguous else ', not contiguous'}.")
    M, K = a.shape
    if b.shape[0] != K or c.shape != (M, b.shape[1]):
        raise ValueError(f"Shapes do not chain: A {a.shape} @ B {b.shape} -> C {c.shape}; "
                         f"need B ({K}, N) and C ({M}, N).")
    return M, K, b.shape[1]


@lru_cache(maxsize=None)
def loaded_module(kernel: TemplateKernel, device_id: int):
    """The kernel's module as loaded on GPU ``device_id`` (the one current while it loads: CUDA loads a module
    per device), once: its ``__device__`` variables are that one load's (the timing build's log)."""
    return kernel.compile().raw_module()


@lru_cache(maxsize=None)
def _loaded_function(kernel: TemplateKernel, device_id: int):
    fn = loaded_module(kernel, device_id).get_function(kernel.compile().lowered.get(kernel.name_expression,
                                                                                    kernel.name_expression))
    if kernel.smem_bytes > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = kernel.smem_bytes
    return fn


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def require(condition: bool, message: str) -> None:
    """A launcher's precondition: refuse the configuration with a sentence that names the fix."""
    if not condition:
        raise ValueError(message)


@dataclass(frozen=True)
class Tunable:
    """What ``hgemm-course tune`` sweeps on a rung, declared by the rung module as ``TUNABLE``.

    Each axis lists the values of the rung's default sweep; ``tune`` builds every combination through
    the rung's own ``kernel()`` keyword arguments (``tiles`` with this (bm, bn) and stages, ``super_mn``,
    ``cluster_m``, ``consumers``) and skips, with the sentence of the refusal, whatever ``kernel()``
    refuses: its tile rules and its shared-memory budget are the sweep's rules. An empty axis is one the
    rung's kernel does not take."""

    tiles: tuple[tuple[int, int], ...]          # (bm, bn) of C per CTA
    stages: tuple[int, ...]                     # shared-memory buffers in the ring
    supers: tuple[tuple[int, int], ...] = ()    # (super_m, super_n) output tiles per super tile (rung 06 on)
    clusters: tuple[int, ...] = ()              # CTAs per cluster along M (rung 11)
    consumers: tuple[int, ...] = ()             # consumer warpgroups (rung 11)


@dataclass(frozen=True)
class MmaTiles:
    """The tiling of the tensor-core rungs: a (bm, bn) tile of C per CTA, bk-wide k-slices in a
    ring of ``stages`` shared-memory buffers, and (wm, wn) warp tiles."""

    bm: int
    bn: int
    bk: int
    wm: int
    wn: int
    stages: int

    @property
    def warps(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn)

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def template_args(self) -> tuple[int, ...]:
        return (self.bm, self.bn, self.bk, self.wm, self.wn, self.stages)

    def whole_tiles(self, M: int, N: int, K: int) -> bool:
        """Whether M, N and K are whole multiples of the tile: no CTA meets a tail, so a kernel may copy
        without the guards that zero-fill past the matrix."""
        return M % self.bm == 0 and N % self.bn == 0 and K % self.bk == 0

    def require_int_steps(self, N: int, K: int) -> None:
        """Rungs 04-06 step a thread's copies through a CTA's rows of A and a slice's rows of B by 32-bit
        offsets (BM * K and BK * N halves at most): refuse K or N that would overflow them."""
        require(self.bm * K < 2**31 and self.bk * N < 2**31,
                f"K = {K} or N = {N} is too large for rungs 04-06 (BM * K and BK * N must stay below 2^31 "
                f"halves): use rung 07 or later.")

    def check(self, smem_bytes: int, target: Target) -> None:
        """The rules every tensor-core rung's kernel relies on, with ``smem_bytes`` its request on ``target``."""
        require(self.bm % self.wm == 0 and self.bn % self.wn == 0,
                f"The CTA tile {self.bm}x{self.bn} must split into whole {self.wm}x{self.wn} warp tiles; "
                "choose bm a multiple of wm and bn a multiple of wn.")
        require(self.wm % 16 == 0 and self.wn % 16 == 0,
                f"The warp tile {self.wm}x{self.wn} must be a multiple of 16 in both directions: "
                "the tensor-core fragments are 16x16 (wmma) or 16x8 pairs (mma.sync).")
        require(self.bk % 16 == 0, f"bk={self.bk} must be a multiple of 16, the k of one tensor-core step.")
        require(self.threads <= 1024, f"{self.warps} warps ({self.threads} threads) exceed the 1024 threads of a CTA.")
        for name, rows, cols in (("A", self.bm, self.bk), ("B", self.bk, self.bn)):
            require((rows * cols // 8) % self.threads == 0,
                    f"The {name} tile ({rows}x{cols} halves = {rows * cols // 8} chunks of 16 bytes) must split evenly "
                    f"over the {self.threads} threads that copy it.")
        require(self.stages >= 2, f"stages={self.stages}: a pipeline needs at least 2 stages (double buffering).")
        require_smem(smem_bytes, target, f"{self.stages} stages")


def require_smem(smem_bytes: int, target: Target, what: str, fix: str = "use fewer stages or smaller tiles") -> None:
    """Refuse a request for more shared memory than one CTA may have on ``target``."""
    require(smem_bytes <= target.smem_per_block,
            f"{what} need {smem_bytes} bytes of shared memory, over the {target.smem_per_block} bytes a CTA can have "
            f"on {target.label()}; {fix}.")


def sized_tiles(default: MmaTiles, tunable: Tunable, builds: Callable[[MmaTiles], object]) -> MmaTiles:
    """The tiling a rung runs on a target: its default where ``builds`` (the rung's ``kernel()`` for that
    target) takes it; else, from the rung's own sweep, the largest tile that fits with at least three stages
    (a prefetch distance of two slices), else with two, the default's own tile first among equals, and then
    the most stages up to the default's.
    Raises the last refusal's ValueError when nothing of the sweep fits."""
    stages = sorted({s for s in (*tunable.stages, 2) if 2 <= s <= default.stages}, reverse=True)
    candidates = [default] + sorted(
        (MmaTiles(bm, bn, default.bk, default.wm, default.wn, s) for bm, bn in tunable.tiles for s in stages),
        key=lambda t: (t.stages < 3, -t.bm * t.bn, (t.bm, t.bn) != (default.bm, default.bn),
                       tunable.tiles.index((t.bm, t.bn)), -t.stages))
    refusal = None
    for tiles in candidates:
        try:
            builds(tiles)
        except ValueError as exc:
            refusal = exc
            continue
        return tiles
    raise refusal
