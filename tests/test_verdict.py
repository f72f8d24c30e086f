"""Verdicts computed from measurements, and the chapters' comparisons re-run on the recorded data: a verdict that
a chapter's text points to must not flip."""
import pytest

from hgemm_course.course import ablation, here_or_recorded
from hgemm_course.measurement import verdict


def test_two_medians_within_the_spread_are_level():
    judged = verdict.compare("a", [100, 101, 99, 100, 102], "b", [100.5, 101, 100, 99.5, 101], "SM cycles at 8^3")
    assert judged.outcome == "level" and "level" in str(judged)


def test_a_gap_beyond_the_spread_is_fewer_or_more():
    fewer = verdict.compare("a", [100, 100.2, 99.8, 100.1], "b", [90, 90.1, 89.9, 90.2], "SM cycles at 8^3")
    assert fewer.outcome == "fewer" and "10.0% fewer cycles" in str(fewer)
    more = verdict.compare("a", [90, 90.1, 89.9], "b", [100, 100.2, 99.8], "time at 8^3")
    assert more.outcome == "more" and "more time" in str(more)


def test_the_spread_is_never_below_the_floor():
    judged = verdict.compare("a", [100] * 5, "b", [100.4] * 5, "SM cycles at 8^3")
    assert judged.spread == verdict.FLOOR and judged.outcome == "level"


def test_paired_ratios_are_judged_against_their_own_spread():
    assert verdict.compare_paired("a", "b", [0.99, 1.01, 1.0, 1.005], "time").outcome == "level"
    assert verdict.compare_paired("a", "b", [0.90, 0.91, 0.905, 0.9], "time").outcome == "fewer"


def test_one_measurement_has_no_spread():
    with pytest.raises(ValueError, match="at least two"):
        verdict.relative_spread([1.0])


@pytest.fixture
def recorded_only(monkeypatch):
    """The chapters' comparisons as a machine without a GPU prints them: from the recorded runs."""
    monkeypatch.setattr(here_or_recorded.target, "runnable", lambda: None)


# The comparisons the chapters' text points to, and the outcome it reads them as.
@pytest.mark.parametrize("a, b, size, outcome", [("05", "06", 8192, "level"), ("06", "07", 8192, "fewer"),
                                                  ("06", "07", 4096, "fewer"), ("03", "04", 4096, "fewer")])
def test_the_chapters_rung_comparisons_hold_on_the_recorded_runs(recorded_only, a, b, size, outcome, capsys):
    (judged,) = here_or_recorded.compare_or_show(a, b, size)
    assert judged.outcome == outcome, str(judged)
    assert "RECORDED" in capsys.readouterr().out


def test_chapter_04s_steps_pay_as_its_text_reads_them(capsys):
    outcomes = [judged.outcome for judged in ablation.show()]
    # steps 1-5 and 7 take cycles off; the fourth stage (step 6) does not
    assert outcomes == ["fewer", "fewer", "fewer", "fewer", "fewer", "more", "fewer"]
    out = capsys.readouterr().out
    assert "RECORDED" in out and "04b + fragment buffers" in out


def test_chapter_07s_l2_promotion_gains_well_under_the_rtx_5080_posts_2_percent(capsys):
    judged = {v.b: v for v in ablation.show_l2_promotion()}
    assert set(judged) == {"256 B promotion", "128 B promotion"}
    assert all(abs(v.ratio - 1) < 0.015 for v in judged.values())
    assert judged["128 B promotion"].outcome == "level"
    assert "RECORDED" in capsys.readouterr().out


def test_the_old_l2_promotion_run_says_it_has_no_spread_to_judge_by(capsys):
    assert ablation.show_l2_promotion("tuning/2026-12-02/ablate_l2_promotion.json") == []
    assert "no spread" in capsys.readouterr().out


def test_chapter_08s_variants_read_as_its_text_reads_them():
    """The newest recorded limits run: two CTAs per SM take fewer cycles than the default, 3 stages are level with
    4, 2 stages and halving BN take more (chapter 08's text)."""
    from hgemm_course.measurement import limits
    from hgemm_course.measurement.records import load_runs

    _, data = load_runs(kind="limits")[-1]
    run = data["records"][0]
    judged = {v.b: v.outcome for v in limits.variant_verdicts(run["variants"], run["size"])}
    assert judged == {"BN halved": "more", "2 CTAs/SM": "fewer", "2 stages": "more", "3 stages": "level"}
