"""L2 model, against slow twins: one that follows the documented access order exactly, and one
that reads every CTA's slices one by one (the deduplication is exact when nothing is evicted)."""
from collections import OrderedDict

import numpy as np
import pytest

from hgemm_course.sim import cta_order, l2_model
from hgemm_course.sim.l2 import HASH_MULTIPLIER, HASH_SHIFT


class SlowLRU:
    def __init__(self, num_sets, ways):
        self.sets = [OrderedDict() for _ in range(num_sets)]
        self.ways = ways

    def touch(self, line):
        lines = self.sets[((line * HASH_MULTIPLIER) % 2**64 >> HASH_SHIFT) % len(self.sets)]
        if line in lines:
            lines.move_to_end(line)
            return 1
        if len(lines) == self.ways:
            lines.popitem(last=False)
        lines[line] = True
        return 0


def slice_lines(M, N, K, BM, BN, BK, bm, bn, k0, line, which):
    if which == "A":
        return [l for r in range(bm * BM, min(M, bm * BM + BM))
                for l in range((r * K + k0) * 2 // line, ((r * K + min(K, k0 + BK)) * 2 - 1) // line + 1)]
    base = -(-M * K * 2 // line) * line
    return [l for kr in range(k0, min(K, k0 + BK))
            for l in range((base + (kr * N + bn * BN) * 2) // line,
                           (base + (kr * N + min(N, bn * BN + BN)) * 2 - 1) // line + 1)]


def slow_model(M, N, K, BM, BN, BK, order, l2_bytes, line, ways, in_flight, dedupe):
    cache = SlowLRU(l2_bytes // (line * ways), ways)
    order = [tuple(o) for o in order if o[0] >= 0]
    hits = accesses = 0
    for w in range(0, len(order), in_flight):
        wave = order[w:w + in_flight]
        for k0 in range(0, K, BK):
            if dedupe:
                for which, blocks in (("A", sorted({m for m, _ in wave})), ("B", sorted({n for _, n in wave}))):
                    for block in blocks:
                        readers = sum(1 for m, n in wave if (m if which == "A" else n) == block)
                        for l in slice_lines(M, N, K, BM, BN, BK, block, block, k0, line, which):
                            hits += cache.touch(l) + readers - 1
                            accesses += readers
            else:
                for m, n in wave:
                    for which in "AB":
                        for l in slice_lines(M, N, K, BM, BN, BK, m, n, k0, line, which):
                            hits += cache.touch(l)
                            accesses += 1
    return hits, accesses


CASES = [  # M, N, K, BM, BN, BK, kind, params, l2_bytes, line, ways, in_flight
    (256, 256, 128, 32, 32, 32, "row_major", {}, 8 * 1024, 128, 4, 6),
    (192, 320, 96, 32, 64, 32, "supertile", {"super_m": 2, "super_n": 3}, 16 * 1024, 128, 8, 5),
    (256, 128, 64, 64, 32, 64, "hilbert", {}, 4 * 1024, 32, 2, 3),
    (160, 160, 80, 32, 32, 16, "grouped", {"group_m": 2}, 8 * 1024, 64, 4, 7),
]


@pytest.mark.parametrize("case", CASES)
def test_agrees_with_slow_twin(case):
    M, N, K, BM, BN, BK, kind, params, l2_bytes, line, ways, in_flight = case
    order = cta_order(kind, -(-M // BM), -(-N // BN), **params)
    result = l2_model(M, N, K, BM, BN, BK, order, l2_bytes=l2_bytes, line_bytes=line, ways=ways,
                      ctas_in_flight=in_flight)
    hits, accesses = slow_model(M, N, K, BM, BN, BK, order, l2_bytes, line, ways, in_flight, dedupe=True)
    assert result.l2_read_bytes == accesses * line
    assert result.hit_rate == pytest.approx(hits / accesses, abs=1e-12)
    assert result.dram_bytes == (accesses - hits) * line


def test_reading_each_cta_in_turn_gives_the_same_counts_when_nothing_is_evicted():
    M, N, K, BM, BN, BK = 256, 256, 128, 32, 32, 32
    order = cta_order("supertile", 8, 8, super_m=3, super_n=3)
    result = l2_model(M, N, K, BM, BN, BK, order, l2_bytes=1 << 20, ways=16, ctas_in_flight=10)
    hits, accesses = slow_model(M, N, K, BM, BN, BK, order, 1 << 20, 128, 16, 10, dedupe=False)
    assert result.hit_rate == pytest.approx(hits / accesses)
    assert result.dram_bytes == result.compulsory_bytes  # everything fits: A and B come from DRAM once


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
