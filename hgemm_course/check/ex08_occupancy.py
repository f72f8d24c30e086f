"""Checker for ex08_occupancy: CTAs per SM on the H200, against
``hgemm_course.sim.occupancy.ctas_per_sm`` (which agrees with
``cudaOccupancyMaxActiveBlocksPerMultiprocessor``).

Checked on the course's own kernel shapes, on the corners of each limit, and on random
CTAs over the whole launchable domain (1-1024 threads, 1-255 registers, 0-227 KB of shared
memory). A wrong answer is explained with the four limits worked out for that CTA and,
where the learner's number is what one well-known slip gives, with that slip named.
"""
from __future__ import annotations

import random

from .feedback import Exercise, Learner, as_int, format_call, mismatch, passed_message

FUNCTION = "ctas_per_sm"
RANDOM_CASES = 4000
MAX_SMEM_PER_CTA = 232448
# (threads, regs_per_thread, smem_bytes): course kernels, then limit corners.
CASES = [(1024, 32, 0), (256, 64, 0), (128, 255, 0), (128, 168, 98304), (384, 168, 229376),
         (256, 128, 65536), (128, 96, 32768), (128, 100, 0), (96, 40, 0), (100, 32, 0), (33, 16, 0),
         (128, 200, 0), (64, 72, 0), (32, 255, 0), (1, 1, 0), (128, 32, 7 * 1024), (128, 32, 31 * 1024),
         (128, 32, 32 * 1024), (128, 32, 56 * 1024 + 1), (64, 32, 113 * 1024), (64, 32, MAX_SMEM_PER_CTA),
         (128, 32, 100), (128, 32, 6 * 1024 + 64), (32, 32, 45576)]
# Slips worth naming: (hardware the slip amounts to, what to say), the narrowest first.
SLIPS = [
    ({"smem_alloc_unit": 1}, "This is the answer without shared-memory granularity: each CTA's share "
                             "(with the 1 KB reserve) is rounded up to 128 bytes."),
    ({"smem_reserved_per_cta": 0}, "This is the answer without the 1 KB of shared memory the driver reserves "
                                   "per CTA: add 1024 bytes to each CTA's shared memory before dividing."),
    ({"reg_alloc_unit": 1}, "This is the answer without register granularity: a warp's registers "
                            "(regs_per_thread * 32) are allocated in whole units of 256."),
    ({"reg_sub_partitions": 1}, "This is the answer with the 64K registers as one pool: they sit in 4 "
                                "sub-partitions of 16K, and a warp cannot span two, so count warps per "
                                "sub-partition (16384 // registers per warp) and multiply by 4."),
    ({"max_ctas_per_sm": 10**6}, "This is the answer without the hardware's cap of 32 CTAs per SM."),
]


def _cases() -> list[tuple[int, int, int]]:
    rng = random.Random(8)
    cases = list(CASES)
    while len(cases) < len(CASES) + RANDOM_CASES:
        threads = rng.choice([rng.randint(1, 1024), 32 * rng.randint(1, 32)])
        regs = rng.randint(1, 255)
        smem = rng.choice([0, rng.randint(0, MAX_SMEM_PER_CTA), 1024 * rng.randint(0, 227)])
        if _launches(threads, regs, smem):
            cases.append((threads, regs, smem))
    return cases


def _launches(threads: int, regs: int, smem: int) -> bool:
    from ..sim import occupancy_report
    try:
        occupancy_report(threads, regs, smem)
    except ValueError:
        return False  # e.g. 1024 threads x 255 registers: more than a CTA may hold
    return True


def verify(learner: Learner) -> str:
    from ..sim import ctas_per_sm

    cases = _cases()
    learner.plan([{"threads": threads, "regs_per_thread": regs, "smem_bytes": smem} for threads, regs, smem in cases])
    for threads, regs, smem in cases:
        args = {"threads": threads, "regs_per_thread": regs, "smem_bytes": smem}
        call = format_call(FUNCTION, args)
        got = as_int(learner(**args), call, args, "an int (CTAs per SM)")
        expected = int(ctas_per_sm(threads, regs, smem))
        if got != expected:
            raise mismatch(call, args, expected, got, _explain(threads, regs, smem, got))
    return passed_message(len(cases), "threads, CTA slots, registers (with their granularity) and shared "
                          "memory (with the per-CTA reserve) all limit as on the H200")


def _explain(threads: int, regs: int, smem: int, got: int) -> str:
    from ..sim import H200, occupancy_report

    report = occupancy_report(threads, regs, smem)
    limits = report["limits"]
    warps = -(-threads // H200["warp_size"])
    lines = [
        f"The four limits for this CTA ({warps} warp{'s' * (warps > 1)}, {report['regs_per_warp']} registers per warp, "
        f"{report['smem_per_cta']} bytes of shared memory with the reserve):",
        f"  CTA slots:     {limits['ctas']}",
        f"  threads:       {H200['max_threads_per_sm'] // H200['warp_size']} warps // {warps} = {limits['threads']}",
        f"  registers:     4 x (16384 // {report['regs_per_warp']}) warps // {warps} = {limits['registers']}",
        f"  shared memory: {H200['smem_per_sm']} // {report['smem_per_cta']} = {limits['shared_memory']}",
        f"The smallest, {report['ctas_per_sm']}, is set by {' and '.join(report['limited_by'])}.",
    ]
    for hardware, slip in SLIPS:
        try:
            slipped = occupancy_report(threads, regs, smem, **hardware)["ctas_per_sm"]
        except (ValueError, ZeroDivisionError):
            continue  # this slip cannot even produce an answer here
        if slipped == got:
            lines.append(slip)
            break
    return "\n".join(lines)


EXERCISE = Exercise(
    name="ex08_occupancy",
    function=FUNCTION,
    description="Occupancy: CTAs per SM on the H200 from threads, registers and shared memory.",
    verify=verify,
)
