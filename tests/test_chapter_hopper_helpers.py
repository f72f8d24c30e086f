"""The helpers chapters 07-10 read their records through: stress runs, chapter 08's variants from one stretch,
a profile's cycles against the timing build's, and ptxas's reports on the wgmma pipeline."""
import pytest

from hgemm_course.course import chapter_limits, compiled, profile_tables, stress

STRESS = "tuning/2026-12-01/rung07_2cta_stress_variants.txt"


def test_stress_runs_are_read_line_by_line(tmp_path):
    path = tmp_path / "stress.txt"
    path.write_text("a 2CTA/SM: 17 of 40 verifications at 4096x2048x1024 passed; first failure: C[1, 2]\n"
                    "b: 40 of 40 verifications at 4096x2048x1024 passed\nnoise\n")
    assert stress.stress_runs(path) == [
        {"label": "a 2CTA/SM", "passed": 17, "runs": 40, "shape": "4096x2048x1024"},
        {"label": "b", "passed": 40, "runs": 40, "shape": "4096x2048x1024"}]


def test_show_stress_prints_the_chance_of_a_clean_run_at_the_first_builds_rate(capsys):
    shown = stress.show_stress(STRESS, {"07 before 128x128 2CTA/SM": "unfenced",
                                         "07 before + proxy fence before release 2CTA/SM": "fenced"})
    assert [(r["name"], r["passed"], r["runs"]) for r in shown] == [("unfenced", 17, 40), ("fenced", 40, 40)]
    assert f"{(17 / 40) ** 40:.1e}" in capsys.readouterr().out


def test_limits_rows_come_from_one_stretch():
    data = {"size": 1000, "variants": [
        {"variant": "default", "tiles": [256, 128, 64, 64, 64, 4], "smem_bytes": 2048, "registers": 200,
         "ctas_per_sm": 1, "pct_cublas_pairs": [50.0, 60.0, 55.0],
         "launch_clocks": [{"cycles": 2000, "ns": 1000}, {"cycles": 3000, "ns": 2000}, {"cycles": 2200, "ns": 1100}]},
        {"variant": "5 stages", "tiles": [256, 128, 64, 64, 64, 5], "smem_bytes": 9, "skipped": "too big"}]}
    row, refused = chapter_limits.limits_stretch_rows(data)
    assert row["ms"] == pytest.approx(1.1e-3) and row["mcycles"] == pytest.approx(2.2e-3)
    assert row["ghz"] == pytest.approx(2.0) and row["pct"] == 55.0
    assert row["tflops"] == pytest.approx(2 * 1000**3 / 1.1e-6 / 1e12)
    assert refused["why"] == "too big"


def test_the_recorded_limits_table_judges_each_variant_against_the_default(capsys):
    rows = chapter_limits.show_limits_stretch({"2 CTAs/SM": "two CTAs"})
    out = capsys.readouterr().out
    assert "two CTAs" in out and "results/limits_" in out
    assert all(r.get("verdict") is not None for r in rows if "ms" in r and r["variant"] != "default")


def test_profile_against_timing_sets_the_two_instruments_side_by_side():
    rows = {r["rung"]: r for r in profile_tables.profile_against_timing("09", "10")}
    for r in rows.values():
        assert r["ratio"] == pytest.approx(r["profile_cycles"] / r["timing_cycles"])
        assert r["timed_over_plain"] is not None


def test_wgmma_reports_are_read_from_ptxas_log():
    log = ("ptxas info    : (C7517) wgmma.wait_group is injected in around line 531 by compiler to allow use of "
           "registers defined by GMMA in function '_Z3k09'\n"
           "ptxas info    : (C7517) wgmma.wait_group is injected in around line 550 by compiler to allow use of "
           "registers defined by GMMA in function '_Z3k09'\n"
           "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to x "
           "in the function '_Z3k12'\nptxas info    : Used 154 registers\n")
    assert compiled.wgmma_reports(log) == [
        {"code": "C7517", "message": "wgmma.wait_group is injected in around line N by compiler to allow use of "
                                     "registers defined by GMMA", "count": 2},
        {"code": "C7515", "message": "Potential Performance Loss: wgmma.mma_async instructions are serialized due "
                                     "to x", "count": 1}]


def test_an_accumulator_touched_between_products_makes_ptxas_serialize_rung_09():
    pytest.importorskip("cuda.bindings")
    line = "/*scale_d=*/true);\n"
    plain = compiled.compile_edited("09", line, line)
    touched = compiled.compile_edited("09", line, line + "acc[i][0][0] += static_cast<float>(M == 12345);\n")
    assert compiled.wgmma_reports(plain.log) == []
    assert any("serialized" in r["message"] for r in compiled.wgmma_reports(touched.log))
    with pytest.raises(ValueError, match="not once"):
        compiled.compile_edited("09", "no such line\n", "")


def test_limits_or_show_without_a_gpu_shows_the_recorded_variants_from_one_stretch(capsys):
    rows = chapter_limits.limits_or_show(one_stretch=True, names={"2 CTAs/SM": "two CTAs"})
    assert any(r["name"] == "two CTAs" for r in rows) and "recorded on the NVIDIA H200" in capsys.readouterr().out
