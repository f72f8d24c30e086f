"""Verification stress runs (chapter 07): each build verified again and again at one shape, read from the text
records under results/ (:func:`stress_runs`), named as the chapter calls each build and with the chance that a
clean build would have passed as often as a failing one did (:func:`named_stress`, printed by :func:`show_stress`).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..library.paths import results_dir
from .here_or_recorded import shown_path

_STRESS = re.compile(r"^(?P<label>.+?): (?P<passed>\d+) of (?P<runs>\d+) verifications at (?P<shape>\d+x\d+x\d+) passed")


def _under_results(path: Path | str) -> Path:
    path = Path(path)
    return path if path.is_absolute() else results_dir() / path


def stress_runs(path: Path | str) -> list[dict]:
    """The verification stress runs of a text record under results/ (one line per build: ``<label>: P of R
    verifications at MxNxK passed[; first failure ...]``), as ``{"label", "passed", "runs", "shape"}`` each."""
    rows = []
    for line in _under_results(path).read_text().splitlines():
        m = _STRESS.match(line)
        if m:
            rows.append({"label": m["label"], "passed": int(m["passed"]), "runs": int(m["runs"]), "shape": m["shape"]})
    return rows


def named_stress(path: Path | str, names: dict[str, str]) -> list[dict]:
    """The stress runs of ``path`` (:func:`stress_runs`) whose labels ``names`` maps to what the chapter calls each
    build, in ``names``' order, each with its ``name``; where the first build named failed some runs, each build
    that passed every run has the ``chance`` that it would have if it failed as often: how far the runs settle it."""
    rows = {r["label"]: r for r in stress_runs(path)}
    shown = [{**rows[label], "name": name} for label, name in names.items() if label in rows]
    if shown and shown[0]["passed"] < shown[0]["runs"]:
        rate = shown[0]["passed"] / shown[0]["runs"]
        for r in shown[1:]:
            if r["passed"] == r["runs"]:
                r["chance"] = rate ** r["runs"]
    return shown


def format_stress(path: Path | str, shown: list[dict]) -> str:
    """:func:`named_stress` under the file's path, then each chance against the first build named."""
    lines = [f"RECORDED on the H200 ({shown_path(_under_results(path))}), each build verified again and again at one "
             "shape:"]
    lines += [f"  {r['name']:<52} {r['passed']:>3} of {r['runs']} at {r['shape']} right" for r in shown]
    base = shown[0] if shown else None
    lines += [f"{r['name']}: had it passed {base['passed']} in {base['runs']} as {base['name']} did, "
              f"{r['runs']} passes in a row had a chance of {r['chance']:.1e}" for r in shown if "chance" in r]
    return "\n".join(lines)


def show_stress(path: Path | str, names: dict[str, str]) -> list[dict]:
    """Print :func:`named_stress` (:func:`format_stress`); returns its rows."""
    shown = named_stress(path, names)
    print(format_stress(path, shown))
    return shown
