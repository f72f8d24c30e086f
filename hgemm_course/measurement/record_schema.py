"""The shape of every file the course writes under results/ (and a learner's ./hgemm-results/): one JSON Schema
per kind, in ``schemas/records.schema.json``, checked with jsonschema.

A run (``bench_``, ``tune_``, ``profile_``, ``ceilings_``, ``model_``, ``verify_``, ``api_``, ``limits_``: its name's
first word is its kind) is ``{provenance, records}``, its records of its kind. Anything else is a research probe's
report, ``{provenance, ...}`` of the shape its script's ``<name>_report`` gives (:data:`REPORTS`): the script is the
folder it is recorded in (results/probes/<script>/), else the one its provenance names. A file in the recorded
results/ must also carry complete provenance (``recorded_provenance``): the H200, its driver, CUDA, NVRTC, Python and
every package's version; the dated research archives (:data:`ARCHIVES`) hold older reports, checked by shape only.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:           # imported where a record is checked: it takes 2 s, which every check's child paid
    import jsonschema

SCHEMA_PATH = Path(__file__).parent / "schemas" / "records.schema.json"
KINDS_WITH_FIELDS = ("bench", "tune", "profile", "ceilings", "model", "verify", "api", "limits")
RUN_KINDS = KINDS_WITH_FIELDS
# Each kind of report -> the definition its files hold to (records.schema.json): the course's own, and each research
# script's (research/<kind>.py) whose reports results/ holds
REPORTS = {
    "compare": "compare_report",
    "tile_probe": "tile_probe_report", "streamk_probe": "streamk_probe_report", "hold_probe": "hold_probe_report",
    "check_occupancy_h200": "check_occupancy_h200_report", "vendor_probe": "vendor_probe_report",
    "apart_anatomy": "apart_anatomy_report", "stall_sites": "stall_sites_report",
    "verify_rung11_h200": "verify_rung11_h200_report",
    "ablate_03_to_04": "ablation_report", "ablate_hopper": "ablation_report", "ablate_l2_promotion": "ablation_report",
    "ablate_mma_feeding": "ablation_report", "ablate_rung11_wins": "ablation_report",
    "tune_hopper_ladder": "ladder_tuning_report", "tune_mma_ladder": "ladder_tuning_report",
}
PROBES = "probes"                           # results/probes/<script>/: each research script's reports
ARCHIVES = ("tuning", "ablations")          # the dated research archives, from before results/probes/


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
    """What keeps ``instance`` from being a ``$defs/definition`` (one phrase, the missing fields first), or None.
    ``definition`` may point inside one: ``tile_probe_report/properties/timing/items``."""
    errors = sorted(_validator(definition).iter_errors(instance),
                    key=lambda e: (bool(e.absolute_path), e.validator != "required", list(map(str, e.absolute_path))))
    node = schema()["$defs"]
    for part in definition.split("/"):
        node = node[part]
    return _phrase(errors[0], instance, node) if errors else None


def record_problem(record, kind: str = "bench") -> str | None:
    """What makes ``record`` unreadable as a record of this kind of run (one phrase), or None when it is whole."""
    return problem(record, f"{_record_kind(kind)}_record")


def file_problem(data, kind: str, *, recorded: bool = False) -> str | None:
    """What keeps a whole file of this kind from its schema, as a phrase with its subject ("record 3 has no tflops",
    "its provenance has no date"), or None. ``kind``: a run's kind, or the research script whose report it is (one
    without a report schema of its own needs only provenance). ``recorded``: it must also carry complete provenance,
    as every file the recorded results/ holds does."""
    run = kind in RUN_KINDS
    definition = f"{_record_kind(kind)}_run" if run else REPORTS.get(kind, "probe")
    errors = sorted(_validator(definition).iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        where = list(errors[0].absolute_path)
        if len(where) >= 2 and where[0] == "records":
            return f"record {where[1]} {record_problem(data['records'][where[1]], kind)}"
        if where and where[0] == "provenance":
            return f"its provenance {problem(data['provenance'], 'provenance')}"
        if len(where) >= 2 and isinstance(where[1], int):
            item = problem(data[where[0]][where[1]], f"{definition}/properties/{where[0]}/items")
            return f"its {where[0]} {where[1]} {item}"
        return f"the file {problem(data, definition)}"
    if recorded and (why := problem(data["provenance"], "recorded_provenance")):
        return f"its provenance {why}"
    return None


def report_script(path: Path, data, root: Path) -> str | None:
    """The research script whose report the file below ``root`` is: the folder it is recorded in
    (results/probes/<script>/), else the script its provenance (or the report itself) names, else the script whose
    name its file name starts with; None when none is known."""
    parts = path.relative_to(root).parts
    if parts[0] == PROBES and len(parts) > 2:
        return parts[1]
    named = [source.get(key) for source in (data.get("provenance") or {}, data) for key in ("probe", "script")]
    for script in named:
        if isinstance(script, str) and script.endswith(".py"):
            return Path(script).stem
    return next((name for name in sorted(REPORTS, key=len, reverse=True) if path.name.startswith(f"{name}_")), None)


def tree_problems(root: Path) -> dict[Path, str]:
    """Every JSON file below ``root`` (the recorded results/) that its kind's schema refuses, with why. A file that
    holds records is a run of the kind its name's first word says; any other is a report of the research script
    :func:`report_script` finds, and a script without a report schema of its own (:data:`REPORTS`) is named."""
    out = {}
    for path in sorted(Path(root).rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            out[path] = f"it is not JSON ({exc})"
            continue
        archived = path.relative_to(root).parts[0] in ARCHIVES
        kind = kind_of(path)
        if isinstance(data, dict) and "records" not in data and (archived or kind not in RUN_KINDS
                                                                 or path.relative_to(root).parts[0] == PROBES):
            kind = report_script(path, data, root)
            if kind not in REPORTS:
                out[path] = (f"it is a report of {f'research/{kind}.py' if kind else 'no script it names'}, which "
                             f"has no schema of its own in {SCHEMA_PATH.name} (add one, and name it in REPORTS)")
                continue
        if why := file_problem(data, kind, recorded=not archived):
            out[path] = why
    return out
