"""What ``gemm(a, b)`` runs for a shape on a Hopper GPU: rung 11 (whole tiles, a wave at a time) or rung 12
(the last waves divided by K), and how many whole waves rung 12 divides.

The choice is a small model, not a table of timings: :mod:`hgemm_course.sim.waves` counts the waves each
choice makes on this GPU's clusters, in K-iterations, with a fix-up charged per split tile, and the plan takes
rung 12 only where its predicted busy fraction beats rung 11's by more than the model's margin. The recorded
H200 sweeps check the model (``tests/test_plan.py``): where it picks one rung, that rung was not measurably the
slower one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Callable

SK_WAVES_TRIED = (0, 1, 2)      # whole waves rung 12 may divide besides the last, part-empty one
# The model's two costs, fitted to rung 11 and rung 12's sk_waves variants timed on the H200 at six shapes
# (research/fit_streamk_model.py on results/streamk_probe_nvidia-h200_20261201.json): a fix-up costs 3
# K-iterations, and a stream-K iteration 1.2 data-parallel ones (its clusters sit at scattered K offsets, so
# they share less of what they load in L2 than clusters walking neighbouring tiles in step).
PLAN_FIXUP_ITERS = 3.0
PLAN_SK_ITER_COST = 1.2
# Rung 11 pairs its CTAs in clusters that share B by multicast. With at most one wave of CTA tiles every CTA
# computes one tile, and there the H200 ran rung 11 without clusters as fast or faster, timed in pairs with
# cuBLAS (results/tune_nvidia-h200_20261201T142435_6f0d08.json, without / with clusters: 1024^3 66.1% / 59.7%,
# 2048^3 110.0% / 96.0%, 2048x2048x8192 100.1% / 98.9%, 1024x4096x2048 61.2% / 61.7%) and in SM cycles
# (2048^3: 43.2 k / 44.9 k, cuBLAS 43.5 k; results/profiles). Past one wave the two tied (2048x4096x4096 up to
# 8192^3, within 0.7 points), so the rung keeps its clusters there.
ONE_WAVE_CLUSTER_M = 1


@dataclass(frozen=True)
class Plan:
    M: int
    N: int
    K: int
    rung: str                   # "11" or "12"
    options: dict               # the rung's launcher keywords (rung 12: sk_waves; rung 11 in one wave: cluster_m)
    sk_waves: int               # rung 12's best split here, whichever rung runs
    units: int                  # clusters that run at once
    tiles: int                  # cluster tiles of C
    efficiency: dict            # predicted busy fraction of each choice tried, by name
    reason: str                 # one sentence
    launch: Callable = field(compare=False, repr=False, default=None)

    def as_dict(self) -> dict:
        return {k: getattr(self, k)
                for k in ("M", "N", "K", "rung", "options", "sk_waves", "units", "tiles", "efficiency", "reason")}


def units_here() -> int:
    """Clusters of rung 12's kernel that run at once on this GPU (the driver's count), or the H200's 66 without
    a GPU (plans printed on a CPU machine are the H200's)."""
    from . import device
    from .sim.waves import UNITS

    if device.cudasim_enabled() or device.probe_gpu()[0] is None:
        return UNITS
    from .ladder import r11_persistent, r12_streamk

    kern = r12_streamk.kernel()
    return r11_persistent.resident_ctas(kern, r12_streamk.CLUSTER_M) // r12_streamk.CLUSTER_M


def rung11_efficiency(M: int, N: int, units: int) -> float:
    """Rung 11's busy fraction in the same model: its clusters walk the launch positions of whole super tiles
    round-robin and skip those past the grid's edge, so the busiest cluster computes more tiles than an even
    share (the waves' count alone would say 99% at 7168 x 7168, where some clusters get 14 tiles and others 10)."""
    from .ladder.r11_persistent import CLUSTER_M, cta_tiles

    per_cluster = [len(cta_tiles(u * CLUSTER_M, units * CLUSTER_M, M, N)) for u in range(units)]
    tiles = sum(per_cluster)
    return tiles / (units * max(per_cluster))


@lru_cache(maxsize=1024)
def plan(M: int, N: int, K: int, units: int | None = None) -> Plan:
    """The plan for an M x N x K product (cached per shape): rung 11, or rung 12 with the sk_waves whose
    predicted busy fraction is highest, when that beats rung 11's by more than the model's margin. Rung 11 runs
    without clusters when its tiles are at most one wave (ONE_WAVE_CLUSTER_M)."""
    from .ladder import get
    from .ladder.r12_streamk import CLUSTER_M, TILES
    from .sim import waves

    units = units or units_here()
    shape = dict(tile_m=TILES.bm, tile_n=TILES.bn, tile_k=TILES.bk, units=units, cluster_m=CLUSTER_M)
    tiles = waves.schedule(M, N, K, mode="dp", **shape).tiles
    whole = rung11_efficiency(M, N, units)
    split = {sk: waves.schedule(M, N, K, mode="hybrid", sk_waves=sk, fixup_iters=PLAN_FIXUP_ITERS,
                                sk_iter_cost=PLAN_SK_ITER_COST, **shape) for sk in SK_WAVES_TRIED}
    efficiency = {"rung 11": whole} | {f"rung 12, sk_waves={sk}": s.efficiency for sk, s in split.items()}
    best = max(SK_WAVES_TRIED, key=lambda sk: (split[sk].efficiency, -sk))
    gain = split[best].efficiency / whole - 1
    waves_text = f"{tiles} cluster tiles on {units} clusters make {tiles / units:.2f} waves"
    if gain > waves.DP_MARGIN:
        rung, options = "12", {"sk_waves": best}
        reason = (f"{waves_text}; rung 11's whole tiles keep the GPU {whole:.0%} busy, rung 12 dividing the last "
                  f"{'wave' if best == 0 else f'{best + 1} waves'} by K {split[best].efficiency:.0%}.")
    else:
        rung, options = "11", {}
        reason = (f"{waves_text}; rung 11's whole tiles keep the GPU {whole:.0%} busy, and dividing by K would gain "
                  f"{max(gain, 0):.1%}, within the model's {waves.DP_MARGIN:.0%} margin.")
        cta_tiles = -(-M // TILES.bm) * -(-N // TILES.bn)
        if cta_tiles <= units * CLUSTER_M:
            options = {"cluster_m": ONE_WAVE_CLUSTER_M}
            reason = (reason[:-1] + f"; its {cta_tiles} tiles are one wave, one per CTA, where CTAs without clusters "
                      "measured as fast or faster than pairs sharing B.")
    return Plan(M, N, K, rung, options, best, units, tiles, efficiency, reason,
                partial(get(rung).launch, **options))



def _launch_planned(a, b, c) -> None:
    """Launch what :func:`plan` picks for this product's shape, as ``gemm(a, b, out=c)`` does on Hopper."""
    (M, K), N = a.shape, b.shape[1]
    plan(M, N, K).launch(a, b, c)


def planned_rung():
    """gemm()'s choice per shape as a rung of its own (id "plan"), so that ``hgemm-course bench plan`` verifies
    and times exactly what gemm() runs, beside cuBLAS like any rung."""
    from .ladder import Rung

    return Rung(id="plan", slug="plan", title="gemm()'s plan: rung 11 or 12 per shape",
                idea="the waves model picks rung 11 or rung 12 (and its split, and rung 11's clusters) per shape",
                backend="nvrtc", launch=_launch_planned, multiple_n=8, multiple_k=8)
