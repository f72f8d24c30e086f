"""chapter_skinny: chapter 13's tables cut to a few shapes, swap-AB's count of the wgmma rows a small M fills, and
gemm()'s recorded rows where no GPU times it."""
import pytest

from hgemm_course.course import chapter_skinny as cs
from hgemm_course.course import small_skinny as ss
from hgemm_course.viz import vendor_sweep_data


def test_swap_ab_fills_the_products_a_small_m_leaves_empty():
    assert cs.wgmma_rows_used(16) == {"m": 16, "direct_rows": 64, "direct_used": 0.25, "swapped_width": 16,
                                      "swapped_used": 1.0}
    assert cs.wgmma_rows_used(100)["direct_rows"] == 128 and cs.wgmma_rows_used(100)["swapped_width"] == 104
    assert cs.wgmma_rows_used(64)["direct_used"] == cs.wgmma_rows_used(64)["swapped_used"] == 1.0


def test_every_family_has_a_chapter_name():
    assert {f for f, _ in ss.FAMILIES} == set(cs.FAMILY_NAMES)
    assert not any("split apart" in name for name in cs.FAMILY_NAMES.values())


def test_show_families_prints_only_the_shapes_asked(capsys):
    _, probe = ss.recorded_probe(ss.APART_PROBE)
    rows = cs.show_families(probe, [(256, 256, 65536), (16, 4096, 4096)])
    assert sorted(tuple(r["shape"]) for r in rows) == [(16, 4096, 4096), (256, 256, 65536)]
    assert "1536x1536x1536" not in capsys.readouterr().out


def test_vendor_tiles_put_a_small_m_on_cublaslts_narrow_side():
    pairs = cs.show_vendor_tiles([(16, 4096, 4096)])
    if not pairs:
        pytest.skip("no recorded profiles at 16x4096x4096")
    assert pairs[0]["cublaslt"]["tile"][0] == 16 and pairs[0]["plan"]["tile"][0] == 64


def test_time_or_show_prints_the_recorded_rows_without_a_gpu(capsys, monkeypatch):
    from hgemm_course.library import target

    monkeypatch.setattr(target, "runnable", lambda: None)
    rows = cs.time_or_show([(256, 256, 65536), (16, 4096, 4096)], vendor_sweep_data())
    out = capsys.readouterr().out
    assert [(r["M"], r["N"], r["K"]) for r in rows] == [(256, 256, 65536), (16, 4096, 4096)]
    assert "RECORDED on the NVIDIA H200" in out and "host us" in out
