"""ex08_occupancy: the classic occupancy slips are caught and named."""
import pytest

from hgemm_course.check import check


def _round_up(x, unit):
    return -(-x // unit) * unit


def make(*, reserve=1024, reg_unit=256, sub_partitions=4, cap=32, smem_unit=128, warps_of=None):
    def ctas_per_sm(threads, regs_per_thread, smem_bytes):
        warps = warps_of(threads) if warps_of else -(-threads // 32)
        regs_per_warp = _round_up(regs_per_thread * 32, reg_unit)
        by_regs = sub_partitions * ((65536 // sub_partitions) // regs_per_warp) // warps
        per_cta = _round_up(smem_bytes + reserve, smem_unit)
        by_smem = 233472 // per_cta if per_cta else cap
        return min(cap, 64 // warps, by_regs, by_smem)
    return ctas_per_sm


def test_right_model_passes():
    assert check("ex08", make()).passed


@pytest.mark.parametrize("slip, named", [
    (dict(reserve=0), "1 KB of shared memory the driver reserves"),
    (dict(reg_unit=32), "allocated in whole units of 256"),
    (dict(sub_partitions=1), "4 sub-partitions of 16K"),
    (dict(smem_unit=1), "rounded up to 128 bytes"),
    (dict(cap=10**6), "cap of 32 CTAs per SM"),
])
def test_slip_is_caught_and_named(slip, named):
    result = check("ex08", make(**slip))
    assert not result.passed
    assert named in result.message
    assert "The four limits for this CTA" in result.message


def test_partial_warps_round_up():
    result = check("ex08", make(warps_of=lambda threads: max(1, threads // 32)))
    assert not result.passed and result.first_failure["input"]["threads"] % 32


def test_float_answer():
    result = check("ex08", lambda threads, regs_per_thread, smem_bytes: 2048 / threads)
    assert not result.passed and "integer division (//)" in result.message
