"""Chapter 13: the products users bring that are small or skinny, as counts and as the H200 recorded them.

Three kinds of function, as the chapter uses them:

- counts, pure and fast: what kind a shape is (:func:`shape_kind`), its arithmetic intensity and memory-roof time
  (:func:`arithmetic_intensity`, :func:`memory_roof_us`, from :func:`hgemm_course.measurement.roofline.gemm_floor`), and what
  cutting every tile by K does at a shape (:func:`split_pieces`, :func:`split_count`);
- tables of recorded runs, each from records passed in and returning one dict per shape: the memory roof
  (:func:`roof_rows`), the host's time per call (:func:`host_rows`), the candidates of the vendor probe
  (:func:`probe_rows`) and the shapes where gemm() trails (:func:`trailing_rows`), each with a ``format_*`` twin
  that lays it out;
- readers: the newest recorded ``bench plan`` run over :data:`SHAPES_FILE` is found by
  :func:`hgemm_course.viz.vendor_sweep.vendor_sweep_data`; the vendor probe by :func:`recorded_probe`;
  :func:`time_or_show` times gemm() on a GPU that runs it, and shows the recorded rows elsewhere.
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
TRAILING_PCT = 90.0             # the shapes printed as "still slow": gemm() under this % of the faster vendor
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


# Profiled beside cuBLASLt besides the sweep's trailing shapes: a K-heavy shape where gemm() caught up, shapes
# timed after the sweep's (BENCH_EXTRA in scripts/h200_small_skinny.sh) where it trails, the other shapes below
# the roofline's ridge where gemm() reached under 80% of the DRAM roof, and the big squares 4096^3 and 8192^3
PROFILED = ((256, 256, 65536), (1024, 1024, 32768), (96, 5000, 3000), (1536, 1536, 1536), (16, 4096, 4096),
            (1536, 768, 3072), (100, 1000, 9992), (200, 136, 20000), (384, 768, 24576), (512, 768, 2048),
            (1152, 1920, 2304), (128, 4096, 4096), (32, 4096, 14336), (4096, 4096, 128), (4096, 4096, 4096),
            (8192, 8192, 8192))


def kernel_tile(kernel: str) -> tuple[int, int] | None:
    """The (rows, columns) of C per CTA that a profiled kernel's name gives: the course's template's first two
    arguments (k11_persistent<128, 256, ...>), or cuBLASLt's nvjet name (nvjet_sm90_hsh_192x96_...) read the other
    way round: cuBLASLt is column-major, so torch's row-major C = A @ B reaches it as C^T = B^T A^T, and its tile's
    first number runs along C's columns (at 96 x 5000 x 3000, "64x96" launched 80 CTAs: 79 tiles of 96 rows by 64
    columns, rounded up to its clusters of four); None else."""
    import re

    ours = re.search(r"k1[12]_(?:persistent|streamk)<(\d+), (\d+),", kernel)
    if ours:
        return int(ours[1]), int(ours[2])
    theirs = re.search(r"nvjet_\w+?_(\d+)x(\d+)_", kernel)
    return (int(theirs[2]), int(theirs[1])) if theirs else None


def profiled_shapes(sweep: dict, threshold: float = TRAILING_PCT) -> list[tuple[int, int, int]]:
    """The shapes whose profiles the course sets side by side: every shape of ``sweep``
    (:func:`hgemm_course.viz.vendor_sweep.vendor_sweep_data`) where gemm() read under ``threshold`` % of the faster
    vendor, lowest first, then those of PROFILED not among them."""
    trailing = sorted((p, tuple(s)) for s, p in zip(sweep["shapes"], sweep["pct"]) if p < threshold)
    shapes = [s for _, s in trailing]
    return shapes + [s for s in PROFILED if s not in shapes]


def _share(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else 100 * part / whole


def profile_pairs(shapes=PROFILED) -> list[dict]:
    """At each shape, the newest recorded profile of gemm()'s launch (``plan``) and of cuBLASLt's kernel: each one's
    kernel, tile (:func:`kernel_tile`) and tiles of C it makes, SM cycles and clock, the share of the average SM's
    cycles it had work (``sm_busy_pct``), tensor-pipe activity, L2 read requests and sectors per request, DRAM read
    and its share of DRAM's peak, the top stall and the record's file. Profiles recorded before the SM and L2
    counters were measured give None there. Shapes missing either profile are left out."""
    from ..measurement.profile import recorded_profile, top_stalls

    rows = []
    for M, N, K in shapes:
        pair = {t: recorded_profile(t, M, N, K) for t in ("plan", "cublaslt")}
        if None in pair.values():
            continue
        row = {"shape": (M, N, K)}
        for t, r in pair.items():
            tile = kernel_tile(r["kernel"])
            requests, sectors = r.get("l2_read_requests"), r.get("l2_read_sectors")
            row[t] = {"kernel": r["kernel"].removeprefix("void ").split("(")[0], "file": r["file"], "tile": tile,
                      "tiles": None if tile is None else -(-M // tile[0]) * -(-N // tile[1]), "cycles": r["cycles"],
                      "mhz": r["sm_clock_mhz"], "tensor": r["tensor_pipe_active_pct"],
                      "sm_busy_pct": _share(r.get("sm_active_cycles"), r.get("sm_elapsed_cycles")),
                      "l2_requests": requests,
                      "sectors_per_request": sectors / requests if requests and sectors is not None else None,
                      "dram_mb": r["dram_read_bytes"] / 1e6, "dram_peak_pct": r.get("dram_peak_pct"),
                      "stall": top_stalls(r["stalls"], n=1)[0]}
        rows.append(row)
    return rows


def pair_ratios(row: dict) -> dict:
    """gemm()'s launch over cuBLASLt's kernel in one row of :func:`profile_pairs`: SM cycles, L2 read requests and
    DRAM read, and the cycles split into two factors whose product they are: ``idle_sms``, cuBLASLt's share of SMs
    at work over gemm()'s (above 1 where gemm() leaves more SMs idle), and ``busy_cycles``, the busy SM cycles
    (cycles x that share: the work the SMs did, idle ones left out) over cuBLASLt's. ``larger`` names the factor
    further from 1. None where a profile lacks the counter."""
    ours, theirs = row["plan"], row["cublaslt"]

    def ratio(a, b):
        return None if a is None or not b else a / b

    def busy(p):
        return None if p["sm_busy_pct"] is None else p["cycles"] * p["sm_busy_pct"] / 100
    x = {"cycles": ratio(ours["cycles"], theirs["cycles"]), "busy_cycles": ratio(busy(ours), busy(theirs)),
         "idle_sms": ratio(theirs["sm_busy_pct"], ours["sm_busy_pct"]),
         "l2_requests": ratio(ours["l2_requests"], theirs["l2_requests"]),
         "dram_read": ratio(ours["dram_mb"], theirs["dram_mb"])}
    split = x["idle_sms"] is not None and x["busy_cycles"] is not None
    x["larger"] = (None if not split else
                   "idle_sms" if abs(math.log(x["idle_sms"])) > abs(math.log(x["busy_cycles"])) else "busy_cycles")
    return x


LEVEL = 1.02       # a launch within 2% of cuBLASLt's kernel's cycles has no gap worth splitting
LARGER = {"idle_sms": "more of the gap is SMs left idle", "busy_cycles": "more of the gap is work on the busy SMs"}


def _cell(value: float | None, spec: str, width: int) -> str:
    return format("-", f">{width}") if value is None else format(value, f"{width}{spec}")


def format_profile_pairs(rows: list[dict]) -> str:
    lines = [f"{'M x N x K':>16} {'':9} {'tile':>8} {'tiles':>5} {'kcycles':>8} {'MHz':>5} {'SMs %':>6} "
             f"{'tensor %':>8} {'L2 Mreq':>7} {'sect/req':>8} {'DRAM MB':>7} {'% peak':>6}  top stall (share %)"]
    split = []                                        # (the factor that is the larger, or "level"; the shape)
    for r in rows:
        for t, label in (("plan", "gemm()"), ("cublaslt", "cuBLASLt")):
            p = r[t]
            tile = "x".join(map(str, p["tile"])) if p["tile"] else "?"
            requests = None if p["l2_requests"] is None else p["l2_requests"] / 1e6
            lines.append(f"{'x'.join(map(str, r['shape'])) if t == 'plan' else '':>16} {label:9} {tile:>8} "
                         f"{p['tiles'] or '?':>5} {p['cycles'] / 1e3:8.1f} {p['mhz']:5.0f} "
                         f"{_cell(p['sm_busy_pct'], '.0f', 6)} {p['tensor']:8.1f} {_cell(requests, '.2f', 7)} "
                         f"{_cell(p['sectors_per_request'], '.2f', 8)} {p['dram_mb']:7.0f} "
                         f"{_cell(p['dram_peak_pct'], '.0f', 6)}  "
                         f"{p['stall']['reason']} {p['stall']['share_pct']:.0f}")
        lines.append(f"{'':>16} kernels: {r['plan']['kernel']} against {r['cublaslt']['kernel']}")
        x = pair_ratios(r)
        took = f"{'':>16} gemm()'s launch took {x['cycles']:.2f}x cuBLASLt's kernel's SM cycles"
        if x["larger"] is None:
            lines.append(took + f" (one profile each); {x['dram_read']:.2f}x its DRAM read")
            continue
        split.append((x["larger"] if x["cycles"] > LEVEL else "level", "x".join(map(str, r["shape"]))))
        verdict = LARGER[x["larger"]] if x["cycles"] > LEVEL else f"within {LEVEL - 1:.0%} of its cycles, or fewer"
        lines += [took + f" = {x['idle_sms']:.2f}x (SMs at work) x {x['busy_cycles']:.2f}x (busy SMs' cycles): "
                  f"{verdict}",
                  f"{'':>16} and {x['l2_requests']:.2f}x its L2 read requests, {x['dram_read']:.2f}x its DRAM read"]
    for factor, text in {**LARGER, "level": f"within {LEVEL - 1:.0%} of cuBLASLt's cycles, or fewer"}.items():
        shapes = [shape for larger, shape in split if larger == factor]
        if shapes:
            lines.append(f"{text[0].upper()}{text[1:]} at {len(shapes)} of {len(rows)} shapes: {', '.join(shapes)}")
    lines += ["SMs %: of the launch's cycles, the share the average SM had a warp in flight; (SMs at work): "
              "cuBLASLt's SMs % over gemm()'s;",
              "(busy SMs' cycles): cycles x SMs %, gemm()'s over cuBLASLt's; tensor %: of the active cycles;",
              "L2 Mreq: millions of read requests the SMs made of the L2 (TMA's too), sect/req: 32-byte sectors each "
              "carried (4 on rows",
              "aligned to 128 bytes); % peak: DRAM's throughput over the launch. cuBLASLt's splitK kernels leave out "
              "their reduction kernel.",
              "ncu flushes the caches before each replay pass, so the L2 starts cold"]
    return "\n".join(lines)


def trailing_rows(sweep: dict, threshold: float = TRAILING_PCT) -> list[dict]:
    """The shapes of the sweep (:func:`hgemm_course.viz.vendor_sweep.vendor_sweep_data`) where gemm() read under
    ``threshold`` % of the faster vendor, lowest first: gemm()'s and the vendor's time, cycles and clock, what the
    plan in this code runs there and why (:func:`hgemm_course.library.plan.plan` on the H200's 66 clusters), and whether a
    profile of gemm()'s launch and of cuBLASLt's kernel there is recorded (``hgemm-course profile plan|cublaslt``)."""
    from ..library.plan import plan
    from ..measurement.profile import recorded_profile
    from ..sim.waves import UNITS

    rows = []
    for i, (M, N, K) in enumerate(sweep["shapes"]):
        if sweep["pct"][i] >= threshold:
            continue
        chosen = plan(M, N, K, units=UNITS)
        rows.append({"shape": (M, N, K), "kind": sweep["kinds"][i], "pct": sweep["pct"][i],
                     "gemm_us": sweep["ms"][i] * 1e3, "vendor_us": sweep["vendor_ms"][i] * 1e3,
                     "vendor": sweep["vendor"][i], "cycles": sweep["cycles"][i], "clock_ghz": sweep["clock_ghz"][i],
                     "launch": f"rung {chosen.rung} {chosen.options_text()}", "reason": chosen.reason,
                     "profiled": {target: recorded_profile(target, M, N, K) is not None for target in ("plan", "cublaslt")}})
    return sorted(rows, key=lambda row: row["pct"])


def format_trailing(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        cycles = f"{r['cycles'] / 1e3:,.1f} kcycles at {r['clock_ghz']:.2f} GHz" if r["cycles"] else "no cycles"
        profiled = [t for t, done in r["profiled"].items() if done]
        lines += [f"{'x'.join(map(str, r['shape']))} ({r['kind']}): {r['pct']:.1f}% of {r['vendor']}, "
                  f"{r['gemm_us']:.1f} us ({cycles}) against {r['vendor_us']:.1f} us",
                  f"    the plan runs {r['launch']}",
                  f"    because {r['reason']}",
                  "    recorded profiles: " + (", ".join(profiled) if profiled else "none of gemm()'s launch or "
                                               "cuBLASLt's kernel at this shape")]
    return "\n".join(lines)


# ---------------------------------------------------------------- run here, or show the recorded rows

def time_or_show(shapes, sweep: dict) -> list[dict]:
    """On a GPU that runs gemm()'s plan (wgmma): verify and time ``gemm(a, b, out=c)`` at ``shapes`` against the
    faster vendor library in this process (``hgemm-course bench plan``'s way: :func:`hgemm_course.measurement.commands.checked_rungs`
    and :func:`hgemm_course.measurement.bench.bench`), written (:func:`hgemm_course.course.chapter.measurement_folder`) and printed
    under the GPU, date and file. Elsewhere, the one line that says why
    (on a GPU) and the recorded H200 rows of those shapes from ``sweep``
    (:func:`hgemm_course.viz.vendor_sweep.vendor_sweep_data`). Returns the rows printed."""
    from ..library import target
    from ..measurement.bench import format_table
    from ..measurement.verification import refusal_here
    from ..library.plan import planned_rung

    shapes = [tuple(s) for s in shapes]
    here = target.runnable()
    why = None if here is None else refusal_here(planned_rung())
    if here is not None and why is None:
        from .chapter import measured_label, measurement_folder
        from ..measurement.bench import bench
        from ..measurement.commands import checked_rungs
        from ..measurement.records import write_run

        folder = measurement_folder()
        records = [r.as_dict() for r in bench(checked_rungs(["plan"], shapes), shapes, progress=False)]
        print(f"{measured_label(here, write_run(records, folder=folder))}:")
        print(format_table(records))
        return records
    if why is not None:
        print(why)
    rows = [sweep["records"][sweep["shapes"].index(s)] for s in shapes if s in sweep["shapes"]]
    print(f"RECORDED on the {sweep['gpu']} ({sweep['file']}, `hgemm-course bench plan`):")
    print(format_table(rows))
    return rows
