"""L2 model, against slow twins: one that follows the documented access order exactly, and one
that reads every CTA's slices one by one (the deduplication is exact when nothing is evicted)."""
from collections import OrderedDict

import numpy as np
import pytest

from hgemm_course.sim import cta_order, l2_model
from hgemm_course.sim.l2 import HASH_MULTIPLIER, HASH_SHIFT, SPLITMIX_GAMMA, SPLITMIX_M1, SPLITMIX_M2

MASK = 2**64 - 1


def side(x, partitions):
    """SplitMix64's finalizer: the home partition of line ``x``, or the near one of CTA ``x``."""
    z = (x + SPLITMIX_GAMMA) & MASK
    z = ((z ^ (z >> 30)) * SPLITMIX_M1) & MASK
    z = ((z ^ (z >> 27)) * SPLITMIX_M2) & MASK
    return (z ^ (z >> 31)) % partitions


class SlowL2:
    """``partitions`` LRU caches; ``read(line, p)`` is one SM lookup from partition ``p``."""

    def __init__(self, num_sets, ways, partitions):
        self.sets = [[OrderedDict() for _ in range(num_sets)] for _ in range(partitions)]
        self.ways = ways
        self.partitions = partitions
        self.dram_lines = 0

    def touch(self, line, p):
        lines = self.sets[p][((line * HASH_MULTIPLIER) % 2**64 >> HASH_SHIFT) % len(self.sets[p])]
        if line in lines:
            lines.move_to_end(line)
            return 1
        if len(lines) == self.ways:
            lines.popitem(last=False)
        lines[line] = True
        return 0

    def read(self, line, p):
        if self.touch(line, p):
            return 1
        home = side(line, self.partitions)
        if home == p or not self.touch(line, home):  # the home partition misses too: DRAM
            self.dram_lines += 1
        return 0


def slice_lines(M, N, K, BM, BN, BK, bm, bn, k0, line, which):
    if which == "A":
        return [l for r in range(bm * BM, min(M, bm * BM + BM))
                for l in range((r * K + k0) * 2 // line, ((r * K + min(K, k0 + BK)) * 2 - 1) // line + 1)]
    base = -(-M * K * 2 // line) * line
    return [l for kr in range(k0, min(K, k0 + BK))
            for l in range((base + (kr * N + bn * BN) * 2) // line,
                           (base + (kr * N + min(N, bn * BN + BN)) * 2 - 1) // line + 1)]


def slow_model(M, N, K, BM, BN, BK, order, l2_bytes, line, ways, in_flight, dedupe, partitions=2):
    """(hits, SM lookups, DRAM lines)."""
    cache = SlowL2(l2_bytes // (line * ways * partitions), ways, partitions)
    order = [tuple(o) for o in order if o[0] >= 0]
    hits = accesses = 0
    for w in range(0, len(order), in_flight):
        wave = [(i, m, n, side(i, partitions)) for i, (m, n) in enumerate(order[w:w + in_flight], start=w)]
        for k0 in range(0, K, BK):
            if dedupe:
                for which, pick in (("A", lambda c: c[1]), ("B", lambda c: c[2])):
                    for block in sorted({pick(c) for c in wave}):
                        readers = [c for c in wave if pick(c) == block]
                        first = readers[0][3]  # the side of the wave's earliest CTA reading this slice
                        sides = [(first + j) % partitions for j in range(partitions)]
                        counts = [sum(1 for c in readers if c[3] == p) for p in sides]
                        for l in slice_lines(M, N, K, BM, BN, BK, block, block, k0, line, which):
                            for p, r in zip(sides, counts):
                                if r:
                                    hits += cache.read(l, p) + r - 1
                                    accesses += r
            else:
                for _, m, n, p in wave:
                    for which in "AB":
                        for l in slice_lines(M, N, K, BM, BN, BK, m, n, k0, line, which):
                            hits += cache.read(l, p)
                            accesses += 1
    return hits, accesses, cache.dram_lines


CASES = [  # M, N, K, BM, BN, BK, kind, params, l2_bytes, line, ways, in_flight, partitions
    (256, 256, 128, 32, 32, 32, "row_major", {}, 8 * 1024, 128, 4, 6, 2),
    (192, 320, 96, 32, 64, 32, "supertile", {"super_m": 2, "super_n": 3}, 16 * 1024, 128, 8, 5, 2),
    (256, 128, 64, 64, 32, 64, "hilbert", {}, 4 * 1024, 32, 2, 3, 2),
    (160, 160, 80, 32, 32, 16, "grouped", {"group_m": 2}, 8 * 1024, 64, 4, 7, 2),
    (256, 256, 128, 32, 32, 32, "row_major", {}, 8 * 1024, 128, 4, 6, 1),
    (192, 320, 96, 32, 64, 32, "supertile", {"super_m": 2, "super_n": 3}, 24 * 1024, 128, 4, 9, 3),
]


@pytest.mark.parametrize("case", CASES)
def test_agrees_with_slow_twin(case):
    M, N, K, BM, BN, BK, kind, params, l2_bytes, line, ways, in_flight, partitions = case
    order = cta_order(kind, -(-M // BM), -(-N // BN), **params)
    result = l2_model(M, N, K, BM, BN, BK, order, l2_bytes=l2_bytes, line_bytes=line, ways=ways,
                      ctas_in_flight=in_flight, partitions=partitions)
    hits, accesses, dram_lines = slow_model(M, N, K, BM, BN, BK, order, l2_bytes, line, ways, in_flight,
                                            dedupe=True, partitions=partitions)
    assert result.l2_read_bytes == accesses * line
    assert result.hit_rate == pytest.approx(hits / accesses, abs=1e-12)
    assert result.miss_bytes == (accesses - hits) * line
    assert result.dram_bytes == dram_lines * line


@pytest.mark.parametrize("partitions", [1, 2])
def test_reading_each_cta_in_turn_gives_the_same_counts_when_nothing_is_evicted(partitions):
    M, N, K, BM, BN, BK = 256, 256, 128, 32, 32, 32
    order = cta_order("supertile", 8, 8, super_m=3, super_n=3)
    result = l2_model(M, N, K, BM, BN, BK, order, l2_bytes=1 << 20, ways=16, ctas_in_flight=10,
                      partitions=partitions)
    hits, accesses, dram_lines = slow_model(M, N, K, BM, BN, BK, order, 1 << 20, 128, 16, 10, dedupe=False,
                                            partitions=partitions)
    assert result.hit_rate == pytest.approx(hits / accesses)
    assert result.dram_bytes == dram_lines * 128 == result.compulsory_bytes  # all fits: A and B come from DRAM once


def test_a_line_both_sides_read_misses_twice_when_its_home_side_reads_first():
    """Three CTAs share an A slice from both sides: each A line is read from DRAM once, and looked
    up and missed once more when its home is the first CTA's side (the other side then misses its
    near copy); the B slices, read by one CTA each, miss once."""
    M, N, K, BM, BN, BK = 64, 192, 64, 64, 64, 64
    sides = [side(i, 2) for i in range(3)]
    assert len(set(sides)) == 2, "the hash puts CTAs 0-2 on one side; pick a grid whose CTAs straddle both"
    result = l2_model(M, N, K, BM, BN, BK, cta_order("row_major", 1, 3), ctas_in_flight=3)
    a_lines = range(M * K * 2 // 128)
    b_lines = N * K * 2 // 128
    assert result.dram_bytes == (len(a_lines) + b_lines) * 128
    assert result.miss_bytes == (len(a_lines) + b_lines + sum(side(l, 2) == sides[0] for l in a_lines)) * 128
    assert result.l2_read_bytes == (3 * len(a_lines) + b_lines) * 128


def test_supertiles_beat_row_major_when_b_does_not_fit():
    M = N = K = 2048
    BM, BN, BK = 128, 64, 64
    common = {"l2_bytes": 2 * 1024 * 1024, "ctas_in_flight": 33}
    row = l2_model(M, N, K, BM, BN, BK, cta_order("row_major", 16, 32), **common)
    sup = l2_model(M, N, K, BM, BN, BK, cta_order("supertile", 16, 32, super_m=4, super_n=8), **common)
    assert sup.hit_rate > row.hit_rate and sup.dram_bytes < row.dram_bytes
    assert row.waves == 16 and row.wave_a_tiles[0] == 2 and row.wave_b_tiles[0] == 32
    assert sup.wave_dram_bytes.sum() == sup.dram_bytes


def test_bad_orders_name_the_fix():
    with pytest.raises(ValueError, match="each of the 2 x 2 C tiles once"):
        l2_model(256, 256, 64, 128, 128, 64, cta_order("row_major", 2, 3))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        l2_model(256, 256, 64, 128, 128, 64, np.zeros(4))
    with pytest.raises(ValueError, match="sets"):
        l2_model(256, 256, 64, 128, 128, 64, cta_order("row_major", 2, 2), l2_bytes=1000)
