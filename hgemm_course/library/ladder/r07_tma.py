"""Rung 07: rung 06 with TMA loads and a full/empty mbarrier ring driven by one thread."""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from .. import geometry
from ..target import RECORDED, Target, current
from ..tensormap import tensor_maps
from . import Rung
from .nvrtc_kernel import MmaTiles, TemplateKernel, Tunable, cdiv, require, sized_tiles
from .r05_swizzle import check_swizzle
from .r06_supertile import grid_1d

SOURCE = "k07_tma.cu"
TILES = MmaTiles(**geometry.of("07").tiles)   # rung_geometry.toml: chosen by `hgemm-course tune 07`
SUPER = geometry.of("07").super_mn     # (SUPER_M, SUPER_N) output tiles per super tile
# `hgemm-course tune 07` sweeps these; kernel() refuses what does not fit, and tune skips it with that sentence.
TUNABLE = Tunable(tiles=((256, 128), (128, 256), (128, 128)), stages=(3, 4, 5),
                  supers=((8, 4), (16, 2), (4, 8)))
SMEM_ALIGN = 1024                         # TMA's 128-byte swizzle works on 1024-byte (8-row) atoms
MBARRIER_BYTES = 8                        # an mbarrier is one 64-bit word of shared memory
NEEDS = ("ldmatrix", "mma.sync", "tma")


def smem_bytes(t: MmaTiles) -> int:
    """Dynamic shared memory: the kernel's TmaRing (kernels/common.cuh), each stage's A and B tiles and
    its full and empty mbarrier, in whole 1024-byte blocks as the struct's alignment rounds it, plus
    SMEM_ALIGN bytes of slack for the kernel to start it on a 1024-byte boundary. Compiling the kernel
    checks this figure against sizeof(TmaRing) (TemplateKernel.smem_check)."""
    ring = t.stages * ((t.bm * t.bk + t.bk * t.bn) * 2 + 2 * MBARRIER_BYTES)
    return SMEM_ALIGN + cdiv(ring, SMEM_ALIGN) * SMEM_ALIGN


def tma_ring(t: MmaTiles) -> str:
    """The C++ type of the kernel's shared memory for these tiles (TmaRing, kernels/common.cuh)."""
    return f"TmaRing<{t.bm}, {t.bn}, {t.bk}, {t.stages}>"


def kernel(tiles: MmaTiles | None = None, super_mn: tuple[int, int] = SUPER,
           target: Target | None = None) -> TemplateKernel:
    """The kernel for ``target`` (default: the current one) with ``tiles`` (default: those sized for it)."""
    target = target or current()
    return _kernel(tiles or tiles_for(target), super_mn, target)


@lru_cache(maxsize=None)
def _kernel(tiles: MmaTiles, super_mn: tuple[int, int], target: Target) -> TemplateKernel:
    smem = smem_bytes(tiles)
    tiles.check(smem, target)
    check_swizzle(tiles)
    require(tiles.bm <= 256, f"bm={tiles.bm}: one TMA box of A has bm rows, and a box side is at most 256.")
    require(all(s >= 1 for s in super_mn), f"super tile {super_mn}: both sides must be at least one tile.")
    return TemplateKernel(SOURCE, "k07_tma", (*tiles.template_args, *super_mn), tiles.threads, smem,
                          grid=lambda M, N: grid_1d(M, N, tiles, super_mn), needs=NEEDS, target=target,
                          smem_layout=tma_ring(tiles))


@lru_cache(maxsize=None)
def tiles_for(target: Target) -> MmaTiles:
    """TILES where they fit the target's shared memory, else the best of TUNABLE that does (sized_tiles)."""
    return sized_tiles(TILES, TUNABLE, lambda tiles: _kernel(tiles, SUPER, target))


def instantiations(target: Target) -> tuple[TemplateKernel, ...]:
    return (kernel(target=target),)


def launch(a, b, c, tiles: MmaTiles | None = None, super_mn: tuple[int, int] = SUPER):
    tiles = tiles or tiles_for(current())
    return kernel(tiles, super_mn).launch(a, b, c, *tensor_maps(a, b, tiles.bm, tiles.bk))


RUNG = Rung(
    id="07", slug="tma", title="mma.sync + TMA loads + mbarrier ring",
    idea="one thread asks the TMA engine for each k-slice; full/empty mbarriers replace __syncthreads",
    backend="nvrtc", launch=launch, source=SOURCE, name_expressions=(kernel(TILES, SUPER, RECORDED).name_expression,),
    needs=NEEDS, instantiations=instantiations, multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "super_tile": SUPER, "threads": TILES.threads, "smem_bytes": smem_bytes(TILES)},
)
