"""L2 reuse of a GEMM's tile loads: a set-associative LRU cache in two partitions, fed wave by
wave, k-step by k-step.

The model:

- A (M x K) and B (K x N) are row-major fp16 in global memory, B right after A.
- CTA i of ``order`` (from :func:`hgemm_course.sim.raster.cta_order`) computes C tile
  ``order[i]``; ``(-1, -1)`` rows (edge super tiles) exit at once and are skipped.
- CTAs run in *waves* of ``ctas_in_flight`` (SMs x CTAs per SM): the CTAs of a wave
  advance through their k-steps together, and a wave ends before the next begins.
  The hardware starts a CTA as soon as a slot frees, so real waves blur into each other.
- At each k-step a CTA reads its A slice (BM rows x BK halfs) and B slice (BK rows x
  BN halfs) as whole cache lines. Within a step the distinct A slices are read first
  (increasing bid_m), then the distinct B slices.
- The cache: ``l2_bytes`` split into ``partitions`` equal halves (H100/H200: two), each in
  lines of ``line_bytes``, ``ways``-way set associative, true LRU. The set of a line comes
  from a multiplicative hash of its address, standing in for the hardware's undocumented
  address hashing (plain modulo would pile power-of-two row strides into a few sets).
- Partitions: every line has a *home* partition, and every SM a *near* one, both from a
  hash (which SM a CTA lands on depends on which SM frees first, so the model draws a
  CTA's side from its launch index). An SM looks a line up in its near partition only
  (that is what ncu's ``lts__t_sectors_srcunit_tex_op_read_lookup_*`` count). A miss in the
  home partition reads DRAM; a miss in the other one asks the home partition over the
  fabric (not an SM lookup; DRAM only if the home misses too) and keeps a copy. So a line
  that SMs on both sides read costs one DRAM read, and *two* missed lookups when the home
  side reads it first (the far side then misses its near copy), one when the far side
  does (its fetch fills the home partition too). In a step, the side of the wave's
  earliest CTA reading a slice goes first; then each side's first lookup decides hit or
  miss and its other readers hit.
- Every DRAM read costs ``line_bytes``; C writes are not modelled.

Checked against the H200 (rung 06, 8192^3, BM=256, BN=128, BK=64, 132 CTAs in flight;
ncu's SM read lookups, results/model_l2_nvidia-h200_*.json). Hit rate in percent, model
minus ncu in brackets:

====================================  ============  ============  ===========  ===========  ===========
model                                 row (1x64)    col (32x1)    8x4          16x2         4x8
====================================  ============  ============  ===========  ===========  ===========
ncu                                   72.6          71.8          83.1         80.7         80.9
one unified 60 MiB cache              81.8 (+9.2)   82.1 (+10.3)  91.1 (+8.0)  89.1 (+8.3)  87.4 (+6.5)
  ... with 30 MiB                     81.8 (+9.2)   82.1 (+10.3)  90.1 (+7.0)  88.6 (+7.9)  87.3 (+6.4)
  ... with 32-byte lines              81.8 (+9.2)   82.1 (+10.3)  90.7 (+7.6)  89.0 (+8.3)  87.3 (+6.5)
  ... in-flight misses count as miss  ~0            ~0            ~10          ~4           ~0
2 partitions, shared lines always     72.4 (-0.2)   66.2 (-5.5)   80.8 (-2.3)  77.6 (-3.1)  77.1 (-3.7)
  missed on both sides
2 partitions, first side decides      77.1 (+4.5)   74.2 (+2.4)   85.5 (+2.4)  83.1 (+2.4)  82.2 (+1.4)
  (the default; 8 or 32 ways, 32 B
  lines: the same to 0.1)
====================================  ============  ============  ===========  ===========  ===========

What mattered is the partitions, through the count of missed lookups, not capacity: DRAM
reads agree with ncu's ``dram__bytes_read`` to 0.2% in every order (73.3, 72.2, 39.8, 45.9,
51.1 M sectors modelled; 73.3, 72.3, 39.9, 45.9, 51.1 measured), and so do the missed
lookups but for 4x8 (92.3, 104.1, 58.6, 68.0, 71.6 M modelled; 93.3, 105.5, 58.9, 67.3, 66.0
measured). One unified cache has as many missed lookups as DRAM reads, 20-35% too few. With
CTAs in lockstep, counting lookups of a line whose miss is still in flight as misses leaves
nearly nothing to hit (every slice a wave reads is new to the L2), so that rule needs a
timing model the waves do not have.

What is left: ncu sees 7-15% fewer lookups than the SMs make (340-374 M sectors against
402.7 M), because Hopper's L2 request coalescer (``lrc__*`` metrics) merges reads of the same
sector from several SMs that arrive close together, and those would have been hits. The model
counts every read, so it stays above ncu by the merged reads; divided by ncu's lookup counts,
its missed lookups give 72.9, 72.1, 83.2, 80.5, 79.2. Modelling the coalescer needs the
arrival times of the reads.

Approximations: NVIDIA does not publish the associativity (16 ways is an assumption) nor
the address-to-partition and SM-to-partition maps (both hashed here). L2 lines are 128 bytes
of four 32-byte sectors filled sector by sector; the tile rows here are whole 128-byte lines
when ``BK * 2`` and ``BN * 2`` are multiples of 128, so line and sector hit rates agree;
otherwise pass ``line_bytes=32`` to model sectors. ncu's ``lts__t_sector_hit_rate`` also
counts C writes and the fabric lookups; compare with the SM read lookups.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from .cache import cached_njit

from ..library.target import RECORDED

H200_L2_BYTES = RECORDED.l2_bytes
H200_SMS = RECORDED.sm_count
HASH_MULTIPLIER = 0x9E3779B97F4A7C15
HASH_SHIFT = 16
SPLITMIX_GAMMA, SPLITMIX_M1, SPLITMIX_M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
H200_L2_PARTITIONS = 2


@cached_njit(inline="always")
def _mix(x):
    return np.uint64(x) * np.uint64(HASH_MULTIPLIER)


@cached_njit(inline="always")
def _set_of(line, num_sets):
    return np.int64((_mix(line) >> np.uint64(HASH_SHIFT)) % np.uint64(num_sets))


@cached_njit(inline="always")
def _partition_of(x, partitions):
    """The partition a line is homed in (``x`` a line) or an SM sits next to (``x`` a CTA's launch
    index): SplitMix64's finalizer, whose every output bit depends on every input bit (a
    multiplicative hash would tie CTAs a fixed distance apart to the same or opposite sides)."""
    z = np.uint64(x) + np.uint64(SPLITMIX_GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(SPLITMIX_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(SPLITMIX_M2)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z % np.uint64(partitions))


@cached_njit(inline="always")
def _touch(tags, p, line, num_sets, ways):
    """Look ``line`` up in partition ``p``, fill it on a miss; 1 on a hit. Each set keeps its lines
    most recently used first, so a hit moves its line to the front and a fill drops the last (LRU)."""
    row = p * num_sets + _set_of(line, num_sets)
    w = 0
    while w < ways - 1 and tags[row, w] != line:
        w += 1
    hit = 1 if tags[row, w] == line else 0
    while w > 0:
        tags[row, w] = tags[row, w - 1]
        w -= 1
    tags[row, 0] = line
    return hit


@cached_njit()
def _read_line(tags, line, readers, first, num_sets, ways, partitions):
    """All reads of one line by one wave in one k-step: the SMs of partition ``first`` (where the
    wave's earliest CTA reading it sits) look it up first, then each other partition with readers.

    Returns (lookups, hits, DRAM line fills). A partition's first lookup decides; its
    other readers hit. A miss in the line's home partition goes to DRAM; a miss elsewhere asks
    the home partition (a fabric request, not an SM lookup), which fills from DRAM if it misses
    too, and the line is then kept in both."""
    lookups = 0
    hits = 0
    fills = 0
    home = _partition_of(line, partitions)
    for j in range(partitions):
        p = (first + j) % partitions
        r = readers[p]
        if r == 0:
            continue
        lookups += r
        hit = _touch(tags, p, line, num_sets, ways)
        hits += r - 1 + hit
        if hit == 0:
            if p == home:
                fills += 1
            else:
                fills += 1 - _touch(tags, home, line, num_sets, ways)
    return lookups, hits, fills


@cached_njit()
def _simulate(order, M, N, K, BM, BN, BK, elem_bytes, line_bytes, num_sets, ways, ctas_in_flight, partitions):
    grid_m = (M + BM - 1) // BM
    grid_n = (N + BN - 1) // BN
    k_steps = (K + BK - 1) // BK
    n = order.shape[0]
    waves = (n + ctas_in_flight - 1) // ctas_in_flight
    b_base = (M * K * elem_bytes + line_bytes - 1) // line_bytes * line_bytes
    tags = np.full((partitions * num_sets, ways), -1, np.int64)  # row p * num_sets + set: lines, newest first
    wave_accesses = np.zeros(waves, np.int64)
    wave_hits = np.zeros(waves, np.int64)
    wave_fills = np.zeros(waves, np.int64)
    wave_a_tiles = np.zeros(waves, np.int64)
    wave_b_tiles = np.zeros(waves, np.int64)
    readers_m = np.zeros((grid_m, partitions), np.int64)  # CTAs of this wave reading A row-block bid_m, per partition
    readers_n = np.zeros((grid_n, partitions), np.int64)  # CTAs of this wave reading B column-block bid_n, per partition
    first_m = np.zeros(grid_m, np.int64)  # partition of the wave's earliest CTA reading A row-block bid_m
    first_n = np.zeros(grid_n, np.int64)
    for w in range(waves):
        readers_m[:] = 0
        readers_n[:] = 0
        for i in range(w * ctas_in_flight, min(n, (w + 1) * ctas_in_flight)):
            p = _partition_of(i, partitions)
            bm, bn = order[i, 0], order[i, 1]
            if readers_m[bm].sum() == 0:
                first_m[bm] = p
            if readers_n[bn].sum() == 0:
                first_n[bn] = p
            readers_m[bm, p] += 1
            readers_n[bn, p] += 1
        blocks_m = np.flatnonzero(readers_m.sum(axis=1))
        blocks_n = np.flatnonzero(readers_n.sum(axis=1))
        wave_a_tiles[w] = blocks_m.size
        wave_b_tiles[w] = blocks_n.size
        accesses = 0
        hits = 0
        fills = 0
        for s in range(k_steps):
            k0 = s * BK
            k1 = min(K, k0 + BK)
            for bm in blocks_m:
                for r in range(bm * BM, min(M, bm * BM + BM)):
                    first = (r * K + k0) * elem_bytes // line_bytes
                    last = ((r * K + k1) * elem_bytes - 1) // line_bytes
                    for line in range(first, last + 1):
                        a, h, f = _read_line(tags, line, readers_m[bm], first_m[bm], num_sets, ways, partitions)
                        accesses += a
                        hits += h
                        fills += f
            for bn in blocks_n:
                n0 = bn * BN
                n1 = min(N, n0 + BN)
                for kr in range(k0, k1):
                    first = (b_base + (kr * N + n0) * elem_bytes) // line_bytes
                    last = (b_base + (kr * N + n1) * elem_bytes - 1) // line_bytes
                    for line in range(first, last + 1):
                        a, h, f = _read_line(tags, line, readers_n[bn], first_n[bn], num_sets, ways, partitions)
                        accesses += a
                        hits += h
                        fills += f
        wave_accesses[w] = accesses
        wave_hits[w] = hits
        wave_fills[w] = fills
    return wave_accesses, wave_hits, wave_fills, wave_a_tiles, wave_b_tiles


@dataclass
class L2Result:
    """What :func:`l2_model` predicts; byte counts are in cache lines' worth of bytes."""

    hit_rate: float            # SM lookups that hit / all SM lookups (ncu's srcunit_tex read lookups)
    dram_bytes: int            # bytes the misses fetch from DRAM
    l2_read_bytes: int         # bytes all CTAs read through L2
    compulsory_bytes: int      # A and B read once each: the least DRAM traffic possible
    wave_hit_rate: np.ndarray = field(repr=False)     # (waves,) hit rate of each wave
    wave_dram_bytes: np.ndarray = field(repr=False)   # (waves,) DRAM bytes of each wave
    wave_a_tiles: np.ndarray = field(repr=False)      # (waves,) distinct A row-blocks a wave reads
    wave_b_tiles: np.ndarray = field(repr=False)      # (waves,) distinct B column-blocks a wave reads
    miss_bytes: int = 0        # bytes of SM lookups that missed; above dram_bytes by the far-partition hits
    settings: dict = field(default_factory=dict)

    @property
    def waves(self) -> int:
        return len(self.wave_hit_rate)

    @property
    def dram_over_compulsory(self) -> float:
        """DRAM traffic as a multiple of reading A and B once."""
        return self.dram_bytes / self.compulsory_bytes


def l2_model(M, N, K, BM, BN, BK, order, l2_bytes=H200_L2_BYTES, line_bytes=128, ways=16,
             ctas_in_flight=H200_SMS, elem_bytes=2, partitions=H200_L2_PARTITIONS) -> L2Result:
    """Predict L2 hit rate and DRAM traffic of a tiled GEMM whose CTAs run in ``order`` (see the module doc).

    Defaults are the H200: 60 MiB of L2 in 128-byte lines, 16 ways (assumed), two partitions of
    30 MiB each, and a wave of 132 CTAs (132 SMs x 1 CTA per SM; multiply by :func:`ctas_per_sm`
    for more). ``partitions=1`` is one unified cache (the pre-Hopper picture).
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
    if partitions < 1:
        raise ValueError(f"partitions={partitions}: pass 2 for H100/H200 (two L2 halves), 1 for one unified L2")
    if l2_bytes % (line_bytes * ways * partitions):
        raise ValueError(f"l2_bytes={l2_bytes} is not a whole number of {ways}-way sets of {line_bytes}-byte lines "
                         f"in each of {partitions} partitions")
    if ctas_in_flight < 1:
        raise ValueError("ctas_in_flight must be at least 1: the SMs times the CTAs each SM holds")
    num_sets = l2_bytes // (line_bytes * ways * partitions)
    accesses, hits, fills, a_tiles, b_tiles = _simulate(order, M, N, K, BM, BN, BK, elem_bytes, line_bytes,
                                                        num_sets, ways, ctas_in_flight, partitions)
    total = int(accesses.sum())
    return L2Result(
        hit_rate=float(hits.sum() / total),
        dram_bytes=int(fills.sum()) * line_bytes,
        l2_read_bytes=total * line_bytes,
        compulsory_bytes=(M * K + K * N) * elem_bytes,
        wave_hit_rate=hits / accesses,
        wave_dram_bytes=fills * line_bytes,
        wave_a_tiles=a_tiles,
        wave_b_tiles=b_tiles,
        miss_bytes=int(total - hits.sum()) * line_bytes,
        settings={"M": M, "N": N, "K": K, "BM": BM, "BN": BN, "BK": BK, "l2_bytes": l2_bytes,
                  "line_bytes": line_bytes, "ways": ways, "ctas_in_flight": ctas_in_flight,
                  "elem_bytes": elem_bytes, "partitions": partitions},
    )
