"""here_or_recorded without a GPU: the recorded rows of rungs, labelled with their run, in one stretch or not."""
from hgemm_course.course import here_or_recorded


def test_show_recorded_labels_its_source(capsys):
    rows = here_or_recorded.show_recorded("07", sizes=[8192])
    out = capsys.readouterr().out
    assert rows and all(r["rung"] == "07" and r["M"] == 8192 for r in rows)
    assert out.startswith("RECORDED on the NVIDIA H200 (bench_")


def test_show_recorded_says_when_there_is_nothing(capsys):
    assert here_or_recorded.show_recorded("99") == []
    assert "No recorded result for rung 99" in capsys.readouterr().out


def test_show_recorded_in_one_stretch_puts_its_provenance_under_the_table(capsys):
    here_or_recorded.show_recorded("04", sizes=[4096], one_stretch=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["rung", "M", "x", "N", "x"] and "GHz" in lines[0]
    assert lines[-1].startswith("recorded on the NVIDIA H200, 20") and "results/bench_" in lines[-1]
