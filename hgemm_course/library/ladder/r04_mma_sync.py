"""Rung 04: rung 03's tiling with wmma replaced by ldmatrix + mma.sync.m16n8k16 (still padded)."""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from .. import geometry
from ..target import RECORDED, Target, current
from . import Rung
from .nvrtc_kernel import MmaTiles, TemplateKernel, Tunable, cdiv, require, sized_tiles
from .r03_wmma import PAD, padded_stages, smem_bytes  # noqa: F401 (PAD: the same padded rows as rung 03, for readers)

SOURCE = "k04_mma_sync.cu"
TILES = MmaTiles(**geometry.of("04").tiles)   # rung_geometry.toml: chosen by `hgemm-course tune 04`
# `hgemm-course tune 04` sweeps these; kernel() refuses what does not fit, and tune skips it with that sentence.
TUNABLE = Tunable(tiles=((256, 128), (128, 256), (128, 128)), stages=(2, 3, 4, 5))
NEEDS = ("cp.async", "ldmatrix", "mma.sync")


def kernel(tiles: MmaTiles | None = None, whole_tiles: bool = False, target: Target | None = None) -> TemplateKernel:
    """The kernel for ``target`` (default: the current one) with ``tiles`` (default: those sized for it)."""
    target = target or current()
    return _kernel(tiles or tiles_for(target), whole_tiles, target)


@lru_cache(maxsize=None)
def _kernel(tiles: MmaTiles, whole_tiles: bool, target: Target) -> TemplateKernel:
    smem = smem_bytes(tiles)
    tiles.check(smem, target)
    require(tiles.wn % 16 == 0, f"wn={tiles.wn}: B fragments come in pairs of n8 tiles (one ldmatrix.x4.trans "
                                "covers 16 columns), so wn must be a multiple of 16.")
    return TemplateKernel(SOURCE, "k04_mma_sync", (*tiles.template_args, whole_tiles), tiles.threads, smem,
                          grid=lambda M, N: (cdiv(N, tiles.bn), cdiv(M, tiles.bm)), needs=NEEDS, target=target,
                          smem_layout=padded_stages(tiles), smem_aligned=False)


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
    id="04", slug="mma_sync", title="ldmatrix + mma.sync (PTX), padded smem",
    idea="the instructions behind wmma written out: ldmatrix into fragment registers, mma.sync.m16n8k16",
    backend="nvrtc", launch=launch, source=SOURCE,
    name_expressions=tuple(kernel(TILES, whole, RECORDED).name_expression for whole in (False, True)),
    needs=NEEDS, instantiations=instantiations, multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "threads": TILES.threads, "smem_bytes": smem_bytes(TILES)},
)
