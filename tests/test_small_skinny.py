"""Chapter 13's counts and tables (hgemm_course.course.small_skinny) and the vendor-sweep figure's data
(hgemm_course.viz.vendor_sweep), tested through the data, on the recorded H200 files and on made-up records."""
import math

import pytest

from hgemm_course.library import plan as planning
from hgemm_course.course import small_skinny as ss
from hgemm_course.viz import FIGURES, vendor_sweep_data, vendor_sweep_figure

CUBLAS, CUBLASLT = "cuBLAS (cupy.matmul)", "cuBLASLt (torch.matmul)"


def _record(M, N, K, pct, file="bench_b.json", vendor=CUBLAS, rung="plan", ms=0.02):
    return {"rung": rung, "M": M, "N": N, "K": K, "ms": ms, "cublas_ms": ms * pct / 100, "pct_cublas": pct + 0.5,
            "pct_cublas_pairwise": pct, "vendor": vendor, "host_us": 15.0, "vendor_host_us": 20.0,
            "cycles": 30000.0, "clock_ghz": 1.8, "file": file, "gpu": "NVIDIA H200", "date": "2026-12-03",
            "input_sets": 4, "l2_bytes": 60 << 20}


SHAPES = [(16, 4096, 4096), (1000, 1000, 1000), (256, 256, 65536), (4096, 4096, 4096)]


def test_shape_kinds_follow_the_rules_in_order():
    assert ss.shape_kind(16, 4096, 4096) == "small M"
    assert ss.shape_kind(96, 5000, 3000) == "rows off 128 B"          # small M too, but its rows come first
    assert ss.shape_kind(1000, 1000, 1000) == "rows off 128 B"
    assert ss.shape_kind(256, 256, 65536) == "K-heavy" and ss.shape_kind(4096, 4096, 128) == "K-light"
    assert ss.shape_kind(512, 512, 512) == "small cubes" and ss.shape_kind(8192, 8192, 8192) == "larger M"
    assert {ss.shape_kind(*s) for s in ss.sweep_shapes()} == set(ss.KINDS)


def test_intensity_and_memory_roof_are_the_roofline_counts():
    assert ss.arithmetic_intensity(256, 256, 256) == pytest.approx(256 / 3)
    bytes_ = 2 * (16 * 4096 + 4096 * 4096 + 16 * 4096)
    assert ss.memory_roof_us(16, 4096, 4096, 4000.0) == pytest.approx(bytes_ / 4000e9 * 1e6)


def test_the_worked_split_count_at_256x256x65536():
    c = ss.split_count(256, 256, 65536)
    assert (c["tiles"], c["pieces"], c["k_iters"], c["piece_iters"]) == (16, 9, 1024, 114)
    assert c["busy_whole"] == pytest.approx(16 / 132)
    assert c["streamk_ctas"][0] >= 8 and c["streamk_ctas"][1] <= 10
    assert c["split_us"] == pytest.approx(planning.split_time_ns(256, 256, 65536, 132, 64, 64) / 1e3)
    assert c["whole_us"] == pytest.approx(planning.row64_time_ns(256, 256, 65536, 132, 64, 64) / 1e3)
    assert "ceil(132 / 16) = 9 pieces per tile" in ss.format_split_count(c)
    assert ss.split_count(1024, 1024, 32768, bm=128, bn=128)["split_us"] is None     # three pieces: not weighed


def test_vendor_sweep_names_the_file_and_the_baseline_per_shape():
    records = [_record(*s, 80.0 + i, vendor=(CUBLAS, CUBLASLT)[i % 2]) for i, s in enumerate(SHAPES)]
    data = vendor_sweep_data(records, shapes=SHAPES)
    assert data["file"] == "bench_b.json" and data["gpu"] == "NVIDIA H200"
    assert dict(zip(data["shapes"], data["vendor"])) == {s: (CUBLAS, CUBLASLT)[i % 2] for i, s in enumerate(SHAPES)}
    assert data["vendors"] == [CUBLAS, CUBLASLT]
    assert dict(zip(data["shapes"], data["pct"])) == {s: 80.0 + i for i, s in enumerate(SHAPES)}  # pairwise, not ratio
    assert data["min"] == 80.0 and data["min_shape"] == (16, 4096, 4096)
    assert data["geomean"] == pytest.approx(math.exp(sum(math.log(80.0 + i) for i in range(4)) / 4))
    assert data["kinds"] == sorted(data["kinds"], key=ss.KINDS.index)


def test_vendor_sweep_is_the_newest_run_of_every_shape_not_a_newer_partial_one():
    older = [_record(*s, 90.0, file="bench_a.json") for s in SHAPES]
    newer_partial = [_record(*SHAPES[0], 50.0, file="bench_c.json")]
    other_rung = [_record(*s, 70.0, file="bench_d.json", rung="11") for s in SHAPES]
    assert vendor_sweep_data(older + newer_partial + other_rung, shapes=SHAPES)["file"] == "bench_a.json"
    with pytest.raises(ValueError, match="hgemm-course bench plan --shapes benchmarks/shapes_small_skinny.txt"):
        vendor_sweep_data(newer_partial + other_rung, shapes=SHAPES)


def test_the_recorded_sweep_covers_the_file_and_is_registered():
    data = vendor_sweep_data()
    assert sorted(data["shapes"]) == sorted(ss.sweep_shapes()) and len(data["shapes"]) == 38
    assert set(data["vendors"]) <= {CUBLAS, CUBLASLT} and all(data["host_us"])
    assert FIGURES["vendor-sweep"] is vendor_sweep_figure
    title = vendor_sweep_figure()._suptitle.get_text()
    assert f"{data['geomean']:.1f}%" in title and f"lowest {data['min']:.1f}%" in title and data["file"] in title


def test_roof_rows_put_decode_below_the_ridge_and_big_cubes_above():
    ceilings = {"wgmma_tflops": 800.0, "bandwidth_gbs": 4000.0, "cublas_tflops": 700.0}
    rows = {r["shape"]: r for r in ss.roof_rows([_record(*s, 90.0) for s in SHAPES], ceilings)}
    assert rows[16, 4096, 4096]["below_ridge"] and not rows[4096, 4096, 4096]["below_ridge"]
    r = rows[16, 4096, 4096]
    assert r["ridge"] == pytest.approx(200.0)
    assert r["pct_roof_gemm"] == pytest.approx(100 * ss.memory_roof_us(16, 4096, 4096, 4000.0) / 20.0)
    assert r["pct_roof_vendor"] == pytest.approx(r["pct_roof_gemm"] / 0.9)
    assert rows[256, 256, 65536]["in_l2"] is False and rows[1000, 1000, 1000]["in_l2"] is True
    assert "fit in L2" in ss.format_roof(list(rows.values()))


def test_host_rows_say_which_side_sets_the_pace():
    rows = ss.host_rows([_record(256, 256, 256, 90.0, ms=0.006), _record(4096, 4096, 4096, 100.0, ms=0.2)])
    assert [r["shape"] for r in rows] == [(256, 256, 256), (4096, 4096, 4096)]
    assert rows[0]["host_bound"] and rows[0]["paced_us"] == 15.0
    assert not rows[1]["host_bound"] and rows[1]["paced_us"] == pytest.approx(200.0)


def test_probe_rows_read_the_recorded_probe_and_keep_its_plan_apart():
    path, probe = ss.recorded_probe()
    assert path.name == ss.VENDOR_PROBE.name
    rows = {r["shape"]: r for r in ss.probe_rows(probe)}
    row = rows[256, 256, 65536]
    assert "plan" not in row["candidates"] and "cupy" not in row["candidates"]
    assert row["best"] == max(row["candidates"], key=row["candidates"].get)
    assert row["older_plan_pct"] < row["best_pct"]
    assert (8192, 8192, 8192) not in rows                     # the probe timed no candidates there
    assert "older plan" in ss.format_probe(list(rows.values()))


def test_each_family_of_the_apart_probe_names_its_fastest_launch():
    from hgemm_course.course import small_skinny as ss

    _, probe = ss.recorded_probe(ss.APART_PROBE)
    rows = ss.family_rows(probe)
    assert len(rows) == len(probe["rows"]) and all(len(r["best"]) == 3 for r in rows)
    for r in rows:
        row = next(x for x in probe["rows"] if (x["M"], x["N"], x["K"]) == r["shape"])
        for name, pct in r["best"].values():
            assert pct == row["pct_best_vendor"][name]
        apart_name, apart_pct = r["best"]["rung 12, split apart"]
        assert apart_name.endswith(" apart")
        assert apart_pct == max(v for k, v in row["pct_best_vendor"].items() if k.endswith(" apart"))


def test_wide_rows_set_the_two_tile_widths_side_by_side_with_the_plans_pick():
    path, probe = ss.recorded_probe(ss.WIDE_PROBE)
    rows = ss.wide_rows(probe)
    by_shape = {r["shape"]: r for r in rows}
    cube = by_shape[1536, 1536, 1536]
    assert cube["tiles"][128, 256][0] == 72 and cube["tiles"][128, 192][0] == 96     # 12 x 6 and 12 x 8 tiles
    assert cube["tiles"][128, 192][1] > cube["tiles"][128, 256][1] and cube["plan_tiles"] == "128x192"
    assert by_shape[1536, 768, 3072]["plan_tiles"] != "128x192"
    text = ss.format_wide(rows)
    assert "128x192 tiles, %" in text and len(text.splitlines()) == len(rows) + 2
