"""ex11_persistent: the persistent walk is checked against sim.cta_order on every CTA of many grids; the
known slips are caught, named, and their effect on C (tiles twice, never, outside) is summed up."""
from pathlib import Path

import pytest

from hgemm_course.check import check
from hgemm_course.check.ex11_persistent import _cases, _cta_counts, launch_order, reference_tiles
from hgemm_course.library.ladder import r11_persistent

ROOT = Path(__file__).resolve().parent.parent


def _walk(cta, num_ctas, grid_m, grid_n, super_m, super_n, *, step=None, skip_holes=True, m_fastest=False,
          one_tile=False):
    """The kernel's loop, with one of the slips switched on."""
    supers_n = -(-grid_n // super_n)
    positions = -(-grid_m // super_m) * supers_n * super_m * super_n
    tiles = []
    for t in range(cta, positions, step or num_ctas):
        sb, inner = divmod(t, super_m * super_n)
        if m_fastest:
            m, n = sb // supers_n * super_m + inner % super_m, sb % supers_n * super_n + inner // super_m
        else:
            m, n = sb // supers_n * super_m + inner // super_n, sb % supers_n * super_n + inner % super_n
        if skip_holes and not (m < grid_m and n < grid_n):
            continue
        tiles.append((m, n))
        if one_tile:
            break
    return tiles


def _learner(**slip):
    def persistent_tiles(cta, num_ctas, grid_m, grid_n, super_m, super_n):
        return _walk(cta, num_ctas, grid_m, grid_n, super_m, super_n, **slip)
    return persistent_tiles


def test_solution_passes():
    result = check("ex11", ROOT / "solutions" / "ex11_persistent.py")
    assert result.passed, str(result)
    assert "cases right" in result.message


def test_untouched_exercise_fails_with_its_hint():
    result = check("ex11")
    assert not result.passed and "persistent_tiles is not written yet" in result.message
    assert "Hint: which launch positions fall to this CTA" in result.message
    assert "Traceback" not in str(result)


def test_reference_is_rung_11s_own_walk():
    """The checker's reference and the rung's Python twin (both from sim.cta_order) agree, on the rung's
    tile size, for the launches the rung makes without clusters (the walk the exercise teaches; with
    clusters of 2 each pair of CTAs walks it over (256, 256) cluster tiles, tests/test_rung11_compile.py)."""
    t = r11_persistent.TILES
    for M, N in ((8192, 8192), (1000, 1000), (257, 136), (8192, 128), (2048, 2048)):
        grid_m, grid_n = -(-M // t.bm), -(-N // t.bn)
        (grid,) = r11_persistent.persistent_grid(M, N, 132, cluster_m=1)
        for cta in (0, 1, grid - 1):
            assert reference_tiles(cta, grid, grid_m, grid_n, *r11_persistent.SUPER) == \
                r11_persistent.cta_tiles(cta, grid, M, N, cluster_m=1)


def test_cases_cover_holes_and_more_ctas_than_positions():
    shapes = _cases()
    assert any(-(-m // sm) * sm != m or -(-n // sn) * sn != n for m, n, sm, sn in shapes)    # partial super tiles
    assert (64, 32, 16, 2) in shapes and (8, 4, 16, 2) in shapes
    positions = len(launch_order(5, 3, 2, 2))
    assert positions == 24 and _cta_counts(positions)[0] == 1 and _cta_counts(positions)[-1] > positions
    assert reference_tiles(30, 29, 5, 3, 2, 2) == []        # a CTA past the positions computes nothing


def test_the_kernels_walk_passes():
    assert check("ex11", _learner()).passed


def test_unit_stride_is_caught():
    result = check("ex11", _learner(step=1))
    assert not result.passed
    assert result.first_failure["input"]["num_ctas"] == 2          # with one CTA the two walks agree
    assert "iteration 1: expected (1, 0), got (0, 1)." in result.message
    assert "that is t += 1" in result.message
    assert "computes 14 tile(s) more than once" in result.message


def test_holes_not_skipped_is_caught():
    result = check("ex11", _learner(skip_holes=False))
    assert not result.passed
    assert "iteration 5: expected (1, 2), got (0, 3)." in result.message
    assert "after skipping the hole(s) at [5]" in result.message
    assert "holes of a partial edge super tile" in result.message
    assert "9 position(s) outside C" in result.message and "clipped away" in result.message


def test_m_fastest_decode_is_caught():
    result = check("ex11", _learner(m_fastest=True))
    assert not result.passed
    assert "iteration 1: expected (0, 1), got (1, 0)." in result.message
    assert "(m fastest)" in result.message
    assert "computes every tile once: C would be right, but not in rung 11's order" in result.message


def test_stopping_after_one_tile_is_caught():
    result = check("ex11", _learner(one_tile=True))
    assert not result.passed
    assert "iteration 1: expected (0, 1), got no more tiles." in result.message
    assert "stops after its first tile" in result.message
    assert "never computes 14 tile(s)" in result.message and "a wrong result" in result.message
    assert result.first_failure["iteration"] == 1 and result.first_failure["got"] == [(0, 0)]


def test_compacted_tiles_are_caught():
    def persistent_tiles(cta, num_ctas, grid_m, grid_n, super_m, super_n):
        return _walk(0, 1, grid_m, grid_n, super_m, super_n)[cta::num_ctas]
    result = check("ex11", persistent_tiles)
    assert not result.passed and "with the holes taken out" in result.message
    assert result.first_failure["input"]["num_ctas"] == 2


@pytest.mark.parametrize("answer, message", [
    (lambda *a: None, "it must return a list of (bid_m, bid_n) tuples"),
    (lambda *a: [(0.0, 0.0)], "Use integer division (//)"),
    (lambda *a: 1 // 0, "raised ZeroDivisionError"),
])
def test_bad_returns_are_failures_not_tracebacks(answer, message):
    def persistent_tiles(cta, num_ctas, grid_m, grid_n, super_m, super_n):
        return answer(cta, num_ctas, grid_m, grid_n, super_m, super_n)
    result = check("ex11", persistent_tiles)
    assert not result.passed and message in result.message
