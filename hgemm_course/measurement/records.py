"""GPU figures: every benchmark run is one JSON file with its provenance.

A file holds ``{"provenance": {...}, "records": [...]}``; a record is one (rung, size)
with its median, every sample, and cuBLAS timed in the same process. Nothing here
makes a figure up: :func:`load_records` only reads what a real run wrote.

Runs go to ./hgemm-results/ (or a folder of your choice); the course's recorded H200
figures in results/ change only through ``--record`` (see :func:`run_folder`), so a run
on another GPU never replaces the figures README's table is written from. Reading, every
reader goes through :func:`load_runs`, which skips, with one warning naming the file, what
is not a whole run: a special file, a malformed record, and in results/ a run without the
provenance every recorded run has.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
import secrets
import stat
import statistics
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import record_schema
from ..library import device, target
from ..library.paths import probe_dir, require_writable, results_dir, user_results_dir, write_atomic

RECORD_KEYS = ("rung", "M", "N", "K", "tflops", "cublas_tflops", "pct_cublas", "gpu", "date")
RECORDED_GPU = "H200"                 # the GPU whose runs results/ and README's table hold
RECORD_NEEDS = ("driver", "cuda_runtime", "nvrtc", "packages", "date")
# The model comparisons join an ncu run on the H200 with the model run on another machine: their provenance names
# when ncu measured and the H200's driver release (the linear bank probe's lacks the driver's CUDA version)
MODEL_NEEDS = ("measured_at", "driver_release", "cuda_runtime", "nvrtc", "packages", "date")
MAX_RUN_FILE_BYTES = 64 << 20         # the largest run the course writes is 300 kB; a bigger file is no run of ours


def provenance(extra: dict | None = None) -> dict:
    """Where and with what a run was made: GPU, driver, CUDA and library versions, date."""
    report = device.machine_report()
    gpu = report.gpu
    out = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": gpu.name if gpu else None,
        "arch": target.arch_of(gpu.compute_capability) if gpu else None,
        "sm_count": gpu.sm_count if gpu else None,
        "l2_bytes": gpu.l2_bytes if gpu else None,
        "target": _target_of_run(),
        "driver": report.driver_version,
        "driver_release": device.driver_release(),
        "cuda_runtime": report.runtime_version,
        "nvrtc": report.nvrtc_version,
        "packages": report.packages,
        "python": report.python,
    }
    out.update(extra or {})
    return out


def _target_of_run() -> dict:
    """What the kernels were built for: the GPU's own architecture, or, under ``--as``, another target's
    configurations built as PTX and JIT-compiled for this GPU."""
    t = target.current()
    return {"arch": t.arch, "gpu": t.gpu, "run_from_ptx": t.run_from_ptx, "run_on": t.host.gpu if t.host else None}


def run_folder(out_dir: Path | None = None, *, record: bool = False, recorded: Path | None = None) -> Path:
    """The folder a run will write, checked before the run starts (a RuntimeError of one line if it cannot be).

    ``out_dir``, default ./hgemm-results/; with ``record``, the course's recorded folder (``recorded``,
    default results/), and only from an H200 with complete provenance.
    """
    if not record:
        return require_writable(Path(out_dir) if out_dir else user_results_dir())
    recorded = Path(recorded) if recorded else results_dir()
    prov = provenance()
    gpu = prov["gpu"]
    problems = [] if gpu and RECORDED_GPU in gpu else [f"the GPU is {gpu}" if gpu else "there is no GPU"]
    problems += [f"{key} is unknown" for key in RECORD_NEEDS if not prov[key]]
    problems += [f"{name}'s version is unknown" for name, version in prov["packages"].items() if not version]
    if problems:
        raise RuntimeError(f"--record writes the course's recorded {recorded} and takes only an {RECORDED_GPU} run "
                           f"with complete provenance, but {', '.join(problems)}; leave out --record to write to "
                           "./hgemm-results/ (or --out-dir DIR).")
    return require_writable(recorded, "make it writable, or leave out --record to write to ./hgemm-results/")


def write_run(records, *, kind: str = "bench", folder: Path | None = None, extra: dict | None = None) -> Path:
    """Write one run's records with provenance (default folder ./hgemm-results/); returns the file's path."""
    prov = provenance(extra)
    rows = [r if isinstance(r, dict) else r.as_dict() for r in records]
    for r in rows:
        r.setdefault("gpu", prov["gpu"])
        r.setdefault("date", prov["date"])
    return _write_with_provenance({"provenance": prov, "records": rows}, kind, folder)


def write_report(report: dict, *, kind: str, folder: Path | None = None, extra: dict | None = None,
                 replace: Path | None = None) -> Path:
    """Write a report that holds no run records (its kind's schema gives its shape) with provenance, ``extra`` added
    to it, named like a run (default folder ./hgemm-results/); returns the file's path. ``replace``: the path an
    earlier call returned, written again (a run that writes what it has as it goes)."""
    return _write_with_provenance({"provenance": provenance(extra), **report}, kind, folder, replace)


def write_probe(report: dict, *, probe: str, folder: Path | None = None, extra: dict | None = None,
                replace: Path | None = None) -> Path:
    """Write research/<probe>.py's report with provenance (``extra`` added to it), by default to the recorded
    results/probes/<probe>/, apart from the course's runs; refused, like any file written to the recorded results/,
    without complete provenance. Returns the file's path (``replace``: as :func:`write_report`)."""
    return write_report(report, kind=probe, folder=Path(folder) if folder else probe_dir(probe),
                        extra={"probe": f"research/{probe}.py", **(extra or {})}, replace=replace)


def _write_with_provenance(data: dict, kind: str, folder: Path | None, replace: Path | None = None) -> Path:
    folder = Path(folder) if folder else user_results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    prov = data["provenance"]
    gpu_tag = re.sub(r"[^A-Za-z0-9]+", "-", prov["gpu"] or "nogpu").strip("-").lower()
    stamp = prov["date"].replace(":", "").replace("-", "")[:15]
    # a random suffix: runs written in the same second (several processes at once) get different names
    path = folder / (replace.name if replace else f"{kind}_{gpu_tag}_{stamp}_{secrets.token_hex(3)}.json")
    # what the recorded results/ holds carries complete provenance: --record's own rule (run_folder), for every file
    if why := record_schema.file_problem(data, kind, recorded=_in_recorded_folder(folder)):
        raise ValueError(f"{path.name} is not written: {why} ({record_schema.SCHEMA_PATH.name} says what a "
                         f"{kind} file holds)")
    return write_atomic(path, json.dumps(data, indent=1, default=float) + "\n")


def _read_text(path: Path) -> str:
    """A regular file's text, read without blocking: a FIFO, a device (a link to /dev/zero), a folder or a file over
    MAX_RUN_FILE_BYTES is a ValueError saying which."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)       # a FIFO opens at once instead of waiting for a writer
    except OSError as exc:
        raise ValueError(exc.strerror or exc) from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise ValueError(exc.strerror or exc) from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise ValueError(f"{kind}, not a file")
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_RUN_FILE_BYTES + 1)
    if len(data) > MAX_RUN_FILE_BYTES:
        raise ValueError(f"over {MAX_RUN_FILE_BYTES >> 20} MiB, more than any run file")
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise ValueError(exc) from None


def _read_run(path: Path) -> dict:
    """One run file, or a ValueError saying why it is not one."""
    try:
        data = json.loads(_read_text(path))
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    if not (isinstance(data, dict) and isinstance(data.get("provenance"), dict)
            and isinstance(data["provenance"].get("date"), str) and isinstance(data.get("records"), list)):
        raise ValueError("no provenance with a date, or no list of records")
    gpu = data["provenance"].get("gpu")
    if gpu is not None and not isinstance(gpu, str):
        raise ValueError(f"the provenance's gpu is {gpu!r}, not a name")
    return data


def record_problem(record, kind: str = "bench") -> str | None:
    """What makes ``record`` unreadable as a record of this kind of run (one phrase), or None when it is whole: its
    kind's schema (:mod:`hgemm_course.measurement.record_schema`), which holds what its readers (results, book, viz, the
    chapters) take for granted."""
    return record_schema.record_problem(record, kind)


def _provenance_problem(prov: dict, kind: str) -> str | None:
    """What the provenance of a run in the recorded folder lacks of what every recorded run has, or None."""
    needs = MODEL_NEEDS if kind.startswith("model") else RECORD_NEEDS
    missing = [key for key in needs if not prov.get(key)]
    packages = prov.get("packages")
    if packages and not (isinstance(packages, dict) and all(isinstance(v, str) and v for v in packages.values())):
        missing.append("a version of every package")
    if RECORDED_GPU not in str(prov.get("gpu") or ""):
        missing.append(f"an {RECORDED_GPU} as its GPU")
    return f"its provenance lacks {', '.join(missing)}" if missing else None


def _in_recorded_folder(folder: Path) -> bool:
    recorded = results_dir().resolve()
    folder = folder.resolve()
    return folder == recorded or recorded in folder.parents


def load_runs(folder: Path | None = None, *, kind: str = "bench", gpu: str | None = None) -> list[tuple[Path, dict]]:
    """Every run of this kind in the folder (default: the recorded results/), oldest first.

    ``gpu``: only runs whose provenance names a GPU containing it ("H200"). A file that is not a complete run
    (cut short by a crash, edited by hand, a FIFO or a link to a device), a run in the recorded folder whose
    provenance lacks what every recorded run has (:data:`RECORD_NEEDS`, an H200), and a record its readers could
    not read (:func:`record_problem`) are skipped, each file with one warning that names it and what is wrong.
    """
    folder = Path(folder) if folder else results_dir()
    recorded = _in_recorded_folder(folder)
    runs = []
    for path in sorted(folder.glob(f"{kind}_*.json")):
        try:
            data = _read_run(path)
        except ValueError as exc:
            warnings.warn(f"skipped {path}: not a complete run file ({exc})", stacklevel=2)
            continue
        if recorded and (why := _provenance_problem(data["provenance"], kind)):
            warnings.warn(f"skipped {path}: {why}, which every recorded run has; record runs with --record on the "
                          f"{RECORDED_GPU}, and move any other run out of {folder}", stacklevel=2)
            continue
        problems = [(i, why) for i, r in enumerate(data["records"]) if (why := record_problem(r, kind))]
        if problems:
            i, why = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            warnings.warn(f"skipped {len(problems)} of {len(data['records'])} records of {path}: record {i} {why}"
                          f"{more}; write the file again with the command that made it, or delete it", stacklevel=2)
            bad = {i for i, _ in problems}
            data = {**data, "records": [r for i, r in enumerate(data["records"]) if i not in bad]}
            if not data["records"]:
                continue                        # nothing of the run is left to read
        if gpu is None or gpu in (data["provenance"].get("gpu") or ""):
            runs.append((path, data))
    runs.sort(key=lambda pd: pd[1]["provenance"]["date"])
    return runs


def load_records(folder: Path | None = None, *, latest_only: bool = True, gpu: str | None = None) -> list[dict]:
    """Flat records with RECORD_KEYS (plus ``file``); by default the newest per (rung, M, N, K).

    ``folder`` defaults to the recorded results/; ``gpu`` keeps only runs on that GPU (see :func:`load_runs`, which
    skips what is malformed).
    """
    from .vendors import baseline_name

    rows = {}
    listing = []
    for path, data in load_runs(folder, gpu=gpu):
        prov = data["provenance"]
        for r in data["records"]:
            row = {k: r.get(k, prov.get(k)) for k in RECORD_KEYS}
            row.update({"ms": r.get("ms"), "cublas_ms": r.get("cublas_ms"), "file": path.name,
                        "driver": prov.get("driver"), "samples": len(r.get("samples_ms", [])),
                        "paired": bool(r.get("paired")), "launch_clocks": r.get("launch_clocks") or [],
                        "cycles": r.get("cycles"), "clock_ghz": r.get("clock_ghz"),
                        "timing_build_ratio": r.get("timing_build_ratio"),
                        "pct_cublas_pairwise": r.get("pct_cublas_pairwise"), "vendor": baseline_name(r),
                        "vendor_ms": r.get("vendor_ms"), "host_us": r.get("host_us"),
                        "vendor_host_us": r.get("vendor_host_us"), "vendors_host_us": r.get("vendors_host_us")})
            listing.append(row)
            rows[(row["rung"], row["M"], row["N"], row["K"])] = row
    out = list(rows.values()) if latest_only else listing
    return sorted(out, key=lambda r: (r["rung"], r["M"], r["N"], r["K"]))


README_BEGIN = "<!-- ladder-table:begin (written by `hgemm-course results --readme`; do not edit by hand) -->"
README_END = "<!-- ladder-table:end -->"


@dataclass(frozen=True)
class LadderCell:
    """One rung at one square size over its recorded runs: the median % of the vendor baseline and TFLOP/s, the
    p10 and p90 of the %, and the runs themselves, oldest first."""
    pct: float
    low: float
    high: float
    tflops: float
    runs: tuple

    @property
    def spread(self) -> str:
        return f"{self.low:.1f}-{self.high:.1f}, {len(self.runs)} runs" if len(self.runs) > 1 else "1 run"

    @property
    def level(self) -> bool:
        """Whether the runs' p10-p90 holds 100%: the records do not tell this rung from its baseline."""
        return self.low <= 100.0 <= self.high


def ladder_cells(records: list[dict]) -> dict[tuple[str, int], LadderCell]:
    """Every (rung, n) recorded at n^3, over all the runs given (flat records, every run's: ``latest_only=False``):
    only the paired ones where any run is paired (older runs shared one vendor median), and only those against the
    baseline of the newest run there. The one rule README's table, the tour's summary and the ladder figure read."""
    shown = [r for r in records if r.get("paired")] or records
    runs: dict[tuple, list[dict]] = {}
    for r in sorted(shown, key=lambda r: str(r.get("date", ""))):
        if r["M"] == r["N"] == r["K"]:
            runs.setdefault((r["rung"], r["M"]), []).append(r)
    cells = {}
    for key, rs in runs.items():
        same = [r for r in rs if r.get("vendor") == rs[-1].get("vendor")]
        pct, low, high = _runs_spread([r["pct_cublas"] for r in same])
        cells[key] = LadderCell(pct, low, high, statistics.median(r.get("tflops", float("nan")) for r in same),
                                tuple(same))
    return cells


def _runs_spread(values: list[float]) -> tuple[float, float, float]:
    """The median of a rung's recorded figures at one size and their p10 and p90 (inclusive: within the range)."""
    from .verdict import p10_p90

    return (statistics.median(values), *p10_p90(values))


def ladder_markdown(records: list[dict] | None = None) -> str:
    """README's ladder table: per rung, at each recorded square size, the median over its recorded runs of TFLOP/s
    and % of the vendor baseline (same run), with the p10-p90 of the % over those runs and their count, so that two
    rungs whose ranges overlap read as what they are; the baseline named under it by
    :func:`hgemm_course.measurement.vendors.baseline_label`.

    By default from the recorded H200 runs only: a run on another GPU never enters README. Where runs with
    paired timing exist, only they make the table. ``records``: flat records (:func:`load_records`), every run's
    (``latest_only=False``) or the newest only; a cell takes the runs against the baseline of the newest record there.
    """
    from .vendors import baseline_label
    from ..library.ladder import registry

    records = load_records(gpu=RECORDED_GPU, latest_only=False) if records is None else records
    paired = any(r.get("paired") for r in records)
    rungs = registry()          # the ladder's rungs: a run of gemm()'s plan alone adds no column
    cells = {key: cell for key, cell in ladder_cells(records).items() if key[0] in rungs}
    newest = {key: cell.runs[-1] for key, cell in cells.items()}
    square = sorted({n for _, n in cells})
    head = "| rung | idea | " + " | ".join(f"{n}^3" for n in square) + " |"
    rows = [head, "|" + "---|" * (2 + len(square))]
    shown = [r for cell in cells.values() for r in cell.runs]
    for rung in rungs.values():
        row = [cells.get((rung.id, n)) for n in square]
        rows.append(f"| {rung.id} {rung.slug} | {rung.idea} | "
                    + " | ".join("-" if c is None else f"{c.tflops:.1f} TF/s, **{c.pct:.1f}%** ({c.spread})"
                                 for c in row) + " |")
    sources = sorted({(r["file"], r["gpu"], str(r["date"])[:10]) for r in shown})
    notes = "; ".join(f"`results/{f}` ({g}, {d})" for f, g, d in sources) or "none yet"
    of = baseline_label(newest.values(), per_shape=True)
    return "\n".join(rows) + (
        "\n\nEach cell: the median over the recorded runs of the rung at that size (every run timed against the "
        "baseline of the newest, whichever version of the kernel it timed), and in brackets the p10-p90 of its % "
        "over those runs and their count; where two rungs' ranges overlap, the records do not order them. "
        f"Recorded runs: {notes}. % is of {of}, ") + (
        "timed launch by launch beside each rung's launches (paired), the ratio of the two medians." if paired
        else "timed in the same process.")


def rewrite_readme(readme_path: Path, records: list[dict] | None = None) -> bool:
    """Replace the table between the markers; True when the file changed."""
    text = readme_path.read_text()
    start, end = text.index(README_BEGIN) + len(README_BEGIN), text.index(README_END)
    new = text[:start] + "\n" + ladder_markdown(records) + "\n" + text[end:]
    if new != text:
        write_atomic(readme_path, new)
    return new != text


# ---------------------------------------------------------------------------- the recorded ladder, in brief

SUMMARY_SIZES = (2048, 4096, 8192)    # the square sizes the tour's summary shows; `hgemm-course results` has them all


def ladder_summary(records: list[dict] | None = None, sizes=SUMMARY_SIZES) -> dict:
    """The recorded ladder in brief, by the rules of README's table (:func:`ladder_markdown`: the H200's runs, paired
    timing where it exists, every run's median and spread, :func:`ladder_cells`): % of the vendor baseline per rung
    (and gemm()'s plan) at a few square sizes, and the top rung's at the largest of them. ``{"sizes", "rows":
    [(label, {n: LadderCell})], "top": (label, n, LadderCell, baseline) |
    None, "baseline", "records", "runs"}``: "baseline" what the rows' % are of, with which vendor at which shape
    where they differ (:func:`hgemm_course.measurement.vendors.baseline_label`); "records" and "runs" count everything recorded,
    for what the summary leaves out."""
    from .vendors import baseline_in_brief, baseline_label
    from ..library.ladder import registry

    records = load_records(gpu=RECORDED_GPU, latest_only=False) if records is None else records
    cells = {key: c for key, c in ladder_cells(records).items() if key[1] in sizes}
    labels = {rung.id: f"{rung.id} {rung.slug}" for rung in registry().values()} | {"plan": "plan (gemm())"}
    rows = [(label, {n: cells[(rid, n)] for n in sizes if (rid, n) in cells})
            for rid, label in labels.items() if any((rid, n) in cells for n in sizes)]
    top = next(((labels[rid], sizes[-1], cells[(rid, sizes[-1])], baseline_label([cells[(rid, sizes[-1])].runs[-1]]))
                for rid in reversed(registry()) if (rid, sizes[-1]) in cells), None)
    drawn = [c.runs[-1] for (rid, n), c in cells.items() if rid in labels]
    return {"sizes": tuple(sizes), "rows": rows, "top": top, "baseline": baseline_in_brief(drawn, "`hgemm-course results` names each"),
            "records": len(records),
            "runs": len({r["file"] for r in records})}


def format_ladder_summary(summary: dict) -> str:
    """The summary as a table of a few lines, the top rung's figure, and where the rest is."""
    if not summary["rows"]:
        return "No recorded H200 results yet (`hgemm-course bench --record` on the H200 writes them)."
    width = max(len(label) for label, _ in summary["rows"])
    cell_width = 22
    lines = [f"% of {summary['baseline']}:",
             f"{'':<{width}}" + "".join(f"{f'{n}^3':>{cell_width}}" for n in summary["sizes"])]
    for label, cells in summary["rows"]:
        lines.append(f"{label:<{width}}" + "".join(
            f"{_summary_cell(cells[n]) if n in cells else '-':>{cell_width}}" for n in summary["sizes"]))
    lines.append("Each cell: the median over the recorded runs, in brackets their p10-p90 and how many.")
    if summary["top"]:
        label, n, cell, baseline = summary["top"]
        if len(cell.runs) == 1:
            lines.append(f"The top rung, {label}, reads {cell.pct:.1f}% of {baseline} at {n}^3 (1 run).")
        else:
            verdict = f"runs level with {baseline}" if cell.level else f"reads {cell.pct:.1f}% of {baseline}"
            lines.append(f"The top rung, {label}, {verdict} at {n}^3 (median of {len(cell.runs)} runs, p10-p90 "
                         f"{cell.low:.1f}-{cell.high:.1f}%).")
    lines.append(f"All {summary['records']} recorded rows, from {summary['runs']} runs and with the non-square shapes: "
                 "`hgemm-course results`.")
    return "\n".join(lines)


def _summary_cell(cell: LadderCell) -> str:
    if len(cell.runs) == 1:
        return f"{cell.pct:.1f}% (1)"
    return f"{cell.pct:.1f}% ({cell.low:.0f}-{cell.high:.0f}, {len(cell.runs)})"


def results_command(folder: Path | None = None, *, as_json: bool = False) -> int:
    """``hgemm-course results``: every recorded run (newest per rung and shape), then the learner's own runs."""
    from .bench import format_table

    if folder is not None and not Path(folder).is_dir():
        raise ValueError(f"{folder} is {'not a folder' if Path(folder).exists() else 'no folder'}; give --dir a folder "
                         "of run files (bench_*.json), e.g. ./hgemm-results, or leave it out for the recorded results/.")
    records = load_records(folder)
    if as_json:
        print(json.dumps(records, indent=1))
        return 0
    if not records:
        print("No recorded results yet (run `hgemm-course bench` on a GPU).")
        return 0
    files = sorted({(r["file"], r["date"], r["gpu"]) for r in records}, key=str)
    print("Recorded results (not measured now):")
    for name, date, gpu in files:
        print(f"  {name}: {gpu}, {date}")
    print(format_table(records))
    _print_own_runs(folder)
    return 0


def _print_own_runs(shown: Path | None) -> None:
    """The learner's own runs in ./hgemm-results/, after the recorded ones, each GPU's apart and labelled."""
    from .bench import format_table

    folder = user_results_dir()
    if shown is not None and Path(shown).resolve() == folder.resolve() or not folder.is_dir():
        return
    own = load_records(folder)
    for gpu in sorted({r["gpu"] for r in own}, key=str):
        rows = [r for r in own if r["gpu"] == gpu]
        print(f"\nYour runs on the {gpu} ({folder}, newest per rung and shape):")
        print(format_table(rows))


def readme_command(folder: Path | None = None) -> int:
    """``hgemm-course results --readme``: rewrite README's ladder table from the recorded runs in results/."""
    from ..library.paths import REPO_ROOT

    if folder:
        raise ValueError("--readme writes README's table from the recorded H200 runs in results/ only; leave out --dir.")
    changed = rewrite_readme(REPO_ROOT / "README.md")
    print("README.md ladder table " + ("rewritten" if changed else "already up to date"))
    return 0
