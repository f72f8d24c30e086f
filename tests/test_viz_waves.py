"""The waves figure, through the data behind it: 3072^3 on rung 11 leaves a partial last wave that stream-K fills."""
import re

import pytest

from hgemm_course import viz
from hgemm_course.course.cli import main


def test_3072_cubed_has_a_partial_last_wave_that_the_split_schedules_fill():
    data = viz.waves_data()
    dp = data["schedules"]["dp"]
    assert (data["tiles"], data["iters_per_tile"], data["units"]) == (144, 48, 66)
    assert data["waves"] == pytest.approx(144 / 66) and dp.makespan == 3 * 48
    assert data["even_share"] == pytest.approx(144 * 48 / 66)
    assert data["best"] == "hybrid"                       # ties stream-K here, and splits no more tiles
    assert data["speedup"] == pytest.approx(dp.makespan / data["schedules"]["hybrid"].makespan) and data["speedup"] > 1.2
    for plan in data["schedules"].values():
        assert plan.makespan >= data["even_share"]


def test_whole_waves_leave_data_parallel_the_fastest():
    data = viz.waves_data(M=2 * 128 * 6, N=256 * 11, K=1024)      # 66 tiles: one whole wave
    assert data["tiles"] == 66 and data["best"] == "dp" and data["speedup"] == 1
    title = viz.waves_figure(M=2 * 128 * 6, N=256 * 11, K=1024)._suptitle.get_text()
    assert "data-parallel is already the fastest (100% busy)" in title


def test_title_states_the_computed_finding():
    title = viz.waves_figure()._suptitle.get_text()
    assert "144 tiles of 256x256 on 66 units = 2.18 waves" in title
    assert "finishes 1.30x sooner than data-parallel (73% -> 94% busy)" in title


def test_viz_help_lists_the_figure(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["viz", "--help"])
    assert exited.value.code == 0
    assert re.search(r"^  waves +Output tiles on the persistent units over time", capsys.readouterr().out, flags=re.M)


def test_the_walk_shows_the_positions_a_super_tile_leaves_empty():
    """The plan's small tiles at 2176 x 2944: rung 06's 16x2 super tiles cover 32 x 24 positions for 17 x 23 tiles,
    so some CTAs walk 4 tiles; row-major (1x1) hands out 391 tiles in three waves without a gap."""
    from dataclasses import replace

    from hgemm_course.library.ladder.r11_persistent import TILES
    from hgemm_course.library.plan import rung11_efficiency

    data = viz.walk_data()
    assert data["tiles"] == 17 * 23 and data["positions"] == {(16, 2): 32 * 24, (1, 1): 17 * 23}
    assert max(data["walks"][16, 2]) == 4 and max(data["walks"][1, 1]) == 3
    assert all(sum(w) == data["tiles"] for w in data["walks"].values())
    small = replace(TILES, bm=128, bn=128)
    for s, busy in data["busy"].items():
        assert busy == pytest.approx(rung11_efficiency(2176, 2944, 132, small, 1, s))
    assert "busiest unit 4 tiles, 74% busy" in viz.walk_figure().legends[0].texts[1].get_text()


def test_viz_help_lists_the_walk_figure(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["viz", "--help"])
    assert exited.value.code == 0
    assert re.search(r"^  walk +Tiles each persistent unit walks", capsys.readouterr().out, flags=re.M)
