"""What ``gemm(a, b)`` runs for a shape on a Hopper GPU: rung 11 (whole tiles, a wave at a time; 128 x 256
tiles, or 128 x 128 where the big ones leave most of a wave empty, or 128 x 64 for the smallest products) or
rung 12 (the last waves divided by K), and how many whole waves rung 12 divides; then, weighed by time
(:func:`row64_choice`), rung 11's 64-row tiles, its 128 x 192 tiles where they fit in one wave, and rung 12
cutting small tiles by K, with the owners adding the pieces or split apart.

The choice is a small model, not a table of timings: :mod:`hgemm_course.sim.waves` counts the waves each
choice makes on this GPU's SMs, in K-iterations, with a fix-up charged per split tile. The plan takes rung 12
only where its predicted busy fraction beats rung 11's by more than the model's margin, and rung 11's smaller
tiles only where they beat both. The recorded H200 runs check the model (``tests/test_streamk.py``): where it
picks one rung, that rung was not measurably the slower one. Appendix A1 (``chapters/A1_plan.ipynb``, through
:mod:`hgemm_course.course.plan_tables`) lists every fitted constant, read from ``plan_constants.toml`` with the runs
it came from.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from numbers import Integral
from typing import Callable

from .plan_constants import value as fitted

# The numbers below that came from H200 timings are read from plan_constants.toml, which holds, for each, the runs
# it came from, what they showed and the tests that derive it again. The comments here say why each exists.

# Rung 11 pairs its CTAs in clusters that share B by multicast. With at most one wave of tiles, CTAs without
# clusters measured as fast as pairs or faster, so there the plan runs rung 11 without them; past one wave the two
# measured within what repeated runs differ by, and the plan keeps the clusters chapter 11 builds.
ONE_WAVE_CLUSTER_M = fitted("ONE_WAVE_CLUSTER_M")
# With every tile in the one wave, all of them run at once and their launch order buys no reuse in L2. Rung 06's
# super tiles of 16 tile rows then only leave gaps: on a grid of 8 tile rows half the launch positions lie past
# the edge, so some CTAs walk two tiles while others have none (at 1024 x 4096 x 2048, 128 tiles on 132 SMs,
# the busiest CTAs take 2). Super tiles of one tile number the tiles without gaps, one per CTA.
ONE_WAVE_SUPER = (1, 1)
# Past one wave, rung 06's super tiles of 16 tile rows leave launch positions empty wherever the tile rows are not a
# whole number of super tiles: at 7168 x 7168 (56 rows of 128 x 256 tiles, 28 of cluster tiles) the last band of
# 16 holds 12 and some clusters walk 14 tiles while others walk 10. Shorter super tiles waste fewer positions, so
# the plan gives rung 11's 128 x 256 tiles the first of RUNG11_SUPERS (the tallest and widest first) whose walk
# the model finds busiest. Super tiles two cluster tiles wide also leave the last column of positions empty where
# the grid's columns are odd (at 6400 x 3200 x 1600, 25 x 13 cluster tiles, 16x2 walks 448 positions for 325
# tiles; 2x1, rung 06's order degenerated to row-major, walks exactly 325). But one cluster tile wide, the clusters
# running at once lie along rows of C and each row band reads all of B: that should pay only while B stays in L2,
# so those are taken only where B takes at most NARROW_SUPER_L2_SHARE of it. Where B outgrows the L2 even super
# tiles two cluster tiles wide cost DRAM traffic, since each band of SUPER_M tile rows reads all of B again: there
# another super tile than the first must walk LARGE_B_SUPER_MARGIN busier.
RUNG11_SUPERS = fitted("RUNG11_SUPERS")
NARROW_SUPER_L2_SHARE = fitted("NARROW_SUPER_L2_SHARE")
LARGE_B_SUPER_MARGIN = fitted("LARGE_B_SUPER_MARGIN")
# Rung 11's smaller tiles, for shapes whose 128 x 256 tiles leave most of a wave empty: twice the tiles, each
# half the work, so the waves fill better. Per FLOP they are slower (SMALL_TILE_SPEED charges that), and the waves
# count overstates what they gain, so the plan takes them only past SMALL_TILE_MARGIN.
SMALL_TILES = (128, 128)
SMALL_TILE_SPEED = fitted("SMALL_TILE_SPEED")
SMALL_TILE_MARGIN = fitted("SMALL_TILE_MARGIN")
# Where the rows of A or B do not start on 128-byte boundaries (K or N not a multiple of 64 halves), each of TMA's
# L2 requests no longer carries a whole line, and the small tiles, which without clusters ask for twice the boxes
# of A and B per FLOP, slow down far more than the big ones. The plan charges SMALL_TILE_UNALIGNED_SPEED per
# operand whose rows are off.
ROW_ALIGN_BYTES = 128
SMALL_TILE_UNALIGNED_SPEED = fitted("SMALL_TILE_UNALIGNED_SPEED")
# The small tiles run without clusters, so one tile column is their narrowest super tile, and 1x1 (row-major
# order) numbers every tile without a gap: their super tile is picked as rung 11's is, from these.
SMALL_TILE_SUPERS = RUNG11_SUPERS + ((1, 1),)
# Rung 11's narrowest tiles, 128 x 64 (cuBLAS's tile at 1024^3), for products so small that even the 128 x 128
# tiles fill at most about half a wave. Their speed per FLOP is about half the big tiles', and rows off 128-byte
# boundaries cost them more than the small tiles.
NARROW_TILES = (128, 64)
NARROW_TILE_STAGES = fitted("NARROW_TILE_STAGES")
NARROW_TILE_SPEED = fitted("NARROW_TILE_SPEED")
NARROW_TILE_UNALIGNED_SPEED = fitted("NARROW_TILE_UNALIGNED_SPEED")
# Tiles of 64 rows, one consumer warpgroup issuing m64 products (rung 11's consumers=1), no clusters. Where M is
# small, or the product has too few 128-row tiles to fill the SMs, they make more CTAs and waste fewer rows of A.
# They are weighed by time, not by the busy fraction: a tile shape's time is its waves (ceil(tiles / CTAs)) times
# the K-iterations of 64 times ROW64_ITER_NS, what one k-iteration of that tile took on the H200. A 64-row tile
# replaces the plan's rung 11 choice where its time is ROW64_MARGIN below the whole or 128 x 128 tiles' time;
# against the narrow tiles, which have no k-iteration figure, the whole tiles' time over the narrow tiles'
# predicted gain on them (as the plan weighs them). Rung 12 is credited with its split only where each CTA gets
# ROW64_MIN_SHARE k-iterations or more: below that its fix-up is not paid for by long pieces. Rows off 128-byte
# boundaries are charged ROW64_UNALIGNED_SPEED per operand.
ROW64_TILES = ((64, 64, 8), (64, 128, 8), (64, 256, 5))     # (bm, bn, stages)
ROW64_ITER_NS = fitted("ROW64_ITER_NS")
ROW64_UNALIGNED_SPEED = fitted("ROW64_UNALIGNED_SPEED")
# Rung 11's 128 x 192 tiles (two consumers, 4 stages, no clusters: three 64-column panels of B do not split over two
# CTAs), weighed like the 64-row tiles, by time. Where a product's 128 x 256 tiles fill one wave part-way, they make a
# third more tiles, each three quarters of the work: at 1536^3, 96 tiles on 132 SMs against 72. cuBLASLt's kernel
# there computes 128 tiles of 96 rows by 192 columns (results/profiles, chapter 13); the course's consumers compute
# whole products of 64 rows. They are weighed only where they fit in one wave, one tile per CTA; past one wave the
# plan keeps the choices its probes and sweeps measured (the 128 x 128 tiles, rung 12's stream-K).
WIDE_TILES = ((128, 192, 4, 2),)                        # (bm, bn, stages, consumers)
ROW64_MARGIN = fitted("ROW64_MARGIN")
ROW64_MIN_SHARE = fitted("ROW64_MIN_SHARE")
# Rung 12 on the smaller tiles with every tile divided by K (sk_waves=0, no clusters), for products whose tiles are
# far fewer than the SMs and whose K is long. Its time in the model is the k-iterations of the busiest CTA times
# ROW64_ITER_NS plus SPLIT_FIXUP_NS for each piece a tile is cut into (the owner waits for and adds them). It is
# weighed only where each tile is cut into SPLIT_MIN_PIECES or more: with fewer it measured slower than the model
# predicts.
SPLIT_TILES = ((64, 64, 8, 1), (64, 128, 8, 1), (128, 128, 6, 2))      # (bm, bn, stages, consumers)
SPLIT_FIXUP_NS = fitted("SPLIT_FIXUP_NS")
SPLIT_MIN_PIECES = fitted("SPLIT_MIN_PIECES")
RUNG11_SPLIT_SUPER = (8, 2)          # the probe's super tile for these launches
# Rung 12 split-K apart (apart=True): the same cut, but every piece goes to a slot of its own and, once its pieces
# are out, each CTA of a split tile adds its share of the tile's fragments, so no owner adds the pieces one after
# another. Its time in the model is a straight line in the busiest CTA's k-iterations, APART_NS + k-iterations x
# APART_ITER_NS per tile shape, weighed from APART_MIN_PIECES pieces a tile (fewer than SPLIT_MIN_PIECES: no owner
# adds them in turn).
APART_TILES = ((64, 64, 8, 1), (64, 128, 8, 1), (64, 256, 5, 1), (128, 128, 6, 2), (128, 256, 4, 2))
APART_NS = fitted("APART_NS")
APART_ITER_NS = fitted("APART_ITER_NS")
APART_MIN_PIECES = fitted("APART_MIN_PIECES")
# Where the plan's choice is rung 12's stream-K and its tiles make less than one wave, stream-K also cuts every tile
# by K, but its ranges straddle tiles: the owners add the pieces one after another, and tiles that share rows of A
# read them at different times. So there split apart is taken unless the model finds it more than
# APART_OVER_STREAMK slower.
APART_OVER_STREAMK = fitted("APART_OVER_STREAMK")
# What the model plans: its walk visits every tile of C, so its time and memory grow with M x N (2^35 elements,
# 64 GiB of fp16, take it two to three seconds and half a GB; 10^6 x 10^6 took a minute and 10 GB, 10^9 x 10^9 ran
# out of memory). Past these bounds it refuses, with the bound in the message.
MAX_DIM = 2**24                 # each of M, N and K
MAX_C_ELEMENTS = 2**35          # M x N
MAX_UNITS = 10_000              # clusters that run at once


@dataclass(frozen=True)
class Plan:
    M: int
    N: int
    K: int
    rung: str                   # "11" or "12"
    options: dict               # the rung's launcher keywords (rung 12: sk_waves; rung 11: cluster_m, tiles, super_mn)
    sk_waves: int               # rung 12's best split here, whichever rung runs
    units: int                  # clusters that run at once
    tiles: int                  # cluster tiles of C
    efficiency: dict            # predicted busy fraction of each choice tried, by name
    reason: str                 # one sentence
    launch: Callable = field(compare=False, repr=False, default=None)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) if k != "options" else self.options_text()
                for k in ("M", "N", "K", "rung", "options", "sk_waves", "units", "tiles", "efficiency", "reason")}

    def options_text(self) -> dict:
        """The launcher keywords as plain values: a tile shape as "BMxBN"."""
        return {k: f"{v.bm}x{v.bn}" if hasattr(v, "bm") else v for k, v in self.options.items()}


def units_here() -> int:
    """Clusters of rung 12's kernel that run at once on this GPU (the driver's count), or the H200's 66 without
    a GPU (plans printed on a CPU machine are the H200's)."""
    from .ladder import r12_streamk
    from ..sim.waves import UNITS
    from .target import runnable

    here = runnable()
    if here is None or here.missing(r12_streamk.NEEDS):
        return UNITS
    return r12_streamk.resident_clusters(r12_streamk.kernel(), r12_streamk.CLUSTER_M)


def rung11_efficiency(M: int, N: int, units: int, tiles=None, cluster_m: int | None = None,
                      super_mn: tuple[int, int] | None = None) -> float:
    """Rung 11's busy fraction in the same model, on ``units`` clusters of ``cluster_m`` CTAs (the rung's own
    clusters by default): its clusters walk the launch positions of whole super tiles round-robin and skip
    those past the grid's edge, so the busiest cluster computes more tiles than an even share (the waves'
    count alone would say 99% at 7168 x 7168, where some clusters get 14 tiles and others 10)."""
    from .ladder.r11_persistent import CLUSTER_M, SUPER, TILES, tiles_per_cluster

    tiles, cluster_m, super_mn = tiles or TILES, cluster_m or CLUSTER_M, super_mn or SUPER
    per_cluster = tiles_per_cluster(units, M, N, tiles, super_mn, cluster_m)
    return sum(per_cluster) / (units * max(per_cluster))


def rung11_supers(N: int, K: int, supers: tuple = RUNG11_SUPERS) -> tuple:
    """The super tiles rung 11 may take at this N and K: ``supers``, less those one cluster tile wide unless B
    (K x N halves) fits in NARROW_SUPER_L2_SHARE of the L2."""
    from ..sim.l2 import H200_L2_BYTES

    if 2 * K * N <= NARROW_SUPER_L2_SHARE * H200_L2_BYTES:
        return supers
    return tuple(s for s in supers if s[1] > 1)


def small_tile_speed(N: int, K: int) -> float:
    """The small tiles' speed per FLOP against rung 11's 128 x 256 tiles, in the model: SMALL_TILE_SPEED, times
    SMALL_TILE_UNALIGNED_SPEED for each of A (rows of K halves) and B (rows of N halves) whose rows do not
    start on ROW_ALIGN_BYTES boundaries."""
    off = sum(1 for halves in (K, N) if (2 * halves) % ROW_ALIGN_BYTES)
    return SMALL_TILE_SPEED * SMALL_TILE_UNALIGNED_SPEED ** off


def narrow_tile_speed(N: int, K: int) -> float:
    """The narrow tiles' speed per FLOP against rung 11's 128 x 256 tiles, in the model: NARROW_TILE_SPEED, times
    NARROW_TILE_UNALIGNED_SPEED for each of A and B whose rows do not start on ROW_ALIGN_BYTES boundaries."""
    off = sum(1 for halves in (K, N) if (2 * halves) % ROW_ALIGN_BYTES)
    return NARROW_TILE_SPEED * NARROW_TILE_UNALIGNED_SPEED ** off


def rung11_best_super(M: int, N: int, units: int, supers: tuple = RUNG11_SUPERS, tiles=None,
                      cluster_m: int | None = None, margin: float = 0.0) -> tuple[float, tuple]:
    """(busy fraction, super tile) of the first of ``supers`` whose walk of these tiles on ``units`` clusters of
    ``cluster_m`` CTAs (rung 11's own by default) the model finds busiest; the others must beat the first of
    ``supers`` by more than ``margin``."""
    first = rung11_efficiency(M, N, units, tiles, cluster_m, supers[0])
    best = (first, supers[0])
    for super_mn in supers[1:]:
        busy = rung11_efficiency(M, N, units, tiles, cluster_m, super_mn)
        if busy > best[0] and busy > first * (1 + margin):
            best = (busy, super_mn)
    return best


def super_margin(N: int, K: int) -> float:
    """What a super tile other than the first of the list must gain in the walk: LARGE_B_SUPER_MARGIN where B
    (K x N halves) outgrows the L2, nothing where it fits."""
    from ..sim.l2 import H200_L2_BYTES

    return LARGE_B_SUPER_MARGIN if 2 * K * N > H200_L2_BYTES else 0.0


def check_plannable(M: int, N: int, K: int, units: int | None = None) -> None:
    """A ValueError of one line, naming the bound, for a shape or a count of clusters the model does not plan."""
    for name, value in (("M", M), ("N", N), ("K", K), ("units", units)):
        if value is None and name == "units":
            continue
        if not isinstance(value, Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}={value!r}: the plan takes whole numbers of at least 1.")
    too_big = [f"{name}={value}" for name, value in (("M", M), ("N", N), ("K", K)) if value > MAX_DIM]
    if too_big:
        raise ValueError(f"{', '.join(too_big)} {'is' if len(too_big) == 1 else 'are'} over the plan's ceiling of "
                         f"{MAX_DIM} (2^24) per dimension; plan a shape with M, N and K each at most {MAX_DIM}.")
    if M * N > MAX_C_ELEMENTS:
        raise ValueError(f"M x N = {M}x{N} is over the plan's ceiling of {MAX_C_ELEMENTS} (2^35) elements of C (64 GiB "
                         "of fp16), past which its walk of every tile takes minutes and gigabytes; plan a smaller M or N.")
    if units is not None and units > MAX_UNITS:
        raise ValueError(f"units={units} is over the plan's ceiling of {MAX_UNITS} clusters that run at once; "
                         f"give units (--units) at most {MAX_UNITS}.")


@lru_cache(maxsize=1024)
def plan(M: int, N: int, K: int, units: int | None = None) -> Plan:
    """The plan for an M x N x K product (cached per shape), over ``units`` clusters of two CTAs: rung 11 with
    128 x 64 tiles where their predicted busy fraction beats every other choice's by SMALL_TILE_MARGIN; else with
    128 x 128 tiles where their predicted busy fraction beats both rung 11's with 128 x 256 tiles by
    SMALL_TILE_MARGIN and rung 12's; else rung 12 with the sk_waves whose prediction is highest, when that beats
    rung 11's by more than the model's margin; else rung 11. Rung 11 runs without clusters with the smaller tiles,
    and with either size on 1x1 super tiles when its tiles are at most one wave (ONE_WAVE_CLUSTER_M,
    ONE_WAVE_SUPER); past one wave on the super tiles whose walk is busiest (of RUNG11_SUPERS, and for the small
    tiles of SMALL_TILE_SUPERS)."""
    from .ladder import get
    from .ladder.r11_persistent import SUPER as RUNG11_SUPER
    from .ladder.r11_persistent import TILES as RUNG11_TILES
    from .ladder.r12_streamk import CLUSTER_M, TILES
    from ..sim import waves

    check_plannable(M, N, K, units)
    units = units or units_here()
    ctas = units * CLUSTER_M
    shape = dict(tile_m=TILES.bm, tile_n=TILES.bn, tile_k=TILES.bk, units=units, cluster_m=CLUSTER_M)
    tiles = waves.schedule(M, N, K, mode="dp", **shape).tiles
    small_tiles = replace(RUNG11_TILES, bm=SMALL_TILES[0], bn=SMALL_TILES[1])
    cta_tiles = -(-M // RUNG11_TILES.bm) * -(-N // RUNG11_TILES.bn)
    one_wave = cta_tiles <= ctas
    margin, small_speed = super_margin(N, K), small_tile_speed(N, K)
    if one_wave:
        whole, whole_super = rung11_efficiency(M, N, ctas, cluster_m=ONE_WAVE_CLUSTER_M,
                                               super_mn=ONE_WAVE_SUPER), ONE_WAVE_SUPER
    else:
        whole, whole_super = rung11_best_super(M, N, units, rung11_supers(N, K), margin=margin)
    if -(-M // small_tiles.bm) * -(-N // small_tiles.bn) <= ctas:
        small_supers = (ONE_WAVE_SUPER,)
    else:
        small_supers = rung11_supers(N, K, SMALL_TILE_SUPERS)
    small, small_super = rung11_best_super(M, N, ctas, small_supers, small_tiles, cluster_m=1, margin=margin)
    small *= small_speed
    small_options = {"cluster_m": 1, "tiles": small_tiles}
    if small_super != RUNG11_SUPER:
        small_options["super_mn"] = small_super
    # The narrow tiles on 1x1 super tiles only: they can win only within one wave of them. Past it, the small tiles
    # on the same walk are at least 3/4 as busy at 0.94 / 0.55 of the speed (the tests check on random shapes that the
    # plan never takes the narrow tiles there), so walking more super tiles for them would only cost the plan time.
    narrow_tiles = replace(RUNG11_TILES, bm=NARROW_TILES[0], bn=NARROW_TILES[1], stages=NARROW_TILE_STAGES)
    narrow = rung11_efficiency(M, N, ctas, narrow_tiles, 1, ONE_WAVE_SUPER) * narrow_tile_speed(N, K)
    narrow_options = {"cluster_m": 1, "tiles": narrow_tiles, "super_mn": ONE_WAVE_SUPER}
    split = waves.split_schedules(M, N, K, **shape)     # rung 12's splits, as its launcher weighs them
    small_name = f"rung 11, {SMALL_TILES[0]}x{SMALL_TILES[1]} tiles"
    narrow_name = f"rung 11, {NARROW_TILES[0]}x{NARROW_TILES[1]} tiles"
    efficiency = ({"rung 11": whole, small_name: small, narrow_name: narrow}
                  | {f"rung 12, sk_waves={sk}": s.efficiency for sk, s in split.items()})
    best = waves.best_split(split)
    gain = split[best].efficiency / whole - 1
    waves_text = f"{tiles} cluster tiles on {units} clusters make {tiles / units:.2f} waves"
    if narrow > max(whole, small, split[best].efficiency) * (1 + SMALL_TILE_MARGIN):
        rung, options = "11", narrow_options
        reason = (f"{waves_text}; rung 11's whole tiles keep the GPU {whole:.0%} busy, {SMALL_TILES[0]}x"
                  f"{SMALL_TILES[1]} tiles {small:.0%}, four times as many {NARROW_TILES[0]}x{NARROW_TILES[1]} "
                  f"tiles {narrow:.0%} (charged for their much lower speed"
                  f"{' and for rows off 128-byte boundaries' if narrow_tile_speed(N, K) < NARROW_TILE_SPEED else ''}), "
                  f"rung 12 dividing by K {split[best].efficiency:.0%}.")
    elif small > whole * (1 + SMALL_TILE_MARGIN) and small > split[best].efficiency:
        rung, options = "11", small_options
        reason = (f"{waves_text}; rung 11's whole tiles keep the GPU {whole:.0%} busy, twice as many "
                  f"{SMALL_TILES[0]}x{SMALL_TILES[1]} tiles {small:.0%} (charged for their lower speed"
                  f"{' and for rows off 128-byte boundaries' if small_speed < SMALL_TILE_SPEED else ''}), "
                  f"rung 12 dividing by K {split[best].efficiency:.0%}.")
        if small_supers != (ONE_WAVE_SUPER,) and small_super != RUNG11_SUPER:
            reason = reason[:-1] + f"; on {small_super[0]}x{small_super[1]} super tiles, the busiest walk of those."
    elif gain > waves.DP_MARGIN:
        rung, options = "12", {"sk_waves": best}
        reason = (f"{waves_text}; rung 11's whole tiles keep the GPU {whole:.0%} busy, rung 12 dividing the last "
                  f"{'wave' if best == 0 else f'{best + 1} waves'} by K {split[best].efficiency:.0%}.")
    else:
        rung, options = "11", {}
        reason = (f"{waves_text}; rung 11's whole tiles keep the GPU {whole:.0%} busy, and dividing by K would gain "
                  f"{max(gain, 0):.1%}, within the model's {waves.DP_MARGIN:.0%} margin.")
        if one_wave:
            options = {"cluster_m": ONE_WAVE_CLUSTER_M, "super_mn": ONE_WAVE_SUPER}
            reason = (reason[:-1] + f"; its {cta_tiles} tiles are one wave, one per CTA (1x1 super tiles: in one "
                      "wave the order buys nothing), where CTAs without clusters measured as fast or faster than "
                      "pairs sharing B.")
        elif whole_super != RUNG11_SUPER:
            options = {"super_mn": whole_super}
            reason = (reason[:-1] + f"; on {whole_super[0]}x{whole_super[1]} super tiles, which leave fewer launch "
                      f"positions empty here than {RUNG11_SUPER[0]}x{RUNG11_SUPER[1]}.")
    row64 = row64_choice(M, N, K, ctas, rung, options, split[best].efficiency / whole, narrow / whole)
    if row64 is not None:
        rung, options, reason = row64[0], row64[1], f"{waves_text}; {row64[2]}"
    return Plan(M, N, K, rung, options, best, units, tiles, efficiency, reason,
                partial(get(rung).launch, **options))


def row64_time_ns(M: int, N: int, K: int, ctas: int, bm: int, bn: int) -> float:
    """The model's time of rung 11 on (bm, bn) tiles, one tile per CTA at a time: waves x K-iterations x
    ROW64_ITER_NS."""
    return -(-(-(-M // bm) * -(-N // bn)) // ctas) * -(-K // 64) * ROW64_ITER_NS[bm, bn]


def busiest_k_iterations(tiles: int, K: int, ctas: int) -> int:
    """The K-iterations of the busiest of ``ctas`` CTAs dealt the K-iterations of ``tiles`` tiles evenly."""
    return -(-tiles * -(-K // 64) // ctas)


def busiest_cta_ns(tiles: int, K: int, ctas: int, bm: int, bn: int) -> float:
    """The model's time of the busiest of ``ctas`` CTAs dealt the K-iterations of ``tiles`` (bm, bn) tiles evenly:
    its share of them x ROW64_ITER_NS."""
    return busiest_k_iterations(tiles, K, ctas) * ROW64_ITER_NS[bm, bn]


def split_time_ns(M: int, N: int, K: int, ctas: int, bm: int, bn: int) -> float | None:
    """The model's time of rung 12 dividing every (bm, bn) tile by K over ``ctas`` CTAs: the busiest CTA's
    k-iterations x ROW64_ITER_NS plus SPLIT_FIXUP_NS per piece of a tile; None where a tile would be cut into
    fewer than SPLIT_MIN_PIECES pieces."""
    tiles = -(-M // bm) * -(-N // bn)
    pieces = -(-ctas // tiles)
    if pieces < SPLIT_MIN_PIECES:
        return None
    return busiest_cta_ns(tiles, K, ctas, bm, bn) + pieces * SPLIT_FIXUP_NS[bm, bn]


def apart_time_ns(M: int, N: int, K: int, ctas: int, bm: int, bn: int) -> float | None:
    """The model's time of rung 12 split-K apart on (bm, bn) tiles over ``ctas`` CTAs: APART_NS plus the busiest
    CTA's k-iterations x APART_ITER_NS; None where a tile would be cut into fewer than APART_MIN_PIECES."""
    tiles = -(-M // bm) * -(-N // bn)
    if ctas // tiles < APART_MIN_PIECES:
        return None
    busiest = busiest_k_iterations(tiles, K, ctas // tiles * tiles)    # a whole number of CTAs per tile
    return APART_NS[bm, bn] + busiest * APART_ITER_NS[bm, bn]


def row64_choice(M: int, N: int, K: int, ctas: int, rung: str, options: dict,
                 split_gain: float, narrow_gain: float) -> tuple[str, dict, str] | None:
    """(rung, launcher keywords, reason) of the smaller tiles, rung 11's 64-row tiles or rung 12 cutting small
    tiles by K, where the model finds them ROW64_MARGIN faster than the plan's choice (``rung``, ``options``;
    ``split_gain`` rung 12's predicted busy fraction over rung 11's, ``narrow_gain`` that of rung 11's narrow 128 x 64
    tiles: with no k-iteration figure of their own, their time is the whole tiles' over it), else None. The split is taken only where it
    is also ROW64_MARGIN faster than the best 64-row tiles: at three pieces a tile (16 x 4096 x 4096) the model
    finds it faster and the probe found it slower."""
    from .ladder.r11_persistent import TILES as RUNG11_TILES

    chosen = options.get("tiles")
    narrow = chosen is not None and (chosen.bm, chosen.bn) == NARROW_TILES
    bm, bn = (chosen.bm, chosen.bn) if chosen is not None and not narrow else (RUNG11_TILES.bm, RUNG11_TILES.bn)
    planned = row64_time_ns(M, N, K, ctas, bm, bn)
    if narrow:                          # no k-iteration figure of theirs in the file: the whole tiles' time over
        planned /= narrow_gain          # the narrow tiles' predicted gain on them, as the plan weighed them
    k_share = -(-(-(-M // RUNG11_TILES.bm) * -(-N // RUNG11_TILES.bn) * -(-K // 64)) // ctas)
    credited = rung == "12" and k_share >= ROW64_MIN_SHARE
    if credited:
        planned /= split_gain
    off = sum(1 for halves in (K, N) if (2 * halves) % ROW_ALIGN_BYTES)
    charge = ROW64_UNALIGNED_SPEED ** off
    whole = ([(bm64, bn64, stages, 1) for bm64, bn64, stages in ROW64_TILES]       # one consumer each
             + [t for t in WIDE_TILES if -(-M // t[0]) * -(-N // t[1]) <= ctas])     # in one wave only
    best = min((row64_time_ns(M, N, K, ctas, bm_t, bn_t) / charge, "11", bm_t, bn_t, stages, consumers)
               for bm_t, bn_t, stages, consumers in whole)
    splits = [(time / charge, "12", bm_s, bn_s, stages, consumers) for bm_s, bn_s, stages, consumers in SPLIT_TILES
              if (time := split_time_ns(M, N, K, ctas, bm_s, bn_s)) is not None]
    splits += [(time / charge, "12 apart", bm_s, bn_s, stages, consumers)
               for bm_s, bn_s, stages, consumers in APART_TILES
               if (time := apart_time_ns(M, N, K, ctas, bm_s, bn_s)) is not None]
    if splits and min(splits)[0] <= best[0] * (1 - ROW64_MARGIN):      # the split must beat the 64-row tiles too
        best = min(splits)
    time, new_rung, bm_new, bn_new, stages, consumers = best
    # Against rung 12's stream-K in its one part-empty wave, split apart is taken up to APART_OVER_STREAMK slower in
    # the model: the same cut of K, but aligned (see APART_OVER_STREAMK).
    over_streamk = (credited and new_rung == "12 apart"
                    and -(-M // RUNG11_TILES.bm) * -(-N // RUNG11_TILES.bn) < ctas)
    if time > planned * (1 + APART_OVER_STREAMK if over_streamk else 1 - ROW64_MARGIN):
        return None
    tiles = replace(RUNG11_TILES, bm=bm_new, bn=bn_new, stages=stages)
    planned_on = f"{NARROW_TILES[0]}x{NARROW_TILES[1]}" if narrow else f"{bm}x{bn}"
    planned_text = (f"{planned / 1e3:.1f} us for {'rung 12' if credited else f'rung 11 on {planned_on} tiles'}"
                    f"{' (charged for rows off 128-byte boundaries)' if off else ''}"
                    f"{f'; in one wave split apart is taken up to {APART_OVER_STREAMK:.0%} slower than stream-K, whose ranges straddle tiles' if over_streamk else ''}.")
    if new_rung.startswith("12"):
        apart = new_rung == "12 apart"
        tile_count = -(-M // bm_new) * -(-N // bn_new)     # split apart's grid: a whole number of CTAs per tile
        pieces = ctas // tile_count if apart else -(-ctas // tile_count)
        options = {"cluster_m": 1, "consumers": consumers, "tiles": tiles, "super_mn": RUNG11_SPLIT_SUPER,
                   "sk_waves": 0} | ({"apart": True} if apart else {})
        added = ", each tile's CTAs adding its pieces together," if apart else ""
        return "12", options, (f"rung 12 cutting each {bm_new}x{bn_new} tile by K into {pieces} pieces{added} takes "
                               f"{time / 1e3:.1f} us in the model against {planned_text}")
    one_wave = -(-M // bm_new) * -(-N // bn_new) <= ctas
    options = {"cluster_m": 1, "consumers": consumers, "tiles": tiles,
               "super_mn": ONE_WAVE_SUPER if one_wave else (8, 2)}
    each = "one consumer warpgroup each" if consumers == 1 else f"{consumers} consumer warpgroups each"
    return "11", options, (f"{bm_new}x{bn_new} tiles, {each}, take {time / 1e3:.1f} us in the "
                           f"model against {planned_text}")


def _launch_planned(a, b, c):
    """Launch what :func:`plan` picks for this product's shape, as ``gemm(a, b, out=c)`` does on Hopper."""
    (M, K), N = a.shape, b.shape[1]
    return plan(M, N, K).launch(a, b, c)


def planned_rung():
    """gemm()'s choice per shape as a rung of its own (id "plan"), so that ``hgemm-course bench plan`` verifies
    and times exactly what gemm() runs, beside cuBLAS like any rung."""
    from .ladder import Rung
    from .ladder.r12_streamk import NEEDS

    return Rung(id="plan", slug="plan", title="gemm()'s plan: rung 11 or 12 per shape",
                idea="the waves model picks rung 11 or rung 12 (and its split, and rung 11's clusters) per shape",
                backend="nvrtc", launch=_launch_planned, needs=NEEDS, multiple_n=8, multiple_k=8)
