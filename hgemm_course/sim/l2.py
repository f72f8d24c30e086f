"""L2 reuse of a GEMM's tile loads: a set-associative LRU cache fed wave by wave, k-step by k-step.

The model:

- A (M x K) and B (K x N) are row-major fp16 in global memory, B right after A.
- CTA i of ``order`` (from :func:`hgemm_course.sim.raster.cta_order`) computes C tile
  ``order[i]``; ``(-1, -1)`` rows (edge super tiles) exit at once and are skipped.
- CTAs run in *waves* of ``ctas_in_flight`` (SMs x CTAs per SM): the CTAs of a wave
  advance through their k-steps together, and a wave ends before the next begins.
  The hardware starts a CTA as soon as a slot frees, so real waves blur into each other.
- At each k-step a CTA reads its A slice (BM rows x BK halfs) and B slice (BK rows x
  BN halfs) as whole cache lines. CTAs of a wave that share a slice read it in the same
  step: the first read decides hit or miss and the others hit. Within a step the
  distinct A slices are read first (increasing bid_m), then the distinct B slices.
- The cache: ``l2_bytes`` in lines of ``line_bytes``, ``ways``-way set associative,
  true LRU, one unified cache. The set of a line comes from a multiplicative hash of
  its address, standing in for the hardware's undocumented address hashing (plain
  modulo would pile power-of-two row strides into a few sets).
- Every miss costs ``line_bytes`` of DRAM traffic; C writes are not modelled.

H100/H200 specifics and approximations: the L2 is two partitions, and data an SM reads
from the far partition may be held in both, so the usable capacity for data every SM
shares can be as low as half (pass ``l2_bytes=l2 // 2`` to bound that case). L2 lines are
128 bytes of four 32-byte sectors filled sector by sector; the tile rows here are whole
128-byte lines when ``BK * 2`` and ``BN * 2`` are multiples of 128, so line and sector
hit rates agree; otherwise pass ``line_bytes=32`` to model sectors. NVIDIA does not publish
the associativity; 16 ways is an assumption. ncu's ``lts__t_sector_hit_rate`` also counts
C writes and is taken over the whole kernel, so compare trends between orders, not digits.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

H200_L2_BYTES = 60 * 1024 * 1024
H200_SMS = 132
HASH_MULTIPLIER = 0x9E3779B97F4A7C15
HASH_SHIFT = 16


@njit(cache=True, inline="always")
def _set_of(line, num_sets):
    mixed = (np.uint64(line) * np.uint64(HASH_MULTIPLIER)) >> np.uint64(HASH_SHIFT)
    return np.int64(mixed % np.uint64(num_sets))


@njit(cache=True, inline="always")
def _touch(tags, stamps, line, clock, num_sets, ways):
    """Look ``line`` up, fill it on a miss (evicting the least recently used way); 1 on a hit."""
    s = _set_of(line, num_sets)
    victim = 0
    oldest = stamps[s, 0]
    for w in range(ways):
        if tags[s, w] == line:
            stamps[s, w] = clock
            return 1
        if stamps[s, w] < oldest:
            oldest = stamps[s, w]
            victim = w
    tags[s, victim] = line
    stamps[s, victim] = clock
    return 0


@njit(cache=True)
def _simulate(order, M, N, K, BM, BN, BK, elem_bytes, line_bytes, num_sets, ways, ctas_in_flight):
    grid_m = (M + BM - 1) // BM
    grid_n = (N + BN - 1) // BN
    k_steps = (K + BK - 1) // BK
    n = order.shape[0]
    waves = (n + ctas_in_flight - 1) // ctas_in_flight
    b_base = (M * K * elem_bytes + line_bytes - 1) // line_bytes * line_bytes
    tags = np.full((num_sets, ways), -1, np.int64)
    stamps = np.zeros((num_sets, ways), np.int64)
    wave_accesses = np.zeros(waves, np.int64)
    wave_hits = np.zeros(waves, np.int64)
    wave_a_tiles = np.zeros(waves, np.int64)
    wave_b_tiles = np.zeros(waves, np.int64)
    readers_m = np.zeros(grid_m, np.int64)  # CTAs of this wave reading A row-block bid_m
    readers_n = np.zeros(grid_n, np.int64)  # CTAs of this wave reading B column-block bid_n
    clock = 1
    for w in range(waves):
        readers_m[:] = 0
        readers_n[:] = 0
        for i in range(w * ctas_in_flight, min(n, (w + 1) * ctas_in_flight)):
            readers_m[order[i, 0]] += 1
            readers_n[order[i, 1]] += 1
        blocks_m = np.flatnonzero(readers_m)
        blocks_n = np.flatnonzero(readers_n)
        wave_a_tiles[w] = blocks_m.size
        wave_b_tiles[w] = blocks_n.size
        accesses = 0
        hits = 0
        for s in range(k_steps):
            k0 = s * BK
            k1 = min(K, k0 + BK)
            for bm in blocks_m:
                readers = readers_m[bm]
                for r in range(bm * BM, min(M, bm * BM + BM)):
                    first = (r * K + k0) * elem_bytes // line_bytes
                    last = ((r * K + k1) * elem_bytes - 1) // line_bytes
                    for line in range(first, last + 1):
                        hit = _touch(tags, stamps, line, clock, num_sets, ways)
                        clock += 1
                        accesses += readers
                        hits += readers - 1 + hit
            for bn in blocks_n:
                readers = readers_n[bn]
                n0 = bn * BN
                n1 = min(N, n0 + BN)
                for kr in range(k0, k1):
                    first = (b_base + (kr * N + n0) * elem_bytes) // line_bytes
                    last = (b_base + (kr * N + n1) * elem_bytes - 1) // line_bytes
                    for line in range(first, last + 1):
                        hit = _touch(tags, stamps, line, clock, num_sets, ways)
                        clock += 1
                        accesses += readers
                        hits += readers - 1 + hit
        wave_accesses[w] = accesses
        wave_hits[w] = hits
    return wave_accesses, wave_hits, wave_a_tiles, wave_b_tiles


@dataclass
class L2Result:
    """What :func:`l2_model` predicts; byte counts are in cache lines' worth of bytes."""

    hit_rate: float            # line reads served by L2 / all line reads
    dram_bytes: int            # bytes the misses fetch from DRAM
    l2_read_bytes: int         # bytes all CTAs read through L2
    compulsory_bytes: int      # A and B read once each: the least DRAM traffic possible
    wave_hit_rate: np.ndarray = field(repr=False)     # (waves,) hit rate of each wave
    wave_dram_bytes: np.ndarray = field(repr=False)   # (waves,) DRAM bytes of each wave
    wave_a_tiles: np.ndarray = field(repr=False)      # (waves,) distinct A row-blocks a wave reads
    wave_b_tiles: np.ndarray = field(repr=False)      # (waves,) distinct B column-blocks a wave reads
    settings: dict = field(default_factory=dict)

    @property
    def waves(self) -> int:
        return len(self.wave_hit_rate)

    @property
    def dram_over_compulsory(self) -> float:
        """DRAM traffic as a multiple of reading A and B once."""
        return self.dram_bytes / self.compulsory_bytes


def l2_model(M, N, K, BM, BN, BK, order, l2_bytes=H200_L2_BYTES, line_bytes=128, ways=16,
             ctas_in_flight=H200_SMS, elem_bytes=2) -> L2Result:
    """Predict L2 hit rate and DRAM traffic of a tiled GEMM whose CTAs run in ``order`` (see the module doc).

    Defaults are the H200: 60 MiB of L2 in 128-byte lines, 16 ways (assumed), and a wave of
    132 CTAs (132 SMs x 1 CTA per SM; multiply by :func:`ctas_per_sm` for more).
    """
    order = np.asarray(order, dtype=np.int64)
    grid_m, grid_n = -(-M // BM), -(-N // BN)
    if order.ndim != 2 or order.shape[1] != 2:
        raise ValueError(f"order has shape {order.shape}; pass cta_order(...), an (n, 2) array of (bid_m, bid_n)")
    order = order[order[:, 0] >= 0]
    if order.shape[0] != grid_m * grid_n or len(np.unique(order[:, 0] * grid_n + order[:, 1])) != order.shape[0]:
        raise ValueError(f"order does not visit each of the {grid_m} x {grid_n} C tiles once; "
                         f"build it with cta_order(kind, {grid_m}, {grid_n}, ...)")
    if order[:, 0].max() >= grid_m or order[:, 1].max() >= grid_n:
        raise ValueError(f"order has tiles outside the {grid_m} x {grid_n} grid of {M}x{N} with {BM}x{BN} tiles")
    if l2_bytes % (line_bytes * ways):
        raise ValueError(f"l2_bytes={l2_bytes} is not a whole number of {ways}-way sets of {line_bytes}-byte lines")
    if ctas_in_flight < 1:
        raise ValueError("ctas_in_flight must be at least 1: the SMs times the CTAs each SM holds")
    num_sets = l2_bytes // (line_bytes * ways)
    accesses, hits, a_tiles, b_tiles = _simulate(order, M, N, K, BM, BN, BK, elem_bytes, line_bytes,
                                                 num_sets, ways, ctas_in_flight)
    misses = accesses - hits
    total = int(accesses.sum())
    return L2Result(
        hit_rate=float(hits.sum() / total),
        dram_bytes=int(misses.sum()) * line_bytes,
        l2_read_bytes=total * line_bytes,
        compulsory_bytes=(M * K + K * N) * elem_bytes,
        wave_hit_rate=hits / accesses,
        wave_dram_bytes=misses * line_bytes,
        wave_a_tiles=a_tiles,
        wave_b_tiles=b_tiles,
        settings={"M": M, "N": N, "K": K, "BM": BM, "BN": BN, "BK": BK, "l2_bytes": l2_bytes,
                  "line_bytes": line_bytes, "ways": ways, "ctas_in_flight": ctas_in_flight,
                  "elem_bytes": elem_bytes},
    )
