"""roofs: the measured ceilings with their work per cycle, and a rung placed under the roofs of its instruction."""
import pytest

from hgemm_course import measurement
from hgemm_course.course import roofs


def _write_run(folder, kind, date, records):
    import json
    (folder / f"{kind}_nvidia-h200_{date.replace('-', '').replace(':', '')[:15]}.json").write_text(
        json.dumps({"provenance": {"date": date, "gpu": "NVIDIA H200"}, "records": records}))


def _ceilings_folder(tmp_path, **ceilings):
    _write_run(tmp_path, "bench", "2026-11-29T10:00:00+00:00",
               [{"rung": "05", "M": 8192, "N": 8192, "K": 8192, "tflops": 350.0, "cublas_tflops": 700.0,
                 "pct_cublas": 50.0},
                {"rung": "09", "M": 8192, "N": 8192, "K": 8192, "tflops": 630.0, "cublas_tflops": 700.0,
                 "pct_cublas": 90.0}])
    _write_run(tmp_path, "ceilings", "2026-11-29T09:00:00+00:00", [{"cublas_tflops": 755.0, **ceilings}])
    return tmp_path


def test_place_on_ceilings_puts_a_rung_under_the_roofs_of_its_instruction(tmp_path, capsys):
    bound = [{"warps_per_sm": 8, "warp_tile": [64, 64], "feed": "registers", "tflops": 540.0},
             {"warps_per_sm": 8, "warp_tile": [64, 64], "feed": "ldmatrix", "tflops": 500.0},
             {"warps_per_sm": 16, "warp_tile": [64, 32], "feed": "ldmatrix", "tflops": 490.0}]
    folder = _ceilings_folder(tmp_path, fp32_tflops=70.0, mma_sync_bound=bound, mma_sync_tflops=600.0,
                              mma_sync_peak={"warps_per_sm": 16, "warp_tile": [64, 32]}, wgmma_tflops=800.0,
                              datasheet_fp16_tflops=1000.0)
    placed = roofs.place_on_ceilings("05", folder=folder)
    out = capsys.readouterr().out
    assert placed["tflops"] == 350.0 and placed["skipped"] == [] and placed["above"] == []
    # mma.sync rung: its two mma.sync roofs only; cuBLAS is a reference kernel beside it, not a roof
    assert {k: round(v["pct"], 1) for k, v in placed["roofs"].items()} == {"mma_sync_bound": 70.0, "mma_sync_peak": 58.3}
    assert placed["cublas"] == {"tflops": 700.0, "pct": 50.0}
    assert out.startswith("RECORDED on the NVIDIA H200 (bench_nvidia-h200_20261129T100000.json, 2026-11-29)")
    assert ("cuBLAS (cupy.matmul), the vendor baseline timed in the same run (a reference kernel, not a roof), 700.0: "
            "the rung is 50.0% of it") in out
    assert "RECORDED ceilings on the NVIDIA H200 (ceilings_nvidia-h200_20261129T090000.json, 2026-11-29)" in out
    assert "8 warps/SM of 64x64, ldmatrix" in out and "70.0%" in out
    assert "mma.sync register peak, 16 warps of 64x32" in out
    assert "FP32" not in out and "datasheet" not in out and "wgmma" not in out
    assert "No recorded profile of rung 05 at 8192^3: `hgemm-course profile 05 --size 8192`" in out

    placed = roofs.place_on_ceilings("09", folder=folder)       # wgmma: the wgmma peak only
    assert {k: round(v["pct"], 1) for k, v in placed["roofs"].items()} == {"wgmma_peak": 78.8}
    assert round(placed["cublas"]["pct"], 1) == 90.0


def test_place_on_ceilings_never_gives_more_than_all_of_a_roof(tmp_path, capsys):
    """A rung measured above a roof says the roof is wrong, with no percentage over 100."""
    folder = _ceilings_folder(tmp_path, mma_sync_tflops=300.0)          # below rung 05's 350 TFLOP/s
    placed = roofs.place_on_ceilings("05", folder=folder)
    out = capsys.readouterr().out
    assert placed["above"] == ["mma_sync_peak"] and placed["roofs"]["mma_sync_peak"]["pct"] is None
    assert "above it" in out and "that measurement of it is wrong (too low), not the rung" in out
    assert "116.7%" not in out


def test_place_on_ceilings_puts_the_fp32_rung_under_the_fp32_roof(tmp_path, capsys):
    _write_run(tmp_path, "bench", "2026-11-29T10:00:00+00:00",
               [{"rung": "02", "M": 8192, "N": 8192, "K": 8192, "tflops": 7.0, "cublas_tflops": 700.0,
                 "pct_cublas": 1.0}])
    _write_run(tmp_path, "ceilings", "2026-11-29T09:00:00+00:00",
               [{"cublas_tflops": 755.0, "fp32_tflops": 70.0, "mma_sync_tflops": 600.0, "wgmma_tflops": 800.0}])
    placed = roofs.place_on_ceilings("02", folder=tmp_path)
    out = capsys.readouterr().out
    assert {k: round(v["pct"], 1) for k, v in placed["roofs"].items()} == {"fp32": 10.0}
    assert "mma.sync" not in out and "FP32 CUDA cores" in out


def test_place_on_ceilings_skips_the_roofs_an_older_record_lacks(tmp_path, capsys):
    placed = roofs.place_on_ceilings("05", folder=_ceilings_folder(tmp_path))
    out = capsys.readouterr().out
    assert placed["roofs"] == {} and placed["cublas"]["pct"] == 50.0
    assert placed["skipped"] == ["mma_sync_bound (8 warps of 64x64 fed by ldmatrix)", "mma_sync_tflops"]
    assert "skipped, not in the ceilings record" in out
    assert roofs.place_on_ceilings("07", folder=tmp_path)["tflops"] is None
    assert "No recorded bench of rung 07 at 8192^3" in capsys.readouterr().out


def test_place_on_ceilings_prints_the_recorded_profile(tmp_path, capsys, monkeypatch):
    import sys
    import types
    calls = []
    fake = types.ModuleType("hgemm_course.measurement.profile")
    fake.recorded_profile = lambda rung, M, **kw: calls.append((rung, M, kw)) or {"rung": rung, "tensor_active_pct": 51.0}
    fake.describe = lambda record: f"RECORDED profile: tensor pipe active {record['tensor_active_pct']:.0f}%"
    fake.cycle_ratios = lambda M, folder: [{"rung": "05", "cycles": 4.0e6, "cublas_cycles": 2.2e6,
                                            "pct_cublas_cycles": 55.0, "cublas_file": "profile_x.json"}]
    monkeypatch.setitem(sys.modules, "hgemm_course.measurement.profile", fake)
    monkeypatch.setattr(measurement, "profile", fake, raising=False)   # what `from ..measurement import profile` reads
    placed = roofs.place_on_ceilings("05", folder=_ceilings_folder(tmp_path))
    assert calls == [("05", 8192, {"folder": tmp_path / "profiles"})]
    assert placed["profile"] == {"rung": "05", "tensor_active_pct": 51.0}
    out = capsys.readouterr().out
    assert "RECORDED profile: tensor pipe active 51%\nIn SM cycles, which no clock moves: rung 05 4,000,000, " \
           "cuBLAS 2,200,000 (profile_x.json): 55.0% of cuBLAS." in out
    # 8 warps of 64x64 at 4 x 4096 / 6.2 flops a cycle, 16 waves of 256x128 tiles at 8192^3
    floor = 16 * 2 * 256 * 128 * 8192 / (4 * 4096 / 6.2)
    assert placed["cycles"]["floor_cycles"] == pytest.approx(floor)
    assert placed["cycles"]["pct_of_floor"] == pytest.approx(100 * floor / 4.0e6)
    assert f"at {floor:,.0f} cycles, {100 * 2.2e6 / floor:.1f}% of cuBLAS's cycles" in out and "a model, not" in out
    fake.cycle_ratios = lambda M, folder: []
    assert roofs.place_on_ceilings("05", folder=_ceilings_folder(tmp_path))["cycles"] is None
    assert "`hgemm-course profile cublas --size 8192` on a GPU records one" in capsys.readouterr().out


def test_each_measured_ceiling_is_its_work_per_cycle_at_its_clock(capsys):
    from hgemm_course.measurement.roofline import recorded_ceilings
    from hgemm_course.library.target import RECORDED

    record = recorded_ceilings()
    rows = roofs.show_ceilings(record)
    for r in rows:
        if r.get("flop_per_cycle"):
            assert r["value"] == pytest.approx(r["flop_per_cycle"] * RECORDED.sm_count * r["ghz"] / 1e3, rel=1e-3)
    assert [r["name"] for r in rows if r["roof"]] == [next(r["name"] for r in rows if r["value"] == record["wgmma_tflops"])]
    assert "<- the roofline's compute roof" in capsys.readouterr().out


def test_place_in_cycles_sets_the_rungs_work_per_cycle_against_each_roofs(capsys):
    from hgemm_course.library.target import RECORDED

    out = roofs.place_in_cycles("05")
    text = capsys.readouterr().out
    mcycles = float(text.split("median launch: ")[1].split(" Mcycles")[0])
    assert out["flop_per_cycle"] == pytest.approx(2 * 8192**3 / (mcycles * 1e6 * RECORDED.sm_count), rel=1e-3)
    for roof in out["roofs"].values():
        assert roof["pct"] == pytest.approx(100 * out["flop_per_cycle"] / roof["flop_per_cycle"])
    assert "which no clock moves" in text and "TFLOP/s" not in text.split("RECORDED (profile")[0]
    assert "a model fitted to the measured loops" in text
