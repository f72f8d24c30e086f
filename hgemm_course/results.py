"""Recorded GPU figures: every benchmark run is one JSON file under results/ with its provenance.

A file holds ``{"provenance": {...}, "records": [...]}``; a record is one (rung, size)
with its median, every sample, and cuBLAS timed in the same process. Nothing here
makes a figure up: :func:`load_records` only reads what a real run wrote.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path

from . import device
from .paths import results_dir

RECORD_KEYS = ("rung", "M", "N", "K", "tflops", "cublas_tflops", "pct_cublas", "gpu", "date")


def provenance(extra: dict | None = None) -> dict:
    """Where and with what a run was made: GPU, driver, CUDA and library versions, date."""
    report = device.machine_report()
    gpu = report.gpu
    out = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": gpu.name if gpu else None,
        "arch": gpu.arch if gpu else None,
        "sm_count": gpu.sm_count if gpu else None,
        "l2_bytes": gpu.l2_bytes if gpu else None,
        "driver": report.driver_version,
        "driver_release": device.driver_release(),
        "cuda_runtime": report.runtime_version,
        "nvrtc": report.nvrtc_version,
        "packages": report.packages,
        "python": report.python,
    }
    out.update(extra or {})
    return out


def write_run(records, *, kind: str = "bench", folder: Path | None = None, extra: dict | None = None) -> Path:
    """Write one run's records with provenance; returns the file's path."""
    folder = Path(folder) if folder else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    prov = provenance(extra)
    rows = [r if isinstance(r, dict) else r.as_dict() for r in records]
    for r in rows:
        r.setdefault("gpu", prov["gpu"])
        r.setdefault("date", prov["date"])
    gpu_tag = re.sub(r"[^A-Za-z0-9]+", "-", prov["gpu"] or "nogpu").strip("-").lower()
    stamp = prov["date"].replace(":", "").replace("-", "")[:15]
    path = folder / f"{kind}_{gpu_tag}_{stamp}.json"
    path.write_text(json.dumps({"provenance": prov, "records": rows}, indent=1) + "\n")
    return path


def load_runs(folder: Path | None = None, *, kind: str = "bench") -> list[tuple[Path, dict]]:
    """Every recorded run of this kind, oldest first."""
    folder = Path(folder) if folder else results_dir()
    runs = []
    for path in sorted(folder.glob(f"{kind}_*.json")):
        data = json.loads(path.read_text())
        runs.append((path, data))
    runs.sort(key=lambda pd: pd[1]["provenance"]["date"])
    return runs


def load_records(folder: Path | None = None, *, latest_only: bool = True) -> list[dict]:
    """Flat records with RECORD_KEYS (plus ``file``); by default the newest per (rung, M, N, K)."""
    rows = {}
    listing = []
    for path, data in load_runs(folder):
        prov = data["provenance"]
        for r in data["records"]:
            row = {k: r.get(k, prov.get(k)) for k in RECORD_KEYS}
            row.update({"ms": r.get("ms"), "cublas_ms": r.get("cublas_ms"), "file": path.name,
                        "driver": prov.get("driver"), "samples": len(r.get("samples_ms", []))})
            listing.append(row)
            rows[(row["rung"], row["M"], row["N"], row["K"])] = row
    out = list(rows.values()) if latest_only else listing
    return sorted(out, key=lambda r: (r["rung"], r["M"], r["N"], r["K"]))


README_BEGIN = "<!-- ladder-table:begin (written by `hgemm-course results --readme`; do not edit by hand) -->"
README_END = "<!-- ladder-table:end -->"


def ladder_markdown(records: list[dict] | None = None) -> str:
    """README's ladder table: per rung, TFLOP/s and % of cuBLAS (same run) at each recorded square size."""
    from .ladder import registry

    records = load_records() if records is None else records
    square = sorted({r["M"] for r in records if r["M"] == r["N"] == r["K"]})
    by_key = {(r["rung"], r["M"]): r for r in records if r["M"] == r["N"] == r["K"]}
    head = "| rung | idea | " + " | ".join(f"{n}^3" for n in square) + " |"
    rows = [head, "|" + "---|" * (2 + len(square))]
    for rung in registry().values():
        cells = []
        for n in square:
            r = by_key.get((rung.id, n))
            cells.append(f"{r['tflops']:.1f} TF/s, **{r['pct_cublas']:.1f}%**" if r else "-")
        rows.append(f"| {rung.id} {rung.slug} | {rung.idea} | " + " | ".join(cells) + " |")
    sources = sorted({(r["file"], r["gpu"], r["date"][:10]) for r in records})
    notes = "; ".join(f"`results/{f}` ({g}, {d})" for f, g, d in sources) or "none yet"
    return "\n".join(rows) + f"\n\nRecorded runs: {notes}. % is of cuBLAS (`cupy.matmul`, fp16) timed in the same process."


def rewrite_readme(readme_path: Path, records: list[dict] | None = None) -> bool:
    """Replace the table between the markers; True when the file changed."""
    text = readme_path.read_text()
    start, end = text.index(README_BEGIN) + len(README_BEGIN), text.index(README_END)
    new = text[:start] + "\n" + ladder_markdown(records) + "\n" + text[end:]
    if new != text:
        readme_path.write_text(new)
    return new != text
