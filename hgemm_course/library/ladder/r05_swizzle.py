"""Rung 05: rung 04 with the padding replaced by the 128-byte XOR swizzle."""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from .. import geometry
from ..target import RECORDED, Target, current
from . import Rung
from .nvrtc_kernel import MmaTiles, TemplateKernel, Tunable, cdiv, require, sized_tiles

SOURCE = "k05_swizzle.cu"
TILES = MmaTiles(**geometry.of("05").tiles)   # rung_geometry.toml: chosen by `hgemm-course tune 05`
# `hgemm-course tune 05` sweeps these; kernel() refuses what does not fit, and tune skips it with that sentence.
TUNABLE = Tunable(tiles=((256, 128), (128, 256), (128, 128)), stages=(3, 4, 5))
NEEDS = ("cp.async", "ldmatrix", "mma.sync")


def smem_bytes(t: MmaTiles) -> int:
    """Dynamic shared memory: ``stages`` dense (bm, bk) A tiles and (bk, bn) B tiles, the kernel's
    SwizzledStages (kernels/common.cuh). Compiling the kernel checks this figure against its sizeof
    (TemplateKernel.smem_check)."""
    return t.stages * (t.bm * t.bk + t.bk * t.bn) * 2


def swizzled_stages(t: MmaTiles) -> str:
    """The C++ type of the kernel's shared memory for these tiles (SwizzledStages, kernels/common.cuh)."""
    return f"SwizzledStages<{t.bm}, {t.bn}, {t.bk}, {t.stages}>"


def check_swizzle(tiles: MmaTiles) -> None:
    """The 128-byte swizzle's rules for the shared tiles."""
    require(tiles.bk * 2 == 128, f"bk={tiles.bk}: the 128-byte swizzle needs A rows of exactly 128 bytes, "
                                 "so bk * 2 == 128 (bk = 64 halves).")
    require(tiles.bn % 64 == 0, f"bn={tiles.bn}: B is stored as panels of 64 columns (128-byte rows), "
                                "so bn must be a multiple of 64.")
    require(64 % tiles.wn == 0,
            f"wn={tiles.wn}: a warp's B columns must stay inside one 64-column panel (wn = 16, 32 or 64) "
            "for the k-step XOR to stay inside a row.")


def kernel(tiles: MmaTiles | None = None, whole_tiles: bool = False, target: Target | None = None) -> TemplateKernel:
    """The kernel for ``target`` (default: the current one) with ``tiles`` (default: those sized for it)."""
    target = target or current()
    return _kernel(tiles or tiles_for(target), whole_tiles, target)


@lru_cache(maxsize=None)
def _kernel(tiles: MmaTiles, whole_tiles: bool, target: Target) -> TemplateKernel:
    smem = smem_bytes(tiles)
    tiles.check(smem, target)
    check_swizzle(tiles)
    return TemplateKernel(SOURCE, "k05_swizzle", (*tiles.template_args, whole_tiles), tiles.threads, smem,
                          grid=lambda M, N: (cdiv(N, tiles.bn), cdiv(M, tiles.bm)), needs=NEEDS, target=target,
                          smem_layout=swizzled_stages(tiles), smem_aligned=False)


@lru_cache(maxsize=None)
def tiles_for(target: Target) -> MmaTiles:
    """TILES where they fit the target's shared memory, else the best of TUNABLE that does (sized_tiles)."""
    return sized_tiles(TILES, TUNABLE, lambda tiles: _kernel(tiles, False, target))


def instantiations(target: Target) -> tuple[TemplateKernel, ...]:
    return tuple(kernel(None, whole, target) for whole in (False, True))


def kernel_for(M: int, N: int, K: int, tiles: MmaTiles | None = None) -> TemplateKernel:
    """The instantiation for an M x N x K product: without the tail guards when it is whole tiles."""
    tiles = tiles or tiles_for(current())
    tiles.require_int_steps(N, K)
    return kernel(tiles, tiles.whole_tiles(M, N, K))


def launch(a, b, c, tiles: MmaTiles | None = None):
    (M, K), N = a.shape, b.shape[1]
    return kernel_for(M, N, K, tiles).launch(a, b, c)


RUNG = Rung(
    id="05", slug="swizzle", title="mma.sync + 128-byte XOR swizzle",
    idea="padding replaced by the 128-byte XOR swizzle: each row's 16-byte chunks permuted by the row",
    backend="nvrtc", launch=launch, source=SOURCE,
    name_expressions=tuple(kernel(TILES, whole, RECORDED).name_expression for whole in (False, True)),
    needs=NEEDS, instantiations=instantiations, multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "threads": TILES.threads, "smem_bytes": smem_bytes(TILES)},
)
