"""The plan's 64-row tiles: their fitted costs come from the recorded H200 probe, and over every shape of that
file the plan takes them only where they measured faster than what the plan ran before them."""
import json
import math
import random
import statistics
from pathlib import Path

import pytest

from hgemm_course.library import plan as planning
from hgemm_course.library.ladder import r11_persistent

PROBE = Path(__file__).parent.parent / "results/tuning/2026-12-02/vendor_probe/vendor_probe_20261202T212448.json"
# Rung 12 split apart beside the earlier candidates, at K-heavy shapes (four not in PROBE, three with M or N tails),
# its grid a whole number of CTAs per tile, when a second kernel added the pieces
APART_PROBE = (Path(__file__).parent.parent /
               "results/tuning/2026-12-03/split_apart/vendor_probe_20261203T092804.json")
# The same shapes and two more, once each tile's CTAs added its pieces in the one kernel: APART_NS and APART_ITER_NS
ONE_KERNEL_PROBE = (Path(__file__).parent.parent /
                    "results/tuning/2026-12-03/split_apart_one_kernel/vendor_probe_20261203T155139.json")
# Twelve shapes with rows off 128-byte boundaries (and three aligned twins), timed after the plan took ROW64_UNALIGNED_SPEED
MISALIGNED_PROBE = (Path(__file__).parent.parent /
                    "results/tuning/2026-12-03/misaligned/vendor_probe_20261203T124356.json")
# Rung 11's 128 x 192 tiles beside 128 x 256 and the smaller tiles, at ten shapes where they fit in one wave
WIDE_PROBE = (Path(__file__).parent.parent / "results/tuning/2026-12-03/wide_tiles/vendor_probe_20261203T131546.json")
SMS = 132


def _rows(probe=PROBE):
    return json.loads(probe.read_text())["rows"]


def _per_iteration_ns(row, name, bm, bn):
    waves = math.ceil(math.ceil(row["M"] / bm) * math.ceil(row["N"] / bn) / SMS)
    return statistics.median(row["ms"][name]) * 1e6 / (waves * math.ceil(row["K"] / 64))


@pytest.mark.parametrize("bm, bn", [(64, 64), (64, 128), (64, 256), (128, 128)])
def test_the_fitted_iteration_costs_are_the_probes_medians(bm, bn):
    name = f"r11 {bm}x{bn}"
    measured = statistics.median(_per_iteration_ns(r, name, bm, bn) for r in _rows() if name in r["ms"])
    assert planning.ROW64_ITER_NS[bm, bn] == pytest.approx(measured, rel=0.03)


def test_the_whole_tiles_cost_is_rung_11_at_4096_cubed():
    row = next(r for r in _rows() if (r["M"], r["N"], r["K"]) == (4096, 4096, 4096))
    assert planning.ROW64_ITER_NS[128, 256] == pytest.approx(_per_iteration_ns(row, "plan", 128, 256), rel=0.03)


def _measured_name(chosen):
    """The probe's name of the smaller-tile launch the plan chose, or None for the plan's other choices."""
    tiles = chosen.options.get("tiles")
    if tiles is None or "consumers" not in chosen.options:
        return None
    if chosen.rung == "11":
        return f"r11 {tiles.bm}x{tiles.bn}"
    return f"r12 {tiles.bm}x{tiles.bn} {'apart' if chosen.options.get('apart') else 'sk0'}"


@pytest.mark.parametrize("probe", [PROBE], ids=["probe"])
def test_where_the_plan_takes_the_smaller_tiles_they_measured_faster(probe):
    """Against the plan as it was when the probe ran (its "plan" launches: the whole tiles)."""
    taken = set()
    for row in _rows(probe):
        chosen = planning.plan(row["M"], row["N"], row["K"], SMS // 2)
        name = _measured_name(chosen)
        if name is None or name not in row["ms"]:
            continue
        taken.add(chosen.rung)
        assert chosen.options["cluster_m"] == 1
        # 2%: where the plan ran the same launch then (100 x 1000 x 9992), the two medians differ by noise alone
        assert statistics.median(row["ms"][name]) < 1.02 * statistics.median(row["ms"]["plan"]), (row["M"], row["N"], row["K"])
    assert taken == {"11"}


def test_the_fitted_fixup_costs_are_the_probes_medians():
    for bm, bn, _, _ in planning.SPLIT_TILES:
        name, per_piece = f"r12 {bm}x{bn} sk0", []
        for row in _rows():
            tiles = math.ceil(row["M"] / bm) * math.ceil(row["N"] / bn)
            if name not in row["ms"] or tiles >= SMS:
                continue
            busiest = math.ceil(tiles * math.ceil(row["K"] / 64) / SMS) * planning.ROW64_ITER_NS[bm, bn]
            per_piece.append((statistics.median(row["ms"][name]) * 1e6 - busiest) / math.ceil(SMS / tiles))
        assert planning.SPLIT_FIXUP_NS[bm, bn] == pytest.approx(statistics.median(per_piece), rel=0.03)


def test_the_split_is_weighed_only_with_enough_pieces():
    assert planning.split_time_ns(1024, 1024, 32768, SMS, 128, 128) is None      # 64 tiles: three pieces each
    assert planning.split_time_ns(256, 256, 65536, SMS, 64, 64) is not None      # 16 tiles: nine pieces each


def test_the_split_options_build_a_kernel_rung_12_accepts():
    from hgemm_course.library.ladder import r12_streamk

    seen = 0
    for M, N, K in ((256, 256, 65536), (512, 512, 16384), (64, 320, 30000), (200, 200, 20000)):
        chosen = planning.plan(M, N, K, SMS // 2)
        if chosen.rung == "12" and "consumers" in chosen.options:
            seen += 1
            o = chosen.options
            r12_streamk.kernel(o["tiles"], o["super_mn"], o["cluster_m"], o["consumers"])
    assert seen >= 3


def test_the_smaller_tiles_options_build_kernels_their_rungs_accept():
    from hgemm_course.library.ladder import r12_streamk

    rng = random.Random(3)
    seen = {"11": 0, "12": 0}
    for _ in range(300):
        M, N, K = rng.choice([16, 32, 64, 100, 128, 256, 777]), 8 * rng.randint(8, 4000), 8 * rng.randint(8, 8000)
        chosen = planning.plan(M, N, K, SMS // 2)
        o = chosen.options
        if o.get("consumers") is None:
            continue
        seen[chosen.rung] += 1
        if chosen.rung == "11":
            r11_persistent.kernel(o["tiles"], o["super_mn"], None, 1, o["consumers"])
        else:
            r12_streamk.kernel(o["tiles"], o["super_mn"], o["cluster_m"], o["consumers"], o.get("apart", False))
    assert seen["11"] >= 1 and seen["12"] >= 10, seen


def test_large_products_keep_the_plan_they_had():
    for M, N, K in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 11008, 4096)):
        tiles = planning.plan(M, N, K, SMS // 2).options.get("tiles")
        assert tiles is None or tiles.bm == 128


# The plan's largest misses: 16 x 4096 x 4096, 64 x 64 tiles 7-9 points under 64 x 128 split apart; 100 x 1000 x 9992,
# 64 x 128 tiles split apart 10.1 points under 128 x 128 tiles split apart (the model puts them within 1% of each
# other; before the adding moved into the first kernel, the owners' fix-up on 64 x 64 tiles missed there by 9.6)
MISS_POINTS = 10.5


@pytest.mark.parametrize("probe", [PROBE, ONE_KERNEL_PROBE, MISALIGNED_PROBE, WIDE_PROBE],
                         ids=["probe", "one-kernel apart probe", "misaligned probe", "wide probe"])
def test_where_the_plan_takes_the_smaller_tiles_it_is_near_the_fastest_of_them_timed(probe):
    """At every shape of each probe where the plan now takes the smaller tiles, the launch it takes read no more
    than MISS_POINTS (of the faster vendor library) below the fastest smaller-tile launch timed there: the model
    ranks the candidates about as the GPU did, not only better than the plan's whole tiles."""
    checked = 0
    for row in _rows(probe):
        chosen = planning.plan(row["M"], row["N"], row["K"], SMS // 2)
        name = _measured_name(chosen)
        if name is None:
            continue
        timed = {k: v for k, v in row["pct_best_vendor"].items() if k.startswith(("r11 ", "r12 "))}
        if name not in timed or ("apart" in name and probe != ONE_KERNEL_PROBE):
            continue                    # a launch this probe did not time, or split apart timed as two kernels
        checked += 1
        assert timed[name] >= max(timed.values()) - MISS_POINTS, (row["M"], row["N"], row["K"], name, timed)
    assert checked >= 6


def test_the_fitted_apart_costs_are_the_probes_least_squares_line():
    for bm, bn, _, _ in planning.APART_TILES:
        name, points = f"r12 {bm}x{bn} apart", []
        for row in _rows(ONE_KERNEL_PROBE):
            tiles = math.ceil(row["M"] / bm) * math.ceil(row["N"] / bn)
            if SMS // tiles < planning.APART_MIN_PIECES:
                continue
            ctas = SMS // tiles * tiles             # split apart's grid: a whole number of CTAs per tile
            points.append((math.ceil(tiles * math.ceil(row["K"] / 64) / ctas), statistics.median(row["ms"][name]) * 1e6))
        slope, intercept = statistics.linear_regression(*zip(*points))
        assert planning.APART_ITER_NS[bm, bn] == pytest.approx(slope, rel=0.03)
        assert planning.APART_NS[bm, bn] == pytest.approx(intercept, rel=0.03)


def test_where_the_plan_splits_apart_it_measured_faster_than_the_plan_before():
    taken = 0
    for row in _rows(ONE_KERNEL_PROBE):
        chosen = planning.plan(row["M"], row["N"], row["K"], SMS // 2)
        if not chosen.options.get("apart"):
            continue
        taken += 1
        name = _measured_name(chosen)
        # 5%: the probe's plan already split apart at most of these shapes, the same launch timed twice
        assert statistics.median(row["ms"][name]) < 1.05 * statistics.median(row["ms"]["plan"]), (row["M"], row["N"], row["K"])
        from hgemm_course.library.ladder import r12_streamk

        o = chosen.options
        r12_streamk.kernel(o["tiles"], o["super_mn"], o["cluster_m"], o["consumers"], apart=True)
    assert taken >= 4


def test_the_unaligned_charge_is_the_probes_median_at_1000_cubed():
    rows = {(r["M"], r["N"], r["K"]): r for r in _rows()}
    off, aligned = rows[1000, 1000, 1000], rows[1024, 1024, 1024]
    kept = [math.sqrt(_per_iteration_ns(aligned, f"r11 {bm}x{bn}", bm, bn) / _per_iteration_ns(off, f"r11 {bm}x{bn}", bm, bn))
            for bm, bn in ((64, 64), (64, 128), (64, 256), (128, 128))]
    assert planning.ROW64_UNALIGNED_SPEED == pytest.approx(statistics.median(kept), rel=0.02)


def test_the_unaligned_charge_holds_on_the_twins_of_the_misaligned_probe():
    """Three shapes with both operands' rows off and their aligned twins, timed later: the same median, within 5%."""
    rows = {(r["M"], r["N"], r["K"]): r for r in _rows(MISALIGNED_PROBE)}
    kept = [math.sqrt(_per_iteration_ns(rows[aligned], f"r11 {bm}x{bn}", bm, bn)
                      / _per_iteration_ns(rows[off], f"r11 {bm}x{bn}", bm, bn))
            for off, aligned in (((96, 5000, 3000), (96, 5120, 3072)), ((256, 3000, 2000), (256, 3072, 2048)),
                                 ((128, 4000, 3000), (128, 4096, 3072)))
            for bm, bn in ((64, 64), (64, 128), (64, 256), (128, 128))]
    assert planning.ROW64_UNALIGNED_SPEED == pytest.approx(statistics.median(kept), rel=0.05)


def test_the_plan_takes_the_wide_tiles_with_tails_in_m_and_n():
    for M, N, K in ((1500, 1536, 2048), (1536, 1600, 2048), (1536, 1536, 1536)):
        chosen = planning.plan(M, N, K, SMS // 2)
        assert chosen.options_text() == {"cluster_m": 1, "consumers": 2, "tiles": "128x192", "super_mn": (1, 1)}


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K", [(1500, 1536, 1016), (1111, 1920, 2000), (1536, 1600, 2048), (1536, 1536, 1536)])
def test_the_wide_tiles_are_right_on_tails(M, N, K):
    """Rung 11's 128 x 192 tiles (three 64-column panels of B, two consumers) as the plan launches them, one wave on
    1x1 super tiles without clusters: against an FP32 reference, C poisoned with NaN, M, N and K off the tile."""
    from dataclasses import replace

    import cupy

    from hgemm_course.measurement import verification

    a, b, seed = verification.random_inputs(M, N, K, xp=cupy)
    c = cupy.full((M, N), cupy.nan, cupy.float16)
    r11_persistent.launch(a, b, c, replace(r11_persistent.TILES, bm=128, bn=192, stages=4), (1, 1), None, 1, 2)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    assert verification.compare(c, reference, K=K, rung="11", seed=seed).passed


def test_the_wide_tiles_cost_is_the_probes_median_where_they_fit_in_one_wave():
    per = [statistics.median(r["ms"]["r11 128x192"]) * 1e6 / math.ceil(r["K"] / 64) for r in _rows(WIDE_PROBE)
           if math.ceil(r["M"] / 128) * math.ceil(r["N"] / 192) <= SMS]
    assert len(per) == 10
    assert planning.ROW64_ITER_NS[128, 192] == pytest.approx(statistics.median(per), rel=0.03)


def test_where_the_plan_takes_the_wide_tiles_they_beat_the_whole_tiles_it_ran_before():
    """At every shape of the wide probe where the plan takes 128 x 192 tiles, they measured faster than rung 11's
    128 x 256 tiles on the same one-wave launch, what the plan ran there before; and where it does not, the wide
    tiles were not the fastest launch by more than MISS_POINTS."""
    taken = 0
    for row in _rows(WIDE_PROBE):
        chosen = planning.plan(row["M"], row["N"], row["K"], SMS // 2)
        pct = row["pct_best_vendor"]
        if chosen.options_text().get("tiles") == "128x192":
            taken += 1
            assert pct["r11 128x192"] > pct["r11 128x256"], (row["M"], row["N"], row["K"])
        else:
            rest = max(v for k, v in pct.items() if k.startswith(("r11 ", "r12 ")) and k != "r11 128x192")
            assert pct["r11 128x192"] <= rest + MISS_POINTS, (row["M"], row["N"], row["K"])
    assert taken >= 8


def test_the_plan_command_plans_the_padded_shape_gemm_runs(capsys):
    """N or K off a multiple of 8: gemm() pads them, so `hgemm-course plan` plans and names the padded shape."""
    import json

    from hgemm_course.course.cli import main

    assert main(["plan", "768x1500x1500", "1024"]) == 0
    lines = capsys.readouterr().out.splitlines()
    padded = next(line for line in lines if line.startswith("768x1500x1500"))
    assert padded.startswith("768x1500x1500 runs zero-padded to 768x1536x1536 (TMA needs rows of 16-byte multiples; "
                             "a padded N or K goes to whole 64-wide tiles); 768x1536x1536: rung ")
    assert any(line.startswith("1024x1024x1024: rung ") for line in lines)
    assert main(["plan", "768x1500x1500", "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert (record["M"], record["N"], record["K"], record["asked"]) == (768, 1536, 1536, [768, 1500, 1500])
