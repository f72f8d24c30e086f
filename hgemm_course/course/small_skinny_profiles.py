"""Chapter 13's shapes where gemm() trails the faster vendor, and gemm()'s launch beside cuBLASLt's kernel in their
recorded profiles (``hgemm-course profile plan|cublaslt``).

- the shapes profiled (:data:`PROFILED`, :func:`profiled_shapes`) and the tile of C a profiled kernel's name gives
  (:func:`kernel_tile`);
- gemm()'s and cuBLASLt's profiles side by side at each shape (:func:`profile_pairs`), the ratios of the two split
  into SMs left idle and work on the busy SMs (:func:`pair_ratios`), laid out by :func:`format_profile_pairs`;
- the shapes of a sweep where gemm() reads under :data:`TRAILING_PCT` % of the faster vendor, with what the plan
  runs there and why (:func:`trailing_rows`, :func:`format_trailing`).
"""
from __future__ import annotations

import math

TRAILING_PCT = 90.0             # the shapes printed as "still slow": gemm() under this % of the faster vendor

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
