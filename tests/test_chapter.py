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


def _tuning_run(date, rung, pct, label="default"):
    return {"provenance": {"date": date, "gpu": "NVIDIA H200", "sizes": [8192], "repeats": 30,
                           "script": "scripts/tune.py"},
            "cublas": {"8192": {"tflops": 700.0}},
            "variants": [{"rung": rung, "label": label, "name": f"k{rung}<1, 2>", "registers": 154, "ctas_per_sm": 2,
                          "passed": True, "timing": {"8192": {"tflops": 7 * pct, "pct_cublas": pct}}},
                         {"rung": "07", "label": "default", "name": "k07<3>", "registers": 197, "ctas_per_sm": 1,
                          "passed": True, "timing": {"8192": {"tflops": 455.0, "pct_cublas": 65.0}}},
                         {"rung": rung, "label": "too big", "name": f"k{rung}<9, 9>", "registers": 212,
                          "ctas_per_sm": 2, "passed": False, "timing": {}}]}


def test_show_tuning_reads_the_newest_run_of_the_rung(tmp_path, capsys):
    import json
    for name, run in (("old.json", _tuning_run("2026-11-29T10:00:00+00:00", "09", 80.0)),
                      ("new.json", _tuning_run("2026-11-29T12:00:00+00:00", "09", 87.8)),
                      ("other.json", _tuning_run("2026-11-30T12:00:00+00:00", "05", 48.0))):
        (tmp_path / name).write_text(json.dumps(run))
    rows = chapter.show_tuning("09", folder=tmp_path)
    out = capsys.readouterr().out
    assert out.startswith("RECORDED during tuning on the NVIDIA H200 (new.json, 2026-11-29)")
    assert [(r["rung"], r["pct_cublas"], r["passed"]) for r in rows] == [("09", {8192: 87.8}, True), ("09", {}, False)]
    assert {r["file"] for r in rows} == {"new.json"}
    assert "default <1,2>" in out and "87.8%" in out and "FAILED verification" in out and "k07" not in out
    rows = chapter.show_tuning("09", also=("07",), folder=tmp_path)
    assert [r["rung"] for r in rows] == ["09", "07", "09"]


def test_show_tuning_of_rung_09_is_labelled_with_its_file(capsys):
    rows = chapter.show_tuning("09")
    out = capsys.readouterr().out
    assert rows and {r["rung"] for r in rows} == {"09"} and all(r["passed"] for r in rows)
    assert out.startswith("RECORDED during tuning on the NVIDIA H200 (") and ".json, " in out.splitlines()[0]
    assert chapter.show_tuning("99") == []
    assert "No recorded tuning run of rung 99 yet" in capsys.readouterr().out
