"""chapter_streamk: chapter 12's cycles from one recorded run and its fix-up cost from bytes and from the fit."""
import math

import pytest

from hgemm_course.course import chapter_streamk as cs
from hgemm_course.sim import waves


def test_fixup_from_bytes_is_the_partial_over_one_iterations_operands():
    b = cs.fixup_from_bytes(128, 256, 64)
    assert b["partial_bytes"] == 128 * 1024 and b["iteration_bytes"] == 48 * 1024
    assert b["iters"] == pytest.approx(8 / 3)


def test_cycles_rows_come_from_one_run_and_hold_every_launch():
    rows = cs.cycles_rows(("11", "12"), 8192)
    assert [r["rung"] for r in rows] == ["11", "12"]
    assert len({r["file"] for r in rows}) == 1
    for r in rows:
        assert r["p10"] <= r["mcycles"] <= r["p90"] and r["launches"] == len(r["cycles"]) >= 2


def test_show_cycles_judges_what_it_printed(capsys):
    found = cs.show_cycles("11", "12", sizes=(8192,))
    out = capsys.readouterr().out
    assert len(found) == 1 and str(found[0]) in out and "results/bench_" in out
    rows = cs.cycles_rows(("11", "12"), 8192)
    assert found[0].median_a == pytest.approx(rows[0]["mcycles"] * 1e6)


def test_the_fit_prefers_the_held_cost_over_the_ends_of_its_grid():
    held = cs.fit_error(waves.FITTED_FIXUP_ITERS)
    assert held < cs.fit_error(1) and held < cs.fit_error(12)
    assert all(held <= cs.fit_error(f) + 1e-12 for f in cs.FIT_GRID)
    assert math.isfinite(cs.fit_error(8 / 3))


def test_show_fixup_cost_names_both_values(capsys):
    out = cs.show_fixup_cost()
    text = capsys.readouterr().out
    assert out["best"] == waves.FITTED_FIXUP_ITERS == out["held"]
    assert "2.67 K-iterations" in text and "FITTED_FIXUP_ITERS" in text


def test_sweep_verdicts_judge_the_paired_ratios_of_one_run():
    from hgemm_course.viz import shape_sweep_data

    d = shape_sweep_data()
    found = cs.sweep_verdicts(d["file"])
    assert set(found) == {tuple(s) for s in d["shapes"]}
    v = found[3072, 3072, 3072]
    assert v.outcome == "fewer" and cs.verdict_cell(v).startswith("-")
    level = next(v for v in found.values() if v.outcome == "level")
    assert cs.verdict_cell(level).startswith("level (")
