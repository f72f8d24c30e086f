import pytest

from hgemm_course.course import chapter


def test_show_recorded_labels_its_source(capsys):
    rows = chapter.show_recorded("07", sizes=[8192])
    out = capsys.readouterr().out
    assert rows and all(r["rung"] == "07" and r["M"] == 8192 for r in rows)
    assert out.startswith("RECORDED on the NVIDIA H200 (bench_")


def test_show_recorded_says_when_there_is_nothing(capsys):
    assert chapter.show_recorded("99") == []
    assert "No recorded result for rung 99" in capsys.readouterr().out


def test_model_vs_hardware_prints_the_recorded_comparison(capsys):
    records = chapter.model_vs_hardware("banks")
    out = capsys.readouterr().out
    assert records and out.startswith("RECORDED on the NVIDIA H200 (model_banks_")
    assert {r["check"] for r in records} == {"banks"}
    assert all({"model", "hardware", "agree"} <= set(r) for r in records)
    assert chapter.model_vs_hardware("nothing") == []


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
    rows = chapter.show_tuning("05", folder=tmp_path)
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
    rows = chapter.show_tuning("05", also=("06",), folder=tmp_path)
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
    rows = chapter.show_tuning("09", folder=tmp_path)
    out = capsys.readouterr().out
    assert out.startswith("RECORDED during tuning on the NVIDIA H200 (new.json, 2026-11-29): "
                          "scripts/tune_hopper_ladder.py (since replaced by `hgemm-course tune`)")
    assert [(r["rung"], r["pct_cublas"], r["passed"]) for r in rows] == [
        ("09", {(8192, 8192, 8192): 87.8}, True), ("09", {}, False)]
    assert {r["file"] for r in rows} == {"new.json"}
    assert "default <1,2>" in out and "87.8%" in out and "FAILED verification" in out and "k07" not in out
    rows = chapter.show_tuning("09", also=("07",), folder=tmp_path)
    assert [r["rung"] for r in rows] == ["09", "07", "09"]
    capsys.readouterr()
    _tune_run(tmp_path, "2026-12-03T10:00:00+00:00", "07", {"256x128 s4": (60.0, 61.0)})
    rows = chapter.show_tuning("09", also=("07",), folder=tmp_path)
    out = capsys.readouterr().out
    assert [r["rung"] for r in rows] == ["07", "09", "09"]
    assert out.startswith("RECORDED by `hgemm-course tune 07`") and "RECORDED during tuning" in out


def test_show_tuning_of_the_recorded_results(capsys):
    """Rung 11's recorded tune run; chapters 09 and 10 show rungs 07, 09 and 10 (from the scripts' runs until
    a tune run of each is recorded)."""
    rows = chapter.show_tuning("11")
    out = capsys.readouterr().out
    assert out.startswith("RECORDED by `hgemm-course tune 11` on the NVIDIA H200 (tune_")
    assert rows and {r["rung"] for r in rows} == {"11"} and all(r["passed"] for r in rows)
    for rung in ("09", "10"):
        rows = chapter.show_tuning(rung)
        out = capsys.readouterr().out
        assert rows and {r["rung"] for r in rows} == {rung} and all(r["passed"] for r in rows)
        assert out.startswith("RECORDED ") and "on the NVIDIA H200 (" in out and ".json, " in out.splitlines()[0]
    assert chapter.show_tuning("99") == []
    assert "No recorded tuning run of rung 99" in capsys.readouterr().out


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


@pytest.fixture
def no_profile_module(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "hgemm_course.measurement.profile", None)     # as if profile.py did not exist


def test_place_on_ceilings_puts_a_rung_under_the_roofs_of_its_instruction(tmp_path, capsys, no_profile_module):
    bound = [{"warps_per_sm": 8, "warp_tile": [64, 64], "feed": "registers", "tflops": 540.0},
             {"warps_per_sm": 8, "warp_tile": [64, 64], "feed": "ldmatrix", "tflops": 500.0},
             {"warps_per_sm": 16, "warp_tile": [64, 32], "feed": "ldmatrix", "tflops": 490.0}]
    folder = _ceilings_folder(tmp_path, fp32_tflops=70.0, mma_sync_bound=bound, mma_sync_tflops=600.0,
                              mma_sync_peak={"warps_per_sm": 16, "warp_tile": [64, 32]}, wgmma_tflops=800.0,
                              datasheet_fp16_tflops=1000.0)
    placed = chapter.place_on_ceilings("05", folder=folder)
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

    placed = chapter.place_on_ceilings("09", folder=folder)       # wgmma: the wgmma peak only
    assert {k: round(v["pct"], 1) for k, v in placed["roofs"].items()} == {"wgmma_peak": 78.8}
    assert round(placed["cublas"]["pct"], 1) == 90.0


def test_place_on_ceilings_never_gives_more_than_all_of_a_roof(tmp_path, capsys, no_profile_module):
    """A rung measured above a roof says the roof is wrong, with no percentage over 100."""
    folder = _ceilings_folder(tmp_path, mma_sync_tflops=300.0)          # below rung 05's 350 TFLOP/s
    placed = chapter.place_on_ceilings("05", folder=folder)
    out = capsys.readouterr().out
    assert placed["above"] == ["mma_sync_peak"] and placed["roofs"]["mma_sync_peak"]["pct"] is None
    assert "above it" in out and "that measurement of it is wrong (too low), not the rung" in out
    assert "116.7%" not in out


def test_place_on_ceilings_puts_the_fp32_rung_under_the_fp32_roof(tmp_path, capsys, no_profile_module):
    _write_run(tmp_path, "bench", "2026-11-29T10:00:00+00:00",
               [{"rung": "02", "M": 8192, "N": 8192, "K": 8192, "tflops": 7.0, "cublas_tflops": 700.0,
                 "pct_cublas": 1.0}])
    _write_run(tmp_path, "ceilings", "2026-11-29T09:00:00+00:00",
               [{"cublas_tflops": 755.0, "fp32_tflops": 70.0, "mma_sync_tflops": 600.0, "wgmma_tflops": 800.0}])
    placed = chapter.place_on_ceilings("02", folder=tmp_path)
    out = capsys.readouterr().out
    assert {k: round(v["pct"], 1) for k, v in placed["roofs"].items()} == {"fp32": 10.0}
    assert "mma.sync" not in out and "FP32 CUDA cores" in out


def test_place_on_ceilings_skips_the_roofs_an_older_record_lacks(tmp_path, capsys, no_profile_module):
    placed = chapter.place_on_ceilings("05", folder=_ceilings_folder(tmp_path))
    out = capsys.readouterr().out
    assert placed["roofs"] == {} and placed["cublas"]["pct"] == 50.0
    assert placed["skipped"] == ["mma_sync_bound (8 warps of 64x64 fed by ldmatrix)", "mma_sync_tflops"]
    assert "skipped, not in the ceilings record" in out
    assert chapter.place_on_ceilings("07", folder=tmp_path)["tflops"] is None
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
    placed = chapter.place_on_ceilings("05", folder=_ceilings_folder(tmp_path))
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
    assert chapter.place_on_ceilings("05", folder=_ceilings_folder(tmp_path))["cycles"] is None
    assert "`hgemm-course profile cublas --size 8192` on a GPU records one" in capsys.readouterr().out


def _bench_with_cycles(folder, cycles_at: dict, rung="10", date="2026-12-02T10:00:00+00:00"):
    """A bench run held on the stream (after HOLD_SINCE) with the timing build's launches: size -> median cycles,
    four launches each within 0.5% of it."""
    records = [{"rung": rung, "M": n, "N": n, "K": n, "tflops": 600.0, "cublas_tflops": 700.0, "pct_cublas": 85.7,
                "cycles": c, "clock_ghz": 1.5, "launch_clocks": [{"cycles": c * f} for f in (0.995, 1.0, 1.002, 1.005)]}
               for n, c in cycles_at.items()]
    _write_run(folder, "bench", date, records)


def test_size_sweep_is_flat_where_the_cycles_per_unit_of_work_are_level(tmp_path, capsys):
    # 1024^3 fills a quarter of one wave of 128x256 tiles: its cycles do not count towards the verdict line
    _bench_with_cycles(tmp_path, {1024: 400_000.0, 2048: 2.0e6 / 64, 4096: 2.0e6 / 8, 8192: 2.0e6})
    found = chapter.size_sweep("10", folder=tmp_path)["10"]
    out = capsys.readouterr().out
    assert [r["size"] for r in found["rows"]] == [1024, 2048, 4096, 8192]
    assert [r["tiles"] for r in found["rows"]] == [32, 128, 512, 2048] and found["rows"][-1]["waves"] == 16
    assert found["rows"][0]["slots_used"] == pytest.approx(32 / 132)
    assert found["rows"][-1]["flop_per_sm_cycle"] == pytest.approx(2 * 8192**3 / (2.0e6 * 132))
    assert [v.outcome for v in found["verdicts"]] == ["more", "level", "level"] and found["flat"] is True
    assert out.startswith("RECORDED on the NVIDIA H200 (bench_nvidia-h200_20261202T100000.json): rung 10, 128x256 tiles")
    assert out.rstrip().endswith("(2048^3, 4096^3, against 8192^3): flat: each is level with 8192^3 in SM cycles per "
                                 "unit of work")


def test_size_sweep_is_not_flat_where_a_full_size_takes_more(tmp_path, capsys):
    _bench_with_cycles(tmp_path, {2048: 1.3 * 2.0e6 / 64, 4096: 2.0e6 / 8, 8192: 2.0e6})
    found = chapter.size_sweep("10", folder=tmp_path)["10"]
    assert found["flat"] is False and [v.outcome for v in found["verdicts"]] == ["more", "level"]
    assert "not flat: 2048^3 differs beyond the spread from 8192^3" in capsys.readouterr().out


def test_size_sweep_skips_runs_from_before_the_stream_hold(tmp_path, capsys):
    _bench_with_cycles(tmp_path, {2048: 1.0, 8192: 2.0}, date="2026-11-30T10:00:00+00:00")
    assert chapter.size_sweep("10", folder=tmp_path) == {}
    assert "No recorded run of rung 10 at 1024, 2048, 4096, 8192 that held the stream" in capsys.readouterr().out


def test_size_sweep_of_the_recorded_rungs(capsys):
    found = chapter.size_sweep("10", "11")
    assert set(found) == {"10", "11"}
    for rung in found.values():
        assert [r["size"] for r in rung["rows"]] == [1024, 2048, 4096, 8192]
        assert all(r["cycles"] for r in rung["rows"]) and isinstance(rung["flat"], bool)
    assert capsys.readouterr().out.count("SM cycles per 8192^3 of work") == 6


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
    (judged,) = chapter.tune_verdicts("11", "A", "B", path=path)
    assert judged.what == what and judged.outcome == "fewer" and judged.ratio == pytest.approx(0.9, abs=0.01)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"RECORDED on the NVIDIA H200 ({path.name}, 2026-12-02): B against A"
    assert out[1].startswith(f"{what}: B takes 10.0% less time than A, beyond the spread")
    assert chapter.tune_verdicts("11", "A", "B", folder=tmp_path)[0].what == what     # the newest run of rung 11
    assert chapter.tune_verdicts("11", "A", "C", path=path) == []


def test_profiles_side_by_side_reads_the_newest_profiles(capsys):
    records = chapter.profiles_side_by_side("09", "10")
    out = capsys.readouterr().out
    assert [r["rung"] for r in records] == ["09", "10"]
    assert out.startswith("RECORDED profiles on the NVIDIA H200 at 8192^3, one launch each")
    change = records[1]["cycles"] / records[0]["cycles"] - 1
    assert f"rung 10 takes {abs(change):.1%} {'fewer' if change < 0 else 'more'} SM cycles than rung 09" in out
    assert "stalled warps on long_scoreboard (%)" in out and "stalled warps on gmma (%)" in out
    assert chapter.profiles_side_by_side("10", size=1000) == []
    assert "No recorded profile of rung 10 at 1000^3" in capsys.readouterr().out


def test_model_vs_hardware_shows_ties_in_a_ranking(capsys):
    """The recorded L2 ranking: model and ncu differ in the order of two super tiles less than a point apart,
    which the record counts as a tie; the line shows the tie and says so, not a bare "agree"."""
    chapter.model_vs_hardware("l2")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("ranking"))
    assert "model super_8x4 > super_16x2 = super_4x8" in line and "ncu super_8x4 > super_4x8 = super_16x2" in line
    assert line.endswith("the same order once figures less than 1 point apart count as tied (=)")


def test_model_vs_hardware_footnotes_the_counter_of_all_shared_loads(capsys):
    """Rungs 04-07's l1tex op_ld counters count more than the model's ldmatrix: a footnote, not DISAGREE."""
    chapter.model_vs_hardware("banks")
    out = capsys.readouterr().out
    ld = [x for x in out.splitlines() if x.endswith("_op_ld.sum")]
    assert ld and not any("DISAGREE" in x for x in ld) and all("counts more [" in x for x in ld)
    assert "counts every shared-memory load wavefront of the LSU pipe" in out


CU = """// header
#pragma once

// What the wrapper does.
template <int N>
__device__ __forceinline__ void wrap(unsigned a) {
    asm volatile("op %0;" :: "r"(a));
}

__global__ void k(int x) {
    auto helper = [&](int i) {
        wrap<1>(i);
    };
    // ---- prologue: first ----
    helper(0);
    // ---- main loop: the loop ----
    for (int i = 0; i < x; ++i) {
        helper(i);
    }
    // ---- epilogue: last ----
    wrap<2>(x);
}
"""


def test_source_excerpt_reads_a_banner_section_to_the_next_banner_or_the_end_of_its_block():
    assert chapter.source_excerpt(CU, "main loop").splitlines() == [
        "    // ---- main loop: the loop ----", "    for (int i = 0; i < x; ++i) {", "        helper(i);", "    }"]
    assert chapter.source_excerpt(CU, "epilogue").splitlines() == ["    // ---- epilogue: last ----", "    wrap<2>(x);"]


def test_source_excerpt_reads_a_function_with_its_comment_and_a_lambda_not_a_call():
    assert chapter.source_excerpt(CU, "wrap").splitlines()[:2] == ["// What the wrapper does.", "template <int N>"]
    assert chapter.source_excerpt(CU, "wrap").rstrip().endswith('asm volatile("op %0;" :: "r"(a));\n}')
    assert chapter.source_excerpt(CU, "helper").splitlines() == [
        "    auto helper = [&](int i) {", "        wrap<1>(i);", "    };"]
    with pytest.raises(ValueError, match="no banner"):
        chapter.source_excerpt(CU, "nothing")


def test_show_source_prints_the_kernel_as_it_compiles(capsys):
    out = chapter.show_source("03", "main loop")
    assert out.startswith("// hgemm_course/library/kernels/k03_wmma.cu: main loop\n") and "wmma::mma_sync" in out
    assert "BEGIN SOLUTION" not in out and "EXERCISE" not in out and capsys.readouterr().out == out
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in chapter.show_source("ldmatrix", "ldmatrix_x4")


def test_a_stretch_row_takes_time_cycles_and_clock_from_the_same_launches():
    clocks = [{"cycles": c, "ns": n, "ghz": 0.0} for c, n in ((1_000_000, 500_000), (1_100_000, 600_000),
                                                               (1_200_000, 700_000))]
    r = {"rung": "04", "M": 4096, "N": 4096, "K": 4096, "launch_clocks": clocks, "paired": True, "pct_cublas": 0.0,
         "samples_ms": [1.0, 2.0, 1.0], "cublas_samples_ms": [0.5, 0.5, 0.6]}
    s = chapter.stretch_row(r)
    assert s["ms"] == 0.6 and s["mcycles"] == 1.1 and s["ghz"] == pytest.approx(1.1 / 0.6)
    assert s["tflops"] == pytest.approx(2 * 4096**3 / 0.6e-3 / 1e12)
    assert s["pct"] == 50.0 and s["pct_p10"] < 50.0 < s["pct_p90"]
    assert chapter.stretch_row({**r, "launch_clocks": []}) is None


def test_show_recorded_in_one_stretch_puts_its_provenance_under_the_table(capsys):
    chapter.show_recorded("04", sizes=[4096], one_stretch=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["rung", "M", "x", "N", "x"] and "GHz" in lines[0]
    assert lines[-1].startswith("recorded on the NVIDIA H200, 20") and "results/bench_" in lines[-1]


def test_each_measured_ceiling_is_its_work_per_cycle_at_its_clock(capsys):
    from hgemm_course.measurement.roofline import recorded_ceilings
    from hgemm_course.library.target import RECORDED

    record = recorded_ceilings()
    rows = chapter.show_ceilings(record)
    for r in rows:
        if r.get("flop_per_cycle"):
            assert r["value"] == pytest.approx(r["flop_per_cycle"] * RECORDED.sm_count * r["ghz"] / 1e3, rel=1e-3)
    assert [r["name"] for r in rows if r["roof"]] == [next(r["name"] for r in rows if r["value"] == record["wgmma_tflops"])]
    assert "<- the roofline's compute roof" in capsys.readouterr().out


def test_an_ablation_step_is_judged_against_a_rung_by_the_launches_of_both(capsys):
    judged = chapter.compare_step_with_rung(chapter.ABLATION_03_TO_04, "04f + 4 stages", "05", 8192)
    out = capsys.readouterr().out
    assert judged is not None and "ablate_03_to_04.json" in out and "results/bench_" in out
    assert judged.what == "SM cycles at 8192^3, two runs" and str(judged) in out
    assert chapter.compare_step_with_rung(chapter.ABLATION_03_TO_04, "04f + 4 stages", "05", 333) is None


def test_source_lines_read_a_stretch_of_a_kernel_body(capsys):
    assert chapter.source_lines(CU, "// ---- prologue", "helper(0);").splitlines() == [
        "    // ---- prologue: first ----", "    helper(0);"]
    with pytest.raises(ValueError, match="no line"):
        chapter.source_lines(CU, "helper(0);", "auto helper")
    out = chapter.show_lines("06", "const int grid_m", "const int bid_n")
    assert out.startswith("// hgemm_course/library/kernels/k06_supertile.cu\n") and "SUPER_M" in out


def test_size_sweep_in_one_stretch_prints_tflops_at_the_clock_beside_it(capsys):
    from hgemm_course.library.target import RECORDED

    rows = chapter.size_sweep("05", sizes=(4096, 8192), one_stretch=True)["05"]["rows"]
    for r in rows:
        assert r["tflops"] == pytest.approx(r["flop_per_sm_cycle"] * RECORDED.sm_count * r["clock_ghz"] / 1e3, rel=1e-3)
    assert "vendor  % vendor" not in capsys.readouterr().out


def test_place_in_cycles_sets_the_rungs_work_per_cycle_against_each_roofs(capsys):
    from hgemm_course.library.target import RECORDED

    out = chapter.place_in_cycles("05")
    text = capsys.readouterr().out
    mcycles = float(text.split("median launch: ")[1].split(" Mcycles")[0])
    assert out["flop_per_cycle"] == pytest.approx(2 * 8192**3 / (mcycles * 1e6 * RECORDED.sm_count), rel=1e-3)
    for roof in out["roofs"].values():
        assert roof["pct"] == pytest.approx(100 * out["flop_per_cycle"] / roof["flop_per_cycle"])
    assert "which no clock moves" in text and "TFLOP/s" not in text.split("RECORDED (profile")[0]
    assert "a model fitted to the measured loops" in text
