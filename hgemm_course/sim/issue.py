"""Why mma.sync stops where it does: one GEMM warp's k-step against an SM's pipes.

Per k-step (k = 16), a warp holding a (WM, WN) fp32 accumulator tile issues FRAG_M x FRAG_N
``mma.sync.m16n8k16`` (FRAG_M = WM / 16, FRAG_N = WN / 8; each is 16 x 8 x 16 = 2048 FMAs,
4096 flops) and, when fed by ldmatrix as rungs 04-07 are, FRAG_M ``ldmatrix.x4`` (A) and
FRAG_N / 2 ``ldmatrix.x4.trans`` (B): (WM x 16 + 16 x WN) halves read from shared memory.
An SM has ``schedulers`` sub-partitions, each issuing one instruction per cycle into its own
tensor pipe; warp w runs on sub-partition w % 4, so the busiest holds ceil(warps / 4) warps.
The cycles one SM needs for a k-step of all its warps, limit by limit:

  tensor_pipe      busiest x mmas x 4096 / (tensor_flops_per_clk / schedulers)
  mma_sync         busiest x mmas x mma_cycles
  dependent_issue  mmas x mma_warp_interval          (the warps wait side by side)
  issue            busiest x (mmas + ldmatrix + other_per_k_step)
  shared_memory    warps x (WM x 16 + 16 x WN) x 2 / ldmatrix_bytes_per_clk    (ldmatrix feed)

Each limit in TFLOP/s is the k-step's warps x 2 x WM x WN x 16 flops over its cycles, times the
clock and the SMs; the smallest binds. The pipes are taken to overlap perfectly: a warp issues
while the others wait (tests/test_sim_issue.py checks this against a cycle-by-cycle twin).

The settings (:data:`ISSUE_H200`):

- ``tensor_flops_per_clk`` = 4096 per SM (1024 per sub-partition: an m16n8k16 every 4 cycles).
  The datasheet's 989.4 TFLOP/s dense fp16 is 132 SMs x 4096 x 1.83 GHz exactly: NVIDIA quotes
  tensor throughput at 1.83 GHz (its FP32 figure, 67 TFLOP/s, is 132 x 128 lanes x 2 x 1.98 GHz).
  Divided by the 1.98 GHz boost clock instead, 989.4 would give 3786 flop/clk, not a whole
  number of FMAs per cycle.
- ``mma_cycles``, ``mma_warp_interval``, ``ldmatrix_bytes_per_clk`` are not documented. Their
  defaults are fitted (least worst-case error) to the mma.sync bounds `hgemm-course ceilings`
  measured on the H200 (results/ceilings_nvidia-h200_20261201T053747.json), each at the SM clock
  that run measured: ``mma_cycles`` = 6.2 (a sub-partition sustains one mma.sync per 6.2 cycles,
  about two thirds of its tensor pipe's rate: 8 warps of 64x64 and 16 of 64x32 both read about
  650 TFLOP/s from registers; wgmma, which cuBLAS uses, gets more); ``mma_warp_interval`` = 6.5
  (one warp alone on its sub-partition issues an mma.sync every 6.5 cycles: 4 warps of 64x64
  read 584); ``ldmatrix_bytes_per_clk`` = 112 (of the nominal 128: 32 banks x 4 bytes; 16 warps
  of 64x32 fed by ldmatrix read 561 where registers give 648). With these, seven of the eight
  measured configurations agree within 3%. The model misses one: 4 warps of 64x64 fed by
  ldmatrix measured 511 where it predicts 603, since with one warp per sub-partition the
  latency of each ldmatrix is exposed, and the model counts throughput, not latency.
- ``other_per_k_step`` = 4: address arithmetic and loop bookkeeping, from the PTX of
  kernels/ceilings.cu. Issue binds none of the course's tiles.
"""
from __future__ import annotations

import numpy as np
from .cache import cached_njit

FEEDS = ("registers", "ldmatrix")
LIMITS = ("tensor_pipe", "mma_sync", "dependent_issue", "issue", "shared_memory")
MMA_FLOPS = 2 * 16 * 8 * 16          # one mma.sync.m16n8k16: 2048 FMAs

ISSUE_H200 = {
    "clock_ghz": 1.98,               # boost clock
    "sm_count": 132,
    "schedulers": 4,                 # sub-partitions per SM, one scheduler and tensor pipe each
    "tensor_flops_per_clk": 4096,    # per SM, dense fp16 with fp32 accumulation
    "mma_cycles": 6.2,               # fitted: sub-partition cycles per mma.sync
    "mma_warp_interval": 6.5,        # fitted: cycles between one warp's mma.sync
    "other_per_k_step": 4,           # address and loop instructions per warp and k-step
    "ldmatrix_bytes_per_clk": 112.0, # fitted: shared-memory bytes per SM cycle beside mma.sync
}


@cached_njit()
def k_step_cycles(warps_per_sm, wm, wn, ldmatrix, schedulers, tensor_flops_per_clk, mma_cycles,
                  mma_warp_interval, other_per_k_step, ldmatrix_bytes_per_clk):
    """Cycles one SM needs for one k-step of all its warps, per limit, in :data:`LIMITS` order."""
    frag_m = wm // 16
    frag_n = wn // 8
    mmas = frag_m * frag_n
    loads = frag_m + frag_n // 2 if ldmatrix else 0
    busiest = (warps_per_sm + schedulers - 1) // schedulers
    out = np.zeros(5)
    out[0] = busiest * mmas * MMA_FLOPS / (tensor_flops_per_clk / schedulers)
    out[1] = busiest * mmas * mma_cycles
    out[2] = mmas * mma_warp_interval
    out[3] = busiest * (mmas + loads + other_per_k_step)
    if ldmatrix:
        out[4] = warps_per_sm * (wm * 16 + 16 * wn) * 2 / ldmatrix_bytes_per_clk
    return out


def mma_sync_bound(warps_per_sm: int, warp_tile, feed: str = "registers", **hardware) -> dict:
    """The mma.sync throughput of ``warps_per_sm`` warps of ``warp_tile`` = (WM, WN) per SM, fed
    from registers or by ldmatrix, with no global traffic (kernels/ceilings.cu's ``mma_bound``).

    ``hardware`` overrides entries of :data:`ISSUE_H200`. Returns ``{'warps_per_sm', 'warp_tile',
    'feed', 'flops_per_k_step', 'cycles': {limit: per SM k-step}, 'tflops': {limit: TFLOP/s},
    'bound', 'bound_tflops'}``; a limit that does not apply (shared memory when fed from
    registers) is left out.
    """
    hw = {**ISSUE_H200, **hardware}
    unknown = set(hardware) - set(ISSUE_H200)
    if unknown:
        raise ValueError(f"unknown hardware settings {sorted(unknown)}; known: {sorted(ISSUE_H200)}")
    wm, wn = (int(x) for x in warp_tile)
    if feed not in FEEDS:
        raise ValueError(f"feed={feed!r}: the fragments come from {' or '.join(map(repr, FEEDS))}")
    if wm <= 0 or wn <= 0 or wm % 16 or wn % 16:
        raise ValueError(f"warp tile {wm}x{wn}: both sides must be multiples of 16 (m16 fragments of A, "
                         "pairs of n8 fragments of B per ldmatrix.x4.trans)")
    if not 1 <= warps_per_sm <= 64:
        raise ValueError(f"warps_per_sm={warps_per_sm}: an sm_90 SM holds 1 to 64 warps")
    cycles = k_step_cycles(warps_per_sm, wm, wn, feed == "ldmatrix", hw["schedulers"], hw["tensor_flops_per_clk"],
                           hw["mma_cycles"], hw["mma_warp_interval"], hw["other_per_k_step"],
                           hw["ldmatrix_bytes_per_clk"])
    flops = warps_per_sm * 2 * wm * wn * 16
    per_cycle_to_tflops = hw["clock_ghz"] * 1e9 * hw["sm_count"] / 1e12
    applies = [name for name, c in zip(LIMITS, cycles) if c > 0]
    tflops = {name: flops / cycles[LIMITS.index(name)] * per_cycle_to_tflops for name in applies}
    bound = min(tflops, key=tflops.get)
    return {"warps_per_sm": warps_per_sm, "warp_tile": [wm, wn], "feed": feed, "flops_per_k_step": flops,
            "cycles": {name: float(cycles[LIMITS.index(name)]) for name in applies}, "tflops": tflops,
            "bound": bound, "bound_tflops": tflops[bound]}


def compare_with_measured(records, **hardware) -> list[dict]:
    """Model beside measurement for each ``mma_sync_bound`` record (a ``hgemm-course ceilings`` run's, which the
    caller reads: a model reads no records), at the SM clock the run measured where it did.

    One row per record: ``{'warps_per_sm', 'warp_tile', 'feed', 'measured_tflops',
    'model_tflops', 'bound', 'model_over_measured', 'clock_ghz'}``.
    """
    rows = []
    for r in records:
        settings = {"clock_ghz": r["clock_ghz"]} if r.get("clock_ghz") else {}
        model = mma_sync_bound(r["warps_per_sm"], r["warp_tile"], r["feed"], **{**settings, **hardware})
        rows.append({"warps_per_sm": r["warps_per_sm"], "warp_tile": list(r["warp_tile"]), "feed": r["feed"],
                     "measured_tflops": r["tflops"], "model_tflops": model["bound_tflops"], "bound": model["bound"],
                     "model_over_measured": model["bound_tflops"] / r["tflops"],
                     "clock_ghz": settings.get("clock_ghz", hardware.get("clock_ghz", ISSUE_H200["clock_ghz"]))})
    return rows



def gemm_floor_cycles(M: int, N: int, K: int, tile, warps_per_sm: int, warp_tile, feed: str = "ldmatrix",
                      ctas_per_sm: int = 1, **hardware) -> dict:
    """The fewest SM cycles an M x N x K GEMM can take on mma.sync with this tiling: every SM computes its
    waves of (bm, bn) CTA tiles (``ctas_per_sm`` at a time) at :func:`mma_sync_bound`'s rate for the warps
    and warp tile, with nothing else in the way (no copies, barriers or epilogue). A count of cycles, so a
    kernel's profiled cycles compare with it whatever clock either ran at.

    Returns ``{'cycles', 'waves', 'tiles', 'flops_per_clk'}`` (flops per SM cycle at the bound)."""
    hw = {**ISSUE_H200, **hardware}
    bm, bn = (int(x) for x in tile)
    bound = mma_sync_bound(warps_per_sm, warp_tile, feed, **hardware)
    flops_per_clk = bound["flops_per_k_step"] / bound["cycles"][bound["bound"]]
    tiles = -(-M // bm) * -(-N // bn)
    slots = hw["sm_count"] * ctas_per_sm
    waves = -(-tiles // slots)
    # a wave's SM runs ctas_per_sm tiles side by side, sharing the SM's rate
    cycles = waves * ctas_per_sm * 2 * bm * bn * K / flops_per_clk
    return {"cycles": cycles, "waves": waves, "tiles": tiles, "flops_per_clk": flops_per_clk}
