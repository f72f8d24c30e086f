import pytest

from hgemm_course.measurement import limits
from hgemm_course.library.ladder import r07_tma
from hgemm_course.sim import ctas_per_sm


def test_bk32_under_swizzle128_is_refused_before_any_launch():
    out = limits.bk32_under_swizzle128()
    assert out["refused"]
    assert "bk * 2 == 128" in out["launcher"]
    assert "SWIZZLE_128B" in out["tensormap"] and "64 bytes" in out["tensormap"]


def test_cliff_sizes_straddle_every_model_cliff():
    counts = [ctas_per_sm(128, 16, s) for s in limits.cliff_sizes()]
    for k in range(2, 9):
        assert any(c >= k for c in counts) and any(c == k - 1 for c in counts), k


def test_variants_cover_bn_halved_and_a_stage_sweep_with_budget_refusals():
    labels = dict(limits.variants())
    assert labels["BN halved"].bn == r07_tma.TILES.bn // 2
    over = [t for label, t in limits.variants() if r07_tma.smem_bytes(t) > 227 * 1024]
    assert over, "the sweep should reach past the 227 KiB budget"
    for tiles in over:
        with pytest.raises(ValueError, match="bytes of shared memory"):
            r07_tma.kernel(tiles)


def test_the_occupancy_kernel_needs_nothing_but_shared_memory():
    from hgemm_course.library.build import compile_cuda

    res = compile_cuda(limits.SMEM_ONLY, name_expressions=["smem_only"]).resources_of("smem_only")
    assert res.registers <= 16 and res.smem_static == 0


@pytest.mark.gpu
def test_driver_occupancy_agrees_with_the_model_at_every_cliff():
    out = limits.occupancy_cliff()
    assert out["agree"], [r for r in out["rows"] if r["hardware"] != r["model"]]
