"""Waves: how a persistent kernel's output tiles and their K-iterations land on the GPU over time.

The model counts time in K-iterations: one unit of work computes one BK-deep slice of one output
tile in one time step. A *unit* is what the persistent grid hands work to: one CTA per SM, or, as
in rung 11, a cluster of ``cluster_m`` CTAs that computes ``cluster_m`` tiles stacked along M
together (they share B's k-slices by TMA multicast, so they walk the same K range of the same
column of tiles). Its work item is that cluster tile of (cluster_m * tile_m) x tile_n outputs,
``cdiv(k, tile_k)`` iterations deep; a cluster tile half past M's edge is computed on zeros and
costs as much as a full one. The H200 has 132 SMs: 66 clusters of 2.

Three schedules:

- ``dp`` (data-parallel, rung 11): tile t goes to unit t mod units and costs all of its
  iterations there. With T tiles on U units the last wave holds T mod U tiles, and the other
  units sit idle while it runs: the busy fraction is T / (U * ceil(T / U)).
- ``streamk``: the T * iters_per_tile iterations, in tile-major order, are cut into one
  contiguous range per unit, as even as integers allow (:func:`streamk_ranges`). A range may
  start or end inside a tile; such a *partial* tile is finished through a global workspace:
  the unit that computes the tile's first iteration owns it, every other unit that computes
  part of it (a *contributor*) writes its FP32 partial sums there and raises the tile's flag,
  and the owner waits for each contributor's flag, adds the partial and stores the tile. A
  contributor's share of a tile is the first thing in its range and the owner's share is the
  last thing in its range, so the partials are usually ready before the owner asks for them.
- ``hybrid`` (the stream-K paper's data-parallel + stream-K): whole waves of tiles run
  data-parallel first, and only the last partial wave plus ``sk_waves`` full waves
  (:func:`hybrid_split`) are split stream-K, so that most tiles keep data-parallel's
  simple epilogue and only a few tiles pay for a fix-up.

The fix-up cost, ``fixup_iters``, is charged in K-iterations per partial: a contributor pays it
once to write its partial, the owner once per contributor to read a partial back and add it, on
top of any wait for the contributor's flag. The default, 3, comes from bytes: a 128x256 FP32
partial tile is 128 KiB each way, while one K-iteration streams 48 KiB of operands into a CTA
(128x64 of A and 64x256 of B, in halves), so moving a partial takes about 2.7 iterations' worth
of operand traffic, rounded up for the fence and the flag's round trip. It is a model parameter,
to be fitted against H200 timings of the stream-K kernel. Not modelled: the epilogue of a whole
tile (the same in every schedule, one per tile), DRAM and L2 behaviour (stream-K changes which
tiles run together), and clock differences between SMs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from .cache import cached_njit
from ..library.plan_constants import value as fitted

MODES = ("dp", "streamk", "hybrid")
# Rung 11's launch (ladder/r11_persistent.py): 128x256x64 tiles, clusters of 2 CTAs along M, one cluster per
# pair of the H200's 132 SMs. tests/test_sim_waves.py checks them against the launcher.
TILE_M, TILE_N, TILE_K, CLUSTER_M, UNITS = 128, 256, 64, 2, 66
FIXUP_ITERS = 3.0
# A gain in busy fraction below DP_MARGIN (relative) is within the model's error, as timed on the H200
# (plan_constants.toml holds the runs of this and of the two costs below).
DP_MARGIN = fitted("DP_MARGIN")
# Rung 12's split, chosen here so that its launcher and gemm()'s plan (hgemm_course.library.plan) ask one model: the whole
# waves it may divide besides the last, part-empty one, and the model's two costs, fitted to rung 11 and rung 12's
# sk_waves variants timed on the H200 (research/fit_streamk_model.py): a fix-up's cost in K-iterations, and a
# stream-K iteration's in data-parallel ones (its clusters sit at scattered K offsets, so they may share less of
# what they load in L2 than clusters walking neighbouring tiles in step: a hypothesis, no L2 counters were taken).
SK_WAVES_TRIED = (0, 1, 2)
FITTED_FIXUP_ITERS = fitted("FITTED_FIXUP_ITERS")
FITTED_SK_ITER_COST = fitted("FITTED_SK_ITER_COST")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@cached_njit()
def _ranges(total, units):
    """[begin, end) of each unit: total // units iterations each, one more for the first total % units."""
    out = np.empty((units, 2), np.int64)
    base, extra = total // units, total % units
    for u in range(units):
        out[u, 0] = u * base + min(u, extra)
        out[u, 1] = out[u, 0] + base + (1 if u < extra else 0)
    return out


@cached_njit()
def _simulate(tiles, iters_per_tile, units, dp_tiles, fixup, sk_cost):
    """The schedule's segments and per-unit times.

    Segments (one per piece of a tile one unit computes) come in two blocks: the ``dp_tiles``
    data-parallel tiles in tile order, then the stream-K segments in global iteration order
    (unit by unit, so the contributors of a tile follow its owner); a stream-K iteration costs ``sk_cost``
    time steps. Returns
    (unit, tile, k_begin, k_end, start, done, busy, finish): ``done`` is when the segment's
    piece is finished (computed, and for a partial also written or, for the owner, reduced).
    """
    sk_ranges = _ranges((tiles - dp_tiles) * iters_per_tile, units)
    segments = dp_tiles
    for u in range(units):
        begin, end = sk_ranges[u, 0], sk_ranges[u, 1]
        if end > begin:
            segments += (end - 1) // iters_per_tile - begin // iters_per_tile + 1
    seg_unit = np.empty(segments, np.int64)
    seg_tile = np.empty(segments, np.int64)
    seg_kb = np.empty(segments, np.int64)
    seg_ke = np.empty(segments, np.int64)
    seg_start = np.empty(segments, np.float64)
    seg_done = np.empty(segments, np.float64)
    busy = np.zeros(units, np.float64)
    clock = np.zeros(units, np.float64)

    # ---- data-parallel tiles: tile t on unit t % units, in waves
    for t in range(dp_tiles):
        u = t % units
        seg_unit[t], seg_tile[t], seg_kb[t], seg_ke[t] = u, t, 0, iters_per_tile
        seg_start[t] = clock[u]
        clock[u] += iters_per_tile
        seg_done[t] = clock[u]

    # ---- stream-K ranges: compute; contributors write their partials and raise the flag
    s = dp_tiles
    owner_segments = np.empty(units, np.int64)     # per unit, its partial tile to reduce, or -1
    owner_segments[:] = -1
    for u in range(units):
        it, end = sk_ranges[u, 0], sk_ranges[u, 1]
        while it < end:
            local_tile = it // iters_per_tile
            kb = it - local_tile * iters_per_tile
            ke = min(end - local_tile * iters_per_tile, iters_per_tile)
            seg_unit[s], seg_tile[s], seg_kb[s], seg_ke[s] = u, dp_tiles + local_tile, kb, ke
            seg_start[s] = clock[u]
            clock[u] += (ke - kb) * sk_cost
            if kb > 0:                             # a contributor: its partial goes to the workspace
                clock[u] += fixup
            elif ke < iters_per_tile:              # the owner of a partial tile: reduced below
                owner_segments[u] = s
            seg_done[s] = clock[u]
            it += ke - kb
            s += 1
    busy[:] = clock

    # ---- owners: wait for each contributor's flag, read its partial back, add it, store the tile
    finish = clock.copy()
    for u in range(units):
        s = owner_segments[u]
        if s < 0:
            continue
        t = seg_done[s]
        j = s + 1
        while j < segments and seg_tile[j] == seg_tile[s]:
            t = max(t, seg_done[j]) + fixup
            busy[u] += fixup
            j += 1
        seg_done[s] = t
        finish[u] = t
    return seg_unit, seg_tile, seg_kb, seg_ke, seg_start, seg_done, busy, finish


def streamk_ranges(tiles: int, iters_per_tile: int, units: int) -> np.ndarray:
    """Each unit's [begin, end) range of the ``tiles * iters_per_tile`` global K-iterations (tile-major:
    iteration i is K-iteration i % iters_per_tile of tile i // iters_per_tile), an int64 array (units, 2).

    Even split: every unit gets total // units iterations and the first total % units units one
    more; the ranges are contiguous in unit order. A unit with no work has begin == end.
    """
    _require_counts(tiles=tiles, iters_per_tile=iters_per_tile, units=units)
    return _ranges(tiles * iters_per_tile, units)


def hybrid_split(tiles: int, units: int, *, sk_waves: int = 1) -> tuple[int, int]:
    """(data-parallel tiles, stream-K tiles) of the hybrid schedule.

    The data-parallel tiles are whole waves of ``units`` tiles; the stream-K tiles are the last,
    partial wave plus ``sk_waves`` full waves before it (fewer when there are not that many), so
    that the stream-K phase has at least one tile per unit to split. When the tiles fill whole
    waves there is nothing to balance: all data-parallel.
    """
    _require_counts(tiles=tiles, units=units)
    if sk_waves < 0:
        raise ValueError(f"sk_waves={sk_waves}: the full waves given to stream-K cannot be negative")
    full_waves, rest = divmod(tiles, units)
    if rest == 0:
        return tiles, 0
    dp = max(full_waves - sk_waves, 0) * units
    return dp, tiles - dp


@dataclass
class WaveSchedule:
    """One schedule of one GEMM shape; times in K-iterations of one unit.

    ``segments`` lists (unit, tile, k_begin, k_end, start_time), k in the tile's own iterations
    (0 .. iters_per_tile); ``segment_done`` is when each piece is finished (computed; for a
    partial tile also written to the workspace, or for the owner, reduced and stored).
    ``busy`` is each unit's compute and fix-up time, ``finish`` when it is done (busy plus any
    wait for a flag); ``efficiency`` is useful iterations / (units * makespan).
    """

    mode: str
    tiles: int
    iters_per_tile: int
    units: int
    dp_tiles: int
    sk_tiles: int
    fixup_iters: float
    waves: float
    busy: np.ndarray
    finish: np.ndarray
    makespan: float
    efficiency: float
    partial_tiles: int
    segments: list[tuple[int, int, int, int, float]]
    segment_done: np.ndarray


def schedule(m: int, n: int, k: int, *, tile_m: int = TILE_M, tile_n: int = TILE_N, tile_k: int = TILE_K,
             units: int = UNITS, cluster_m: int = CLUSTER_M, mode: str = "dp", fixup_iters: float = FIXUP_ITERS,
             sk_waves: int = 1, sk_iter_cost: float = 1.0) -> WaveSchedule:
    """How the output tiles of an m x n x k GEMM land on ``units`` persistent units under ``mode``.

    Defaults are rung 11 on the H200: 128x256x64 tiles, clusters of ``cluster_m`` = 2 CTAs (each
    unit's work item a 256x256 cluster tile), 66 units. ``mode`` is ``dp``, ``streamk`` or ``hybrid``
    (the module docstring describes them and the cost of a fix-up, ``fixup_iters``); ``sk_waves``
    is the hybrid's count of full waves handed to stream-K (:func:`hybrid_split`). ``sk_iter_cost`` is
    the time a stream-K iteration takes, in data-parallel iterations: more than 1 where the stream-K
    phase loses the L2 reuse of tiles that run in step (its units sit at scattered K offsets).
    """
    _require_counts(m=m, n=n, k=k, tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, units=units, cluster_m=cluster_m)
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {', '.join(MODES)}")
    if not fixup_iters >= 0:
        raise ValueError(f"fixup_iters={fixup_iters}: a fix-up costs zero or more K-iterations")
    if not sk_iter_cost > 0:
        raise ValueError(f"sk_iter_cost={sk_iter_cost}: a stream-K iteration takes a positive time")
    tiles = _cdiv(_cdiv(m, tile_m), cluster_m) * _cdiv(n, tile_n)
    iters_per_tile = _cdiv(k, tile_k)
    dp_tiles = {"dp": tiles, "streamk": 0, "hybrid": hybrid_split(tiles, units, sk_waves=sk_waves)[0]}[mode]
    unit, tile, kb, ke, start, done, busy, finish = _simulate(tiles, iters_per_tile, units, dp_tiles,
                                                              float(fixup_iters), float(sk_iter_cost))
    makespan = float(finish.max())
    partial = np.unique(tile[(kb > 0) | (ke < iters_per_tile)]).size
    return WaveSchedule(
        mode=mode, tiles=tiles, iters_per_tile=iters_per_tile, units=units, dp_tiles=dp_tiles,
        sk_tiles=tiles - dp_tiles, fixup_iters=float(fixup_iters), waves=tiles / units, busy=busy, finish=finish,
        makespan=makespan, efficiency=tiles * iters_per_tile / (units * makespan), partial_tiles=int(partial),
        segments=list(zip(unit.tolist(), tile.tolist(), kb.tolist(), ke.tolist(), start.tolist())),
        segment_done=done)


def split_schedules(m: int, n: int, k: int, *, tile_m: int = TILE_M, tile_n: int = TILE_N, tile_k: int = TILE_K,
                    units: int = UNITS, cluster_m: int = CLUSTER_M) -> dict[int, WaveSchedule]:
    """The hybrid schedule of each of rung 12's splits (SK_WAVES_TRIED), charged the fitted costs, by sk_waves."""
    return {sk: schedule(m, n, k, tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, units=units, cluster_m=cluster_m,
                         mode="hybrid", sk_waves=sk, fixup_iters=FITTED_FIXUP_ITERS, sk_iter_cost=FITTED_SK_ITER_COST)
            for sk in SK_WAVES_TRIED}


def best_split(schedules: dict[int, WaveSchedule]) -> int:
    """The sk_waves of :func:`split_schedules`' busiest schedule; of equally busy ones, the fewest divided waves."""
    return max(schedules, key=lambda sk: (schedules[sk].efficiency, -sk))


def predicted_efficiency(m: int, n: int, k: int, **keywords) -> float:
    """The busy fraction of the units, useful iterations / (units * makespan), of :func:`schedule`
    with the same keywords: the fraction of the GPU's time the schedule keeps doing the GEMM."""
    return schedule(m, n, k, **keywords).efficiency


def _require_counts(**counts: int) -> None:
    for name, value in counts.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name}={value} must be a positive whole number")
