"""hgemm_course.check: finding exercises, loading a learner's file, the shared verdict."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hgemm_course.check import EXERCISES, check, resolve, run_check

ROOT = Path(__file__).resolve().parent.parent


def _hint(name: str) -> str:
    """The NotImplementedError message of the untouched exercise."""
    text = (ROOT / "exercises" / f"{name}.py").read_text()
    return re.search(r'raise NotImplementedError\("(.*)"\)', text).group(1)


@pytest.mark.parametrize("name", list(EXERCISES))
def test_solution_passes(name):
    result = check(name, ROOT / "solutions" / f"{name}.py")
    assert result.passed, str(result)
    assert result.first_failure is None
    assert "cases right" in result.message


@pytest.mark.parametrize("name", list(EXERCISES))
def test_untouched_exercise_fails_with_its_hint(name):
    result = check(name)  # exercises/<name>.py of the checkout
    assert not result.passed
    assert "not written yet" in result.message
    assert _hint(name) in result.message
    assert "Traceback" not in str(result)


@pytest.mark.parametrize("given", ["ex05_swizzle", "ex05", "05", "5", "EX05", "ex05_swizzle.py", "swizzle"])
def test_resolve_accepts_short_names(given):
    assert resolve(given) == "ex05_swizzle"


def test_resolve_names_the_exercises_when_unknown():
    with pytest.raises(ValueError, match="ex01_naive, ex02_outer_product, ex02_tiling"):
        resolve("ex99")


def test_exercises_have_one_line_descriptions():
    assert [name[:4] for name in EXERCISES] == sorted(name[:4] for name in EXERCISES)   # by chapter, as posed
    assert all(text and "\n" not in text for text in EXERCISES.values())


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.py"
    path.write_text(text)
    return path


def test_syntax_error_is_reported_with_its_line(tmp_path):
    path = _write(tmp_path, "def swizzle_128b(row, chunk):\n    x = 1\n    return chunk ^ (row % 8\n")
    result = check("ex05", path)
    assert not result.passed
    assert f"{path}, line 3" in result.message
    assert "SyntaxError" in result.message and "Traceback" not in result.message


def test_error_at_import_is_reported_with_its_line(tmp_path):
    path = _write(tmp_path, "import math\n\nSCALE = 1 / 0\n\ndef swizzle_128b(row, chunk):\n    return chunk\n")
    result = check("ex05", path)
    assert not result.passed
    assert f"{path}, line 3" in result.message and "ZeroDivisionError" in result.message


def test_missing_function_is_named(tmp_path):
    path = _write(tmp_path, "def swizzle(row, chunk):\n    return chunk ^ (row % 8)\n")
    result = check("ex05", path)
    assert not result.passed and "defines no function swizzle_128b()" in result.message


def test_missing_file_is_a_failure_not_an_exception(tmp_path):
    result = check("ex05", tmp_path / "nothing.py")
    assert not result.passed and "There is no file" in result.message


def test_exception_in_learner_code_names_call_and_line(tmp_path):
    path = _write(tmp_path, "def swizzle_128b(row, chunk):\n    table = list(range(8))\n    return table[row] ^ chunk\n")
    result = check("ex05", path)
    assert not result.passed
    assert "swizzle_128b(row=8, chunk=0) raised IndexError" in result.message
    assert f"{path}, line 3: return table[row] ^ chunk" in result.message
    assert result.first_failure["input"] == {"row": 8, "chunk": 0}


def test_edits_are_seen_on_the_next_check(tmp_path):
    path = _write(tmp_path, "def swizzle_128b(row, chunk):\n    return chunk\n")
    assert not check("ex05", path).passed
    path.write_text("def swizzle_128b(row, chunk):\n    return chunk ^ (row % 8)\n")
    assert check("ex05", path).passed


def test_numpy_ints_are_fine_floats_are_not():
    assert check("ex05", lambda row, chunk: np.int64(chunk ^ (row % 8))).passed
    result = check("ex04", lambda lane: (lane % 16, lane / 16))
    assert not result.passed
    assert "returned (0, 0.0)" in result.message and "integer division (//)" in result.message


def test_non_tuple_return_is_explained():
    result = check("ex04", lambda lane: lane)
    assert "returned 0 (int); it must return a tuple of two ints (row, chunk)" in result.message


def test_run_check_prints_the_file_then_the_verdict_and_returns_exit_code(capsys):
    assert run_check("ex05", ROOT / "solutions" / "ex05_swizzle.py") == 0
    assert capsys.readouterr().out.startswith("checking solutions/ex05_swizzle.py\nex05_swizzle: PASS")
    assert run_check("05") == 1
    assert "ex05_swizzle: FAIL" in capsys.readouterr().out


def test_run_check_cannot_check_is_exit_code_2_with_one_line(capsys, tmp_path):
    assert run_check("ex77") == 2
    assert "There is no exercise 'ex77'" in capsys.readouterr().out
    assert run_check("ex05", tmp_path / "nothing.py") == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "There is no file" in out and "--path FILE" in out


@pytest.mark.parametrize("name", ["ex05_swizzle", "ex06_supertile"])
def test_draw_saves_a_picture(name, tmp_path):
    result = check(name, ROOT / "solutions" / f"{name}.py", draw=True, figure_dir=tmp_path)
    assert result.figure == tmp_path / f"{name}.png"
    assert result.figure.stat().st_size > 10_000
    assert str(result.figure) in str(result)


def test_draw_is_skipped_when_there_is_nothing_to_draw(tmp_path):
    result = check("ex05", draw=True, figure_dir=tmp_path)
    assert not result.passed and result.figure is None
