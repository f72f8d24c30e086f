"""Waves of persistent tiles: data-parallel, stream-K and the hybrid, against a slow twin that walks the
iterations one by one, and the properties the chapter builds on."""
import math

import numpy as np
import pytest

from hgemm_course.library.ladder import r11_persistent
from hgemm_course.sim import waves
from hgemm_course.sim.l2 import H200_SMS
from hgemm_course.sim.waves import hybrid_split, predicted_efficiency, schedule, streamk_ranges

SMALL = {"tile_m": 16, "tile_n": 16, "tile_k": 8}


def slow_schedule(tiles, iters_per_tile, units, dp_tiles, fixup, sk_cost=1.0):
    """The model written out iteration by iteration: (segments, done, busy, finish)."""
    total = (tiles - dp_tiles) * iters_per_tile
    sizes = [total // units + (1 if u < total % units else 0) for u in range(units)]
    unit_of_iteration = [u for u, size in enumerate(sizes) for _ in range(size)]
    pieces = [[] for _ in range(units)]                   # per unit: [tile, k_begin, k_end]
    for i, u in enumerate(unit_of_iteration):
        tile, kk = dp_tiles + i // iters_per_tile, i % iters_per_tile
        if pieces[u] and pieces[u][-1][0] == tile:
            pieces[u][-1][2] = kk + 1
        else:
            pieces[u].append([tile, kk, kk + 1])
    clock = [float(iters_per_tile * len(range(u, dp_tiles, units))) for u in range(units)]
    segments = [(t % units, t, 0, iters_per_tile, float(t // units * iters_per_tile)) for t in range(dp_tiles)]
    done = [float((t // units + 1) * iters_per_tile) for t in range(dp_tiles)]
    owner_of = {}
    for u in range(units):
        for tile, kb, ke in pieces[u]:
            segments.append((u, tile, kb, ke, clock[u]))
            clock[u] += (ke - kb) * sk_cost
            if kb > 0:
                clock[u] += fixup
            elif ke < iters_per_tile:
                owner_of[tile] = (u, len(segments) - 1)
            done.append(clock[u])
    busy, finish = list(clock), list(clock)
    for tile, (u, s) in owner_of.items():
        t = done[s]
        for j, seg in enumerate(segments):
            if seg[1] == tile and seg[2] > 0:
                t = max(t, done[j]) + fixup
                busy[u] += fixup
        done[s] = finish[u] = t
    return segments, done, busy, finish


def test_defaults_are_rung_11_on_the_h200():
    t = r11_persistent.TILES
    assert (waves.TILE_M, waves.TILE_N, waves.TILE_K) == (t.bm, t.bn, t.bk)
    assert waves.CLUSTER_M == r11_persistent.CLUSTER_M and waves.UNITS == H200_SMS // r11_persistent.CLUSTER_M


def test_schedule_agrees_with_the_slow_twin():
    rng = np.random.default_rng(12)
    for _ in range(60):
        m, n, k = (int(x) for x in rng.integers(1, 200, 3))
        units, cluster_m = int(rng.integers(1, 14)), int(rng.integers(1, 3))
        fixup = float(rng.choice([0.0, 1.0, 2.5]))
        sk_cost = float(rng.choice([1.0, 1.25, 2.0]))
        for mode in waves.MODES:
            got = schedule(m, n, k, **SMALL, units=units, cluster_m=cluster_m, mode=mode, fixup_iters=fixup,
                           sk_iter_cost=sk_cost)
            segments, done, busy, finish = slow_schedule(got.tiles, got.iters_per_tile, units, got.dp_tiles, fixup,
                                                         sk_cost)
            assert got.segments == segments
            assert got.segment_done.tolist() == done
            assert got.busy.tolist() == busy and got.finish.tolist() == finish
            assert got.makespan == max(finish)
            assert got.tiles == -(-(-(-m // 16)) // cluster_m) * -(-n // 16) and got.iters_per_tile == -(-k // 8)


@pytest.mark.parametrize("mode", waves.MODES)
def test_every_iteration_is_computed_exactly_once(mode):
    rng = np.random.default_rng(1)
    for _ in range(20):
        m, n, k = (int(x) for x in rng.integers(1, 300, 3))
        got = schedule(m, n, k, **SMALL, units=int(rng.integers(1, 40)), mode=mode)
        covered = np.zeros((got.tiles, got.iters_per_tile), int)
        for _, tile, kb, ke, _ in got.segments:
            covered[tile, kb:ke] += 1
        assert (covered == 1).all()


def test_streamk_ranges_split_evenly_first_units_one_more():
    ranges = streamk_ranges(7, 5, 4)                        # 35 iterations: 9, 9, 9, 8
    assert ranges.tolist() == [[0, 9], [9, 18], [18, 27], [27, 35]]
    for tiles, ipt, units in ((1, 1, 5), (144, 48, 66), (16, 256, 66), (3, 7, 3)):
        r = streamk_ranges(tiles, ipt, units)
        sizes = r[:, 1] - r[:, 0]
        assert r[0, 0] == 0 and r[-1, 1] == tiles * ipt and (r[1:, 0] == r[:-1, 1]).all()
        extra = tiles * ipt % units
        assert (sizes[:extra] == tiles * ipt // units + 1).all() and (sizes[extra:] == tiles * ipt // units).all()


def test_streamk_makespan_is_the_even_share_plus_fixups():
    rng = np.random.default_rng(2)
    for _ in range(40):
        m, n, k = (int(x) for x in rng.integers(1, 400, 3))
        units = int(rng.integers(1, 40))
        for fixup in (0.0, 3.0):
            got = schedule(m, n, k, **SMALL, units=units, mode="streamk", fixup_iters=fixup)
            share = math.ceil(got.tiles * got.iters_per_tile / units)
            pieces_per_tile = np.bincount([s[1] for s in got.segments]).max()
            assert share <= got.makespan <= share + fixup * pieces_per_tile
            if fixup == 0:
                assert got.makespan == share


def test_dp_efficiency_is_the_wave_quantization():
    for m, n, k in ((3072, 3072, 3072), (8192, 8192, 8192), (1000, 3000, 500), (256, 256, 64)):
        got = schedule(m, n, k, mode="dp")
        assert got.efficiency == pytest.approx(got.tiles / (got.units * math.ceil(got.tiles / got.units)))
        assert got.partial_tiles == 0 and got.sk_tiles == 0


def test_3072_cubed_on_rung_11_is_two_and_a_fifth_waves():
    dp, hybrid = schedule(3072, 3072, 3072, mode="dp"), schedule(3072, 3072, 3072, mode="hybrid")
    assert dp.tiles == 12 * 12 and dp.iters_per_tile == 48 and dp.waves == pytest.approx(144 / 66)
    assert dp.efficiency == pytest.approx(144 / 198) and dp.makespan == 3 * 48
    assert (hybrid.dp_tiles, hybrid.sk_tiles) == (66, 78) and hybrid.efficiency > 0.9


def test_hybrid_is_never_worse_than_dp_by_more_than_the_fixups():
    rng = np.random.default_rng(3)
    for _ in range(60):
        m, n, k = (int(x) for x in rng.integers(1, 500, 3))
        units, fixup = int(rng.integers(1, 30)), float(rng.choice([1.0, 3.0, 6.0]))
        kw = {**SMALL, "units": units, "fixup_iters": fixup}
        dp, hybrid = schedule(m, n, k, mode="dp", **kw), schedule(m, n, k, mode="hybrid", **kw)
        pieces_per_tile = np.bincount([s[1] for s in hybrid.segments]).max()
        assert hybrid.makespan <= dp.makespan + fixup * pieces_per_tile
        if dp.tiles >= units:          # at least one tile per unit in the stream-K phase: two pieces per tile at most
            assert hybrid.makespan <= dp.makespan + 2 * fixup


def test_hybrid_split():
    assert hybrid_split(288, 66) == (198, 90)               # 4.36 waves: the last 1.36 to stream-K
    assert hybrid_split(288, 66, sk_waves=0) == (264, 24)
    assert hybrid_split(288, 66, sk_waves=9) == (0, 288)
    assert hybrid_split(132, 66) == (132, 0)                # whole waves: nothing to balance
    assert hybrid_split(10, 66) == (0, 10)
    with pytest.raises(ValueError, match="sk_waves=-1"):
        hybrid_split(10, 66, sk_waves=-1)


def test_owners_reduce_after_their_contributors():
    got = schedule(1024, 1024, 16384, mode="streamk")     # 16 tiles of 256 iterations over 66 units
    done = dict(((s[1], s[2]), d) for s, d in zip(got.segments, got.segment_done))
    for (tile, kb), d in done.items():
        if kb == 0:
            assert all(d >= other for (t, _), other in done.items() if t == tile)
    assert got.partial_tiles == 16 and got.efficiency < 1


def test_predicted_efficiency_is_the_schedules():
    for mode in waves.MODES:
        got = schedule(3072, 3072, 3072, mode=mode)
        assert predicted_efficiency(3072, 3072, 3072, mode=mode) == got.efficiency
        assert got.dp_tiles + got.sk_tiles == got.tiles


@pytest.mark.parametrize("kw, message", [
    ({"mode": "splitk"}, "mode='splitk' is not one of dp, streamk, hybrid"),
    ({"fixup_iters": -1}, "fixup_iters=-1"),
    ({"units": 0}, "units=0 must be a positive whole number"),
])
def test_bad_settings_name_the_setting(kw, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        schedule(1024, 1024, 1024, **kw)
