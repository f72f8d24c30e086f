"""The plan's fitted constants as data (plan_constants.toml): each number of gemm()'s plan that came from H200
timings, with what it decides, the runs behind it and the tests that derive it again. :mod:`.plan` and
:mod:`hgemm_course.sim.waves` take their values from here; appendix A1 lists them."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("plan_constants.toml")
KINDS = ("fit", "margin", "choice")


@dataclass(frozen=True)
class Constant:
    """One number of the plan's model that came from H200 timings rather than from the hardware's rules."""

    name: str
    module: str             # where it lives, under hgemm_course
    value: object
    kind: str               # "fit", "margin" or "choice" (KINDS)
    sets: str               # what it decides in the plan
    fitted_on: str          # the runs behind it, in one line
    evidence: str           # what those runs showed
    tested_by: tuple        # "path::test" of the tests that derive it again or hold the plan to the runs


def _value(raw):
    """A TOML value as the plan uses it: a table keyed "BMxBN" as a dict keyed (bm, bn), a list as a tuple."""
    if isinstance(raw, dict):
        return {tuple(int(x) for x in key.split("x")): value for key, value in raw.items()}
    if isinstance(raw, list):
        return tuple(_value(item) for item in raw)
    return raw


@lru_cache(maxsize=1)
def constants() -> tuple[Constant, ...]:
    """Every constant of the file, in its order."""
    entries = tomllib.loads(DATA.read_text())
    found = []
    for name, entry in entries.items():
        if entry.get("kind") not in KINDS:
            raise ValueError(f"{DATA.name}: {name} has kind {entry.get('kind')!r}; give one of {', '.join(KINDS)}.")
        found.append(Constant(name, entry["module"], _value(entry["value"]), entry["kind"], entry["sets"],
                              entry["from"], " ".join(entry["evidence"].split()), tuple(entry["tested_by"])))
    return tuple(found)


def value(name: str):
    """The value of constant ``name`` (a fresh copy of a table, so no caller edits another's)."""
    for constant in constants():
        if constant.name == name:
            return dict(constant.value) if isinstance(constant.value, dict) else constant.value
    raise KeyError(f"{name} is not in {DATA.name}")
