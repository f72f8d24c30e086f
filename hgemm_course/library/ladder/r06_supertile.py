"""Rung 06: rung 05 on a 1-D grid decoded into super tiles, so co-resident CTAs share L2."""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from .. import geometry
from ..target import RECORDED, Target, current
from . import Rung
from .nvrtc_kernel import MmaTiles, TemplateKernel, Tunable, require, sized_tiles
from .r05_swizzle import NEEDS, check_swizzle, smem_bytes, swizzled_stages

SOURCE = "k06_supertile.cu"
TILES = MmaTiles(**geometry.of("06").tiles)   # rung_geometry.toml: chosen by `hgemm-course tune 06`
SUPER = geometry.of("06").super_mn     # (SUPER_M, SUPER_N) output tiles per super tile
# `hgemm-course tune 06` sweeps these; kernel() refuses what does not fit, and tune skips it with that sentence.
TUNABLE = Tunable(tiles=((256, 128), (128, 256), (128, 128)), stages=(3, 4, 5),
                  supers=((8, 4), (16, 2), (4, 8), (32, 1), (1, 64)))


def grid_1d(M: int, N: int, tiles: MmaTiles, super_mn: tuple[int, int]) -> tuple[int]:
    """Whole super tiles cover the tile grid; CTAs past its edge return at once."""
    return (geometry.super_tile_positions(M, N, tiles.bm, tiles.bn, super_mn),)


def kernel(tiles: MmaTiles | None = None, super_mn: tuple[int, int] = SUPER, whole_tiles: bool = False,
           target: Target | None = None) -> TemplateKernel:
    """The kernel for ``target`` (default: the current one) with ``tiles`` (default: those sized for it)."""
    target = target or current()
    return _kernel(tiles or tiles_for(target), super_mn, whole_tiles, target)


@lru_cache(maxsize=None)
def _kernel(tiles: MmaTiles, super_mn: tuple[int, int], whole_tiles: bool, target: Target) -> TemplateKernel:
    smem = smem_bytes(tiles)
    tiles.check(smem, target)
    check_swizzle(tiles)
    require(all(s >= 1 for s in super_mn), f"super tile {super_mn}: both sides must be at least one tile.")
    args = (*tiles.template_args, *super_mn, whole_tiles)
    return TemplateKernel(SOURCE, "k06_supertile", args, tiles.threads, smem,
                          grid=lambda M, N: grid_1d(M, N, tiles, super_mn), needs=NEEDS, target=target,
                          smem_layout=swizzled_stages(tiles), smem_aligned=False)


@lru_cache(maxsize=None)
def tiles_for(target: Target) -> MmaTiles:
    """TILES where they fit the target's shared memory, else the best of TUNABLE that does (sized_tiles)."""
    return sized_tiles(TILES, TUNABLE, lambda tiles: _kernel(tiles, SUPER, False, target))


def instantiations(target: Target) -> tuple[TemplateKernel, ...]:
    return tuple(kernel(None, SUPER, whole, target) for whole in (False, True))


def kernel_for(M: int, N: int, K: int, tiles: MmaTiles | None = None,
               super_mn: tuple[int, int] = SUPER) -> TemplateKernel:
    """The instantiation for an M x N x K product: without the tail guards when it is whole tiles."""
    tiles = tiles or tiles_for(current())
    tiles.require_int_steps(N, K)
    return kernel(tiles, super_mn, tiles.whole_tiles(M, N, K))


def launch(a, b, c, tiles: MmaTiles | None = None, super_mn: tuple[int, int] = SUPER):
    (M, K), N = a.shape, b.shape[1]
    return kernel_for(M, N, K, tiles, super_mn).launch(a, b, c)


RUNG = Rung(
    id="06", slug="supertile", title="mma.sync + swizzle + super-tile raster",
    idea="a 1-D grid decoded into SUPER_M x SUPER_N super tiles: the CTAs in flight share A and B in L2",
    backend="nvrtc", launch=launch, source=SOURCE,
    name_expressions=tuple(kernel(TILES, SUPER, whole, RECORDED).name_expression for whole in (False, True)),
    needs=NEEDS, instantiations=instantiations, multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "super_tile": SUPER, "threads": TILES.threads, "smem_bytes": smem_bytes(TILES)},
)
