"""ex05_swizzle: wrong swizzles are caught and explained by the bank conflicts they cause."""
from hgemm_course.check import check


def test_identity_is_an_8_way_conflict():
    result = check("ex05", lambda row, chunk: chunk)
    assert not result.passed
    assert "swizzle_128b(row=1, chunk=0): expected 1, got 0." in result.message
    assert "would all hit physical chunk 0, banks 0-3: an 8-way conflict" in result.message


def test_row_mod_4_is_a_2_way_conflict():
    result = check("ex05", lambda row, chunk: chunk ^ (row % 4))
    assert not result.passed
    assert result.first_failure == {"input": {"row": 4, "chunk": 0}, "expected": 4, "got": 0}
    assert "2 of them (rows 0, 4) hit banks 0-3, a 2-way conflict" in result.message


def test_no_message_gives_the_formula():
    """A wrong answer is explained by what it does, never by the swizzle's formula."""
    for wrong in (lambda row, chunk: chunk, lambda row, chunk: chunk ^ (row % 4), lambda row, chunk: (chunk + row) % 8):
        message = check("ex05", wrong).message
        assert "row % 8" not in message and "^" not in message and "XOR" not in message, message


def test_rotation_is_conflict_free_but_not_the_swizzle():
    result = check("ex05", lambda row, chunk: (chunk + row) % 8)
    assert not result.passed and "conflict-free" in result.message and "SWIZZLE_128B" in result.message
    assert "TMA's SWIZZLE_128B puts that chunk of row 1 on physical chunk 0, yours on 2" in result.message


def test_unreduced_row_leaves_the_row():
    result = check("ex05", lambda row, chunk: chunk ^ row)
    assert not result.passed and "would write into another row" in result.message


def test_collision_within_a_row():
    result = check("ex05", lambda row, chunk: (chunk ^ (row % 8)) // 2 * 2)
    assert not result.passed and "the second store overwrites the first" in result.message


def test_wrong_type():
    result = check("ex05", lambda row, chunk: str(chunk ^ (row % 8)))
    assert not result.passed and "returned '0' (str); it must return an int" in result.message


def test_picture_of_a_wrong_map(tmp_path):
    result = check("ex05", lambda row, chunk: chunk ^ (row % 4), draw=True, figure_dir=tmp_path)
    assert not result.passed and result.figure is not None and result.figure.is_file()
