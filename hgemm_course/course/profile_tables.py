"""Recorded profiles (``hgemm-course profile``, Nsight Compute) as chapters set them side by side: the instructions
that fed the tensor cores (:func:`tensor_rows`), rungs' profiles row by row (:func:`side_by_side`), a profile's SM
cycles against the timing build's (:func:`two_instruments`) and the course's models against ncu's counters
(:func:`model_check`). Each returns data; ``tensor_instructions``, ``profiles_side_by_side``,
``profile_against_timing`` and ``model_vs_hardware`` print it.
"""
from __future__ import annotations

from pathlib import Path

from ..measurement.records import load_records
from .stretch import HOLD_SINCE, stretch_row, with_samples


# ---------------------------------------------------------------- what fed the tensor cores

def tensor_rows(rungs=("cublas", "07"), size: int = 8192) -> list[dict]:
    """From the recorded profiles (``hgemm-course profile``) at size^3: the kernel each of ``rungs`` ran and the
    instructions that fed its tensor cores: tensor-pipe instructions, of them wgmma reading shared memory
    (ncu counts them as gmma), and ldmatrix loads (mma.sync's operands). One row per rung with a profile."""
    from ..measurement.profile import recorded_profile

    rows = []
    for rung in rungs:
        record = recorded_profile(rung, M=size)
        if record is None:
            continue
        smem = record.get("smem") or {}
        rows.append({"rung": rung, "kernel": record["kernel"], "file": record["file"], "gpu": record["gpu"],
                     "date": record["date"], "tensor_instructions": record["tensor_instructions"],
                     "wgmma": (smem.get("gmma") or {}).get("instructions") or 0,
                     "ldmatrix": (smem.get("ldsm") or {}).get("instructions") or 0,
                     "top_stall": record["top_stalls"][0]["reason"] if record.get("top_stalls") else None})
    return rows


def format_tensor_rows(rungs, rows: list[dict], size: int) -> str:
    """:func:`tensor_rows`, two lines a rung, or the line that says how to record the profile it lacks."""
    by_rung = {row["rung"]: row for row in rows}
    lines = []
    for rung in rungs:
        row = by_rung.get(rung)
        if row is None:
            lines.append(f"No recorded profile of {rung} at {size}^3: `hgemm-course profile {rung} --size {size}` "
                         "on a GPU records one.")
            continue
        name = row["kernel"].removeprefix("void ").split("(")[0]
        lines += [f"RECORDED on the {row['gpu']} ({row['file']}, {row['date'][:10]}), {size}^3: "
                  f"{'cuBLAS' if rung == 'cublas' else 'rung ' + rung} ran {name}",
                  f"  {row['tensor_instructions']:>13,.0f} tensor-pipe instructions: {row['wgmma']:,.0f} wgmma from "
                  f"shared memory, {row['ldmatrix']:,.0f} ldmatrix; its warps stalled most on {row['top_stall']}"]
    return "\n".join(lines)


def tensor_instructions(rungs=("cublas", "07"), size: int = 8192) -> list[dict]:
    """Print :func:`tensor_rows` (:func:`format_tensor_rows`); returns them."""
    rows = tensor_rows(rungs, size)
    print(format_tensor_rows(rungs, rows, size))
    return rows


# ---------------------------------------------------------------- rungs' profiles side by side

STALLS_SHOWN = ("long_scoreboard", "barrier", "wait", "gmma", "mio_throttle", "short_scoreboard")


def side_by_side(*rungs: str, size: int = 8192, folder=None, shape: tuple[int, int, int] | None = None) -> dict:
    """The newest recorded profile (``hgemm-course profile``) of each rung at size^3 (or ``shape``, M x N x K; a
    rung may also be ``plan``, ``cublas`` or ``cublaslt``): ``{"records"`` (those recorded, in order), ``"missing"``
    (the rungs without one), ``"shares"``
    (each one's share of stalled warps on each reason, of all reasons but ``selected``,
    :func:`hgemm_course.measurement.profile.top_stalls`)``}``."""
    from ..measurement import profile

    M, N, K = shape or (size, size, size)
    found = [(rung, profile.recorded_profile(rung, M, N, K, folder=folder)) for rung in rungs]
    records = [r for _, r in found if r is not None]
    shares = [{s["reason"]: s["share_pct"] for s in profile.top_stalls(r["stalls"], n=len(r["stalls"]))}
              for r in records]
    return {"records": records, "shares": shares, "missing": [rung for rung, r in found if r is None]}


def format_side_by_side(profiles: dict, *, size: int = 8192, shape=None, stalls=STALLS_SHOWN) -> str:
    """:func:`side_by_side` as a table: SM cycles and clock, tensor pipe and issue slots, warps per SM, DRAM read, L2
    hit rate, and the share of stalled warps on each reason in ``stalls``; then, with two or more rungs, each one's
    SM cycles against the first's: one profiled launch each, so a reading without a spread. A line for each rung
    with no profile says how to record one."""
    M, N, K = shape or (size, size, size)
    where = f"{size}^3" if shape is None else f"{M}x{N}x{K}"
    option = f"--size {size}" if shape is None else f"--shape {where}"
    records, shares = profiles["records"], profiles["shares"]
    lines = [f"No recorded profile of rung {rung} at {where}: `hgemm-course profile {rung} {option}` "
             "on a GPU records one." for rung in profiles["missing"]]
    if not records:
        return "\n".join(lines)
    lines.append(f"RECORDED profiles on the {records[0]['gpu']} at {where}, one launch each (ncu --clock-control none):")
    lines += [f"  rung {r['rung']}: {r['file']} ({r['date'][:10]}), {r['kernel'].removeprefix('void ').split('(')[0]}"
              for r in records]
    rows = [("SM cycles", lambda r, _: f"{r['cycles']:,.0f}"),
            ("SM clock (MHz)", lambda r, _: f"{r['sm_clock_mhz']:,.0f}"),
            ("tensor pipe active (% of active cycles)", lambda r, _: f"{r['tensor_pipe_active_pct']:.1f}"),
            ("issue slots busy (%)", lambda r, _: f"{r['issue_active_pct']:.1f}"),
            ("warps per SM (achieved)", lambda r, _: f"{r['warps_per_sm']:.1f}"),
            ("DRAM read (MB)", lambda r, _: f"{r['dram_read_bytes'] / 1e6:,.0f}"),
            ("L2 hit rate, lts__t_sector_hit_rate (%)", lambda r, _: f"{r['l2_hit_pct']:.1f}")]
    rows += [(f"stalled warps on {reason} (%)", lambda r, s, reason=reason: f"{s.get(reason, 0.0):.1f}")
             for reason in stalls]
    widths = [max(12, len(r["rung"]) + 7) for r in records]     # "rung cublaslt" keeps a space before it
    lines.append(f"{'':<42}" + "".join(f"{'rung ' + r['rung']:>{w}}" for r, w in zip(records, widths)))
    for label, cell in rows:
        lines.append(f"{label:<42}" + "".join(f"{cell(r, s):>{w}}" for r, s, w in zip(records, shares, widths)))
    first = records[0]
    for r in records[1:]:
        change = r["cycles"] / first["cycles"] - 1
        lines.append(f"rung {r['rung']} takes {abs(change):.1%} {'fewer' if change < 0 else 'more'} SM cycles than "
                     f"rung {first['rung']} in these profiles (one launch each: a reading, without a spread)")
    return "\n".join(lines)


def profiles_side_by_side(*rungs: str, size: int = 8192, stalls=STALLS_SHOWN, folder=None,
                          shape: tuple[int, int, int] | None = None) -> list[dict]:
    """Print :func:`side_by_side` (:func:`format_side_by_side`; :func:`hgemm_course.course.here_or_recorded.compare_or_show`
    gives the verdict with its spread); returns the profiles shown."""
    profiles = side_by_side(*rungs, size=size, folder=folder, shape=shape)
    text = format_side_by_side(profiles, size=size, shape=shape, stalls=stalls)
    if text:
        print(text)
    return profiles["records"]


# ---------------------------------------------------------------- a profile's cycles against the timing build's

def two_instruments(*rungs: str, size: int = 8192, folder=None) -> list[dict]:
    """Each rung's SM cycles at ``size``^3 by the two instruments the course has: its newest recorded profile (one
    launch of the plain build under ncu, caches flushed: its duration times its SM clock) and its newest bench
    record's timing build (the median launch of the busiest SM's cycles, each CTA logging its start and end), with
    the ratio of the two and, from that bench stretch, the timing build's time over the plain build's. Returns
    ``{"rung", "profile_cycles", "timing_cycles", "ratio", "timed_over_plain", ...}`` per rung with both."""
    from ..measurement import profile

    out = []
    for rung in rungs:
        prof = profile.recorded_profile(rung, size, folder=None if folder is None else Path(folder) / "profiles")
        rows = [r for r in load_records(folder) if r["rung"] == rung and r["M"] == r["N"] == r["K"] == size
                and r.get("launch_clocks") and str(r.get("date", "")) >= HOLD_SINCE]
        stretch = stretch_row(with_samples(rows[:1], folder)[0]) if rows else None
        if prof is None or stretch is None:
            continue
        out.append({"rung": rung, "profile_cycles": prof["cycles"], "profile_file": prof["file"],
                    "profile_mhz": prof["sm_clock_mhz"], "timing_cycles": stretch["mcycles"] * 1e6,
                    "timing_ghz": stretch["ghz"], "timing_file": rows[0]["file"],
                    "ratio": prof["cycles"] / (stretch["mcycles"] * 1e6),
                    "timed_over_plain": rows[0].get("timing_build_ratio")})
    return out


def format_two_instruments(rungs, rows: list[dict], size: int = 8192) -> str:
    """:func:`two_instruments` as a table under a line for each rung that lacks either, then the files."""
    shown = {r["rung"] for r in rows}
    lines = [f"rung {rung}: no recorded profile and timed run at {size}^3 to set side by side"
             for rung in rungs if rung not in shown]
    lines += [f"RECORDED on the H200 at {size}^3: SM cycles of the same kernel by two instruments",
              f"{'rung':<5}{'ncu, one launch':>16}{'MHz':>7}{'timing build':>14}{'GHz':>7}{'ncu / timing':>14}"
              f"{'timed / plain':>15}"]
    for r in rows:
        plain = f"{r['timed_over_plain']:.3f}" if r["timed_over_plain"] else "-"
        lines.append(f"{r['rung']:<5}{r['profile_cycles']:>16,.0f}{r['profile_mhz']:>7,.0f}{r['timing_cycles']:>14,.0f}"
                     f"{r['timing_ghz']:>7.3f}{r['ratio']:>14.3f}{plain:>15}")
    lines += [f"  rung {r['rung']}: profile results/profiles/{r['profile_file']}, timing build results/{r['timing_file']}"
              for r in rows]
    return "\n".join(lines)


def profile_against_timing(*rungs: str, size: int = 8192, folder=None) -> list[dict]:
    """Print :func:`two_instruments` (:func:`format_two_instruments`); returns its rows."""
    rows = two_instruments(*rungs, size=size, folder=folder)
    print(format_two_instruments(rungs, rows, size))
    return rows


# ---------------------------------------------------------------- the course's models against ncu's counters

# Counters that count more than the model's quantity by what they are, for records that carry no note of their own:
# a counter's excess over the model is then a footnote, not a disagreement.
_COUNTER_NOTES = {
    counter: ("l1tex__..._op_ld counts every shared-memory load wavefront of the LSU pipe, not ldmatrix's alone, and "
              "each wavefront it counts beyond the ideal as a bank conflict: its excess over the model equals its "
              "conflict count, where the sm__sass_ counters of the ldmatrix instructions themselves count the model's "
              "wavefronts and no conflict; which other loads or replays make up the excess these counters do not say")
    for counter in ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")}


def _ranking(order: list[str], value: dict[str, float], tie: float) -> str:
    """An order as text, ``a > b = c``: ``=`` between neighbours less than ``tie`` apart in ``value``."""
    text = order[0]
    for before, name in zip(order, order[1:]):
        close = before in value and name in value and abs(value[before] - value[name]) < tie
        text += f" {'=' if close else '>'} {name}"
    return text


def model_check(check: str) -> tuple[Path, dict] | None:
    """(path, data) of the newest recorded model-vs-ncu comparison (``check`` is "banks" or "l2"), or None."""
    from ..measurement.records import load_runs

    runs = load_runs(kind=f"model_{check}")
    return runs[-1] if runs else None


def format_model_check(path: Path, data: dict) -> str:
    """:func:`model_check`'s records: one block per (configuration, quantity), the model's figure, then each ncu
    counter that measures it, named, with its verdict; a counter that also counts work the model leaves out says
    what (its note, as a footnote), not "disagree". A ranking is printed with the figures behind it: neighbours
    closer than the record's ``tie_points`` are tied (``=``), and the verdict says the orders agree only up to those
    ties where they are not the same."""
    prov = data["provenance"]
    lines = [f"RECORDED on the {prov['gpu']} ({path.name}, measured {str(prov.get('measured_at', prov['date']))[:10]}):"]
    notes: dict[str, int] = {}
    shown: set = set()
    for r in data["records"]:
        if isinstance(r["model"], list):        # a ranking, not a number
            tie = (r.get("config") or {}).get("tie_points", 0.0)
            ranked = [x for x in data["records"] if not isinstance(x["model"], list) and "order" in x["config"]]
            model = {x["config"]["order"]: x["model"] for x in ranked}
            hardware = {x["config"]["order"]: x["hardware"] for x in ranked}
            if not r["agree"]:
                verdict = "DISAGREE"
            elif r["model"] == r["hardware"]:
                verdict = "the same order"
            else:
                verdict = f"the same order once figures less than {tie:g} point apart count as tied (=)"
            lines.append(f"{r['quantity']}: model {_ranking(r['model'], model, tie)}; ncu "
                         f"{_ranking(r['hardware'], hardware, tie)}: {verdict}")
            continue
        key = (r["config"]["name"], r["quantity"])
        if key not in shown:
            shown.add(key)
            lines.append(f"{r['config']['name']}, {r['quantity']}: model {r['model']:,.0f}")
        note = r.get("note")
        if note is None and r["agree"] is False and r.get("counter") in _COUNTER_NOTES and r["hardware"] > r["model"]:
            note = _COUNTER_NOTES[r["counter"]]
        if r["agree"] is None or note is not None:
            mark = notes.setdefault(note or "it counts more than the model does", len(notes) + 1)
            verdict = f"counts more [{mark}]"
        else:
            verdict = "agree" if r["agree"] else "DISAGREE"
        lines.append(f"    ncu {r['hardware']:>14,.0f}  {verdict:<15} {r.get('counter', '')}")
    lines += [f"[{mark}] {note}" for note, mark in notes.items()]
    return "\n".join(lines)


def model_vs_hardware(check: str) -> list[dict]:
    """Print the newest recorded model-vs-ncu comparison (:func:`model_check`, :func:`format_model_check`); returns
    its records."""
    found = model_check(check)
    if found is None:
        print(f"No recorded {check} comparison: scripts/h200_model_checks.sh on the H200 records one.")
        return []
    path, data = found
    print(format_model_check(path, data))
    return data["records"]
