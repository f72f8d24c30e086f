import json
import os
import time

import pytest

from hgemm_course.library import paths
from hgemm_course.measurement import records
from hgemm_course.course.cli import main
from hgemm_course.measurement.bench import BenchRecord
from hgemm_course.measurement.records import README_BEGIN, README_END, RECORD_KEYS, load_records, run_folder, write_run


def _record(rung, n, ms, cublas_ms):
    flops = 2 * n**3
    return BenchRecord(rung, n, n, n, ms, flops / ms / 1e9, cublas_ms, flops / cublas_ms / 1e9,
                       100 * cublas_ms / ms, [ms] * 20, [cublas_ms] * 20)


def test_a_probe_report_carries_provenance_and_is_not_read_as_a_run(tmp_path):
    timing = [{"variant": "11", "shape": [256, 256, 256], "ms": 0.01, "pct_cublas": 99.0}]
    path = records.write_report({"timing": timing, "verify": []}, kind="tile_probe", folder=tmp_path)
    data = json.loads(path.read_text())
    assert path.name.startswith("tile_probe_") and "date" in data["provenance"]
    assert data["timing"][0]["pct_cublas"] == 99.0
    assert load_records(tmp_path) == []


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


# ------------------------------------------------------------------ written safely, read tolerantly

def test_runs_in_the_same_second_get_different_names(tmp_path):
    written = {write_run([_record("01", 1024, 2.0, 0.5)], folder=tmp_path) for _ in range(5)}
    assert len(written) == 5 and len(load_records(tmp_path, latest_only=False)) == 5
    assert not list(tmp_path.glob(".*")), "a temporary file was left behind"


def test_a_damaged_run_file_is_skipped_with_a_warning_naming_it(tmp_path, capsys):
    good = write_run([_record("01", 1024, 2.0, 0.5)], folder=tmp_path)
    cut = tmp_path / "bench_nvidia-h200_20261201T000000.json"
    cut.write_text(good.read_text()[:300])
    (tmp_path / "bench_by_hand.json").write_text('{"records": []}')
    with pytest.warns(UserWarning) as caught:
        assert main(["results", "--dir", str(tmp_path)]) == 0
    warned = sorted(str(w.message) for w in caught)
    assert len(warned) == 2
    assert str(tmp_path / "bench_by_hand.json") in warned[0] and "no provenance" in warned[0]
    assert str(cut) in warned[1] and "Unterminated string" in warned[1]
    assert good.name in capsys.readouterr().out


def test_readme_table_takes_only_recorded_h200_runs(tmp_path, monkeypatch):
    recorded = tmp_path / "results"
    recorded.mkdir()
    monkeypatch.setattr(records, "results_dir", lambda: recorded)
    (tmp_path / "README.md").write_text(f"intro\n{README_BEGIN}\nold table\n{README_END}\n")
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)
    complete = {"driver": "13.0", "cuda_runtime": "13.3", "nvrtc": "13.0", "packages": {"numpy": "2.4.6"}}
    write_run([_record("01", 1024, 2.0, 0.5)], folder=recorded, extra={"gpu": "NVIDIA H200", **complete})
    time.sleep(1.1)
    other = write_run([_record("01", 1024, 1.0, 0.5), _record("01", 2048, 1.0, 0.5)], folder=tmp_path / "own",
                      extra={"gpu": "NVIDIA GeForce RTX 4090", **complete})
    other = other.rename(recorded / other.name)         # copied in by hand: results/ refuses it when written
    with pytest.warns(UserWarning, match=f"skipped {other}: its provenance lacks an H200 as its GPU"):
        assert main(["results", "--readme"]) == 0
    readme = (tmp_path / "README.md").read_text()
    assert "**25.0%**" in readme and "**50.0%**" not in readme and "2048^3" not in readme
    assert "RTX 4090" not in readme and "old table" not in readme


# ------------------------------------------------------------------ where runs go

@pytest.fixture
def blocked(tmp_path):
    """A folder nobody can create: its parent is a file (this holds for root too)."""
    (tmp_path / "a_file").write_text("")
    return tmp_path / "a_file" / "runs"


def test_runs_go_to_hgemm_results_under_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_folder() == tmp_path / "hgemm-results"
    assert write_run([_record("01", 1024, 2.0, 0.5)]).parent == tmp_path / "hgemm-results"


@pytest.mark.parametrize("command", [["bench", "02", "--sizes", "256"],
                                     ["tune", "11", "--tiles", "128x256", "--stages", "4", "--sizes", "512"],
                                     ["profile", "05"], ["ceilings"], ["limits"]])
def test_an_unwritable_out_dir_is_refused_before_any_work(command, blocked, capsys):
    assert main([*command, "--out-dir", str(blocked)]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 or command[0] == "tune", said          # tune first lists what it would run
    assert said[-1].startswith(f"hgemm-course {command[0]}: cannot write to {blocked}")
    assert "--out-dir" in said[-1] and "GPU" not in said[-1]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_out_dir_is_refused(tmp_path, capsys):
    tmp_path.chmod(0o500)
    try:
        assert main(["bench", "02", "--out-dir", str(tmp_path)]) == 2
    finally:
        tmp_path.chmod(0o700)
    assert f"cannot write to {tmp_path} (Permission denied)" in capsys.readouterr().err


def test_record_is_refused_without_a_complete_h200_provenance(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    h200 = {"gpu": "NVIDIA H200", "driver": "13.0", "cuda_runtime": "13.3", "nvrtc": "13.0", "date": "2026-12-01",
            "packages": {"numpy": "2.4.6", "cupy-cuda13x": "14.2.0"}}
    monkeypatch.setattr(records, "provenance", lambda: h200)
    assert run_folder(record=True) == tmp_path
    for change, said in [({"gpu": "NVIDIA GeForce RTX 4090"}, "the GPU is NVIDIA GeForce RTX 4090"),
                         ({"gpu": None}, "there is no GPU"), ({"nvrtc": None}, "nvrtc is unknown"),
                         ({"packages": {"numpy": None}}, "numpy's version is unknown")]:
        monkeypatch.setattr(records, "provenance", lambda change=change: {**h200, **change})
        assert main(["bench", "02", "--record"]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and said in err and "leave out --record" in err


def test_record_and_out_dir_exclude_each_other(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--record", "--out-dir", str(tmp_path)])
    assert "not allowed with argument" in capsys.readouterr().err
