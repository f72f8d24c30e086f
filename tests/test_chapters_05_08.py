"""The prose of chapters 05-08 states what is: no dates or run timestamps, no changelog voice; and the calls their
cells make on the recorded results work without a GPU."""
import re
from pathlib import Path

import nbformat
import pytest

from hgemm_course.course import chapter

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
NOTEBOOKS = ("05_swizzle", "06_supertile", "07_tma", "08_limits")
DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b20\d{6}T\d{4}")         # a date, or a run's timestamp in a file name
CHANGELOG = re.compile(r"\b(an earlier build|a later ablation|known issue|no longer|not yet|yet)\b", re.I)


def _prose(name):
    nb = nbformat.read(CHAPTERS / f"{name}.ipynb", as_version=4)
    return [(c.get("id"), c.source) for c in nb.cells if c.cell_type == "markdown"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_prose_has_no_dates_and_no_changelog_voice(name):
    for cell, text in _prose(name):
        assert not DATED.search(text), f"{name} cell {cell}: {DATED.search(text)[0]!r}"
        assert not CHANGELOG.search(text), f"{name} cell {cell}: {CHANGELOG.search(text)[0]!r}"


def test_size_sweep_of_a_rung_without_super_tiles(capsys):
    """Chapter 06 sweeps rung 05, which has no super tile: its parameters say so instead of failing."""
    assert chapter.rung_parameters("05")["super tile (SUPER_M x SUPER_N)"] == "-"
    out = chapter.size_sweep("05", sizes=(4096, 8192))
    assert "05" in out and out["05"]["verdicts"] and "SM cycles per 8192^3 of work" in capsys.readouterr().out


def test_chapter_05_has_the_verdict_of_rung_04_against_05():
    nb = nbformat.read(CHAPTERS / "05_swizzle.ipynb", as_version=4)
    assert any('compare_or_show("04", "05"' in c.source for c in nb.cells if c.cell_type == "code")
