"""Chapter 13's prose states what is and points to printed figures: no dates or run timestamps, no changelog voice,
none of the words the course keeps out; its cells run without a GPU and print no traceback or warning."""
import json
import re
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parent.parent / "chapters" / "13_small_skinny.ipynb"
BANNED = {
    "a run's timestamp": r"\d{8}T\d{4}",
    "a date": r"\b20\d\d-\d\d-\d\d\b",
    "changelog voice": r"\bnow\b|\bno longer\b|\bnot yet\b|\byet\b|\bearlier build\b",
    "a word the course keeps out": r"\bissues?\b|\bbars?\b|\bseeds?\b",
}


def _cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text())["cells"]


def test_prose_types_no_timestamps_changelog_or_banned_words():
    found = [(what, m.group(0)) for c in _cells() if c["cell_type"] == "markdown"
             for what, pattern in BANNED.items() for m in re.finditer(pattern, "".join(c["source"]), flags=re.I)]
    assert not found, found


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
