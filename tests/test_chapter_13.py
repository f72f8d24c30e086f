"""Chapter 13's cells run without a GPU and print no traceback or warning, and the chapter shows its sweep and checks
its exercise."""
import json
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parent.parent / "chapters" / "13_small_skinny.ipynb"


def _cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text())["cells"]


def test_outputs_hold_no_traceback_warning_or_progress():
    for c in _cells():
        for out in c.get("outputs", []):
            assert out["output_type"] != "error"
            assert out.get("name") != "stderr", "".join(out.get("text", ""))
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
            assert "Traceback" not in text and "Warning" not in text and "it/s" not in text


def test_the_chapter_shows_the_sweep_figure_and_checks_its_exercise():
    sources = ["".join(c["source"]) for c in _cells() if c["cell_type"] == "code"]
    assert any("vendor_sweep_figure()" in s for s in sources)
    assert any('check("ex13_small_skinny")' in s for s in sources)
