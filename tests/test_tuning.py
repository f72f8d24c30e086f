"""tuning: recorded sweeps of a rung's configurations, and two configurations of one sweep judged."""
import pytest

from hgemm_course.course import tuning


def _script_run(date, rung, pct, label="default"):
    """A run of the tuning scripts that `hgemm-course tune` replaced (results/tuning/*.json)."""
    return {"provenance": {"date": date, "gpu": "NVIDIA H200", "sizes": [8192], "repeats": 30,
                           "script": "scripts/tune_hopper_ladder.py"},
            "cublas": {"8192": {"tflops": 700.0}},
            "variants": [{"rung": rung, "label": label, "name": f"k{rung}<1, 2>", "registers": 154, "ctas_per_sm": 2,
                          "passed": True, "timing": {"8192": {"tflops": 7 * pct, "pct_cublas": pct}}},
                         {"rung": "07", "label": "default", "name": "k07<3>", "registers": 197, "ctas_per_sm": 1,
                          "passed": True, "timing": {"8192": {"tflops": 455.0, "pct_cublas": 65.0}}},
                         {"rung": rung, "label": "too big", "name": f"k{rung}<9, 9>", "registers": 212,
                          "ctas_per_sm": 2, "passed": False, "timing": {}}]}


def _tune_run(folder, date, rung, pcts):
    """A run of `hgemm-course tune RUNG` as results.write_run(kind="tune") writes it: label -> % of cuBLAS
    at 4096^3 and 8192^3 (cuBLAS at 700 TFLOP/s)."""
    import json
    records = [{"rung": rung, "M": n, "N": n, "K": n, "tflops": 7 * pct, "cublas_tflops": 700.0, "pct_cublas": pct,
                "label": label, "config": {"bm": int(label[:3]), "bn": 128, "stages": int(label[-1])}}
               for label, by_size in pcts.items() for n, pct in zip((4096, 8192), by_size)]
    prov = {"date": date, "gpu": "NVIDIA H200", "rung": rung, "default": "256x128 s4",
            "skipped": [["256x128 s5", "5 stages need 245760 bytes of shared memory"]],
            "failed": [["128x128 s2", "rung 05 257x136x72: FAILED"]], "best": {"bm": 256, "bn": 128, "stages": 3}}
    stamp = date.replace("-", "").replace(":", "")[:15]
    (folder / f"tune_nvidia-h200_{stamp}_abcdef.json").write_text(json.dumps({"provenance": prov, "records": records}))


def test_show_tuning_reads_the_newest_tune_run_of_the_rung(tmp_path, capsys):
    _tune_run(tmp_path, "2026-12-02T10:00:00+00:00", "05", {"256x128 s4": (40.0, 45.0)})
    _tune_run(tmp_path, "2026-12-03T10:00:00+00:00", "05", {"256x128 s4": (50.0, 52.0), "256x128 s3": (55.0, 56.0)})
    _tune_run(tmp_path, "2026-12-04T10:00:00+00:00", "06", {"256x128 s4": (60.0, 61.0)})
    rows = tuning.show_tuning("05", folder=tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("RECORDED by `hgemm-course tune 05` on the NVIDIA H200 (tune_nvidia-h200_20261203T100000")
    assert out[1].split() == ["configuration", "4096x4096x4096", "8192x8192x8192", "geomean"]
    assert out[2].startswith("256x128 s3 ") and out[3].startswith("256x128 s4 ")          # best first
    assert "best: 256x128 s3; the rung's default then: 256x128 s4" in out
    assert "FAILED verification, not timed: 128x128 s2: rung 05 257x136x72: FAILED" in out
    assert out[-1].startswith("1 more configurations of the sweep skipped before any launch")
    assert [(r["rung"], r["label"], r["passed"]) for r in rows] == [("05", "256x128 s4", True), ("05", "256x128 s3", True)]
    assert rows[1]["pct_cublas"] == {(4096, 4096, 4096): 55.0, (8192, 8192, 8192): 56.0}
    assert rows[1]["tflops"][8192, 8192, 8192] == pytest.approx(392.0)
    assert {r["file"] for r in rows} == {"tune_nvidia-h200_20261203T100000_abcdef.json"}
    # with another rung: each from its own newest run
    rows = tuning.show_tuning("05", also=("06",), folder=tmp_path)
    assert [r["rung"] for r in rows] == ["05", "05", "06"]


def test_show_tuning_falls_back_to_the_tuning_scripts_runs(tmp_path, capsys):
    """A rung with no tune run yet is shown from the newest scripts' run that measured it, labelled with the
    script; the rungs in ``also`` that do have a tune run are shown from it."""
    import json
    (tmp_path / "tuning").mkdir()
    for name, run in (("old.json", _script_run("2026-11-29T10:00:00+00:00", "09", 80.0)),
                      ("new.json", _script_run("2026-11-29T12:00:00+00:00", "09", 87.8)),
                      ("other.json", _script_run("2026-11-30T12:00:00+00:00", "05", 48.0))):
        (tmp_path / "tuning" / name).write_text(json.dumps(run))
    rows = tuning.show_tuning("09", folder=tmp_path)
    out = capsys.readouterr().out
    assert out.startswith("RECORDED during tuning on the NVIDIA H200 (new.json, 2026-11-29): "
                          "scripts/tune_hopper_ladder.py (since replaced by `hgemm-course tune`)")
    assert [(r["rung"], r["pct_cublas"], r["passed"]) for r in rows] == [
        ("09", {(8192, 8192, 8192): 87.8}, True), ("09", {}, False)]
    assert {r["file"] for r in rows} == {"new.json"}
    assert "default <1,2>" in out and "87.8%" in out and "FAILED verification" in out and "k07" not in out
    rows = tuning.show_tuning("09", also=("07",), folder=tmp_path)
    assert [r["rung"] for r in rows] == ["09", "07", "09"]
    capsys.readouterr()
    _tune_run(tmp_path, "2026-12-03T10:00:00+00:00", "07", {"256x128 s4": (60.0, 61.0)})
    rows = tuning.show_tuning("09", also=("07",), folder=tmp_path)
    out = capsys.readouterr().out
    assert [r["rung"] for r in rows] == ["07", "09", "09"]
    assert out.startswith("RECORDED by `hgemm-course tune 07`") and "RECORDED during tuning" in out


def test_show_tuning_of_the_recorded_results(capsys):
    """Rung 11's recorded tune run; chapters 09 and 10 show rungs 07, 09 and 10 (from the scripts' runs until
    a tune run of each is recorded)."""
    rows = tuning.show_tuning("11")
    out = capsys.readouterr().out
    assert out.startswith("RECORDED by `hgemm-course tune 11` on the NVIDIA H200 (tune_")
    assert rows and {r["rung"] for r in rows} == {"11"} and all(r["passed"] for r in rows)
    for rung in ("09", "10"):
        rows = tuning.show_tuning(rung)
        out = capsys.readouterr().out
        assert rows and {r["rung"] for r in rows} == {rung} and all(r["passed"] for r in rows)
        assert out.startswith("RECORDED ") and "on the NVIDIA H200 (" in out and ".json, " in out.splitlines()[0]
    assert tuning.show_tuning("99") == []
    assert "No recorded tuning run of rung 99" in capsys.readouterr().out


def _tune_samples(folder, paired: bool):
    """A tune run of two configurations at 4096^3: B's launches take 0.9 of A's, cuBLAS's the same in both."""
    import json
    records = []
    for label, scale in (("A", 1.0), ("B", 0.9)):
        records.append({"rung": "11", "M": 4096, "N": 4096, "K": 4096, "pct_cublas": 100.0 / scale, "label": label,
                        "samples_ms": [scale * x for x in (1.00, 1.01, 0.99, 1.0)],
                        "cublas_samples_ms": [1.0, 1.01, 0.99, 1.0], "paired": paired})
    prov = {"date": "2026-12-02T10:00:00+00:00", "gpu": "NVIDIA H200", "rung": "11"}
    path = folder / "tune_nvidia-h200_20261202T100000_abcdef.json"
    path.write_text(json.dumps({"provenance": prov, "records": records}))
    return path


@pytest.mark.parametrize("paired, what", [(True, "time over the paired cuBLAS (cupy.matmul) launch's at "
                                                 "4096x4096x4096"),
                                          (False, "time at 4096x4096x4096, each configuration in its own turn")])
def test_tune_verdicts_compare_two_configurations_of_one_run(tmp_path, capsys, paired, what):
    path = _tune_samples(tmp_path, paired)
    (judged,) = tuning.tune_verdicts("11", "A", "B", path=path)
    assert judged.what == what and judged.outcome == "fewer" and judged.ratio == pytest.approx(0.9, abs=0.01)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"RECORDED on the NVIDIA H200 ({path.name}, 2026-12-02): B against A"
    assert out[1].startswith(f"{what}: B takes 10.0% less time than A, beyond the spread")
    assert tuning.tune_verdicts("11", "A", "B", folder=tmp_path)[0].what == what     # the newest run of rung 11
    assert tuning.tune_verdicts("11", "A", "C", path=path) == []
