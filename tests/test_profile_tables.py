"""profile_tables: the recorded model-vs-ncu comparisons and rungs' profiles side by side."""
from hgemm_course.course import profile_tables


def test_model_vs_hardware_prints_the_recorded_comparison(capsys):
    records = profile_tables.model_vs_hardware("banks")
    out = capsys.readouterr().out
    assert records and out.startswith("RECORDED on the NVIDIA H200 (model_banks_")
    assert {r["check"] for r in records} == {"banks"}
    assert all({"model", "hardware", "agree"} <= set(r) for r in records)
    assert profile_tables.model_vs_hardware("nothing") == []


def test_model_vs_hardware_shows_ties_in_a_ranking(capsys):
    """The recorded L2 ranking: model and ncu differ in the order of two super tiles less than a point apart,
    which the record counts as a tie; the line shows the tie and says so, not a bare "agree"."""
    profile_tables.model_vs_hardware("l2")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("ranking"))
    assert "model super_8x4 > super_16x2 = super_4x8" in line and "ncu super_8x4 > super_4x8 = super_16x2" in line
    assert line.endswith("the same order once figures less than 1 point apart count as tied (=)")


def test_model_vs_hardware_footnotes_the_counter_of_all_shared_loads(capsys):
    """Rungs 04-07's l1tex op_ld counters count more than the model's ldmatrix: a footnote, not DISAGREE."""
    profile_tables.model_vs_hardware("banks")
    out = capsys.readouterr().out
    ld = [x for x in out.splitlines() if x.endswith("_op_ld.sum")]
    assert ld and not any("DISAGREE" in x for x in ld) and all("counts more [" in x for x in ld)
    assert "counts every shared-memory load wavefront of the LSU pipe" in out


def test_profiles_side_by_side_reads_the_newest_profiles(capsys):
    records = profile_tables.profiles_side_by_side("09", "10")
    out = capsys.readouterr().out
    assert [r["rung"] for r in records] == ["09", "10"]
    assert out.startswith("RECORDED profiles on the NVIDIA H200 at 8192^3, one launch each")
    change = records[1]["cycles"] / records[0]["cycles"] - 1
    assert f"rung 10 takes {abs(change):.1%} {'fewer' if change < 0 else 'more'} SM cycles than rung 09" in out
    assert "stalled warps on long_scoreboard (%)" in out and "stalled warps on gmma (%)" in out
    assert profile_tables.profiles_side_by_side("10", size=1000) == []
    assert "No recorded profile of rung 10 at 1000^3" in capsys.readouterr().out
