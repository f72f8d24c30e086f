"""Recorded ablations: a rung's changes made one at a time (research/ablate_03_to_04.py, research/ablate_hopper.py),
each step verified, alternated launch by launch with the vendor baseline (cuBLAS through cupy.matmul in these
scripts) and with its own timing build. A chapter shows a recorded run with :func:`show`: every step's SM cycles,
clock and % of the baseline (its heading names it), and each step's cycles against the
step it changes, as computed verdicts (verdict.py). Chapter 07's L2-promotion ablation is read by
:func:`l2_promotion` (printed by :func:`show_l2_promotion`), and a step against a rung's own recorded launches by
:func:`step_against_rung` (printed by :func:`compare_step_with_rung`).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from ..measurement import verdict
from ..library.paths import results_dir

HOPPER = Path("tuning") / "2026-12-02" / "ablate_hopper"     # under results/: one JSON per group
ABLATION_03_TO_04 = Path("tuning") / "2026-12-02" / "ablate_03_to_04.json"   # under results/
L2_PROMOTION = Path("tuning") / "2026-12-02" / "l2_promotion" / "ablate_l2_promotion.json"   # under results/
# ncu counters a step may carry (research/ablate_03_to_04.py measures them on its 8192^3 launch)
COUNTERS = (("tensor pipe %", "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active"),
            ("issue %", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
            ("long sb", "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"))


def load(path: Path | str) -> tuple[Path, dict, list[dict]]:
    """(the file under results/, its provenance, its steps)."""
    path = results_dir() / path
    data = json.loads(path.read_text())
    return path, data["provenance"], data["variants"]


def heading(path: Path, prov: dict, rows=None) -> str:
    """The RECORDED line a recorded file's table starts with; given the file's steps (``rows``), it names what their
    % are of (:func:`hgemm_course.measurement.vendors.baseline_label` of their timings)."""
    from ..measurement.vendors import baseline_label

    line = f"RECORDED on the {prov['gpu']} (results/{path.relative_to(results_dir()).as_posix()}, {prov['date'][:10]})"
    if rows is None:
        return line + ":"
    timings = [t for row in rows for t in row.get("timing", {}).values() if isinstance(t, dict)]
    return f"{line}, % of {baseline_label(timings)}:"


def cycles_at(row: dict, n: str) -> list[int]:
    """The SM cycles of each logged launch of a recorded step at size ``n`` ([] where the run kept none)."""
    return [c["cycles"] for c in row["timing"].get(n, {}).get("launch_clocks") or ()]


def show(path: Path | str = ABLATION_03_TO_04, against: dict[str, str | None] | None = None) -> list[verdict.Verdict]:
    """The recorded steps of ``path`` as a table (SM cycles, clock and % of the vendor baseline at each size; registers; the
    ncu counters where the run took them; the kernel's refusal for a step it does not build), then each step's
    cycles at the largest size against the step before it, or against ``against[label]`` where given (None: no
    verdict, the step starts a new line). Returns the verdicts, in the table's order."""
    path, prov, rows = load(path)
    sizes = sorted({int(n) for row in rows for n in row["timing"]})
    counters = [(name, metric) for name, metric in COUNTERS if any(metric in next(iter(r.get("ncu", {}).values()), {})
                                                                   for r in rows)]
    width = max(len(r["label"]) for r in rows) + 2
    print(heading(path, prov, rows))
    print(f"{'step':<{width}}{'regs':>5}" + "".join(f"{f'{n}^3: Mcycles  GHz  %vendor':>30}" for n in sizes)
          + "".join(f"{name:>14}" for name, _ in counters))
    for row in rows:
        if "refused" in row:
            print(f"{row['label']:<{width}}  refused: {row['refused']}")
            continue
        cells = "".join(f"{t['cycles'] / 1e6:>16.3f}{t['clock_ghz']:>6.3f}{t['pct_cublas']:>8.1f}"
                        if (t := row["timing"].get(str(n))) else f"{'-':>30}" for n in sizes)
        taken = next(iter(row.get("ncu", {}).values()), {})
        print(f"{row['label']:<{width}}{row.get('registers', '-'):>5}{cells}" + "".join(
            f"{taken[m]:>14.2f}" if taken.get(m) is not None else f"{'-':>14}" for _, m in counters))
    n = str(sizes[-1])
    timed = [r for r in rows if cycles_at(r, n)]
    by_label = {r["label"]: r for r in timed}
    found = []
    for before, after in zip(timed, timed[1:]):
        base = before
        if against and after["label"] in against:
            if against[after["label"]] is None:         # a step that starts a new line of the table
                continue
            base = by_label[against[after["label"]]]
        found.append(verdict.compare(base["label"], cycles_at(base, n), after["label"], cycles_at(after, n),
                                     f"SM cycles at {n}^3"))
    for judged in found:
        print(judged)
    return found


def show_ring_waits(path: Path | str = HOPPER / "ablate_ring_depth.json") -> list[dict]:
    """The ring's waits of each recorded step: the share of its cycles the producer spends waiting for a free
    stage and the consumers for a full one, per warp, summed over one launch of an instrumented build."""
    path, prov, rows = load(path)
    waited = [r for r in rows if r.get("ring_waits")]
    width = max(len(r["label"]) for r in waited) + 2
    print(heading(path, prov))
    print(f"{'step':<{width}}{'size':>6}{'producer waits %':>18}{'consumers wait %':>18}")
    for r in waited:
        w = r["ring_waits"]
        print(f"{r['label']:<{width}}{w['size']:>6}{w['producer_wait_pct']:>18.1f}{w['consumer_wait_pct']:>18.1f}")
    return [{"label": r["label"], **r["ring_waits"]} for r in waited]


def stalls_by_instruction(path: Path | str, reason: str = "stall_long_sb", top: int = 3) -> list[dict]:
    """From ncu's source page (``ncu --import R --page source --csv --print-source sass``): the SASS
    instructions with the most warp samples stalled for ``reason``, each with the instruction before it
    (a stall is charged to the instruction that waits, often the branch after the barrier test it waits on),
    how many times a warp executed it (``executed``, ncu's "Instructions Executed") and with how many threads
    on average (``threads``, ncu's "Avg. Threads Executed")."""
    path = results_dir() / path
    rows = list(csv.reader(path.open()))
    head, body = rows[1], rows[2:]
    stalled, samples = head.index(reason), head.index("Warp Stall Sampling (All Samples)")
    executed, threads = head.index("Instructions Executed"), head.index("Avg. Threads Executed")
    total = sum(int(r[samples]) for r in body)
    ranked = sorted(range(len(body)), key=lambda i: -int(body[i][stalled]))[:top]
    return [{"instruction": body[i][1].strip(), "after": body[i - 1][1].strip() if i else "",
             "samples": int(body[i][stalled]), "share_of_all_samples": int(body[i][stalled]) / total,
             "executed": int(body[i][executed]), "threads": float(body[i][threads])}
            for i in ranked]


def show_stalls_by_instruction(path: Path | str, reason: str = "stall_long_sb", top: int = 3) -> list[dict]:
    """:func:`stalls_by_instruction` printed, one line per instruction; returns its rows."""
    found = stalls_by_instruction(path, reason, top)
    print(f"RECORDED (results/{Path(path).as_posix()}): the {top} SASS instructions with the most {reason} samples")
    print(f"{'share of all samples':>21}{reason:>15}{'executed':>10}{'threads':>8}  instruction, after")
    for row in found:
        print(f"{row['share_of_all_samples']:>21.1%}{row['samples']:>15}{row['executed']:>10}{row['threads']:>8.0f}  "
              f"{row['instruction']}, after {row['after']}")
    return found


def compare_steps(a: tuple[Path | str, str], b: tuple[Path | str, str], size: int = 8192) -> verdict.Verdict:
    """Step ``a`` = (file, label) against step ``b`` of another recorded ablation of the same session, by their
    launches' SM cycles at ``size``^3; printed and returned."""
    (_, _, rows_a), (_, _, rows_b) = load(a[0]), load(b[0])
    step_a = next(r for r in rows_a if r["label"] == a[1])
    step_b = next(r for r in rows_b if r["label"] == b[1])
    judged = verdict.compare(a[1], cycles_at(step_a, str(size)), b[1], cycles_at(step_b, str(size)),
                             f"SM cycles at {size}^3")
    print(judged)
    return judged


def step_against_rung(path: Path | str, label: str, rung_id: str, size: int) -> dict | None:
    """The SM-cycles verdict of a recorded ablation's step ``label`` against rung ``rung_id``'s newest recorded bench
    launches at ``size``^3 that held the stream (two runs, each launch's cycles logged by its timing build, which no
    clock moves): ``{"path", "gpu", "rung_file", "verdict"}``, or None where either side kept no launches there."""
    from ..measurement.records import load_records
    from .stretch import HOLD_SINCE

    path, prov, rows = load(path)
    step = next(row for row in rows if row["label"] == label)
    record = next((r for r in load_records() if r["rung"] == rung_id and r["M"] == r["N"] == r["K"] == size
                   and str(r.get("date", "")) >= HOLD_SINCE and r.get("launch_clocks")), None)
    ours = cycles_at(step, str(size))
    if record is None or not ours:
        return None
    judged = verdict.compare(label, ours, f"rung {rung_id}", [c["cycles"] for c in record["launch_clocks"]],
                             f"SM cycles at {size}^3, two runs")
    return {"path": path, "gpu": prov["gpu"], "rung_file": record["file"], "verdict": judged}


def compare_step_with_rung(path: Path | str, label: str, rung_id: str, size: int) -> verdict.Verdict | None:
    """Print :func:`step_against_rung` under the two files; returns the verdict, or None (printed) where either side
    kept no launches there."""
    found = step_against_rung(path, label, rung_id, size)
    if found is None:
        print(f"No recorded launches of both {label} and rung {rung_id} at {size}^3.")
        return None
    print(f"RECORDED on the {found['gpu']} (results/{found['path'].relative_to(results_dir()).as_posix()}, "
          f"results/{found['rung_file']}):\n{found['verdict']}")
    return found["verdict"]


def l2_promotion(path: Path | str = L2_PROMOTION) -> dict:
    """The recorded L2-promotion ablation of rung 07 (research/ablate_l2_promotion.py): ``{"path", "provenance",
    "rows"`` (per promotion, SM cycles, clock and % of the vendor baseline at each size, and ncu's counters of one
    8192^3 launch), ``"sizes"``, ``"verdicts"`` (each promotion's cycles against none's at the largest size; empty
    where the run kept no launches' cycles)``}``."""
    path, prov, rows = load(path)
    sizes = sorted({int(n) for row in rows for n in row["timing"]})
    n = str(sizes[-1])
    baseline = next(row for row in rows if row["l2_promotion"] == 0)
    found = [verdict.compare("no promotion", cycles_at(baseline, n), f"{row['l2_promotion']} B promotion",
                             cycles_at(row, n), f"SM cycles at {n}^3")
             for row in rows if row["l2_promotion"] and cycles_at(row, n)]
    return {"path": path, "provenance": prov, "rows": rows, "sizes": sizes, "verdicts": found}


def format_l2_promotion(ablated: dict) -> str:
    """:func:`l2_promotion` as a table: per promotion, SM cycles, clock and % of the vendor baseline at each size,
    and ncu's DRAM bytes, L2 hit rate and L2 sectors per request; then the verdicts, or the line that says the run
    gives no spread to judge by."""
    rows, sizes = ablated["rows"], ablated["sizes"]
    lines = [heading(ablated["path"], ablated["provenance"], rows),
             f"{'L2 promotion':<14}" + "".join(f"{f'{n}^3: Mcycles  GHz  %vendor':>30}" for n in sizes)
             + f"{'DRAM MB':>10}{'L2 hit %':>10}{'sectors/req':>12}"]
    for row in rows:
        cells = "".join(f"{t['cycles'] / 1e6:>16.3f}{t['clock_ghz']:>6.3f}{t['pct_cublas']:>8.1f}"
                        for t in (row["timing"][str(n)] for n in sizes))
        ncu = next(iter(row.get("ncu", {}).values()), {})
        sectors, requests = ncu.get("lts__t_sectors_srcunit_tex_op_read.sum"), ncu.get("lts__t_requests_srcunit_tex_op_read.sum")
        extra = (f"{ncu['dram__bytes_read.sum'] / 1e6:>10,.0f}{ncu['lts__t_sector_hit_rate.pct']:>10.1f}"
                 f"{sectors / requests:>12.2f}" if ncu and sectors and requests else "")
        label = f"{row['l2_promotion']} B" if row["l2_promotion"] else "none"
        lines.append(f"{label:<14}{cells}{extra}")
    if not ablated["verdicts"]:
        lines.append("This run kept each promotion's median cycles only, not its launches', so it gives no spread to "
                     "judge the differences by: `python3 research/ablate_l2_promotion.py` on a GPU measures them with it.")
    lines += [str(judged) for judged in ablated["verdicts"]]
    return "\n".join(lines)


def show_l2_promotion(path: Path | str = L2_PROMOTION) -> list[verdict.Verdict]:
    """Print :func:`l2_promotion` (:func:`format_l2_promotion`); returns its verdicts."""
    ablated = l2_promotion(path)
    print(format_l2_promotion(ablated))
    return ablated["verdicts"]
