"""The ring model against slow twins written from the kernels' loops, and the rules a ring must keep."""
from dataclasses import replace

import numpy as np
import pytest

from hgemm_course.sim.pipeline import RUNGS, Ring, ring_timeline, rung_ring, rung_timeline


def slow_inline(stages, n, latency, mma, *, async_mma, wait_first):
    """Rungs 03, 07 and 09 as their loops read, one CTA, one tile: thread 0 (03: every thread) refills the
    stage `lookahead` slices ahead at the top of each iteration, then everyone waits for slice i."""
    lookahead = stages - 2 if async_mma else stages - 1
    issue, land, release, start, end = (np.full(n, np.nan) for _ in range(5))
    t = tc_free = 0.0
    for j in range(min(lookahead, n)):
        issue[j], land[j] = 0.0, latency

    def refill(i, t):
        j = i + lookahead
        if j < n:
            issue[j] = max(t, release[j - stages]) if j >= stages else t
            land[j] = issue[j] + latency
            t = issue[j]
        return t

    for i in range(n):
        if not wait_first:
            t = refill(i, t)
        t = max(t, land[i])
        if wait_first:
            t = refill(i, t)
        start[i] = max(t, tc_free)
        end[i] = tc_free = start[i] + mma
        if async_mma:                                 # wgmma: wait_group 1, then free slice i - 1
            if i > 0:
                t = max(t, end[i - 1])
                release[i - 1] = t
        else:                                         # mma.sync: done, and the stage is free
            t = release[i] = end[i]
    if async_mma:
        release[n - 1] = max(t, end[n - 1])
    return issue, land, release, start, end


def slow_persistent(stages, k_tiles, tiles, latency, mma, epilogue, parts=1):
    """Rung 11 with one consumer, as its loops read (one tile of it is rung 10 with one consumer: the producer
    issues slice j once empty has freed slice j - stages): the ring runs on across tiles, wait_group 0 ends each
    tile, and a tile is written out in `parts` parts during the next one, part q after slice q's products are
    issued (all that remain after its last slice); the CTA's last tile at the end."""
    n = k_tiles * tiles
    issue, land, release, start, end = (np.full(n, np.nan) for _ in range(5))
    e_start, e_end = np.full(tiles, np.nan), np.full(tiles, np.nan)
    t = tc_free = producer = 0.0
    for i in range(n):
        producer = issue[i] = max(producer, release[i - stages]) if i >= stages else producer
        land[i] = issue[i] + latency
        t = max(t, land[i])
        start[i] = max(t, tc_free)
        end[i] = tc_free = start[i] + mma
        tile, kt = divmod(i, k_tiles)
        if tile > 0 and kt < parts:                   # the last tile's C, part by part under these products
            if kt == 0:
                e_start[tile - 1] = t
            done = parts if kt == k_tiles - 1 else kt + 1
            t += epilogue / parts * (done - kt)
            if done == parts:
                e_end[tile - 1] = t
        if kt > 0:                                    # wait_group 1: free slice i - 1
            t = max(t, end[i - 1])
            release[i - 1] = t
        if kt == k_tiles - 1:                         # wait_group 0 at the tile's end: free slice i
            t = max(t, end[i])
            release[i] = t
    e_start[-1], e_end[-1] = t, t + epilogue
    return issue, land, release, start, end, e_start, e_end


def test_persistent_ring_agrees_with_its_slow_twin():
    rng = np.random.default_rng(2)
    for _ in range(25):
        stages, k_tiles, tiles = int(rng.integers(2, 7)), int(rng.integers(1, 9)), int(rng.integers(1, 5))
        latency, mma, epilogue = float(rng.integers(0, 4000)), float(rng.integers(100, 2000)), float(rng.integers(0, 3000))
        parts = int(rng.integers(1, 5))
        ring = Ring(stages, mma, dedicated_producer=True, async_mma=True, persistent=True, epilogue_under_next=True,
                    epilogue_parts=parts)
        tl = ring_timeline(ring, k_tiles=k_tiles, tiles=tiles, load_latency=latency, epilogue_time=epilogue)
        got = (tl["issue"][0], tl["land"][0], tl["release"][0], tl["m_start"][0, 0], tl["m_end"][0, 0],
               tl["e_start"][0, 0], tl["e_end"][0, 0])
        want = slow_persistent(stages, k_tiles, tiles, latency, mma, epilogue, parts)
        for name, g, w in zip(("issue", "land", "release", "start", "end", "e_start", "e_end"), got, want):
            np.testing.assert_allclose(g, w, err_msg=f"{stages} stages, {k_tiles} x {tiles} slices, {parts} parts: "
                                                     f"{name}")


def model(ring, n, latency, mma):
    tl = ring_timeline(ring, k_tiles=n, tiles=1, load_latency=latency, mma_time=mma, epilogue_time=0.0)
    return tl["issue"][0], tl["land"][0], tl["release"][0], tl["m_start"][0, 0], tl["m_end"][0, 0]


@pytest.mark.parametrize("form", ["03", "07", "09", "10 with one consumer"])
def test_agrees_with_slow_twins(form):
    rng = np.random.default_rng(1)
    for _ in range(25):
        latency, mma, n = float(rng.integers(0, 4000)), float(rng.integers(100, 2000)), int(rng.integers(1, 20))
        if form == "10 with one consumer":
            stages = int(rng.integers(2, 7))
            ring = Ring(stages, mma, dedicated_producer=True, async_mma=True)
            want = slow_persistent(stages, n, 1, latency, mma, 0.0)[:5]   # one tile: rung 10's loop
        else:
            async_mma, wait_first = form == "09", form == "03"
            stages = int(rng.integers(2 if async_mma or wait_first else 1, 7))
            ring = Ring(stages, mma, async_mma=async_mma, wait_before_refill=wait_first)
            want = slow_inline(stages, n, latency, mma, async_mma=async_mma, wait_first=wait_first)
        for name, got, expected in zip(("issue", "land", "release", "start", "end"), model(ring, n, latency, mma), want):
            np.testing.assert_allclose(got, expected, err_msg=f"{form}, {stages} stages, {n} slices: {name}")


def test_one_stage_idles_the_tensor_cores_during_every_load():
    tl = ring_timeline(Ring(1, 1000.0), k_tiles=10, load_latency=700.0)
    gaps = tl["m_start"][0, 0, 1:] - tl["m_end"][0, 0, :-1]
    assert (gaps >= 700.0).all()


@pytest.mark.parametrize("ring, ahead", [(Ring(4, 1000.0), 3), (Ring(5, 1000.0, consumers=2, dedicated_producer=True,
                                                                       async_mma=True), 4),
                                         (Ring(4, 1000.0, async_mma=True), 3)])
def test_enough_stages_keep_the_tensor_cores_busy_in_steady_state(ring, ahead):
    """Busy from slice `stages` on when the latency is below (stages - 1) x the compute, and idle above
    it. Rung 09's form too: its thread 0 refills only stages - 2 slices ahead, but wgmma runs a slice
    behind the warpgroup that issued it, which makes up the difference."""
    def steady_gaps(latency):
        tl = ring_timeline(ring, k_tiles=40, load_latency=latency, epilogue_time=0.0)
        starts, ends = np.sort(tl["m_start"].ravel()), np.sort(tl["m_end"].ravel())
        return starts[ring.stages * ring.consumers:] - ends[ring.stages * ring.consumers - 1:-1]

    assert np.allclose(steady_gaps(ahead * 1000.0 - 1), 0.0)
    assert steady_gaps(ahead * 1000.0 + 200).max() > 0


@pytest.mark.parametrize("rung", RUNGS)
def test_rules_of_the_ring(rung):
    """For each rung's ring, under several settings: no slice is issued into a stage before that stage's
    previous slice was freed; no consumer reads a slice before it lands; and when a consumer passes its wait,
    full[s] has completed exactly phase + 1 phases, so the parity it waits for, phase % 2, is the latest one's
    (the parity flips each time round the ring)."""
    for latency, tiles, k_tiles in ((0.0, 1, 7), (1200.0, 2, 12), (5000.0, 3, 9)):
        tl = rung_timeline(rung, k_tiles=k_tiles, tiles=tiles, load_latency=latency)
        ring, n = tl["ring"], tiles * k_tiles
        run_first = np.zeros(n, int) if ring.persistent else np.arange(n) // k_tiles * k_tiles
        for c in range(ring.ctas):
            for j in range(n):
                if j - ring.stages >= run_first[j]:
                    assert tl["issue"][c, j] >= tl["release"][c, j - ring.stages]
                assert (tl["w_pass"][c, :, j] >= tl["land"][c, j]).all()
                assert (tl["m_start"][c, :, j] >= tl["land"][c, j]).all()
                same = (tl["stage"] == tl["stage"][j]) & (run_first == run_first[j])
                completed = (tl["land"][c][same] <= tl["w_pass"][c, :, j].min()).sum()
                assert completed == tl["phase"][j] + 1, (rung, c, j)


def test_persistent_ring_runs_on_across_tiles():
    """Rung 11: the next tile's first slice is issued before the consumers have written the last tile out,
    and its phase carries on (k_tiles = 6 is not a multiple of 4 stages: slice 6 is stage 2's second use).
    Each consumer writes tile 0 out after issuing slice 6's products, which run on the tensor cores meanwhile."""
    tl = rung_timeline("11", k_tiles=6, tiles=2)
    assert tl["issue"][0, 6] < tl["e_end"][0, :, 0].min()
    assert (tl["m_issue"][0, :, 6] <= tl["e_start"][0, :, 0]).all()
    assert tl["m_end"][0, :, 6].max() > tl["e_start"][0, :, 0].min()
    now = tl["tensor_busy_pct"]
    before = ring_timeline(replace(rung_ring("11"), epilogue_under_next=False), k_tiles=6, tiles=2)["tensor_busy_pct"]
    assert now > before
    assert (tl["stage"][6], tl["phase"][6]) == (2, 1)
    ten = rung_timeline("10", k_tiles=6, tiles=2)
    assert ten["issue"][0, 6] >= ten["e_end"][0, :, 0].max()          # rung 10: a new CTA, after the old one
    assert (ten["stage"][6], ten["phase"][6]) == (0, 0)
    assert tl["tensor_busy_pct"] > ten["tensor_busy_pct"]


def test_rung_rings_follow_the_launchers():
    from hgemm_course.library.ladder import r07_tma, r09_wgmma, r10_warp_specialized

    assert rung_ring("07").stages == r07_tma.TILES.stages
    assert rung_ring("09").mma_time == 2 * 128 * 128 * 64 / 4096 and rung_ring("09").ctas == 2
    assert rung_ring("10").consumers == r10_warp_specialized.CONSUMERS
    assert rung_ring("09").lookahead == r09_wgmma.TILES.stages - 2


def test_refusals_name_the_fix():
    with pytest.raises(ValueError, match="needs persistent=True and async_mma=True"):
        ring_timeline(Ring(4, 1000.0, epilogue_under_next=True))
    with pytest.raises(ValueError, match="pick one of those"):
        rung_ring("05")
    with pytest.raises(ValueError, match="at least 2 stages"):
        rung_timeline("10", stages=1)
