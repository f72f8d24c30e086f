"""ex12_streamk: the three functions are checked against sim.streamk_ranges on every CTA and tile of many
launches; the known slips are pinpointed (first wrong CTA, expected vs got) with what they would do on the GPU."""
import types
from pathlib import Path

import pytest

from hgemm_course.check import check
from hgemm_course.check import ex12_streamk as ex12
from hgemm_course.sim import schedule

ROOT = Path(__file__).resolve().parent.parent


def _range(cta, tiles, iters_per_tile, ctas, *, slip=None):
    """The even split, with one of the slips switched on."""
    total = tiles * iters_per_tile
    share, extra = divmod(total, ctas)
    if slip == "floor":
        return cta * share, cta * share + share
    if slip == "last takes the rest":
        return cta * share, total if cta == ctas - 1 else cta * share + share
    begin = cta * share + min(cta, extra)
    if slip == "no extra in end":
        return begin, begin + share
    return begin, begin + share + (cta < extra)


def _fix_up(cta, tiles, iters_per_tile, ctas, *, owner_last=False, whole_too=False, owners_only=False):
    out = []
    for t, kb, ke in ex12.pieces(*_range(cta, tiles, iters_per_tile, ctas), iters_per_tile):
        if (ke - kb < iters_per_tile or whole_too) and not (owners_only and kb > 0):
            out.append((t, kb, ke, ke == iters_per_tile if owner_last else kb == 0))
    return out


def _of_tile(tile, tiles, iters_per_tile, ctas, *, uniform=False, owner_only=False):
    ranges = [_range(c, tiles, iters_per_tile, ctas) for c in range(ctas)]
    if uniform:
        share = tiles * iters_per_tile // ctas
        return tile * iters_per_tile // share, min(((tile + 1) * iters_per_tile - 1) // share, ctas - 1)
    holders = [c for c, (b, e) in enumerate(ranges) if b < (tile + 1) * iters_per_tile and e > tile * iters_per_tile]
    return holders[0], holders[0 if owner_only else -1]


def _learner(range_slip=None, fix_up=None, of_tile=None):
    """The three functions side by side in one namespace, as the checker finds them in a learner's file."""
    def cta_k_range(cta, tiles, iters_per_tile, ctas):
        return _range(cta, tiles, iters_per_tile, ctas, slip=range_slip)

    def tiles_to_fix_up(cta, tiles, iters_per_tile, ctas):
        return _fix_up(cta, tiles, iters_per_tile, ctas, **(fix_up or {}))

    def ctas_of_tile(tile, tiles, iters_per_tile, ctas):
        return _of_tile(tile, tiles, iters_per_tile, ctas, **(of_tile or {}))

    namespace = dict(globals())
    functions = {f.__name__: types.FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)
                 for f in (cta_k_range, tiles_to_fix_up, ctas_of_tile)}
    namespace.update(functions)
    return functions["cta_k_range"]


def test_solution_passes():
    result = check("ex12", ROOT / "solutions" / "ex12_streamk.py")
    assert result.passed, str(result)
    assert "cases right" in result.message


def test_untouched_exercise_fails_with_its_hint():
    result = check("ex12")
    assert not result.passed and "cta_k_range is not written yet" in result.message
    assert "count the iterations of the CTAs before this one" in result.message
    assert "Traceback" not in str(result)


def test_reference_agrees_with_the_simulator():
    """Owners, contributors and each tile's CTAs, from the checker's reference, are the simulator's segments."""
    for tiles, ipt, ctas in ex12._cases():
        plan = schedule(tiles, 1, ipt, tile_m=1, tile_n=1, tile_k=1, cluster_m=1, units=ctas, mode="streamk")
        by_tile = {}
        for unit, tile, kb, ke, _ in plan.segments:
            by_tile.setdefault(tile, []).append(unit)
            if ke - kb < ipt:
                assert (tile, kb, ke, kb == 0) in ex12.tiles_to_fix_up(unit, tiles, ipt, ctas)
        assert all(ex12.ctas_of_tile(t, tiles, ipt, ctas) == (units[0], units[-1]) for t, units in by_tile.items())
        assert sum(e - b for b, e in ex12.reference_ranges(tiles, ipt, ctas)) == tiles * ipt


def test_cases_cover_splits_over_many_ctas_and_idle_ctas():
    cases = ex12._cases()
    assert (144, 48, 66) in cases and (16, 256, 66) in cases
    assert any(t * i < c for t, i, c in cases) and any(t * i % c == 0 for t, i, c in cases)
    assert ex12.ctas_of_tile(0, 2, 8, 5) == (0, 2)                  # 16 iterations as 4, 3, 3, 3, 3: tile 0 over 3 CTAs


def test_the_reference_walk_passes():
    assert check("ex12", _learner()).passed


def test_floor_split_leaves_the_remainder_to_nobody():
    result = check("ex12", _learner("floor"))
    assert not result.passed
    assert "cta_k_range(cta=0, tiles=4, iters_per_tile=3, ctas=5): expected (0, 3), got (0, 2)." in result.message
    assert "never compute global iteration(s) 10-11" in result.message
    assert "stored without them, a wrong result" in result.message
    assert "the total % ctas left over at the end are nobody's" in result.message


def test_last_cta_taking_the_remainder_is_uneven():
    result = check("ex12", _learner("last takes the rest"))
    assert not result.passed and result.first_failure["input"]["cta"] == 0
    assert "compute every iteration once, so C is right, but CTA 4 does 4 iterations" in result.message
    assert "Your last CTA takes the whole remainder" in result.message


def test_forgetting_the_own_extra_iteration_is_caught():
    result = check("ex12", _learner("no extra in end"))
    assert not result.passed
    assert "expected (0, 3), got (0, 2)." in result.message
    assert "never compute global iteration(s) 2, 5" in result.message
    assert "leaves out this CTA's own extra one" in result.message


def test_owner_at_the_tiles_end_is_pinpointed():
    result = check("ex12", _learner(fix_up={"owner_last": True}))
    assert not result.passed
    assert "tiles_to_fix_up(cta=2, tiles=4, iters_per_tile=3, ctas=5): expected [(2, 0, 2, True)], " \
           "got [(2, 0, 2, False)]." in result.message
    assert "partial tile 2 is owned by CTA 3" in result.message and "the owner stalled" in result.message


def test_whole_tiles_listed_are_caught():
    result = check("ex12", _learner(fix_up={"whole_too": True}))
    assert not result.passed and result.first_failure["input"]["cta"] == 0
    assert "expected [], got [(0, 0, 3, True)]." in result.message
    assert "A tile the CTA computes whole is not listed" in result.message
    assert "tile(s) 0-1, each computed whole by one CTA, go through the fix-up" in result.message


def test_a_silent_contributor_hangs_its_owner():
    result = check("ex12", _learner(fix_up={"owners_only": True}))
    assert not result.passed
    assert "tiles_to_fix_up(cta=3, tiles=4, iters_per_tile=3, ctas=5): expected [(2, 2, 3, False), (3, 0, 1, True)], " \
           "got [(3, 0, 1, True)]." in result.message
    assert "CTA(s) 3 compute part of tile 2 but do not list it" in result.message and "a hang" in result.message


def test_uniform_inverse_is_caught_with_its_effect():
    result = check("ex12", _learner(of_tile={"uniform": True}))
    assert not result.passed
    assert "ctas_of_tile(tile=0, tiles=4, iters_per_tile=3, ctas=5): expected (0, 0), got (0, 1)." in result.message
    assert "iteration 0 is in CTA 0's range [0, 3), iteration 2 in CTA 0's [0, 3)" in result.message
    assert "wait for the flag of CTA(s) 1, which compute none of tile 0" in result.message and "hangs" in result.message
    assert "i // (total // ctas)" in result.message


def test_an_owner_that_waits_for_nobody_stores_too_early():
    result = check("ex12", _learner(of_tile={"owner_only": True}))
    assert not result.passed
    assert "ctas_of_tile(tile=2, tiles=4, iters_per_tile=3, ctas=5): expected (2, 3), got (2, 2)." in result.message
    assert "store tile 2 before the partials of CTA(s) 3 were added: a wrong result" in result.message


@pytest.mark.parametrize("answer, message", [
    (lambda *a: None, "it must return a tuple of two ints (begin, end)"),
    (lambda *a: (0.0, 1.0), "Use integer division (//)"),
    (lambda *a: 1 // 0, "raised ZeroDivisionError"),
])
def test_bad_returns_are_failures_not_tracebacks(answer, message):
    def cta_k_range(cta, tiles, iters_per_tile, ctas):
        return answer(cta, tiles, iters_per_tile, ctas)
    result = check("ex12", cta_k_range)
    assert not result.passed and message in result.message
