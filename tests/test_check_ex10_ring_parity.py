"""ex10_ring_parity: the two ring waits of rung 10, checked against the reference exhaustively; a
wrong wait is played through the ring model, which says whether the kernel computes a slice
before it lands, overwrites a stage still in use, or hangs."""
import re
from pathlib import Path

import pytest

from hgemm_course.check import check
from hgemm_course.check.ex10_ring_parity import (
    POLICIES,
    RingError,
    empty_wait,
    format_events,
    full_wait,
    play_all,
    play_ring,
    ring_slot,
)

ROOT = Path(__file__).resolve().parent.parent
KERNEL = (ROOT / "hgemm_course" / "library" / "kernels" / "k10_warp_specialized.cu").read_text()
RIGHT_FULL = "def full_wait(kt, stages):\n    return kt % stages, (kt // stages) % 2\n"
RIGHT_EMPTY = "def empty_wait(kt, stages):\n    return None if kt < stages else (kt % stages, (kt // stages - 1) % 2)\n"


def _mine(tmp_path: Path, full: str = RIGHT_FULL, empty: str = RIGHT_EMPTY) -> Path:
    path = tmp_path / "ex10_ring_parity.py"
    path.write_text(full + empty)
    return path


def test_solution_passes():
    result = check("ex10", ROOT / "solutions" / "ex10_ring_parity.py")
    assert result.passed, str(result)
    assert "All 896 cases right: both waits" in result.message
    assert "Extra question, persistent_full_wait(): all 450 cases right" in result.message


def test_untouched_exercise_fails_with_its_hint():
    result = check("ex10")
    assert not result.passed and "full_wait is not written yet" in result.message
    assert "Hint: which phase of its stage's full barrier" in result.message
    assert "Traceback" not in str(result)


def test_reference_is_the_kernels_own_waits():
    """The waits' stage and parity expressions, read from k10_warp_specialized.cu, give the reference."""
    full = re.search(r"mbar_wait_parity\(smem_u32\(&ring\.full\[(.*?)\]\), (.*?)\);", KERNEL)
    empty = re.search(r"if \(kt >= STAGES\) mbar_wait_parity\(smem_u32\(&ring\.empty\[(.*?)\]\), (.*?)\);", KERNEL)
    assert full and empty, "rung 10's waits are no longer written as the test expects"

    def c(expr, kt, stages):               # C integer arithmetic on non-negative ints: / is //
        return eval(expr.replace("/", "//").replace("STAGES", str(stages)), {"kt": kt})

    for stages in range(3, 9):
        for kt in range(64):
            assert full_wait(kt, stages) == (c(full.group(1), kt, stages), c(full.group(2), kt, stages))
            expected = (c(empty.group(1), kt, stages), c(empty.group(2), kt, stages)) if kt >= stages else None
            assert empty_wait(kt, stages) == expected
    assert ring_slot(9, 4) == (1, 2)


@pytest.mark.parametrize("stages", [2, 3, 4, 8])
def test_reference_plays_clean(stages):
    found = play_all(stages=stages)
    assert found["played"] == 4 * len(POLICIES) and not found["problems"]


def test_ring_frees_a_stage_one_slice_late():
    """Slice kt's stage is freed at the consumers' slice kt + 1 (after wgmma_wait_group<1>)."""
    events = play_ring(stages=4, k_tiles=6, policy="fast copies")
    freed = [e for e in events if e["action"] == "arrive" and e["phase"] is not None]
    assert [(e["kt"], e["retired"], e["stage"], e["phase"]) for e in freed] == [
        (1, 0, 0, 0), (2, 1, 1, 0), (3, 2, 2, 0), (4, 3, 3, 0), (5, 4, 0, 1)]
    assert "load_tile" in format_events(events)


def test_the_right_waits_pass(tmp_path):
    assert check("ex10", _mine(tmp_path)).passed


def test_full_parity_never_flips(tmp_path):
    result = check("ex10", _mine(tmp_path, full="def full_wait(kt, stages):\n    return kt % stages, 0\n"))
    assert not result.passed
    assert "full_wait(kt=4, stages=4): expected (0, 1), got (0, 0)." in result.message
    assert "completes phase 1 of full[0], whose parity is 1" in result.message
    assert "stale read in" in result.message and "hang in" in result.message
    assert result.first_failure == {"input": {"kt": 4, "stages": 4}, "expected": (0, 1), "got": (0, 0)}


def test_full_parity_off_by_one_phase_reads_before_the_copy_lands(tmp_path):
    result = check("ex10", _mine(tmp_path, full="def full_wait(kt, stages):\n    return kt % stages, (kt // stages + 1) % 2\n"))
    assert not result.passed
    assert "full_wait(kt=0, stages=4): expected (0, 0), got (0, 1)." in result.message
    assert "stale read in" in result.message
    assert "computes slice 0 from stage 0" in result.message and "wgmma reads operands TMA has not landed" in result.message


def test_full_stage_kt_waits_on_an_empty_barrier_and_hangs(tmp_path):
    result = check("ex10", _mine(tmp_path, full="def full_wait(kt, stages):\n    return kt, (kt // stages) % 2\n"))
    assert not result.passed
    assert "full_wait(kt=4, stages=4): expected (0, 1), got (4, 1)." in result.message
    assert "hang in 20" in result.message and "waits on empty[0] for parity 1" in result.message


def test_empty_parity_never_flips(tmp_path):
    result = check("ex10", _mine(tmp_path, empty="def empty_wait(kt, stages):\n    return None if kt < stages else (kt % stages, 0)\n"))
    assert not result.passed
    assert "empty_wait(kt=8, stages=4): expected (0, 1), got (0, 0)." in result.message
    assert "overwrite in" in result.message and "The result is wrong." in result.message


def test_empty_parity_off_by_one_phase_overwrites(tmp_path):
    result = check("ex10", _mine(tmp_path, empty="def empty_wait(kt, stages):\n"
                                                 "    return None if kt < stages else (kt % stages, (kt // stages) % 2)\n"))
    assert not result.passed
    assert "empty_wait(kt=4, stages=4): expected (0, 0), got (0, 1)." in result.message
    assert "overwrite in" in result.message and "passes empty[0]  parity 1: 0 phase(s) completed" in result.message


def test_empty_stage_kt_is_no_barrier(tmp_path):
    result = check("ex10", _mine(tmp_path, empty="def empty_wait(kt, stages):\n"
                                                 "    return None if kt < stages else (kt, (kt // stages - 1) % 2)\n"))
    assert not result.passed
    assert "waits on empty[4], but the ring has empty[0..3]" in result.message


def test_empty_wait_for_the_first_slices_hangs(tmp_path):
    result = check("ex10", _mine(tmp_path, empty="def empty_wait(kt, stages):\n"
                                                 "    return (kt % stages, 0) if kt < stages else (kt % stages, (kt // stages - 1) % 2)\n"))
    assert not result.passed
    assert "empty_wait(kt=0, stages=4): expected None, got (0, 0)." in result.message
    assert "rung 10 does not wait" in result.message and "hang in 20" in result.message
    assert "empty[0] has completed no phase" in result.message


def test_a_harmless_first_wait_is_still_not_rung_10s(tmp_path):
    """Waiting for parity 1 on a fresh barrier passes at once: caught, and said to be harmless."""
    result = check("ex10", _mine(tmp_path, empty="def empty_wait(kt, stages):\n"
                                                 "    return kt % stages, (kt // stages - 1) % 2\n"))
    assert not result.passed
    assert "expected None, got (0, 1)" in result.message
    assert "the model met no wrong result and no hang" in result.message and "costs nothing" in result.message


def test_no_wait_at_all_overwrites(tmp_path):
    result = check("ex10", _mine(tmp_path, empty="def empty_wait(kt, stages):\n    return None\n"))
    assert not result.passed and "overwrite in 20" in result.message


def test_parity_must_be_0_or_1(tmp_path):
    result = check("ex10", _mine(tmp_path, full="def full_wait(kt, stages):\n    return kt % stages, kt // stages\n"))
    assert not result.passed and "returned parity 2; mbar_wait_parity takes 0 or 1" in result.message


def test_missing_empty_wait_is_named(tmp_path):
    result = check("ex10", _mine(tmp_path, empty=""))
    assert not result.passed and "defines no function empty_wait()" in result.message


def test_functions_from_a_notebook_namespace():
    namespace = {}
    exec(RIGHT_FULL + RIGHT_EMPTY, namespace)
    assert check("ex10", namespace["full_wait"]).passed


def test_bad_barrier_is_a_ring_error():
    with pytest.raises(RingError) as info:
        play_ring(lambda kt, s: (kt + 2 * s, 0), empty_wait, stages=3, k_tiles=4)
    assert info.value.kind == "bad barrier"
