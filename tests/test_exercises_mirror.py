"""exercises/ and solutions/ mirror each other: an exercise is its solution with every
region between BEGIN SOLUTION and END SOLUTION markers replaced by a TODO."""
from __future__ import annotations

from pathlib import Path

import pytest

from hgemm_course.check import EXERCISES

ROOT = Path(__file__).resolve().parent.parent
EXERCISES_DIR = ROOT / "exercises"
SOLUTIONS_DIR = ROOT / "solutions"
COMMENT = {".py": "#", ".cu": "//", ".cuh": "//"}


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in COMMENT)


def split_regions(text: str, comment: str) -> tuple[list[str], list[str]]:
    """(the text outside the marked regions, piece by piece; the regions' bodies)."""
    outside, regions, current, inside = [], [], [], False
    for line in text.splitlines(keepends=True):
        marker = line.strip()
        if marker == f"{comment} BEGIN SOLUTION":
            assert not inside, "BEGIN SOLUTION inside a region"
            outside.append("".join(current + [line]))
            current, inside = [], True
        elif marker == f"{comment} END SOLUTION":
            assert inside, "END SOLUTION without a BEGIN SOLUTION"
            regions.append("".join(current))
            current, inside = [line], False
        else:
            current.append(line)
    assert not inside, "BEGIN SOLUTION without an END SOLUTION"
    outside.append("".join(current))
    return outside, regions


def test_same_files():
    assert _files(EXERCISES_DIR) == _files(SOLUTIONS_DIR)


def test_every_python_exercise_has_a_checker():
    stems = {Path(name).stem for name in _files(EXERCISES_DIR) if name.endswith(".py")}
    assert stems == set(EXERCISES)


@pytest.mark.parametrize("name", _files(SOLUTIONS_DIR))
def test_exercise_is_solution_with_regions_replaced(name):
    comment = COMMENT[Path(name).suffix]
    ex_outside, ex_regions = split_regions((EXERCISES_DIR / name).read_text(), comment)
    sol_outside, sol_regions = split_regions((SOLUTIONS_DIR / name).read_text(), comment)
    assert sol_regions, f"solutions/{name} marks no region with {comment} BEGIN SOLUTION"
    assert len(ex_regions) == len(sol_regions)
    assert ex_outside == sol_outside, f"exercises/{name} and solutions/{name} differ outside the marked regions"
    for exercise, solution in zip(ex_regions, sol_regions):
        assert f"{comment} TODO:" in exercise
        assert "TODO" not in solution and "NotImplementedError" not in solution
        if comment == "#":
            assert "raise NotImplementedError(" in exercise
