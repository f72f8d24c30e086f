"""Rung 07: rung 06 with TMA loads and a full/empty mbarrier ring driven by one thread."""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from .. import tensormap
from . import Rung
from .nvrtc_kernel import MmaTiles, TemplateKernel, cdiv, require
from .r05_swizzle import check_swizzle
from .r06_supertile import grid_1d

SOURCE = "k07_tma.cu"
# Chosen by measurement on the H200 (results/tuning/2026-11-29_h200_round2_table.txt): rung 06's tile and super tile; every 128x256 and
# 256x128 variant with 3 or 4 stages lay between 58% and 63% of cuBLAS at 8192, within run-to-run noise.
TILES = MmaTiles(bm=256, bn=128, bk=64, wm=64, wn=64, stages=4)
SUPER = (8, 4)                            # (SUPER_M, SUPER_N) output tiles per super tile
ALIGN = 1024                              # TMA's 128-byte swizzle works on 1024-byte (8-row) atoms


def smem_bytes(t: MmaTiles) -> int:
    """Dynamic shared memory: slack to align the stages to 1024 bytes, the stages, and a full and
    an empty mbarrier (8 bytes each) per stage, rounded up to whole 1024-byte blocks so that a
    second CTA on the same SM starts on the 1024-byte grid too."""
    return cdiv(ALIGN + t.stages * (t.bm * t.bk + t.bk * t.bn) * 2 + t.stages * 2 * 8, ALIGN) * ALIGN


@lru_cache(maxsize=None)
def kernel(tiles: MmaTiles = TILES, super_mn: tuple[int, int] = SUPER) -> TemplateKernel:
    smem = smem_bytes(tiles)
    tiles.check(smem)
    check_swizzle(tiles)
    require(tiles.bm <= 256, f"bm={tiles.bm}: one TMA box of A has bm rows, and a box side is at most 256.")
    require(all(s >= 1 for s in super_mn), f"super tile {super_mn}: both sides must be at least one tile.")
    return TemplateKernel(SOURCE, "k07_tma", (*tiles.template_args, *super_mn), tiles.threads, smem,
                          grid=lambda M, N: grid_1d(M, N, tiles, super_mn))


@lru_cache(maxsize=64)
def _maps(a_ptr: int, M: int, K: int, b_ptr: int, N: int, bm: int, bk: int):
    """Tensor maps of A (boxes of (bm, bk)) and B (boxes of (bk, 64)); cached per buffer and shape."""
    map_a = tensormap.encode(tensormap.TileMap2D(a_ptr, M, K, K * 2, bm, bk))
    map_b = tensormap.encode(tensormap.TileMap2D(b_ptr, K, N, N * 2, bk, 64))
    return map_a, map_b


def launch(a, b, c, tiles: MmaTiles = TILES, super_mn: tuple[int, int] = SUPER) -> None:
    M, K = a.shape
    N = b.shape[1]
    kernel(tiles, super_mn).launch(a, b, c, *_maps(a.data.ptr, M, K, b.data.ptr, N, tiles.bm, tiles.bk))


RUNG = Rung(
    id="07", slug="tma", title="mma.sync + TMA loads + mbarrier ring",
    idea="one thread asks the TMA engine for each k-slice; full/empty mbarriers replace __syncthreads",
    backend="nvrtc", launch=launch, source=SOURCE, name_expressions=(kernel().name_expression,),
    multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "super_tile": SUPER, "threads": TILES.threads, "smem_bytes": smem_bytes(TILES)},
)
