"""The prose of chapters 00-04 points to printed figures: no run's timestamp, no toolchain version story, no
changelog voice; and the cells that print recorded counts the prose reads from are checked by nbval."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
NOTEBOOKS = ("00_setup", "01_naive", "02_tiled", "03_wmma", "04_mma_sync")
BANNED = {
    "a run's timestamp": r"\d{8}T\d{4}",
    "a date": r"\b20\d\d-\d\d-\d\d\b",
    "UTC": r"\bUTC\b",
    "a compiler version": r"NVRTC 1\d\.\d",
    "changelog voice": r"\bnow\b|\bno longer\b|\bearlier build\b|\b[Aa] version that\b|\b[Tt]he version that\b",
}
# cells whose printed counts the prose refers to, checked against their committed outputs
CHECKED = {"00_setup": ("c07-hold",), "01_naive": ("c04",), "03_wmma": ("c11", "c11-padding-ncu"),
           "04_mma_sync": ("03100c8a", "ablation-issued")}


def _cells(name: str) -> list[dict]:
    return json.loads((CHAPTERS / f"{name}.ipynb").read_text())["cells"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_prose_types_no_timestamps_versions_or_changelog(name):
    found = [(c.get("id"), what, m.group(0))
             for c in _cells(name) if c["cell_type"] == "markdown"
             for what, pattern in BANNED.items() for m in re.finditer(pattern, "".join(c["source"]))]
    assert not found, f"{name}: {found}"


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_cells_the_prose_reads_are_output_checked(name):
    cells = {c.get("id"): c for c in _cells(name)}
    for cid in CHECKED[name]:
        source = "".join(cells[cid]["source"])
        assert source.startswith("# NBVAL_CHECK_OUTPUT"), f"{name} cell {cid} is not checked by nbval"
        assert cells[cid]["outputs"], f"{name} cell {cid} has no committed output to check against"
