"""CTAs per SM, against a slow twin that packs CTAs onto an SM one at a time."""
import itertools

import pytest

from hgemm_course.sim.occupancy import H200, ctas_per_sm, occupancy_report


def slow_ctas_per_sm(threads, regs, smem):
    """Add CTAs while warps, CTA slots, shared memory and each sub-partition's registers have room."""
    warps = -(-threads // 32)
    regs_per_warp = -(-regs * 32 // 256) * 256
    smem_per_cta = -(-(smem + 1024) // 128) * 128
    sub_partition_free = [16384] * 4
    placed = 0
    while True:
        if (placed + 1) * warps > 64 or placed + 1 > 32 or (placed + 1) * smem_per_cta > 233472:
            return placed
        trial = list(sub_partition_free)
        for _ in range(warps):  # each warp goes to the sub-partition with the most registers free
            best = max(range(4), key=lambda p: trial[p])
            if trial[best] < regs_per_warp:
                return placed
            trial[best] -= regs_per_warp
        sub_partition_free = trial
        placed += 1


def test_agrees_with_slow_twin():
    for threads, regs, smem in itertools.product([32, 96, 128, 256, 384, 512, 1024], [16, 32, 40, 64, 96, 128, 168, 255],
                                                 [0, 1000, 16384, 48 * 1024, 70000, 113 * 1024, 200000, 232448]):
        try:
            got = ctas_per_sm(threads, regs, smem)
        except ValueError:
            assert threads * -(-regs // 8) * 8 > 65536
            continue
        assert got == slow_ctas_per_sm(threads, regs, smem), (threads, regs, smem)


def test_shared_memory_cliff():
    # two CTAs of 113 KB + 1 KB reservation fill 228 KB exactly; one more byte leaves room for one
    assert ctas_per_sm(128, 64, 113 * 1024) == 2
    assert ctas_per_sm(128, 64, 113 * 1024 + 1) == 1
    report = occupancy_report(128, 64, 113 * 1024 + 1)
    assert report["limited_by"] == ["shared_memory"] and report["smem_per_cta"] == 114 * 1024 + 128


def test_register_sub_partitions():
    # 96 registers: 3072 per warp, 5 warps per 16K sub-partition -> 20 warps, not 64K / 3072 = 21
    assert occupancy_report(32, 96, 0)["limits"]["registers"] == 20
    assert occupancy_report(128, 168, 0)["limits"]["registers"] == 3
    assert occupancy_report(128, 33, 0)["regs_per_warp"] == 40 * 32


def test_thread_and_block_limits():
    assert ctas_per_sm(1024, 32, 0) == 2
    assert ctas_per_sm(32, 16, 0) == 32
    assert occupancy_report(32, 16, 0)["limited_by"] == ["ctas"]


@pytest.mark.parametrize("args, fix", [
    ((1025, 32, 0), "split the work"), ((128, 256, 0), "shrink the per-thread tile"),
    ((128, 32, 232449), "fewer pipeline stages"), ((1024, 72, 0), "__launch_bounds__")])
def test_impossible_inputs_name_the_fix(args, fix):
    with pytest.raises(ValueError, match=fix):
        ctas_per_sm(*args)


def test_hardware_overrides():
    assert ctas_per_sm(128, 64, 100 * 1024, smem_per_sm=164 * 1024, max_smem_per_cta=163 * 1024) == 1
    with pytest.raises(ValueError, match="unknown hardware"):
        ctas_per_sm(128, 64, 0, sm_count=132)
    assert H200["smem_per_sm"] == 233472
