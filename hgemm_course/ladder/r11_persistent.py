"""Rung 11: rung 10 made persistent: one CTA per SM walks the output tiles in rung 06's super-tile order
with its TMA ring running on across tiles, and stores C through shared memory with stmatrix and TMA."""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from .. import device, tensormap
from . import Rung
from .nvrtc_kernel import SMEM_PER_CTA_OPTIN, TemplateKernel, cdiv, require
from .r06_supertile import grid_1d
from .r07_tma import ALIGN, _maps
from .r10_warp_specialized import (
    CONSUMER_REGS,
    CONSUMERS,
    PRODUCER_REGS,
    THREADS,
    WarpSpecializedTiles,
)

SOURCE = "k11_persistent.cu"
# __launch_bounds__(384, 1) hands each of the 384 threads 168 registers: 64512 of the SM's 65536, so one
# CTA per SM (and the ring plus the C buffer take most of the shared memory anyway).
CTAS_PER_SM = 1

# Rung 10's tile with 3 stages instead of 4: the C buffer (bm x bn halves = 64 KiB) takes the fourth stage's
# place (3 x 48 KiB + 64 KiB = 208 KiB; 4 stages would need 256 KiB). On the H200 rung 10 with 3 stages ran
# within 3% of 4 (results/tuning/2026-11-29_h200_hopper_README.md).
TILES = WarpSpecializedTiles(bm=128, bn=256, bk=64, stages=3)
SUPER = (16, 2)                           # (SUPER_M, SUPER_N) output tiles per super tile


def smem_bytes(t: WarpSpecializedTiles) -> int:
    """Dynamic shared memory: slack to align to 1024 bytes, the ring's stages, the (bm, bn) fp16 C
    buffer, a full and an empty mbarrier per stage, rounded up to whole 1024-byte blocks."""
    return cdiv(ALIGN + t.stages * (t.bm * t.bk + t.bk * t.bn) * 2 + t.bm * t.bn * 2 + t.stages * 2 * 8, ALIGN) * ALIGN


def launch_positions(M: int, N: int, tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER) -> int:
    """Rung 06's grid size: whole super tiles over the tile grid; the kernel skips the positions past its edge."""
    return grid_1d(M, N, tiles, super_mn)[0]


def persistent_grid(M: int, N: int, sms: int, tiles: WarpSpecializedTiles = TILES,
                    super_mn: tuple[int, int] = SUPER, max_ctas: int | None = None) -> tuple[int]:
    """As many CTAs as run at once (sms x CTAS_PER_SM), or fewer when there are fewer launch positions
    (or when ``max_ctas`` asks for fewer: the tests make a few CTAs walk many tiles each)."""
    return (min(launch_positions(M, N, tiles, super_mn), sms * CTAS_PER_SM, max_ctas or sms * CTAS_PER_SM),)


def cta_tiles(cta: int, grid: int, M: int, N: int, tiles: WarpSpecializedTiles = TILES,
              super_mn: tuple[int, int] = SUPER) -> list[tuple[int, int]]:
    """The (bid_m, bid_n) tiles CTA ``cta`` of a ``grid``-CTA launch computes, in order: the Python
    twin of the kernel's loop t = cta, cta + grid, ... over rung 06's launch order (sim.raster)."""
    # imported here, not at the top: sim imports Numba, which importing the registry must not
    from ..sim.raster import cta_order

    order = cta_order("supertile", cdiv(M, tiles.bm), cdiv(N, tiles.bn), super_m=super_mn[0], super_n=super_mn[1])
    return [(int(m), int(n)) for m, n in order[cta::grid] if m >= 0]


@lru_cache(maxsize=None)
def kernel(tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER,
           max_ctas: int | None = None) -> TemplateKernel:
    smem = smem_bytes(tiles)
    c_buffer = tiles.bm * tiles.bn * 2
    require(smem <= SMEM_PER_CTA_OPTIN,
            f"{tiles.stages} stages of {tiles.bm}x{tiles.bk} + {tiles.bk}x{tiles.bn} halves and the {c_buffer}-byte C "
            f"buffer need {smem} bytes of shared memory, over the {SMEM_PER_CTA_OPTIN} bytes a CTA can have on "
            "sm_90; use fewer stages (3 for a 128x256 tile) or smaller tiles.")
    tiles.check(smem)
    require(all(s >= 1 for s in super_mn), f"super tile {super_mn}: both sides must be at least one tile.")
    require(max_ctas is None or max_ctas >= 1, f"max_ctas={max_ctas}: the grid needs at least one CTA.")
    return TemplateKernel(SOURCE, "k11_persistent", (*tiles.template_args, *super_mn), tiles.threads, smem,
                          grid=lambda M, N: persistent_grid(M, N, device.require_gpu("Launching rung 11").sm_count,
                                                            tiles, super_mn, max_ctas))


@lru_cache(maxsize=64)
def _map_c(c_ptr: int, M: int, N: int, bm: int):
    """Tensor map of C for the TMA stores: boxes of (bm / 2, 64), one consumer's rows and one 128-byte
    swizzled panel; TMA drops the parts of a box past M or N. Cached per buffer and shape."""
    return tensormap.encode(tensormap.TileMap2D(c_ptr, M, N, N * 2, bm // CONSUMERS, 64))


def launch(a, b, c, tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER,
           max_ctas: int | None = None) -> None:
    M, K = a.shape
    N = b.shape[1]
    kernel(tiles, super_mn, max_ctas).launch(a, b, c, *_maps(a.data.ptr, M, K, b.data.ptr, N, tiles.bm, tiles.bk),
                                   _map_c(c.data.ptr, M, N, tiles.bm))


RUNG = Rung(
    id="11", slug="persistent", title="TMA + wgmma, warp-specialized, persistent, TMA-store epilogue",
    idea="one CTA per SM walks the tiles with its ring running on across them; C leaves via stmatrix and a TMA store",
    backend="nvrtc", launch=launch, source=SOURCE, name_expressions=(kernel().name_expression,),
    multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "super_tile": SUPER, "threads": THREADS, "consumers": CONSUMERS,
           "ctas_per_sm": CTAS_PER_SM,
           "registers_after_setmaxnreg": {"producer": PRODUCER_REGS, "consumer": CONSUMER_REGS},
           "smem_bytes": smem_bytes(TILES)},
)
