"""The pipeline figure through the data behind it, its recorded figure, and `hgemm-course viz pipeline --rung`."""
import io

import pytest

from hgemm_course.course.cli import main
from hgemm_course.measurement.profile import recorded_profile
from hgemm_course.viz import FIGURES, pipeline_data, pipeline_figure


@pytest.mark.parametrize("rung", ["03", "07", "09", "10", "11"])
def test_lanes_and_recorded_figure(rung):
    data = pipeline_data(rung=rung, k_tiles=8, tiles=2)
    ring, tl = data["ring"], data["timeline"]
    names = [lane["name"] for lane in data["lanes"]]
    assert names[-1] == "tensor cores"
    assert len(names) == ring.ctas * (1 + ring.consumers) + 1
    assert len(data["stages"]) == ring.ctas * ring.stages
    kinds = {kind for lane in data["lanes"] for _, _, kind, _ in lane["intervals"]}
    assert {"issue", "epilogue", "idle"} <= kinds and ("wait_mma" in kinds) == ring.async_mma
    idle = sum(e - s for s, e in data["idle"])
    assert idle == pytest.approx(data["idle_waiting_cycles"] + data["idle_epilogue_cycles"])
    assert idle == pytest.approx(tl["end"] * (1 - tl["tensor_busy_pct"] / 100))
    assert 0 < tl["tensor_busy_pct"] < data["predicted_busy_pct"] <= 100     # K = 8192 hides the edges better
    recorded = recorded_profile(rung, 8192)
    assert data["recorded"]["tensor_pipe_active_pct"] == recorded["tensor_pipe_active_pct"]


def test_each_slice_is_loaded_then_held_in_its_stage():
    data = pipeline_data(rung="10", k_tiles=8, tiles=1)
    stage1 = [(kind, label) for _, _, kind, label in data["stages"][1]["intervals"]]
    assert stage1 == [("loading", "1"), ("parity 0", "1"), ("loading", "5"), ("parity 1", "5")]


def test_one_stage_idles_and_four_do_not():
    one = pipeline_data(rung="07", stages=1, k_tiles=16, tiles=1, load_latency=1500.0, epilogue_time=0.0)
    four = pipeline_data(rung="07", stages=4, k_tiles=16, tiles=1, load_latency=1500.0, epilogue_time=0.0)
    assert one["idle_waiting_cycles"] == pytest.approx(16 * 1500.0)
    assert four["idle_waiting_cycles"] == pytest.approx(1500.0)             # the first slice only


def test_figure_says_model_and_recorded(tmp_path):
    assert pipeline_data(rung="10", profiles_folder=tmp_path)["recorded"] is None
    fig = pipeline_figure(rung="10", k_tiles=6)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith("MODEL, not a measurement") and "recorded on the H200" in t for t in texts)
    assert "(model)" in fig._suptitle.get_text()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    assert buffer.getvalue()[:4] == b"\x89PNG"
    assert FIGURES["pipeline"] is pipeline_figure


def test_cli_rung_option(tmp_path, capsys):
    out = tmp_path / "ring.png"
    assert main(["viz", "pipeline", "--rung", "9", "--out", str(out)]) == 0 and out.stat().st_size > 0
    assert main(["viz", "pipeline", "--rung", "05", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "03, 07, 09, 10, 11" in err
    assert main(["viz", "banks", "--rung", "07", "--out", str(out)]) == 2
    assert "--rung goes with pipeline" in capsys.readouterr().err
