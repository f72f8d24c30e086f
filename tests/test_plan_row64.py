"""The plan's 64-row tiles: their fitted costs come from the recorded H200 probe, and over every shape of that
file the plan takes them only where they measured faster than what the plan ran before them."""
import json
import math
import random
import statistics
from pathlib import Path

import pytest

from hgemm_course import plan as planning
from hgemm_course.ladder import r11_persistent

PROBE = Path(__file__).parent.parent / "results/tuning/2026-12-02/vendor_probe/vendor_probe_20261202T212448.json"
SMS = 132


def _rows():
    return json.loads(PROBE.read_text())["rows"]


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


def test_where_the_plan_takes_64_row_tiles_they_measured_faster():
    taken = 0
    for row in _rows():
        chosen = planning.plan(row["M"], row["N"], row["K"], SMS // 2)
        tiles = chosen.options.get("tiles")
        if tiles is None or tiles.bm != 64:
            continue
        taken += 1
        name = f"r11 {tiles.bm}x{tiles.bn}"
        assert chosen.options["consumers"] == 1 and chosen.options["cluster_m"] == 1
        assert statistics.median(row["ms"][name]) < statistics.median(row["ms"]["plan"]), (row["M"], row["N"], row["K"])
    assert taken >= 6


def test_the_64_row_options_build_a_kernel_rung_11_accepts():
    rng = random.Random(3)
    seen = 0
    for _ in range(300):
        M, N, K = rng.choice([16, 32, 64, 100, 128, 256, 777]), 8 * rng.randint(8, 4000), 8 * rng.randint(8, 8000)
        options = planning.plan(M, N, K, SMS // 2).options
        if options.get("consumers") == 1:
            seen += 1
            r11_persistent.kernel(options["tiles"], options["super_mn"], None, 1, 1)
    assert seen > 20


def test_large_products_keep_the_plan_they_had():
    for M, N, K in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 11008, 4096)):
        tiles = planning.plan(M, N, K, SMS // 2).options.get("tiles")
        assert tiles is None or tiles.bm == 128
