from hgemm_course import chapter


def test_show_recorded_labels_its_source(capsys):
    rows = chapter.show_recorded("07", sizes=[8192])
    out = capsys.readouterr().out
    assert rows and all(r["rung"] == "07" and r["M"] == 8192 for r in rows)
    assert out.startswith("RECORDED on the NVIDIA H200 (bench_")


def test_show_recorded_says_when_there_is_nothing(capsys):
    assert chapter.show_recorded("99") == []
    assert "No recorded result for rung 99 yet" in capsys.readouterr().out


def test_model_vs_hardware_prints_the_recorded_comparison(capsys):
    records = chapter.model_vs_hardware("banks")
    out = capsys.readouterr().out
    assert records and out.startswith("RECORDED on the NVIDIA H200 (model_banks_")
    assert {r["check"] for r in records} == {"banks"}
    assert all({"model", "hardware", "agree"} <= set(r) for r in records)
    assert chapter.model_vs_hardware("nothing") == []
