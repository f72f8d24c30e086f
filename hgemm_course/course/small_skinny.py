"""Chapter 13: the products users bring that are small or skinny, as counts and as the H200 recorded them.

Three kinds of function, as the chapter uses them:

- counts, pure and fast: what kind a shape is (:func:`shape_kind`), its arithmetic intensity and memory-roof time
  (:func:`arithmetic_intensity`, :func:`memory_roof_us`, from :func:`hgemm_course.measurement.roofline.gemm_floor`), and what
  cutting every tile by K does at a shape (:func:`split_pieces`, :func:`split_count`);
- tables of recorded runs, each from records passed in and returning one dict per shape: the memory roof
  (:func:`roof_rows`), the host's time per call (:func:`host_rows`) and the candidates of the vendor probe
  (:func:`probe_rows`, :func:`family_rows`, :func:`wide_rows`), each with a ``format_*`` twin that lays it out;
- readers: the newest recorded ``bench plan`` run over :data:`SHAPES_FILE` is found by
  :func:`hgemm_course.viz.vendor_sweep.vendor_sweep_data`; the vendor probe by :func:`recorded_probe`.

The shapes where gemm() trails and its profiles beside cuBLASLt's are :mod:`hgemm_course.course.small_skinny_profiles`;
what chapter 13 prints, and its timing of gemm() on a GPU that runs it, :mod:`hgemm_course.course.chapter_skinny`.
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from ..measurement.roofline import gemm_floor

SHAPES_FILE = Path("benchmarks") / "shapes_small_skinny.txt"      # under the repository
VENDOR_PROBE = Path("tuning") / "2026-12-02" / "vendor_probe" / "vendor_probe_20261202T212448.json"  # under results/
# The same probe at K-heavy and small-M shapes with rung 12 split apart among the candidates, once each tile's CTAs
# added its pieces in the one kernel (under results/)
APART_PROBE = Path("tuning") / "2026-12-03" / "split_apart_one_kernel" / "vendor_probe_20261203T155139.json"
WIDE_PROBE = Path("tuning") / "2026-12-03" / "wide_tiles" / "vendor_probe_20261203T131546.json"
FAMILIES = (("rung 11, 64-row or 128x128 tiles", "r11 "), ("rung 12, owners add the pieces", " sk0"),
            ("rung 12, split apart", " apart"))
SMS = 132                       # the H200's SMs, where every recorded run was made
K_STEP = 64                     # the K-iteration of rungs 11 and 12: a 64-deep slice of A and B
SMALL_M = 128                   # up to this M a product is "small M": one 128-row tile holds all of A's rows
SKEW = 8                        # K at least SKEW times M and N is K-heavy; at most 1/SKEW of both, K-light
SMALL_CUBE = 2048               # the largest small cube of the sweep
HOST_BOUND_US = 30.0            # kernels shorter than about this run at the host's pace when calls are not queued

KINDS = ("small M", "larger M", "small cubes", "rows off 128 B", "K-light", "K-heavy")


def shape_kind(M: int, N: int, K: int) -> str:
    """The kind of product ``M x N x K`` is, one of :data:`KINDS`, checked in this order: rows off 128-byte
    boundaries (A's rows of K halves or B's and C's of N halves, :data:`hgemm_course.library.plan.ROW_ALIGN_BYTES`);
    K-heavy (K at least :data:`SKEW` times M and N) or K-light (K at most 1/SKEW of both); small M (at most
    :data:`SMALL_M` rows: decode); small cubes (M = N = K up to :data:`SMALL_CUBE`); else larger M (the M sweep past
    SMALL_M, LLM prefill, 8192^3)."""
    from ..library.plan import ROW_ALIGN_BYTES

    if any((2 * halves) % ROW_ALIGN_BYTES for halves in (K, N)):
        return "rows off 128 B"
    if K >= SKEW * max(M, N):
        return "K-heavy"
    if SKEW * K <= min(M, N):
        return "K-light"
    if M <= SMALL_M:
        return "small M"
    if M == N == K <= SMALL_CUBE:
        return "small cubes"
    return "larger M"


def sweep_shapes() -> list[tuple[int, int, int]]:
    """The shapes of :data:`SHAPES_FILE`, read by the command line's shape-file reader
    (:func:`hgemm_course.course.shapes.parse_shapes`); none in an installed package without the repository."""
    from ..library.paths import REPO_ROOT
    from ..measurement.shapes import parse_shapes

    path = None if REPO_ROOT is None else REPO_ROOT / SHAPES_FILE
    return parse_shapes(str(path)) if path is not None and path.is_file() else []


# ---------------------------------------------------------------- counts

def arithmetic_intensity(M: int, N: int, K: int) -> float:
    """FLOPs per byte of an fp16 GEMM: 2MNK over 2(MK + KN + MN), A and B read once and C written once."""
    return gemm_floor(M, N, K, peak_tflops=1.0, bandwidth_gbs=1.0)["intensity"]


def memory_roof_us(M: int, N: int, K: int, bandwidth_gbs: float) -> float:
    """The shortest time, in microseconds, that moving A and B in and C out once takes at ``bandwidth_gbs``
    (10^9 bytes per second)."""
    return gemm_floor(M, N, K, peak_tflops=1.0, bandwidth_gbs=bandwidth_gbs)["memory_ms"] * 1e3


def split_pieces(M: int, N: int, bm: int, bn: int, sms: int) -> int:
    """Pieces per tile when every (bm, bn) tile of C is cut by K so that the tiles' pieces fill the ``sms`` SMs:
    ceil(sms / tiles), one (the tile whole) where the tiles alone fill them."""
    tiles = -(-M // bm) * -(-N // bn)
    return -(-sms // tiles)


def split_count(M: int, N: int, K: int, *, bm: int = 64, bn: int = 64, sms: int = SMS) -> dict:
    """The worked count of cutting every (bm, bn) tile by K at M x N x K on ``sms`` SMs.

    Returns ``{'tiles', 'waves', 'busy_whole'`` (the busy fraction of whole tiles, one per SM at a time),
    ``'k_iters'`` (K-iterations of 64 per tile), ``'pieces'`` (:func:`split_pieces`), ``'piece_iters'``
    (K-iterations of the longest piece), ``'streamk_ctas'`` ((fewest, most) CTAs that compute part of one tile
    when the tiles' iterations are dealt out evenly over the SMs, as rung 12 deals the last wave,
    :func:`hgemm_course.sim.streamk_ranges`), ``'whole_us'`` (the plan's model of rung 11 on these tiles,
    :func:`hgemm_course.library.plan.row64_time_ns`) and ``'split_us'`` (its model of rung 12 cutting them,
    :func:`hgemm_course.library.plan.split_time_ns`; None where a tile falls into fewer pieces than the model weighs)}``.
    """
    from ..library.plan import ROW64_ITER_NS, row64_time_ns, split_time_ns
    from ..sim import streamk_ranges

    tiles = -(-M // bm) * -(-N // bn)
    waves = -(-tiles // sms)
    k_iters = -(-K // K_STEP)
    pieces = split_pieces(M, N, bm, bn, sms)
    ranges = streamk_ranges(tiles, k_iters, sms)
    per_tile = [sum(1 for b, e in ranges if b < (t + 1) * k_iters and e > t * k_iters) for t in range(tiles)]
    known = (bm, bn) in ROW64_ITER_NS
    split_ns = split_time_ns(M, N, K, sms, bm, bn) if known else None
    return {"M": M, "N": N, "K": K, "bm": bm, "bn": bn, "sms": sms, "tiles": tiles, "waves": waves,
            "busy_whole": tiles / (sms * waves), "k_iters": k_iters, "pieces": pieces,
            "piece_iters": -(-k_iters // pieces), "streamk_ctas": (min(per_tile), max(per_tile)),
            "whole_us": row64_time_ns(M, N, K, sms, bm, bn) / 1e3 if known else None,
            "split_us": None if split_ns is None else split_ns / 1e3}


def format_split_count(c: dict) -> str:
    """:func:`split_count`'s dict as the chapter's worked count."""
    M, N, K, bm, bn, sms = c["M"], c["N"], c["K"], c["bm"], c["bn"], c["sms"]
    lines = [f"{M}x{N}x{K} on {bm}x{bn} tiles: {c['tiles']} tiles on {sms} SMs, {c['waves']} wave(s); whole tiles "
             f"keep {c['busy_whole']:.0%} of the SMs busy, each tile {c['k_iters']} K-iterations of {K_STEP}",
             f"split-K: ceil({sms} / {c['tiles']}) = {c['pieces']} pieces per tile, the longest {c['piece_iters']} "
             f"K-iterations; {c['tiles'] * c['pieces']} pieces on {sms} SMs",
             f"stream-K's even deal of all {c['tiles'] * c['k_iters']} iterations over {sms} CTAs: each tile computed "
             f"by {c['streamk_ctas'][0]} to {c['streamk_ctas'][1]} CTAs"]
    if c["whole_us"] is not None:
        split = ("not weighed: fewer pieces than the model takes" if c["split_us"] is None
                 else f"{c['split_us']:.1f} us")
        lines.append(f"the plan's model: whole tiles {c['whole_us']:.1f} us, cut by K {split}")
    return "\n".join(lines)


# ---------------------------------------------------------------- tables of recorded runs

def _pct(record: dict) -> float:
    """% of the paired vendor baseline: the median over pairs where the record has it, else the ratio of medians."""
    pairwise = record.get("pct_cublas_pairwise")
    return pairwise if pairwise is not None else record["pct_cublas"]


def _shape(record: dict) -> str:
    return f"{record['M']}x{record['N']}x{record['K']}"


def roof_rows(records: list[dict], ceilings: dict) -> list[dict]:
    """Per record (gemm()'s, with its paired vendor's time): the intensity against the ridge of ``ceilings``
    (compute roof as :func:`hgemm_course.measurement.roofline.compute_roof` picks it, over the copy bandwidth), the memory roof
    (bytes at the copy bandwidth) and compute roof in microseconds, and the share of the memory roof gemm() and the
    vendor reached (memory-roof time over their time). ``in_l2``: the operands of all the input sets the timing
    rotated through fit in the L2 together (records with ``input_sets`` and ``l2_bytes``), so DRAM need not be
    read at all and the roof is no floor there."""
    from ..measurement.roofline import compute_roof

    roof = compute_roof(ceilings)
    rows = []
    for r in records:
        M, N, K = r["M"], r["N"], r["K"]
        floor = gemm_floor(M, N, K, peak_tflops=roof["tflops"], bandwidth_gbs=ceilings["bandwidth_gbs"])
        gemm_us, vendor_us = r["ms"] * 1e3, r["cublas_ms"] * 1e3
        memory_us = floor["memory_ms"] * 1e3
        sets, l2 = r.get("input_sets"), r.get("l2_bytes")
        in_l2 = None if sets is None or l2 is None else sets * 2 * (M * K + K * N) <= l2
        rows.append({"shape": (M, N, K), "kind": shape_kind(M, N, K), "intensity": floor["intensity"],
                     "ridge": floor["ridge"], "below_ridge": floor["intensity"] < floor["ridge"],
                     "memory_us": memory_us, "compute_us": floor["compute_ms"] * 1e3, "gemm_us": gemm_us,
                     "vendor_us": vendor_us, "vendor": r.get("vendor"), "pct_roof_gemm": 100 * memory_us / gemm_us,
                     "pct_roof_vendor": 100 * memory_us / vendor_us, "in_l2": in_l2})
    return rows


def format_roof(rows: list[dict]) -> str:
    head = (f"{'M x N x K':>18} {'flop/B':>7} {'roof us':>8} {'gemm() us':>10} {'% roof':>7} {'vendor us':>10} "
            f"{'% roof':>7}  operands")
    lines = [head]
    for r in rows:
        where = "fit in L2" if r["in_l2"] else "from DRAM" if r["in_l2"] is not None else "?"
        lines.append(f"{'x'.join(map(str, r['shape'])):>18} {r['intensity']:7.1f} {r['memory_us']:8.2f} "
                     f"{r['gemm_us']:10.1f} {r['pct_roof_gemm']:6.1f}% {r['vendor_us']:10.1f} "
                     f"{r['pct_roof_vendor']:6.1f}%  {where}")
    return "\n".join(lines)


def host_rows(records: list[dict]) -> list[dict]:
    """Per record, shortest kernel first: gemm()'s kernel time and host time per call (``host_us``, of
    ``gemm(a, b, out=c)``), the paired vendor's, and, for calls made one after another without a queue, which of
    the two sets the pace (the longer) and the time per call that pace gives each side."""
    rows = []
    for r in records:
        if r.get("host_us") is None:
            continue
        kernel, vendor = r["ms"] * 1e3, r["cublas_ms"] * 1e3
        rows.append({"shape": (r["M"], r["N"], r["K"]), "kernel_us": kernel, "host_us": r["host_us"],
                     "vendor_us": vendor, "vendor_host_us": r["vendor_host_us"], "vendor": r.get("vendor"),
                     "host_bound": r["host_us"] > kernel, "paced_us": max(kernel, r["host_us"]),
                     "vendor_paced_us": max(vendor, r["vendor_host_us"] or 0.0)})
    return sorted(rows, key=lambda row: row["kernel_us"])


def format_host(rows: list[dict]) -> str:
    lines = [f"{'M x N x K':>18} {'kernel us':>10} {'host us':>8} {'paced by':>9} {'vendor us':>10} "
             f"{'host us':>8} {'unqueued: gemm() / vendor us per call':>38}"]
    for r in rows:
        lines.append(f"{'x'.join(map(str, r['shape'])):>18} {r['kernel_us']:10.1f} {r['host_us']:8.1f} "
                     f"{'host' if r['host_bound'] else 'kernel':>9} {r['vendor_us']:10.1f} "
                     f"{r['vendor_host_us']:8.1f} {r['paced_us']:25.1f} / {r['vendor_paced_us']:.1f}")
    return "\n".join(lines)


def host_summary(rows: list[dict], short_us: float = HOST_BOUND_US) -> dict:
    """Over :func:`host_rows`: the kernels shorter than ``short_us``, how many of them the host paces, the median
    host time per call of gemm(out=) and of the vendor there, and at how many of them gemm() called one call after
    another without a queue takes less time per call than the vendor."""
    short = [r for r in rows if r["kernel_us"] < short_us]
    return {"short_us": short_us, "short": len(short), "host_bound": sum(r["host_bound"] for r in short),
            "host_us": statistics.median(r["host_us"] for r in short) if short else None,
            "vendor_host_us": statistics.median(r["vendor_host_us"] for r in short) if short else None,
            "paced_ahead": sum(r["paced_us"] < r["vendor_paced_us"] for r in short)}


def recorded_probe(path: Path | str | None = None) -> tuple[Path, dict]:
    """(path, data) of the vendor probe (research/vendor_probe.py), default :data:`VENDOR_PROBE`; a relative path
    is under results/."""
    from ..library.paths import results_dir

    path = results_dir() / (VENDOR_PROBE if path is None else Path(path))
    return path, json.loads(path.read_text())


PROBE_VENDORS = ("cupy", "torch")


def probe_rows(probe: dict, sweep: dict | None = None) -> list[dict]:
    """Per shape of the vendor probe that timed candidates: each variant's % of the faster vendor as the probe
    computed it (median over rounds of the faster vendor's time over the variant's), the fastest candidate, and
    the probe's 'plan' column (gemm() as it ran when the probe was made, an older plan). ``sweep``
    (:func:`hgemm_course.viz.vendor_sweep.vendor_sweep_data`) adds gemm()'s % in that run where it has the shape."""
    in_sweep = {} if sweep is None else dict(zip(sweep["shapes"], sweep["pct"]))
    rows = []
    for row in probe["rows"]:
        pct = row["pct_best_vendor"]
        candidates = {name: p for name, p in pct.items() if name not in (*PROBE_VENDORS, "plan")}
        if not candidates:
            continue
        shape = (row["M"], row["N"], row["K"])
        fastest_vendor = min(PROBE_VENDORS, key=lambda v: statistics.median(row["ms"][v]) if v in row["ms"] else math.inf)
        best = max(candidates, key=candidates.get)
        rows.append({"shape": shape, "vendor": fastest_vendor, "vendor_us": statistics.median(row["vendor_ms"]) * 1e3,
                     "candidates": candidates, "best": best, "best_pct": candidates[best],
                     "older_plan_pct": pct.get("plan"), "sweep_pct": in_sweep.get(shape)})
    return rows


def format_probe(rows: list[dict]) -> str:
    names = list(dict.fromkeys(name for r in rows for name in r["candidates"]))
    lines = [f"{'M x N x K':>18} {'older plan':>10} " + " ".join(f"{n:>15}" for n in names)
             + f" {'sweep gemm()':>12}"]
    for r in rows:
        cells = [f"{r['candidates'][n]:14.0f}{'*' if n == r['best'] else ' '}" if n in r["candidates"] else f"{'-':>15}"
                 for n in names]
        sweep = f"{r['sweep_pct']:11.0f}%" if r["sweep_pct"] is not None else f"{'-':>12}"
        lines.append(f"{'x'.join(map(str, r['shape'])):>18} {r['older_plan_pct']:9.0f}% " + " ".join(cells) + f" {sweep}")
    lines.append("% of the faster of cupy.matmul and torch.matmul in the probe's rounds; * the fastest candidate")
    return "\n".join(lines)


def family_rows(probe: dict) -> list[dict]:
    """Per shape of a vendor probe: the fastest launch of each of :data:`FAMILIES` (name and % of the faster
    vendor), so the owners' fix-up and split apart stand side by side with the smaller whole tiles."""
    rows = []
    for r in probe_rows(probe):
        best = {}
        for family, mark in FAMILIES:
            timed = {n: p for n, p in r["candidates"].items() if (n.startswith(mark) if mark == "r11 " else n.endswith(mark))}
            if timed:
                name = max(timed, key=timed.get)
                best[family] = (name, timed[name])
        rows.append({"shape": r["shape"], "vendor_us": r["vendor_us"], "best": best})
    return rows


def format_families(rows: list[dict]) -> str:
    lines = [f"{'M x N x K':>16} {'vendor us':>9}  " + "  ".join(f"{f:>34}" for f, _ in FAMILIES)]
    for r in rows:
        cells = [f"{r['best'][f][0]:>26} {r['best'][f][1]:5.0f}%" if f in r["best"] else f"{'-':>33}"
                 for f, _ in FAMILIES]
        lines.append(f"{'x'.join(map(str, r['shape'])):>16} {r['vendor_us']:9.1f}  " + "  ".join(f"{c:>34}" for c in cells))
    lines.append("each family's fastest launch, % of the faster of cupy.matmul and torch.matmul in the probe's rounds")
    return "\n".join(lines)


def wide_rows(probe: dict, tiles=((128, 256), (128, 192))) -> list[dict]:
    """Per shape of the wide-tile probe: each of ``tiles``' count of tiles of C and % of the faster vendor (rung 11,
    one wave, no clusters), the fastest launch timed there, and the tiles the plan in this code takes."""
    from ..library.plan import plan

    rows = []
    for r in probe_rows(probe):
        M, N, K = r["shape"]
        chosen = plan(M, N, K).options_text().get("tiles", "128x256")
        rows.append({"shape": r["shape"], "vendor_us": r["vendor_us"], "best": r["best"], "plan_tiles": chosen,
                     "tiles": {t: (-(-M // t[0]) * -(-N // t[1]), r["candidates"][f"r11 {t[0]}x{t[1]}"]) for t in tiles}})
    return rows


def format_wide(rows: list[dict]) -> str:
    names = [f"{bm}x{bn}" for bm, bn in rows[0]["tiles"]]
    lines = [f"{'M x N x K':>16} {'vendor us':>9}  " + "  ".join(f"{n + ' tiles, %':>17}" for n in names)
             + f"  {'fastest launch':>16}  plan takes"]
    for r in rows:
        cells = [f"{count:>9} {pct:6.0f}%" for count, pct in r["tiles"].values()]
        lines.append(f"{'x'.join(map(str, r['shape'])):>16} {r['vendor_us']:9.1f}  " + "  ".join(f"{c:>17}" for c in cells)
                     + f"  {r['best']:>16}  {r['plan_tiles']}")
    lines.append("% of the faster of cupy.matmul and torch.matmul, median over the probe's rounds; the tiles of C each "
                 f"makes on {SMS} SMs")
    return "\n".join(lines)
