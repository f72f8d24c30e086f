"""Figures: the data behind each one, and that each renders to PNG."""
import io
import re
import time

import numpy as np
import pytest

from hgemm_course import viz
from hgemm_course.viz.ladder import LEVEL_PCT

SMALL_L2 = {"M": 1024, "N": 1024, "K": 512, "BM": 128, "BN": 64, "BK": 64, "super_tile_ctas": 16,
            "l2_bytes": 512 * 1024, "ctas_in_flight": 16, "progress": False}
FAKE_RECORDS = [
    {"rung": "03", "M": 4096, "N": 4096, "K": 4096, "tflops": 200.0, "cublas_tflops": 600.0, "pct_cublas": 33.3,
     "gpu": "NVIDIA H200", "date": "2025-01-01"},
    {"rung": "03", "M": 8192, "N": 8192, "K": 8192, "tflops": 210.0, "cublas_tflops": 620.0, "pct_cublas": 33.9,
     "gpu": "NVIDIA H200", "date": "2025-01-01"},
    {"rung": "05", "M": 8192, "N": 8192, "K": 8192, "tflops": 300.0, "cublas_tflops": 620.0, "pct_cublas": 48.4,
     "gpu": "NVIDIA H200", "date": "2025-01-02"},
]


def test_swizzle_data():
    data = viz.swizzle_data()
    assert data["linear"].tolist() == [list(range(8))] * 8
    assert data["swizzled"][3].tolist() == [c ^ 3 for c in range(8)]
    assert data["bank_groups_per_chunk"] == [8] * 8


def test_banks_data():
    data = viz.banks_data()
    assert [data[k]["wavefronts"] for k in ("linear", "padded", "swizzle128")] == [32, 4, 4]
    assert data["linear"]["ways"][:4].tolist() == [8, 8, 8, 8]
    assert data["swizzle128"]["lanes"].sum(axis=0).tolist() == [1] * 32
    assert viz.banks_data(access="lds.32 column")["linear"]["wavefronts"] == 32
    with pytest.raises(ValueError, match="not 'ldmatrix.x4'"):
        viz.banks_data(access="ld.global")


def test_cta_order_data():
    data = viz.cta_order_data(M=1024, N=1024, BM=128, BN=128, super_m=2, super_n=2, ctas_in_flight=8)
    row, sup = data.values()
    assert row["index"][0].tolist() == list(range(8)) and row["wave"][1].tolist() == [1] * 8
    assert (row["first_wave_a_tiles"], row["first_wave_b_tiles"]) == (1, 8)
    assert (sup["first_wave_a_tiles"], sup["first_wave_b_tiles"]) == (2, 4)
    assert sorted(sup["index"].ravel()) == list(range(64))


def test_l2_supertile_data():
    data = viz.l2_supertile_data(**SMALL_L2)
    assert data["shapes"] == [(1, 16), (2, 8), (4, 4), (8, 2)]
    assert ((0 < data["hit_rate"]) & (data["hit_rate"] < 1)).all()
    assert data["hit_rate"][2] > data["hit_rate"][0]                 # square beats row-major
    assert (data["dram_bytes"] >= data["compulsory_bytes"]).all()
    with pytest.raises(ValueError, match="pass at most 16"):
        viz.l2_supertile_data(**{**SMALL_L2, "super_tile_ctas": 32})


@pytest.mark.slow
def test_l2_supertile_figure_data_is_quick_and_super_tiles_cut_dram():
    """What `hgemm-course viz l2-supertile` draws (rung 06 at 8192^3): well under a minute on a 2-core CPU, and
    rung 06's own super tile reads less from DRAM than row-major."""
    start = time.perf_counter()
    data = viz.l2_supertile_data(progress=False)
    assert time.perf_counter() - start < 60
    assert data["shapes"][0] == (1, 32) and (8, 4) in data["shapes"]
    assert data["dram_bytes"][data["shapes"].index((8, 4))] < data["dram_bytes"][0]


def test_occupancy_data():
    data = viz.occupancy_data(threads=128, regs_per_thread=128)
    assert (113 * 1024, 2) in data["cliffs"]
    assert data["ctas_per_sm"][0] == 4 and data["ctas_per_sm"][-1] == 1
    assert np.all(np.diff(data["ctas_per_sm"]) <= 0)


def test_fragments_data():
    data = viz.fragments_data()
    assert data["A"][9, 10].item() == 4 * 1 + 1   # row 9 = group 1 (+8), col 10 = k 8 + 2 * 1
    assert data["B"][3, 5].item() == 4 * 5 + 1
    assert data["C"][8, 7].item() == 3


def test_ladder_data():
    data = viz.ladder_data(FAKE_RECORDS)
    assert data["rungs"] == ["03", "05"]
    assert data["pct_cublas"].tolist() == [33.9, 48.4]
    assert data["sizes"][0] == (8192, 8192, 8192) and data["gpus"] == ["NVIDIA H200"]
    assert viz.ladder_data(FAKE_RECORDS, size=(4096, 4096, 4096))["rungs"] == ["03"]
    with pytest.raises(ValueError, match="hgemm-course bench"):
        viz.ladder_figure(records=[])


def ladder_records(pct_by_size, rung="11"):
    return [{"rung": rung, "M": n, "N": n, "K": n, "tflops": 7.0 * pct, "cublas_tflops": 700.0, "pct_cublas": pct,
             "gpu": "NVIDIA H200", "date": "2026-12-01"} for n, pct in pct_by_size.items()]


def stated_percentages(title):
    return [float(p) for p in re.findall(r"([\d.]+)%", title)]


def test_ladder_title_reads_an_outlier_against_drifting_cublas_as_level():
    records = ladder_records({1024: 56.0, 2048: 97.5, 4096: 98.8, 6144: 100.1, 8192: 117.0, 12288: 102.2})
    records += ladder_records({2048: 84.7, 8192: 100.7}, rung="10")
    title = viz.ladder_figure(records=records)._suptitle.get_text()
    assert "Rung 11 runs level with cuBLAS (cupy.matmul) from 2048^3 up" in title
    assert all(pct <= 100 + LEVEL_PCT for pct in stated_percentages(title))


def test_ladder_title_states_the_median_when_it_is_not_level():
    title = viz.ladder_figure(records=FAKE_RECORDS)._suptitle.get_text()
    assert "Rung 05 reaches 48% of cuBLAS (cupy.matmul) at 8192^3" in title
    title = viz.ladder_figure(records=ladder_records({2048: 80.0, 4096: 88.0, 8192: 130.0}))._suptitle.get_text()
    assert "reaches 88% of cuBLAS (cupy.matmul) from 2048^3 up" in title and stated_percentages(title) == [88.0]
    assert "latency" in viz.ladder_figure(records=ladder_records({1024: 101.0}))._suptitle.get_text()


def test_ladder_grid_data_has_one_cell_per_rung_and_size():
    data = viz.ladder_grid_data(FAKE_RECORDS)
    assert data["rungs"] == ["03", "05"] and data["sizes"] == sorted({r["M"] for r in FAKE_RECORDS})
    for r in FAKE_RECORDS:
        assert data["pct_cublas"][data["rungs"].index(r["rung"]), data["sizes"].index(r["M"])] == r["pct_cublas"]
    assert np.isnan(data["pct_cublas"]).sum() == len(data["rungs"]) * len(data["sizes"]) - len(FAKE_RECORDS)


FAKE_CEILINGS = {"cublas_tflops": 700.0, "bandwidth_gbs": 4000.0, "gpu": "NVIDIA H200", "date": "2026-11-29"}


def test_roofline_data_places_square_gemms_right_of_the_ridge():
    data = viz.roofline_data(ceilings=FAKE_CEILINGS, records=FAKE_RECORDS)
    assert data["ridge"] == pytest.approx(175.0)
    assert all(p["intensity"] > data["ridge"] for p in data["points"])
    assert {p["rung"] for p in data["points"]} == {r["rung"] for r in FAKE_RECORDS}
    title = viz.roofline_figure(ceilings=FAKE_CEILINGS, records=FAKE_RECORDS)._suptitle.get_text()
    assert "all 3 recorded runs sit right of the ridge at 175 flop/byte" in title and "(4096^3:" in title


FIGURE_KWARGS = {
    "swizzle": {}, "banks": {}, "occupancy": {}, "fragments": {},
    "cta-order": {"M": 2048, "N": 2048, "super_m": 4, "super_n": 4, "ctas_in_flight": 32},
    "l2-supertile": SMALL_L2,
    "ladder": {"records": FAKE_RECORDS},
    "roofline": {"records": FAKE_RECORDS, "ceilings": FAKE_CEILINGS},
    "waves": {}, "walk": {}, "pipeline": {}, "shape-sweep": {}, "clocks": {}, "vendor-sweep": {},
}


@pytest.mark.parametrize("name", sorted(viz.FIGURES))
def test_every_figure_renders_to_png(name):
    assert set(viz.FIGURES) == set(FIGURE_KWARGS)
    fig = viz.FIGURES[name](**FIGURE_KWARGS[name])
    assert fig._suptitle is not None and fig._suptitle.get_text()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=50)
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


# Twelve series, past matplotlib's ten colours: twelve square sizes of one rung, and twelve rungs at one size.
MANY_SIZES = [{**FAKE_RECORDS[0], "M": n, "N": n, "K": n} for n in range(1024, 13 * 1024, 1024)]
MANY_RUNGS = [{**FAKE_RECORDS[0], "rung": f"{i:02d}"} for i in range(1, 13)]


def _legend_styles(fig) -> list[tuple]:
    """What tells each legend entry of ``fig`` apart: colour, hatch, marker and line style, as drawn."""
    from matplotlib.collections import PathCollection
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    styles = []
    for legend in legends:
        for handle in legend.legend_handles:
            if isinstance(handle, Patch):
                styles.append(("patch", to_rgba(handle.get_facecolor()), handle.get_hatch() or "",
                               to_rgba(handle.get_edgecolor()), handle.get_linestyle()))
            elif isinstance(handle, Line2D):
                styles.append(("line", to_rgba(handle.get_color()), handle.get_marker(), handle.get_linestyle()))
            elif isinstance(handle, PathCollection):
                marker = tuple(map(tuple, handle.get_paths()[0].vertices.round(3)))
                styles.append(("points", tuple(handle.get_facecolor()[0]), marker))
            else:
                styles.append(("other", id(handle)))
    return styles


@pytest.mark.parametrize("name, kwargs", [*((name, FIGURE_KWARGS[name]) for name in sorted(viz.FIGURES)),
                                          ("ladder", {"records": MANY_SIZES}),
                                          ("roofline", {"records": MANY_RUNGS, "ceilings": FAKE_CEILINGS})])
def test_every_legend_entry_is_drawn_in_a_style_of_its_own(name, kwargs):
    """No two series of a figure look alike, past ten of them too (ten colours, then hatches or markers)."""
    styles = _legend_styles(viz.FIGURES[name](**kwargs))
    assert len(set(styles)) == len(styles), f"{name}: {len(styles) - len(set(styles))} series drawn alike"
    if kwargs.get("records") in (MANY_SIZES, MANY_RUNGS):
        assert len(styles) >= 12


def test_styles_stay_distinct_past_the_ten_colours():
    from hgemm_course.viz.styles import bar_style, point_style

    bars = [(b["color"], b["hatch"]) for b in map(bar_style, range(40))]
    points = [(p["color"], p["marker"]) for p in map(point_style, range(40))]
    assert len(set(bars)) == len(set(points)) == 40


def test_shape_sweep_marks_the_plans_choice_and_scores_only_non_square_shapes():
    from hgemm_course.viz import shape_sweep_data

    data = shape_sweep_data()
    assert set(data["planned"]) <= {"11", "12"} and len(data["planned"]) == len(data["shapes"])
    nonsquare = [p for p, (M, N, K) in zip(data["planned_pct"], data["shapes"]) if not M == N == K]
    assert data["min_planned"] == min(nonsquare)


def test_shape_sweep_is_the_newest_run_of_every_sweep_shape_not_a_newer_run_of_others():
    def rec(rung, shape, pct, file):
        return {"rung": rung, "M": shape[0], "N": shape[1], "K": shape[2], "pct_cublas": pct, "file": file}

    sweep = [(2048, 4096, 8192), (4096, 2048, 1024)]
    records = [rec(r, s, 90.0, "bench_a.json") for r in ("11", "12") for s in sweep]
    records += [rec(r, (8192, 4096, 2048), 99.0, "bench_b.json") for r in ("11", "12")]   # newer, other shapes
    records += [rec("11", s, 95.0, "bench_c.json") for s in sweep]                            # newest, no rung 12
    from hgemm_course.viz import shape_sweep_data

    assert shape_sweep_data(records, shapes=sweep)["file"] == "bench_a.json"
    assert shape_sweep_data(records, shapes=[])["file"] == "bench_b.json"          # no sweep named: any non-square
    with pytest.raises(ValueError, match="--shapes benchmarks/shapes_nonsquare.txt"):
        shape_sweep_data(records, shapes=[(1024, 2048, 4096)])


def test_shape_sweep_adds_the_newest_later_run_of_the_plan_over_every_sweep_shape():
    def rec(rung, shape, pct, file):
        return {"rung": rung, "M": shape[0], "N": shape[1], "K": shape[2], "pct_cublas": pct, "file": file}

    sweep = [(2048, 4096, 8192), (4096, 2048, 1024), (4096, 4096, 4096)]
    records = [rec(r, s, 90.0, "bench_b.json") for r in ("11", "12") for s in sweep]
    records += [rec("plan", s, 80.0, "bench_a.json") for s in sweep]                  # older than the sweep
    records += [rec("plan", s[:2] + (s[2] + 8,), 70.0, "bench_c.json") for s in sweep]  # other shapes
    from hgemm_course.viz import shape_sweep_data

    assert shape_sweep_data(records, shapes=sweep)["latest_plan"] is None
    records += [rec("plan", s, pct, "bench_d.json") for s, pct in zip(sweep, (100.0, 101.0, 99.0))]
    latest = shape_sweep_data(records, shapes=sweep)["latest_plan"]
    assert latest["file"] == "bench_d.json" and latest["min"] == 100.0             # the square one is not scored
    assert latest["geomean"] == pytest.approx((100.0 * 101.0) ** 0.5)


def test_clocks_are_each_launchs_profiled_cycles_over_its_time(tmp_path):
    from hgemm_course.measurement.records import write_run
    from hgemm_course.viz import clocks_data

    bench = {"rung": "07", "M": 512, "N": 512, "K": 512, "ms": 2.0, "cublas_ms": 1.0, "tflops": 0.13,
             "cublas_tflops": 0.27, "pct_cublas": 50.0,
             "samples_ms": [2.0, 2.5], "cublas_samples_ms": [1.2, 1.25], "sm_clock_mhz": [1980, None],
             "cublas_sm_clock_mhz": [1980, 1500], "paired": True}
    write_run([{**bench, "rung": "05"}, bench], folder=tmp_path, extra={"gpu": "NVIDIA H200"})
    write_run([{**bench, "sm_clock_mhz": [1, 1], "cublas_sm_clock_mhz": []}], folder=tmp_path)  # no clocks: not drawn
    for rung, cycles in (("07", 3.0e6), ("cublas", 1.5e6)):
        write_run([{"rung": rung, "M": 512, "N": 512, "K": 512, "variant": "default", "cycles": cycles}],
                  kind="profile", folder=tmp_path / "profiles", extra={"gpu": "NVIDIA H200"})
    data = clocks_data("7", 512, folder=tmp_path, profiles_folder=tmp_path / "profiles")
    assert data["rung_mhz"] == pytest.approx([1500, 1200]) and data["cublas_mhz"] == pytest.approx([1250, 1200])
    assert data["pct"] == pytest.approx([60, 50]) and data["pct_cycles"] == pytest.approx(50)
    assert data["nvml_cublas_mhz"] == [1980, 1500] and data["file"].startswith("bench_")
    with pytest.raises(ValueError, match="hgemm-course profile 05 --size 512 --record"):
        clocks_data("05", 512, folder=tmp_path, profiles_folder=tmp_path / "profiles")
    with pytest.raises(ValueError, match="hgemm-course bench 07 --sizes 1024 --record"):
        clocks_data("07", 1024, folder=tmp_path, profiles_folder=tmp_path / "profiles")
