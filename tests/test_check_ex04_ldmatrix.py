"""ex04_ldmatrix: wrong lane addresses are caught and traced through the emulator."""
from hgemm_course.check import check
from hgemm_course.check.ex04_ldmatrix import _emulate
from hgemm_course.sim.fragments import ldmatrix_x4_src_row_reference


def test_emulator_agrees_with_the_reference_addresses():
    regs, wanted, d, right = _emulate([ldmatrix_x4_src_row_reference(lane) for lane in range(32)])
    assert (regs == wanted).all() and (d == right).all()


def test_matrices_1_and_2_swapped():
    result = check("ex04", lambda lane: (lane % 8 + 8 * (lane // 16), (lane // 8) % 2))
    assert not result.passed
    assert "ldmatrix_x4_src_row(lane=8): expected (8, 0), got (0, 1)." in result.message
    assert "Lane 8 supplies row 0 of matrix 1, and matrix 1 is rows 8-15, k 0-7" in result.message
    assert "lane 0's register 1 (a2, a3) would hold A[0, 8:10] where mma.sync needs A[8, 0:2]" in result.message
    assert "wrong in 112 of its 128 elements (rows 0-15)" in result.message


def test_chunk_out_of_range():
    result = check("ex04", lambda lane: (lane % 8, lane // 8))
    assert not result.passed and "chunk 0 (k 0-7) or 1 (k 8-15)" in result.message


def test_off_by_one_row():
    result = check("ex04", lambda lane: ((lane + 1) % 16, lane // 16))
    assert not result.passed and result.first_failure["input"] == {"lane": 0}
