import re

import pytest

from hgemm_course.library.ladder import Rung, get, registry


def test_registry_is_ordered_and_matches_module_names():
    rungs = registry()
    ids = list(rungs)
    assert ids == sorted(ids)
    assert ids[:2] == ["01", "02"]
    for rid, rung in rungs.items():
        assert re.fullmatch(r"\d\d[a-z]?", rid)
        assert rung.kernel_path is not None and rung.kernel_path.is_file(), rung
        assert rung.kernel_path.name.startswith(f"k{rid}_{rung.slug}")


@pytest.mark.parametrize("key", ["01", 1, "1", "01_naive"])
def test_get_accepts_the_usual_spellings(key):
    assert get(key).slug == "naive"


def test_unknown_rung_lists_the_ladder():
    with pytest.raises(ValueError, match="The ladder has: 01, 02"):
        get("99")


def test_check_shape_names_the_multiple_needed():
    rung = Rung(id="99", slug="demo", title="t", idea="i", backend="nvrtc", launch=lambda a, b, c: None,
                multiple_m=128, multiple_k=8)
    rung.check_shape(256, 100, 64)
    with pytest.raises(ValueError, match=r"K=1004 is not a multiple of 8: rung 99 \(demo\) needs K % 8 == 0.*K=1008"):
        rung.check_shape(256, 100, 1004)
    with pytest.raises(ValueError, match="M=200 is not a multiple of 128.*Pad the matrix to M=256"):
        rung.check_shape(200, 64, 64)
    with pytest.raises(ValueError, match="at least 1"):
        rung.check_shape(0, 64, 64)


def test_every_rung_has_its_chapter_notebook():
    from hgemm_course.library.paths import REPO_ROOT

    if REPO_ROOT is None:
        pytest.skip("installed from a wheel: the chapters are not packaged")
    missing = [r.chapter for r in registry().values() if not (REPO_ROOT / r.chapter).is_file()]
    assert not missing, f"rungs without their chapter notebook: {missing}"


@pytest.mark.parametrize("module_name", ["r04_mma_sync", "r05_swizzle", "r06_supertile"])
def test_whole_tiles_get_the_instantiation_without_tail_guards(module_name):
    from importlib import import_module

    from hgemm_course.library.ladder.nvrtc_kernel import launched_kernel

    module = import_module(f"hgemm_course.library.ladder.{module_name}")
    t = module.TILES
    assert launched_kernel(module, 4 * t.bm, 2 * t.bn, 3 * t.bk).name_expression.endswith(", true>")
    for tail in ((4 * t.bm + 8, 2 * t.bn, 3 * t.bk), (4 * t.bm, 2 * t.bn - 8, 3 * t.bk), (4 * t.bm, 2 * t.bn, 3 * t.bk + 8)):
        assert launched_kernel(module, *tail).name_expression.endswith(", false>"), tail
    assert {module.kernel_for(t.bm, t.bn, t.bk).name_expression,
            module.kernel_for(t.bm + 8, t.bn, t.bk).name_expression} == set(module.RUNG.name_expressions)


@pytest.mark.parametrize("module", ("r04_mma_sync", "r05_swizzle", "r06_supertile"))
def test_copy_steps_that_overflow_an_int_are_refused(module):
    """Rungs 04-06 step their copies by 32-bit offsets: a K or N that would overflow them is refused."""
    from importlib import import_module

    kernel_for = import_module(f"hgemm_course.library.ladder.{module}").kernel_for
    kernel_for(8192, 8192, 8192)
    with pytest.raises(ValueError, match="too large for rungs 04-06"):
        kernel_for(256, 256, 2**24)
    with pytest.raises(ValueError, match="too large for rungs 04-06"):
        kernel_for(256, 2**26, 64)
