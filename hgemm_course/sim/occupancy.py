"""CTAs per SM on sm_90 (H100/H200), by the rules of the CUDA occupancy calculator.

The rules (``cuda_occupancy.h``, compute capability 9.0, default shared-memory carveout):

- threads: at most 2048 per SM, 1024 per CTA; a CTA holds ceil(threads / 32) warps
  and at most 64 warps fit an SM;
- at most 32 CTAs per SM;
- registers: 64K per SM in 4 sub-partitions of 16K. A warp gets
  ``regs_per_thread * 32`` rounded up to 256 (so regs_per_thread rounds up to a multiple
  of 8); each sub-partition holds ``16384 // regs_per_warp`` warps; at most 255 per thread
  and 64K per CTA, where the hardware check rounds the CTA's warps up to a multiple of 4;
- shared memory: 228 KB (233472 bytes) per SM. Each CTA gets its static + dynamic shared
  memory plus 1 KB the driver reserves, rounded up to 128 bytes; a CTA may use at most
  227 KB (232448 bytes) of its own (above 48 KB only with
  ``cudaFuncAttributeMaxDynamicSharedMemorySize``).
"""
from __future__ import annotations

from ..library.target import RECORDED, Target

H200 = {
    "max_threads_per_sm": RECORDED.threads_per_sm,
    "max_threads_per_cta": 1024,
    "max_ctas_per_sm": 32,
    "warp_size": 32,
    "regs_per_sm": 65536,
    "regs_per_cta": 65536,
    "reg_sub_partitions": 4,
    "reg_alloc_unit": 256,
    "max_regs_per_thread": 255,
    "smem_per_sm": RECORDED.smem_per_sm,
    "max_smem_per_cta": RECORDED.smem_per_block,
    "smem_reserved_per_cta": 1024,
    "smem_alloc_unit": 128,
}


def hardware_of(t: Target) -> dict:
    """:data:`H200`'s rules with a target's own threads, registers and shared memory per SM and per CTA (the
    calculator's other rules are the same from sm_80 to sm_120), as keyword overrides for the functions here."""
    return {**H200, "max_threads_per_sm": t.threads_per_sm, "regs_per_sm": t.regs_per_sm,
            "smem_per_sm": t.smem_per_sm, "max_smem_per_cta": t.smem_per_block}


def _round_up(x, unit):
    return -(-x // unit) * unit


def occupancy_report(threads, regs_per_thread, smem_bytes, **hardware) -> dict:
    """CTAs per SM and what limits them, for a CTA of ``threads`` threads using ``regs_per_thread``
    registers and ``smem_bytes`` of shared memory (static + dynamic).

    ``hardware`` overrides entries of :data:`H200`. Returns ``{'ctas_per_sm', 'limited_by',
    'limits': {'threads', 'ctas', 'registers', 'shared_memory'}, 'warps_per_sm', 'occupancy',
    'regs_per_warp', 'smem_per_cta'}``; ``limited_by`` lists every limit equal to the result.
    Raises ValueError, naming the fix, for a CTA that cannot launch at all.
    """
    hw = {**H200, **hardware}
    unknown = set(hardware) - set(H200)
    if unknown:
        raise ValueError(f"unknown hardware settings {sorted(unknown)}; known: {sorted(H200)}")
    if not 1 <= threads <= hw["max_threads_per_cta"]:
        raise ValueError(f"threads={threads}: a CTA has 1 to {hw['max_threads_per_cta']} threads; "
                         "split the work over more CTAs")
    if not 0 <= regs_per_thread <= hw["max_regs_per_thread"]:
        raise ValueError(f"regs_per_thread={regs_per_thread}: at most {hw['max_regs_per_thread']} registers per "
                         "thread; anything above spills, so shrink the per-thread tile")
    if not 0 <= smem_bytes <= hw["max_smem_per_cta"]:
        raise ValueError(f"smem_bytes={smem_bytes}: a CTA may use at most {hw['max_smem_per_cta']} bytes "
                         f"({hw['max_smem_per_cta'] // 1024} KB) of shared memory; use fewer pipeline stages "
                         "or smaller tiles")
    warps = -(-threads // hw["warp_size"])
    regs_per_warp = _round_up(regs_per_thread * hw["warp_size"], hw["reg_alloc_unit"])
    if regs_per_warp * _round_up(warps, hw["reg_sub_partitions"]) > hw["regs_per_cta"]:
        raise ValueError(f"{threads} threads x {regs_per_thread} registers need "
                         f"{regs_per_warp * _round_up(warps, hw['reg_sub_partitions'])} registers, more than the "
                         f"{hw['regs_per_cta']} a CTA may hold; use __launch_bounds__({threads}) or fewer threads")
    smem_per_cta = _round_up(smem_bytes + hw["smem_reserved_per_cta"], hw["smem_alloc_unit"])
    limits = {
        "threads": (hw["max_threads_per_sm"] // hw["warp_size"]) // warps,
        "ctas": hw["max_ctas_per_sm"],
        "registers": ((hw["regs_per_sm"] // hw["reg_sub_partitions"]) // regs_per_warp * hw["reg_sub_partitions"]
                      // warps) if regs_per_warp else hw["max_ctas_per_sm"],
        "shared_memory": hw["smem_per_sm"] // smem_per_cta,
    }
    ctas = min(limits.values())
    warps_per_sm = ctas * warps
    return {
        "ctas_per_sm": ctas,
        "limited_by": [name for name, value in limits.items() if value == ctas],
        "limits": limits,
        "warps_per_sm": warps_per_sm,
        "occupancy": warps_per_sm / (hw["max_threads_per_sm"] // hw["warp_size"]),
        "regs_per_warp": regs_per_warp,
        "smem_per_cta": smem_per_cta,
    }


def ctas_per_sm(threads, regs_per_thread, smem_bytes, **hardware) -> int:
    """CTAs of this shape resident on one SM at once (what ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` says)."""
    return occupancy_report(threads, regs_per_thread, smem_bytes, **hardware)["ctas_per_sm"]
