"""The calls the cells of chapters 05-08 make on the recorded results work without a GPU."""
from pathlib import Path

import nbformat

from hgemm_course.course import rung_design

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"


def test_size_sweep_of_a_rung_without_super_tiles(capsys):
    """Chapter 06 sweeps rung 05, which has no super tile: its parameters say so instead of failing."""
    assert rung_design.rung_parameters("05")["super tile (SUPER_M x SUPER_N)"] == "-"
    out = rung_design.size_sweep("05", sizes=(4096, 8192))
    assert "05" in out and out["05"]["verdicts"] and "SM cycles per 8192^3 of work" in capsys.readouterr().out


def test_chapter_05_has_the_verdict_of_rung_04_against_05():
    nb = nbformat.read(CHAPTERS / "05_swizzle.ipynb", as_version=4)
    assert any('compare_or_show("04", "05"' in c.source for c in nb.cells if c.cell_type == "code")
