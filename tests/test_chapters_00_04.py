"""The cells of chapters 00-04 that print the recorded counts their prose reads from are checked by nbval."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
# cells whose printed counts the prose refers to, checked against their committed outputs
CHECKED = {"00_setup": ("c07-hold",), "01_naive": ("c04",), "03_wmma": ("c11", "c11-padding-ncu"),
           "04_mma_sync": ("03100c8a", "ablation-issued")}


def _cells(name: str) -> list[dict]:
    return json.loads((CHAPTERS / f"{name}.ipynb").read_text())["cells"]


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_cells_the_prose_reads_are_output_checked(name):
    cells = {c.get("id"): c for c in _cells(name)}
    for cid in CHECKED[name]:
        source = "".join(cells[cid]["source"])
        assert source.startswith("# NBVAL_CHECK_OUTPUT"), f"{name} cell {cid} is not checked by nbval"
        assert cells[cid]["outputs"], f"{name} cell {cid} has no committed output to check against"
