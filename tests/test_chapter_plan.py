"""chapter_plan: the plan's launch against the fastest launch timed in the recorded tile probes, and its constants."""
from hgemm_course.course import chapter_plan as cp
from hgemm_course.course import plan_tables
from hgemm_course.library.plan import plan


def test_validation_rows_set_this_codes_plan_against_the_fastest_timed():
    rows = cp.validation_rows()
    assert rows
    for r in rows:
        assert r["plan"] == plan_tables.launch_text(plan(*r["shape"], units=plan_tables.UNITS))
        assert r["gap"] >= 0 and r["best_pct"] == r["plan_pct"] + r["gap"]
        if r["gap"] == 0:
            assert r["best"] == r["plan"]
    timed = {r["shape"] for r in rows}
    assert timed.isdisjoint(cp.untimed_shapes())


def test_show_validation_prints_what_the_rows_say(capsys):
    rows = cp.show_validation()
    out = capsys.readouterr().out
    near = sum(r["gap"] <= cp.NEAR_POINTS for r in rows)
    assert f"{len(rows)} shapes" in out and f"at {near} the plan" in out


def test_constants_by_kind_hold_every_constant_once():
    kinds = cp.constants_by_kind()
    names = [n for group in kinds.values() for n in group]
    assert sorted(names) == sorted(c.name for c in plan_tables.CONSTANTS)
    assert set(kinds) <= {"fit", "margin", "choice"}


def test_the_validation_figure_draws_every_row():
    import matplotlib

    matplotlib.use("Agg")
    from hgemm_course.viz.plan_check import plan_validation_figure

    rows = cp.validation_rows()
    fig = plan_validation_figure(rows)
    points = sum(len(c.get_offsets()) for c in fig.axes[0].collections)
    assert points == len(rows)
    assert f"of {len(rows)} probed shapes" in fig.axes[0].get_title()
