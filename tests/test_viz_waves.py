"""The waves figure, through the data behind it: 3072^3 on rung 11 leaves a partial last wave that stream-K fills."""
import re

import pytest

from hgemm_course import viz
from hgemm_course.cli import main


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
