"""Every file under results/ holds to its kind's schema (hgemm_course/measurement/schemas/records.schema.json), and a run
without what its kind needs is refused when it is written."""
import json

import pytest

from hgemm_course.measurement import record_schema, records
from hgemm_course.library.paths import results_dir

BENCH = {"rung": "11", "M": 256, "N": 256, "K": 256, "tflops": 10.0, "cublas_tflops": 11.0, "pct_cublas": 90.9}


def test_every_recorded_file_holds_to_its_kinds_schema():
    assert record_schema.tree_problems(results_dir()) == {}


@pytest.mark.parametrize("record, why", [
    ({**BENCH, "pct_cublas": "90.9"}, 'has pct_cublas = "90.9", not a number'),
    ({k: v for k, v in BENCH.items() if k != "tflops"}, "has no tflops"),
    ({**BENCH, "M": 0}, "has M = 0, not a whole number of at least 1"),
    ({**BENCH, "samples_ms": [0.1, -1]}, "has samples_ms = [0.1, -1], not a list of positive numbers"),
    ([BENCH], 'is [{"rung": "11", "M": 256, "N": 256, "..., not an object'),
])
def test_a_broken_record_is_named_by_what_it_lacks(record, why):
    assert record_schema.record_problem(record, "bench") == why


def test_a_record_of_a_kind_without_fields_of_its_own_needs_only_the_common_ones():
    assert record_schema.record_problem({"rung": "07", "M": 8, "ok": True}, "other") is None
    assert record_schema.record_problem({"rung": 7}, "other") == "has rung = 7, not text"


def test_every_run_kind_has_fields_of_its_own():
    check = {"rung": "07", "M": 8, "N": 8, "K": 8, "rel_fro_err": 1e-4, "passed": True}
    assert record_schema.record_problem(check, "verify") is None
    assert record_schema.record_problem({**check, "passed": "yes"}, "verify") == 'has passed = "yes", not true or false'
    assert record_schema.record_problem({"rung": "07", "M": 8}, "api") == "has no K, N, host_us, kernel_ms"
    assert record_schema.record_problem({"size": 8192}, "limits") == "has no bk32, carveout, occupancy_cliff, variants"
    defined = set(record_schema.schema()["$defs"])
    assert {f"{kind}_record" for kind in record_schema.RUN_KINDS} <= defined
    assert {f"{kind}_run" for kind in record_schema.RUN_KINDS} <= defined


def test_a_run_missing_a_field_is_refused_on_write_and_nothing_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"is not written: record 0 has no tflops"):
        records.write_run([{k: v for k, v in BENCH.items() if k != "tflops"}], folder=tmp_path)
    assert list(tmp_path.iterdir()) == []
    path = records.write_run([BENCH], folder=tmp_path)
    assert json.loads(path.read_text())["records"][0]["pct_cublas"] == 90.9


def test_a_recorded_run_without_complete_provenance_is_named(tmp_path):
    prov = {"date": "2026-12-04T00:00:00+00:00", "gpu": "NVIDIA GeForce RTX 4090", "packages": {"numpy": "2.4.6"}}
    (tmp_path / "bench_x.json").write_text(json.dumps({"provenance": prov, "records": [BENCH]}))
    assert list(record_schema.tree_problems(tmp_path).values()) == ["its provenance has no driver, cuda_runtime, nvrtc, "
                                                                    "python"]
    prov.update(driver="580", cuda_runtime="13.0", nvrtc="13.0", python="3.12")
    (tmp_path / "bench_x.json").write_text(json.dumps({"provenance": prov, "records": [BENCH]}))
    assert list(record_schema.tree_problems(tmp_path).values()) == [
        'its provenance has gpu = "NVIDIA GeForce RTX 4090", not an H200']


def test_a_probe_needs_provenance_and_nothing_else():
    assert record_schema.file_problem({"provenance": {"date": "2026-12-04"}, "rows": [1]}, "vendor") is None
    assert record_schema.file_problem({"cases": []}, "occupancy") == "the file has no provenance"


def test_below_a_research_folder_a_run_named_file_without_records_is_a_probe(tmp_path):
    (tmp_path / "tuning").mkdir()
    prov = {"date": "2026-12-04", "script": "research/verify_rung11_h200.py"}
    (tmp_path / "tuning" / "verify_round1.json").write_text(json.dumps({"provenance": prov, "checks": [],
                                                                       "rung_11": {}}))
    (tmp_path / "verify_top.json").write_text(json.dumps({"provenance": {"date": "2026-12-04"}, "checks": []}))
    assert {p.name: why for p, why in record_schema.tree_problems(tmp_path).items()} == {
        "verify_top.json": "the file has no records"}


# ---------------------------------------------------------------------------- research probes' reports


def test_every_report_kind_has_a_schema_and_every_recorded_report_a_kind():
    """Every JSON file under results/ is a run of a kind with fields of its own or a report of a kind REPORTS names,
    each with its definition in records.schema.json: none is checked by the bare provenance of a probe alone."""
    defined = set(record_schema.schema()["$defs"])
    assert set(record_schema.REPORTS.values()) <= defined
    root = results_dir()
    kinds = set()
    for path in root.rglob("*.json"):
        data = json.loads(path.read_text())
        if "records" in data:
            kinds.add(record_schema.kind_of(path))
        else:
            script = record_schema.report_script(path, data, root)
            assert script in record_schema.REPORTS, path
            kinds.add(script)
    assert {"bench", "tile_probe", "vendor_probe", "ablate_hopper"} <= kinds
    assert kinds - set(record_schema.REPORTS) <= set(record_schema.RUN_KINDS)


def test_results_probes_holds_one_folder_per_research_script():
    from hgemm_course.library.paths import REPO_ROOT

    folders = [p for p in (results_dir() / "probes").iterdir()]
    assert folders and all(p.is_dir() for p in folders)
    if REPO_ROOT is not None:
        assert all((REPO_ROOT / "research" / f"{p.name}.py").is_file() for p in folders), folders
    assert not list(results_dir().glob("*_probe_*.json")), "a probe's report outside results/probes/"


def test_a_report_is_checked_by_its_scripts_schema(tmp_path):
    (tmp_path / "probes" / "tile_probe").mkdir(parents=True)
    (tmp_path / "probes" / "new_probe").mkdir()
    row = {"variant": "11", "shape": [256, 256, 256], "ms": 0.01, "pct_cublas": 99.0}
    prov = {"date": "2026-12-04"}
    (tmp_path / "probes" / "tile_probe" / "a.json").write_text(json.dumps(
        {"provenance": prov, "timing": [row, {**row, "ms": -1}], "verify": []}))
    (tmp_path / "probes" / "new_probe" / "b.json").write_text(json.dumps({"provenance": prov, "rows": []}))
    problems = {p.name: why for p, why in record_schema.tree_problems(tmp_path).items()}
    assert problems["a.json"] == "its timing 1 has ms = -1, not a positive number"
    assert problems["b.json"].startswith("it is a report of research/new_probe.py, which has no schema of its own")


def test_a_probe_is_written_to_its_folder_and_refused_there_without_complete_provenance(tmp_path, monkeypatch):
    report = {"timing": [{"variant": "11", "shape": [256, 256, 256], "ms": 0.01, "pct_cublas": 99.0}], "verify": []}
    recorded = tmp_path / "results"
    monkeypatch.setattr(records, "results_dir", lambda: recorded)
    monkeypatch.setattr(records, "probe_dir", lambda name: recorded / "probes" / name)
    monkeypatch.setattr(records, "provenance", lambda extra=None: {"date": "2026-12-04T00:00:00+00:00",
                                                                  "gpu": "NVIDIA H200", **(extra or {})})
    with pytest.raises(ValueError, match="is not written: its provenance has no driver"):
        records.write_probe(report, probe="tile_probe")
    assert not list(recorded.rglob("*.json"))
    path = records.write_probe(report, probe="tile_probe", folder=tmp_path / "elsewhere")
    data = json.loads(path.read_text())
    assert path.name.startswith("tile_probe_") and data["provenance"]["probe"] == "research/tile_probe.py"
    assert data["timing"] == report["timing"]
