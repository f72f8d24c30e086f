"""The ladder's tile geometry as data (rung_geometry.toml): each tensor-core rung's tile of C, k-slice, ring depth,
warp tile, super tile, cluster and consumer warpgroups, with the tune record each was chosen from; and the Python
twin of the walk over the (cluster) tiles in rung 06's super-tile order that rungs 06-12 launch in.

It sits below the launchers (hgemm_course/ladder), the models (sim/) and the figures (viz/): it imports no rung,
and those read the geometry here instead of from one another.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path


DATA = Path(__file__).with_name("rung_geometry.toml")


@dataclass(frozen=True)
class Geometry:
    bm: int
    bn: int
    bk: int
    stages: int
    wm: int | None = None                   # the mma.sync rungs' warp tile
    wn: int | None = None
    super_mn: tuple[int, int] | None = None
    cluster_m: int = 1
    consumers: int | None = None
    source: str | None = None               # the tune record under results/ it was chosen from
    tie_pct: float = 0.0
    why: str = ""

    @property
    def tiles(self) -> dict:
        """The keywords of the rung's tiles class (MmaTiles, WgmmaTiles, WarpSpecializedTiles)."""
        warp = {} if self.wm is None else {"wm": self.wm, "wn": self.wn}
        return {"bm": self.bm, "bn": self.bn, "bk": self.bk, **warp, "stages": self.stages}


@cache
def geometries() -> dict[str, Geometry]:
    out = {}
    for rung, entry in tomllib.loads(DATA.read_text()).items():
        extra = {key: entry[key] for key in ("cluster_m", "consumers", "source", "tie_pct", "why") if key in entry}
        out[rung] = Geometry(**entry["tiles"], super_mn=tuple(entry["super"]) if "super" in entry else None, **extra)
    return out


def of(rung: str) -> Geometry:
    """Rung ``rung``'s geometry ("03" ... "11"); a ValueError naming the rungs that have one otherwise."""
    try:
        return geometries()[rung]
    except KeyError:
        raise ValueError(f"rung {rung!r} has no tile geometry; rungs {', '.join(geometries())} have") from None


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def super_tile_positions(M: int, N: int, bm: int, bn: int, super_mn: tuple[int, int]) -> int:
    """Launch positions of rung 06's 1-D grid: whole super tiles cover the (bm, bn) tile grid; positions past
    its edge do nothing."""
    sm, sn = super_mn
    return cdiv(cdiv(M, bm), sm) * cdiv(cdiv(N, bn), sn) * sm * sn


def launch_positions(M: int, N: int, bm: int, bn: int, super_mn: tuple[int, int], cluster_m: int) -> int:
    """Rung 06's grid size over the (cluster_m x bm, bn) cluster tiles, in CTAs: whole super tiles of
    super_m / cluster_m x super_n cluster tiles; the kernel skips the positions past the grid's edge."""
    return super_tile_positions(M, N, bm * cluster_m, bn, (super_mn[0] // cluster_m, super_mn[1])) * cluster_m
