import json

from hgemm_course.harness import BenchRecord
from hgemm_course.results import RECORD_KEYS, load_records, write_run


def _record(rung, n, ms, cublas_ms):
    flops = 2 * n**3
    return BenchRecord(rung, n, n, n, ms, flops / ms / 1e9, cublas_ms, flops / cublas_ms / 1e9,
                       100 * cublas_ms / ms, [ms] * 20, [cublas_ms] * 20)


def test_round_trip_keeps_provenance_and_every_sample(tmp_path):
    path = write_run([_record("01", 1024, 2.0, 0.5)], folder=tmp_path, extra={"note": "test data"})
    data = json.loads(path.read_text())
    prov = data["provenance"]
    assert {"date", "gpu", "driver", "cuda_runtime", "nvrtc", "packages"} <= set(prov)
    assert prov["note"] == "test data"
    assert len(data["records"][0]["samples_ms"]) == 20
    (row,) = load_records(tmp_path)
    assert set(RECORD_KEYS) <= set(row)
    assert row["rung"] == "01" and row["pct_cublas"] == 25.0 and row["file"] == path.name


def test_latest_run_wins_per_rung_and_size(tmp_path):
    import time

    write_run([_record("01", 1024, 2.0, 0.5), _record("02", 1024, 1.0, 0.5)], folder=tmp_path)
    time.sleep(1.1)
    write_run([_record("01", 1024, 4.0, 0.5)], folder=tmp_path)
    rows = {r["rung"]: r for r in load_records(tmp_path)}
    assert rows["01"]["pct_cublas"] == 12.5 and rows["02"]["pct_cublas"] == 50.0
    assert len(load_records(tmp_path, latest_only=False)) == 3


def test_recorded_results_in_the_repository_are_well_formed():
    for row in load_records():
        assert set(RECORD_KEYS) <= set(row)
        assert row["gpu"] and row["date"] and row["samples"] >= 20
        assert abs(row["pct_cublas"] - 100 * row["tflops"] / row["cublas_tflops"]) < 1e-6 * row["pct_cublas"] + 1e-9
