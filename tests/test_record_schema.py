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
    assert record_schema.record_problem({"rung": "07", "M": 8, "ok": True}, "verify") is None
    assert record_schema.record_problem({"rung": 7}, "verify") == "has rung = 7, not text"


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
    (tmp_path / "tuning" / "verify_round1.json").write_text(json.dumps({"provenance": {"date": "2026-12-04"},
                                                                       "checks": []}))
    (tmp_path / "verify_top.json").write_text(json.dumps({"provenance": {"date": "2026-12-04"}, "checks": []}))
    assert {p.name: why for p, why in record_schema.tree_problems(tmp_path).items()} == {
        "verify_top.json": "the file has no records"}
