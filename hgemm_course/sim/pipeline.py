"""The shared-memory ring over time: an event model of who waits on which barrier, when each stage is
filled and freed, and when the tensor cores idle.

One SM, one or more CTAs on it, each with a ring of ``stages`` buffers that k-slices pass through.
Time is in SM cycles. Two numbers drive it, both model parameters and not measurements:

- ``load_latency``: cycles from the moment a slice's copy is issued (cp.async by every thread, or one
  TMA request) until all its bytes have landed in the stage. Copies overlap each other freely: the model
  has latency and no bandwidth limit.
- ``mma_time``: cycles the SM's tensor cores need for one k-slice of one CTA's tile. With two consumer
  warpgroups each takes half of it. The tensor cores take products in the order they are issued.

A ring is one of the kernels' shapes (:class:`Ring`):

- ``dedicated_producer``: a producer of its own (rungs 10 and 11: one thread of the producer warpgroup)
  issues slice j as soon as ``empty[j % stages]`` has freed slice j - stages. Otherwise the loads are issued
  at the top of each iteration by the threads that also compute (rung 03: every thread with cp.async,
  after ``cp.async.wait_group`` and ``__syncthreads``; rungs 07 and 09: thread 0 with TMA, after its
  wait on ``empty``), ``lookahead`` slices ahead of the one about to be computed.
- ``async_mma``: wgmma (rungs 09-11). The consumer issues slice i's products and goes on; ``wgmma
  wait_group 1`` in iteration i + 1 waits until they are done, and only then is slice i's stage freed
  (one slice late). With mma.sync (rungs 03, 07) the warps are busy until the products are done and free
  the stage right after.
- ``persistent`` (rung 11): the ring runs on across the CTA's tiles (its slice counter is never reset),
  so the producer loads the next tile's first slices while the consumers write the last one out
  (``epilogue_time`` cycles per tile). Otherwise each tile is a new CTA that starts once the previous one
  on the SM has finished, and its ring starts empty.
- ``epilogue_under_next`` (rung 11, with ``persistent`` and ``async_mma``): a consumer writes a tile out
  during the next tile, in ``epilogue_parts`` equal parts (rung 11: one per 64-column panel), one after it has
  issued each of that tile's first slices of products, so the tensor cores run those while it writes (a tile
  of fewer slices takes the remaining parts after its last); the CTA's last tile is written out at the end.

:func:`ring_timeline` plays it and returns every event time; ``tensor_busy_pct`` is the share of the
run the tensor cores worked.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from .cache import cached_njit

from .issue import ISSUE_H200, MMA_FLOPS

RUNGS = ("03", "07", "09", "10", "11")
LOAD_LATENCY = 1200.0         # cycles; a guess (a global-memory round trip plus one slice's transfer), not fitted
EPILOGUE_TIME = 1000.0        # cycles; a guess at writing one tile of C out, not fitted
UNKNOWN = -1.0                # an event time not reached yet

# what an agent of the event loop does next
_PROLOGUE, _REFILL, _WAIT_FULL, _MMA, _WAIT_MMA, _EPILOGUE, _NEXT_CTA, _DONE = range(8)


@dataclass(frozen=True)
class Ring:
    """One kernel's ring, as :func:`ring_timeline` plays it (module docstring)."""

    stages: int
    mma_time: float               # cycles of tensor-core work per k-slice of one CTA's tile
    consumers: int = 1            # consumer warpgroups sharing each slice (rung 10: 2)
    dedicated_producer: bool = False
    async_mma: bool = False
    persistent: bool = False
    epilogue_under_next: bool = False
    epilogue_parts: int = 1       # the parts a tile's epilogue is written out in (rung 11: its C panels)
    ctas: int = 1                 # CTAs on the SM at once, sharing its tensor cores
    wait_before_refill: bool = False   # rung 03: wait_group and __syncthreads come before the refill
    full_label: str = "full[s]"   # what a consumer's wait for a slice is called in the kernel
    producer_label: str = "thread 0 (TMA)"

    @property
    def lookahead(self) -> int:
        """Slices an inline producer keeps in flight ahead of the one computed: stages - 1, or
        stages - 2 when wgmma frees a stage one slice late."""
        return self.stages - 2 if self.async_mma else self.stages - 1

    @property
    def min_stages(self) -> int:
        """The fewest stages with which the ring cannot deadlock in the model: wgmma's late release needs
        a second stage to wait for the next slice in (the kernels ask for 3, so that loads overlap)."""
        return 2 if self.async_mma else 1


def _mma_sync_time(bm: int, bn: int, bk: int) -> float:
    """Cycles of one k-slice of mma.sync.m16n8k16 on an SM: its four sub-partitions each sustain one per
    ISSUE_H200['mma_cycles'] (fitted to the measured mma.sync bounds, see :mod:`.issue`)."""
    mmas = 2 * bm * bn * bk // MMA_FLOPS
    return mmas / ISSUE_H200["schedulers"] * ISSUE_H200["mma_cycles"]


def _wgmma_time(bm: int, bn: int, bk: int) -> float:
    """Cycles of one k-slice of wgmma on an SM at the tensor cores' full rate (4096 flop per cycle)."""
    return 2 * bm * bn * bk / ISSUE_H200["tensor_flops_per_clk"]


def rung_ring(rung: str) -> Ring:
    """The ring of rung 03, 07, 09, 10 or 11 with the stage count and tile of its launcher, ``mma_time``
    from the tile: mma.sync at its fitted rate for 03 and 07 (wmma compiles to the same HMMA), wgmma at the
    tensor cores' rate for 09-11. Rung 09 runs two CTAs per SM (its launcher chose 3 stages for that)."""
    from ..library import geometry

    if rung not in RUNGS:
        raise ValueError(f"rung {rung!r}: the pipeline model plays the rings of rungs {', '.join(RUNGS)}; pick one of "
                         "those.")
    if rung == "03":
        t = geometry.of("03")
        return Ring(t.stages, _mma_sync_time(t.bm, t.bn, t.bk), wait_before_refill=True,
                    full_label="cp.async.wait_group", producer_label="every thread (cp.async)")
    if rung == "07":
        t = geometry.of("07")
        return Ring(t.stages, _mma_sync_time(t.bm, t.bn, t.bk))
    if rung == "09":
        t = geometry.of("09")
        return Ring(t.stages, _wgmma_time(t.bm, t.bn, t.bk), async_mma=True, ctas=2)
    t = geometry.of(rung)
    return Ring(t.stages, _wgmma_time(t.bm, t.bn, t.bk), consumers=t.consumers, dedicated_producer=True,
                async_mma=True, persistent=rung == "11", epilogue_under_next=rung == "11",
                epilogue_parts=t.bn // 64 if rung == "11" else 1,
                producer_label="producer warpgroup (TMA)")


@cached_njit()
def _write_out(c, k, tile, first, last, start, part_time, e_part, e_start, e_end, cta_end):
    """Consumer k of CTA c writes parts first .. last - 1 of tile `tile` out, one after another from `start`;
    the CTA's tile is finished once every consumer has written its last part. Returns when this consumer is
    done."""
    t = start
    for q in range(first, last):
        e_part[c, k, tile, q, 0] = t
        t += part_time
        e_part[c, k, tile, q, 1] = t
    if first == 0:
        e_start[c, k, tile] = start
    if last == e_part.shape[3]:
        e_end[c, k, tile] = t
        finished = t
        for kk in range(e_end.shape[1]):
            finished = UNKNOWN if e_end[c, kk, tile] == UNKNOWN or finished == UNKNOWN \
                else max(finished, e_end[c, kk, tile])
        cta_end[c, tile] = finished
    return t


@cached_njit()
def _play(stages, k_tiles, tiles, ctas, consumers, dedicated, async_mma, persistent, deferred, parts, wait_first,
          lookahead, load_latency, mma_time, epilogue_time):
    """The event loop: again and again, run the agent whose next action comes first among those whose
    barrier has a known completion time. Every event an action sets lies at or after the action, so the
    tensor cores receive products in the order they are issued."""
    n = tiles * k_tiles
    p_ready = np.full((ctas, n), UNKNOWN)               # the producer reached slice i (then waits on empty)
    issue = np.full((ctas, n), UNKNOWN)                 # slice i's copy issued
    land = np.full((ctas, n), UNKNOWN)                  # ... landed: full[s] completes a phase
    release = np.full((ctas, n), UNKNOWN)               # empty[s] completes: every consumer is done with slice i
    arrivals = np.zeros((ctas, n), np.int64)
    w_ready = np.full((ctas, consumers, n), UNKNOWN)    # a consumer reached its wait for slice i
    w_pass = np.full((ctas, consumers, n), UNKNOWN)     # ... and passed it
    m_issue = np.full((ctas, consumers, n), UNKNOWN)    # it issued slice i's products
    m_start = np.full((ctas, consumers, n), UNKNOWN)    # the tensor cores start them
    m_end = np.full((ctas, consumers, n), UNKNOWN)      # ... and finish them
    g_ready = np.full((ctas, consumers, n), UNKNOWN)    # wgmma wait for slice i's products begins
    g_pass = np.full((ctas, consumers, n), UNKNOWN)     # ... and returns
    e_start = np.full((ctas, consumers, tiles), UNKNOWN)
    e_end = np.full((ctas, consumers, tiles), UNKNOWN)
    e_part = np.full((ctas, consumers, tiles, parts, 2), UNKNOWN)   # each part's start and end
    cta_end = np.full((ctas, tiles), UNKNOWN)           # every consumer of the tile's CTA has finished

    per_cta = consumers + 1                             # agent 0 of a CTA: its producer (dedicated only)
    agents = ctas * per_cta
    step = np.full(agents, _DONE, np.int64)
    pos = np.zeros(agents, np.int64)                    # the slice the agent is at
    ahead = np.zeros(agents, np.int64)                  # an inline producer's next slice to issue
    t = np.zeros(agents)
    for c in range(ctas):
        if dedicated:
            step[c * per_cta] = _REFILL
        for k in range(consumers):
            step[c * per_cta + 1 + k] = _WAIT_FULL if dedicated else _PROLOGUE
    tc_free = 0.0

    while True:
        best, best_time = -1, 0.0
        for a in range(agents):
            s = step[a]
            if s == _DONE:
                continue
            c, role, i = a // per_cta, a % per_cta, pos[a]
            tile = i // k_tiles
            first = 0 if persistent else tile * k_tiles  # slice 0 of the ring's current run
            when = t[a]
            if s == _REFILL:
                j = i if role == 0 else ahead[a]
                if role != 0 and (j >= (tile + 1) * k_tiles or j > i + lookahead):
                    pass                                 # nothing to refill in this iteration
                elif j - stages >= first:
                    if release[c, j - stages] == UNKNOWN:
                        continue
                    when = max(when, release[c, j - stages])
                elif role == 0 and not persistent and tile > 0 and j == first:
                    if cta_end[c, tile - 1] == UNKNOWN:
                        continue
                    when = max(when, cta_end[c, tile - 1])
            elif s == _WAIT_FULL:
                if land[c, i] == UNKNOWN:
                    continue
                when = max(when, land[c, i])
            elif s == _NEXT_CTA:
                if cta_end[c, tile - 1] == UNKNOWN:
                    continue
                when = max(when, cta_end[c, tile - 1])
            # ties go to the agent furthest behind, so two consumers ready at once take turns
            if best < 0 or when < best_time or (when == best_time and pos[a] < pos[best]):
                best, best_time = a, when
        if best < 0:
            break

        a = best
        c, role, i = a // per_cta, a % per_cta, pos[a]
        k = role - 1
        tile = i // k_tiles
        first = 0 if persistent else tile * k_tiles
        tile_end = (tile + 1) * k_tiles
        s = step[a]
        if s == _PROLOGUE:                              # inline: the CTA's first `lookahead` slices
            for j in range(i, min(i + lookahead, tile_end)):
                p_ready[c, j] = t[a]
                issue[c, j] = t[a]
                land[c, j] = t[a] + load_latency
            ahead[a] = i + lookahead
            step[a] = _WAIT_FULL if wait_first else _REFILL
        elif s == _REFILL and role == 0:                # the dedicated producer: slice i
            p_ready[c, i] = best_time if i == first and not persistent else t[a]   # a new CTA starts
            issue[c, i] = best_time
            land[c, i] = best_time + load_latency
            t[a] = best_time
            pos[a] = i + 1
            step[a] = _DONE if i + 1 == n else _REFILL
        elif s == _REFILL:                              # inline: slice i + lookahead, then on to compute
            j = ahead[a]
            if j < tile_end and j <= i + lookahead:
                p_ready[c, j] = t[a]
                issue[c, j] = best_time
                land[c, j] = best_time + load_latency
                t[a] = best_time
                ahead[a] = j + 1
            step[a] = _MMA if wait_first else _WAIT_FULL
        elif s == _WAIT_FULL:
            w_ready[c, k, i] = t[a]
            w_pass[c, k, i] = best_time
            t[a] = best_time
            step[a] = _REFILL if wait_first else _MMA
        elif s == _MMA:
            m_issue[c, k, i] = t[a]
            m_start[c, k, i] = max(t[a], tc_free)
            m_end[c, k, i] = m_start[c, k, i] + mma_time / consumers
            tc_free = m_end[c, k, i]
            if async_mma:
                kt = i % k_tiles
                if deferred and tile > 0 and kt < parts:     # the last tile, a part under this slice's products
                    last = parts if kt == k_tiles - 1 else kt + 1   # (the rest after the tile's last slice)
                    t[a] = _write_out(c, k, tile - 1, kt, last, t[a], epilogue_time / parts, e_part, e_start,
                                      e_end, cta_end)
                step[a] = _WAIT_MMA
            else:                                       # mma.sync: the warps are busy until it is done
                t[a] = m_end[c, k, i]
                g_ready[c, k, i] = t[a]
                g_pass[c, k, i] = t[a]
                arrivals[c, i] += 1
                if arrivals[c, i] == consumers:
                    release[c, i] = t[a]
                if i + 1 == tile_end:
                    step[a] = _EPILOGUE
                else:
                    pos[a] = i + 1
                    step[a] = _WAIT_FULL if dedicated or wait_first else _REFILL
        elif s == _WAIT_MMA:                            # wait_group 1: slice i - 1's products are done,
            for j in (i - 1, i):                        # and wait_group 0 for slice i at the tile's end
                if (j == i - 1 and (j < first or i % k_tiles == 0)) or (j == i and i + 1 < tile_end):
                    continue
                g_ready[c, k, j] = t[a]
                t[a] = max(t[a], m_end[c, k, j])
                g_pass[c, k, j] = t[a]
                arrivals[c, j] += 1
                if arrivals[c, j] == consumers:
                    release[c, j] = t[a]
            if i + 1 == tile_end and not (deferred and i + 1 < n):
                step[a] = _EPILOGUE
            else:                                       # (deferred: written out under the next tile's slices)
                pos[a] = i + 1
                step[a] = _WAIT_FULL if dedicated else _REFILL
        elif s == _EPILOGUE:
            t[a] = _write_out(c, k, tile, 0, parts, t[a], epilogue_time / parts, e_part, e_start, e_end, cta_end)
            pos[a] = i + 1
            step[a] = _DONE if i + 1 == n else _WAIT_FULL if persistent else _NEXT_CTA
        elif s == _NEXT_CTA:                            # the next CTA takes the SM's slot: its ring starts empty
            t[a] = best_time
            step[a] = _WAIT_FULL if dedicated else _PROLOGUE
    return (p_ready, issue, land, release, w_ready, w_pass, m_issue, m_start, m_end, g_ready, g_pass, e_start,
            e_end, e_part)


EVENTS = ("p_ready", "issue", "land", "release", "w_ready", "w_pass", "m_issue", "m_start", "m_end", "g_ready",
          "g_pass", "e_start", "e_end", "e_part")


def ring_timeline(ring: Ring, *, k_tiles: int = 12, tiles: int = 1, load_latency: float = LOAD_LATENCY,
                  mma_time: float | None = None, epilogue_time: float = EPILOGUE_TIME) -> dict:
    """Play ``tiles`` output tiles of ``k_tiles`` k-slices each through ``ring`` on one SM (each of
    ``ring.ctas`` CTAs computes that many), times in cycles. ``mma_time`` defaults to the ring's.

    Returns a dict of arrays indexed [cta, slice] (producer and ring: ``p_ready``, ``issue``, ``land``,
    ``release``) or [cta, consumer, slice] (``w_ready``/``w_pass``: the wait for the slice's bytes;
    ``m_issue``, ``m_start``/``m_end``: its products issued, and run on the tensor cores;
    ``g_ready``/``g_pass``: the wait until they are done, zero-length for mma.sync) or [cta, consumer,
    tile] (``e_start``/``e_end``: the epilogue, from its first part's start to its last part's end) or [cta,
    consumer, tile, part, start or end] (``e_part``: each part); ``stage`` and ``phase`` of each slice (the parity a wait
    names is ``phase % 2``); ``end``, the last event; ``tensor_busy_pct``, the tensor cores' working share
    of [0, end]; and the settings.
    """
    mma_time = ring.mma_time if mma_time is None else float(mma_time)
    if ring.stages < ring.min_stages:
        raise ValueError(f"stages={ring.stages}: wgmma frees a stage one slice late, so the ring needs at least "
                         f"{ring.min_stages} stages to hold the slice computed and the one waited for")
    if k_tiles < 1 or tiles < 1 or ring.ctas < 1 or ring.consumers < 1:
        raise ValueError(f"k_tiles={k_tiles}, tiles={tiles}, ctas={ring.ctas}, consumers={ring.consumers}: "
                         "each must be at least 1")
    if load_latency < 0 or mma_time <= 0 or epilogue_time < 0:
        raise ValueError(f"load_latency={load_latency}, mma_time={mma_time}, epilogue_time={epilogue_time}: "
                         "times are cycles, mma_time above 0 and the others at least 0")
    if ring.epilogue_parts < 1:
        raise ValueError(f"epilogue_parts={ring.epilogue_parts}: a tile is written out in at least 1 part")
    if ring.epilogue_under_next and not (ring.persistent and ring.async_mma):
        raise ValueError("epilogue_under_next needs persistent=True and async_mma=True: only a CTA that goes on to "
                         "another tile, with products that run while it works, has something to write out under")
    arrays = _play(ring.stages, k_tiles, tiles, ring.ctas, ring.consumers, ring.dedicated_producer, ring.async_mma,
                   ring.persistent, ring.epilogue_under_next, ring.epilogue_parts, ring.wait_before_refill,
                   ring.lookahead, float(load_latency), mma_time, float(epilogue_time))
    out = dict(zip(EVENTS, arrays))
    slices = np.arange(tiles * k_tiles)
    in_run = slices if ring.persistent else slices % k_tiles      # a new CTA's ring starts at stage 0
    out["stage"], out["phase"] = in_run % ring.stages, in_run // ring.stages
    out["end"] = float(max(out["e_end"].max(), out["m_end"].max()))
    busy = (out["m_end"] - out["m_start"]).sum()
    out["tensor_busy_pct"] = 100.0 * busy / out["end"]
    out.update(ring=ring, k_tiles=k_tiles, tiles=tiles, load_latency=float(load_latency), mma_time=mma_time,
               epilogue_time=float(epilogue_time))
    return out


def rung_timeline(rung: str, *, stages: int | None = None, **settings) -> dict:
    """:func:`ring_timeline` of a rung's ring (:func:`rung_ring`), ``stages`` overriding its launcher's."""
    ring = rung_ring(rung)
    return ring_timeline(ring if stages is None else replace(ring, stages=stages), **settings)
