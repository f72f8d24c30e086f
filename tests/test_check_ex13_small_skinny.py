"""ex13_small_skinny: the three counts are checked against the course's references on the sweep's, odd and random
shapes; the known slips are pinpointed (first wrong call, expected vs got) with the count worked through."""
import types
from pathlib import Path

import pytest

from hgemm_course.course import small_skinny
from hgemm_course.check import check
from hgemm_course.check import ex13_small_skinny as ex13
from hgemm_course.measurement.roofline import gemm_floor

ROOT = Path(__file__).resolve().parent.parent


def _learner(intensity=None, roof=None, pieces=None):
    """The three functions side by side in one namespace, as the checker finds them in a learner's file; each
    argument replaces one with a slip."""
    def arithmetic_intensity(M, N, K):
        return (intensity or small_skinny.arithmetic_intensity)(M, N, K)

    def memory_roof_us(M, N, K, bandwidth_gbs):
        return (roof or small_skinny.memory_roof_us)(M, N, K, bandwidth_gbs)

    def split_pieces(M, N, bm, bn, sms):
        return (pieces or small_skinny.split_pieces)(M, N, bm, bn, sms)

    namespace = dict(globals(), intensity=intensity, roof=roof, pieces=pieces)
    functions = {f.__name__: types.FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)
                 for f in (arithmetic_intensity, memory_roof_us, split_pieces)}
    namespace.update(functions)
    return functions["arithmetic_intensity"]


def test_solution_passes():
    result = check("ex13", ROOT / "solutions" / "ex13_small_skinny.py")
    assert result.passed, str(result)
    assert "cases right" in result.message


def test_untouched_exercise_fails_with_its_hint():
    result = check("ex13")
    assert not result.passed and "arithmetic_intensity is not written yet" in result.message
    assert "each of the M x N outputs is a dot product of length K" in result.message
    assert "Traceback" not in str(result)


def test_the_references_are_the_roofline_and_the_plans_count():
    for M, N, K in ex13._shapes()[:50]:
        floor = gemm_floor(M, N, K, peak_tflops=800.0, bandwidth_gbs=4000.0)
        assert ex13.REFERENCE["arithmetic_intensity"](M, N, K) == pytest.approx(floor["intensity"], rel=1e-12)
        assert ex13.REFERENCE["memory_roof_us"](M, N, K, 4000.0) == pytest.approx(floor["memory_ms"] * 1e3, rel=1e-12)
    assert ex13.REFERENCE["split_pieces"](256, 256, 64, 64, 132) == 9        # 16 tiles: the chapter's count
    assert ex13.REFERENCE["split_pieces"](8192, 8192, 128, 256, 132) == 1    # 2048 tiles: each whole


def test_cases_cover_odd_shapes_the_sweep_and_tiles_off_the_edge():
    shapes = ex13._shapes()
    assert (1, 1, 1) in shapes and (257, 136, 72) in shapes and set(small_skinny.sweep_shapes()) <= set(shapes)
    pieces = ex13._cases("split_pieces")
    assert any(c["M"] % c["bm"] and c["N"] % c["bn"] for c in pieces)
    assert {c["sms"] for c in pieces} == set(ex13.SMS)


def test_the_reference_passes_as_a_learner():
    assert check("ex13", _learner()).passed


def test_bytes_without_c_are_named():
    result = check("ex13", _learner(intensity=lambda M, N, K: 2 * M * N * K / (2 * (M * K + K * N))))
    assert not result.passed
    assert "arithmetic_intensity(M=16, N=4096, K=4096): expected 15.875969, got 15.9377432." in result.message
    assert "Your bytes leave out C" in result.message


def test_one_flop_per_term_is_named():
    result = check("ex13", _learner(intensity=lambda M, N, K: M * N * K / (2 * (M * K + K * N + M * N))))
    assert not result.passed and "Your FLOPs count one per term" in result.message


def test_milliseconds_and_binary_gigabytes_are_named():
    ms = check("ex13", _learner(roof=lambda M, N, K, bw: 2 * (M * K + K * N + M * N) / (bw * 1e9) * 1e3))
    assert not ms.passed and "memory_roof_us(M=16, N=4096, K=4096, bandwidth_gbs=4264.3)" in ms.message
    assert "That is milliseconds" in ms.message
    gib = check("ex13", _learner(roof=lambda M, N, K, bw: 2 * (M * K + K * N + M * N) / (bw * 2**30) * 1e6))
    assert not gib.passed and "Your GB is 2^30 bytes" in gib.message


def test_tiles_rounded_down_are_caught_on_a_part_tile():
    result = check("ex13", _learner(pieces=lambda M, N, bm, bn, sms: -(-sms // max(1, (M // bm) * (N // bn)))))
    assert not result.passed
    assert result.first_failure["input"]["M"] % result.first_failure["input"]["bm"] or \
        result.first_failure["input"]["N"] % result.first_failure["input"]["bn"]
    assert "a part tile at the edge of C is a tile too" in result.message


def test_pieces_rounded_down_leave_sms_idle():
    result = check("ex13", _learner(pieces=lambda M, N, bm, bn, sms: max(1, sms // (-(-M // bm) * -(-N // bn)))))
    assert not result.passed
    assert "split_pieces(M=16, N=4096, bm=64, bn=64, sms=132): expected 3, got 2." in result.message
    assert "Your pieces round down: 64 tiles of 2 pieces leave 4 SMs idle" in result.message


def test_waves_instead_of_pieces_are_named():
    result = check("ex13", _learner(pieces=lambda M, N, bm, bn, sms: -(-(-(-M // bm) * -(-N // bn)) // sms)))
    assert not result.passed and "That is waves of whole tiles" in result.message


@pytest.mark.parametrize("answer, message", [
    (lambda *a: None, "it must return a finite number"),
    (lambda *a: "16", "it must return a finite number"),
    (lambda *a: 1 // 0, "raised ZeroDivisionError"),
])
def test_bad_returns_are_failures_not_tracebacks(answer, message):
    def arithmetic_intensity(M, N, K):
        return answer(M, N, K)
    result = check("ex13", arithmetic_intensity)
    assert not result.passed and message in result.message and "Traceback" not in str(result)


def test_a_missing_companion_is_named():
    def arithmetic_intensity(M, N, K):
        return small_skinny.arithmetic_intensity(M, N, K)
    result = check("ex13", arithmetic_intensity)
    assert not result.passed and "defines no function memory_roof_us()" in result.message
