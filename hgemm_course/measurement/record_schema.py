"""The shape of every file the course writes under results/ (and a learner's ./hgemm-results/): one JSON Schema
per kind, in ``schemas/records.schema.json``, checked with jsonschema.

A file's kind is its name's first word. A run (``bench_``, ``tune_``, ``profile_``, ``ceilings_``, ``model_``,
``verify_``, ``api_``, ``limits_``) is ``{provenance, records}``, its records of its kind; anything else is a
research probe's report, ``{provenance, ...}`` of its own shape. A file in the recorded results/ must also carry
complete provenance (``recorded_provenance``): the H200, its driver, CUDA, NVRTC, Python and every package's version.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:           # imported where a record is checked: it takes 2 s, which every check's child paid
    import jsonschema

SCHEMA_PATH = Path(__file__).parent / "schemas" / "records.schema.json"
KINDS_WITH_FIELDS = ("bench", "tune", "profile", "ceilings", "model")     # records with fields of their own
RUN_KINDS = (*KINDS_WITH_FIELDS, "verify", "api", "limits")


@cache
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    """A validator of ``$defs/name``, the other definitions beside it for its references."""
    import jsonschema

    return jsonschema.Draft202012Validator({**schema(), "$ref": f"#/$defs/{name}"})


def kind_of(path: Path | str) -> str:
    return Path(path).name.split("_")[0]


def _record_kind(kind: str) -> str:
    kind = kind.split("_")[0]
    return kind if kind in KINDS_WITH_FIELDS else "record"


def shown(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _phrase(error: jsonschema.ValidationError, instance, definition: dict) -> str:
    """One error as a phrase about the top of ``instance`` ("has no tflops", "has M = 0, not a whole number of at
    least 1"), the field named by what ``definition`` says it holds."""
    if not error.absolute_path:
        if error.validator == "required":
            return f"has no {', '.join(key for key in error.validator_value if key not in instance)}"
        return f"is {shown(instance)}, not {definition.get('description', 'an object')}"
    key = error.absolute_path[0]
    what = definition.get("properties", {}).get(key, {}).get("description", "what its kind holds")
    return f"has {key} = {shown(instance[key])}, not {what}"


def problem(instance, definition: str) -> str | None:
    """What keeps ``instance`` from being a ``$defs/definition`` (one phrase, the missing fields first), or None."""
    errors = sorted(_validator(definition).iter_errors(instance),
                    key=lambda e: (bool(e.absolute_path), e.validator != "required", list(map(str, e.absolute_path))))
    return _phrase(errors[0], instance, schema()["$defs"][definition]) if errors else None


def record_problem(record, kind: str = "bench") -> str | None:
    """What makes ``record`` unreadable as a record of this kind of run (one phrase), or None when it is whole."""
    return problem(record, f"{_record_kind(kind)}_record")


def file_problem(data, kind: str, *, recorded: bool = False) -> str | None:
    """What keeps a whole file of this kind from its schema, as a phrase with its subject ("record 3 has no tflops",
    "its provenance has no date"), or None. ``recorded``: a run must also carry complete provenance, as every run
    the recorded results/ holds does."""
    run = kind in RUN_KINDS
    definition = f"{_record_kind(kind)}_run" if run else "probe"
    errors = sorted(_validator(definition).iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        where = list(errors[0].absolute_path)
        if len(where) >= 2 and where[0] == "records":
            return f"record {where[1]} {record_problem(data['records'][where[1]], kind)}"
        if where and where[0] == "provenance":
            return f"its provenance {problem(data['provenance'], 'provenance')}"
        return f"the file {problem(data, definition)}"
    if recorded and run and (why := problem(data["provenance"], "recorded_provenance")):
        return f"its provenance {why}"
    return None


RESEARCH_FOLDERS = ("tuning", "ablations")     # research probes' reports, whatever their names


def tree_problems(root: Path) -> dict[Path, str]:
    """Every JSON file below ``root`` (the recorded results/) that its kind's schema refuses, with why. Below a
    research folder a file is a run only where it holds records; elsewhere its name's first word is its kind."""
    out = {}
    for path in sorted(Path(root).rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            out[path] = f"it is not JSON ({exc})"
            continue
        kind = kind_of(path)
        research = path.relative_to(root).parts[0] in RESEARCH_FOLDERS
        if research and not (isinstance(data, dict) and "records" in data):
            kind = "probe"
        if why := file_problem(data, kind, recorded=not research):
            out[path] = why
    return out
