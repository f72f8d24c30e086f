"""Read Nsight Compute's ``--csv --page details`` output: what one profiled kernel did, in numbers.

The recorded profiles under results/ncu/ were written on the H200 by scripts/h200_rung11.sh (ncu with
``--clock-control none``, so the SM clock is whatever the card ran at). Wall-clock durations of two
kernels profiled at different clocks do not compare; SM cycles (duration x SM frequency) do.

Two layouts of ncu's ``--csv`` output are read here, and only here: ``--page details`` (one row per
metric, :func:`read_details`) and ``--page raw`` (a header row of metric names, a row of units, one row
per profiled kernel, :func:`parse_raw`). Values come back in base units: bytes, nanoseconds for
durations, per second for rates, whatever scaling ncu printed them with.
"""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
from pathlib import Path

# metric name in the CSV -> key of kernel_summary()
_METRICS = {
    "Duration": "duration_ns",
    "SM Frequency": "sm_hz",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor_active_pct",
    "sm__inst_executed_pipe_tensor_op_gmma.sum": "wgmma_instructions",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "Compute (SM) Throughput": "sm_throughput_pct",
    "Warp Cycles Per Issued Instruction": "warp_cycles_per_issue",
    "Grid Size": "grid",
    "Block Size": "block",
    "Cluster Size": "cluster",
    "Registers Per Thread": "registers",
    "Dynamic Shared Memory Per Block": "smem_dynamic",
}
_NANOSECONDS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9,
                "second": 1e9}
_HERTZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
_PREFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_COUNTED = ("byte", "sector", "inst", "cycle", "request", "warp")    # what ncu puts K, M, G, T in front of
_KERNEL_BASE = re.compile(r"(?:void\s+)?([A-Za-z_]\w*)")


def read_details(path: str | Path) -> tuple[str, dict[str, tuple[str, str]]]:
    """(kernel name, {metric name: (value text, unit)}) of the one kernel profiled in ``path``."""
    lines = [line for line in Path(path).read_text().splitlines() if line.startswith('"')]
    rows = list(csv.DictReader(lines))
    if not rows:
        raise ValueError(f"{path}: no profiled kernel in this ncu CSV (ncu printed only its log; was the -k "
                         "filter right?).")
    kernels = {r["Kernel Name"] for r in rows}
    if len(kernels) != 1:
        raise ValueError(f"{path}: {len(kernels)} kernels profiled; expected one (use --launch-count 1).")
    return rows[0]["Kernel Name"], {r["Metric Name"]: (r["Metric Value"], r["Metric Unit"]) for r in rows}


def parse_number(text: str) -> float | None:
    """ncu's text of a number (``"16,825,856"``, ``"80.15"``) as a float; None for ``n/a``, blanks and words."""
    try:
        return float(text.strip().replace(",", ""))
    except ValueError:
        return None


def _count_scale(unit: str) -> float:
    """1e6 for ``mbyte`` (ncu's prefixes on counted units are decimal), 1 for an unprefixed unit."""
    if len(unit) > 1 and unit[0] in _PREFIX and unit[1:] in _COUNTED:
        return _PREFIX[unit[0]]
    return 1.0


def to_base_unit(value: float | None, unit: str) -> float | None:
    """Undo ncu's automatic scaling: counts to units (``Mbyte`` -> bytes), durations to nanoseconds,
    frequencies to Hz and rates to per second (``cycle/nsecond`` -> cycles per second)."""
    if value is None:
        return None
    unit = unit.strip().lower()
    if unit in _NANOSECONDS:
        return value * _NANOSECONDS[unit]
    if unit in _HERTZ:
        return value * _HERTZ[unit]
    counted, _, per = unit.partition("/")
    if per in _NANOSECONDS:
        return value * _count_scale(counted) * 1e9 / _NANOSECONDS[per]
    return value * _count_scale(counted)


def kernel_summary(path: str | Path) -> dict:
    """The figures that explain a GEMM kernel's speed, with ``cycles`` = duration x SM frequency
    (durations in ns, frequencies in Hz, whatever units ncu printed them in)."""
    kernel, metrics = read_details(path)
    out: dict = {"kernel": kernel, "file": Path(path).name}
    for name, key in _METRICS.items():
        value = to_base_unit(parse_number(metrics[name][0]), metrics[name][1]) if name in metrics else None
        if value is not None:
            out[key] = value
    if "duration_ns" in out and "sm_hz" in out:
        out["cycles"] = out["duration_ns"] * 1e-9 * out["sm_hz"]
    return out


def format_summaries(summaries: dict[str, dict]) -> str:
    """A table, one column per labelled kernel: cycles, clock, tensor pipe, L2, DRAM, launch shape."""
    rows = (("SM cycles (duration x clock)", "cycles", lambda s: f"{s['cycles']:,.0f}"),
            ("duration (us)", "duration_ns", lambda s: f"{s['duration_ns'] / 1e3:,.1f}"),
            ("SM clock (MHz)", "sm_hz", lambda s: f"{s['sm_hz'] / 1e6:,.0f}"),
            ("tensor pipe active (% of active cycles)", "tensor_active_pct", lambda s: f"{s['tensor_active_pct']:.1f}"),
            ("wgmma instructions", "wgmma_instructions", lambda s: f"{s['wgmma_instructions']:,.0f}"),
            ("L2 hit rate (%)", "l2_hit_pct", lambda s: f"{s['l2_hit_pct']:.1f}"),
            ("DRAM read (MB)", "dram_read_bytes", lambda s: f"{s['dram_read_bytes'] / 1e6:,.0f}"),
            ("DRAM throughput (% of peak)", "dram_pct", lambda s: f"{s['dram_pct']:.1f}"),
            ("grid x block, cluster", "grid",
             lambda s: f"{s['grid']:.0f} x {s.get('block', 0):.0f}, {s.get('cluster', 1):.0f}"),
            ("registers / thread", "registers", lambda s: f"{s['registers']:.0f}"),
            ("dynamic shared memory (KiB)", "smem_dynamic", lambda s: f"{s['smem_dynamic'] / 1024:,.1f}"))
    labels = list(summaries)
    width = max(14, *(len(label) for label in labels)) + 2
    lines = [f"{'':<40}" + "".join(f"{label:>{width}}" for label in labels)]
    for title, key, cell in rows:
        cells = [cell(summaries[label]) if key in summaries[label] else "-" for label in labels]
        lines.append(f"{title:<40}" + "".join(f"{c:>{width}}" for c in cells))
    return "\n".join(lines)


def parse_raw(text: str) -> list[dict]:
    """Rows of ``ncu --csv --page raw``: a header row (fixed columns such as "ID" and "Kernel Name", then metric
    names), a row of units, then one row per profiled kernel; ncu's own ``==PROF==`` lines and anything else
    that is not CSV are skipped. Returns ``{"id", "kernel" (base name), "name" (as ncu printed it), "metrics"}``
    per kernel, metric values in base units (:func:`to_base_unit`), None for ``n/a`` and for words."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        said = " ".join(line for line in text.splitlines() if line.startswith("==ERROR=="))
        raise ValueError("no ncu raw CSV header (a row starting with \"ID\") in this output; was ncu run with "
                         "--csv --page raw, and did it profile a kernel?" + (f" ncu said: {said}" if said else ""))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, units, data = rows[0], rows[1] if len(rows) > 1 else [], rows[2:]
    if units and units[0] != "":          # no units row (older ncu): every row is data
        data, units = rows[1:], [""] * len(header)
    out = []
    for row in data:
        fields = dict(zip(header, row))
        name = fields.get("Kernel Name", "")
        base = _KERNEL_BASE.match(name)
        metrics = {h: to_base_unit(parse_number(v), u) for h, u, v in zip(header, units, row) if "__" in h}
        out.append({"id": fields.get("ID", ""), "kernel": base.group(1) if base else name, "name": name,
                    "metrics": metrics})
    return out


def read_raw(path: str | Path) -> list[dict]:
    """:func:`parse_raw` of a file ncu wrote with ``--log-file``."""
    return parse_raw(Path(path).read_text(errors="replace"))


def find_ncu() -> str | None:
    """Nsight Compute's command line: $NCU, else ``ncu`` on PATH, else the CUDA toolkit's or a standalone
    install's; None when there is none."""
    candidates = [os.environ.get("NCU"), shutil.which("ncu"), "/usr/local/cuda/bin/ncu",
                  *sorted(str(p) for p in Path("/opt/nvidia/nsight-compute").glob("*/ncu"))[::-1]]
    return next((c for c in candidates if c and Path(c).is_file()), None)


# ---------------------------------------------------------------------------- what ncu measures
# Every name here is one this H200's ncu (2025.3.1) lists in --query-metrics (tests/test_profile.py checks).

# HMMA/HGMMA/QGMMA only: sm__pipe_tensor_op_hmma_cycles_active also counts HFMA2.MMA, plain fp16 FMAs the
# compiler may send down the tensor pipe, which are no matrix work.
TENSOR_PIPE_ACTIVE = "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active"
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"
SCALAR_METRICS = {
    "tensor_pipe_active_pct": TENSOR_PIPE_ACTIVE,
    "tensor_instructions": "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "issue_active_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "l2_hit_pct": "lts__t_sector_hit_rate.pct",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "warps_per_sm": "sm__warps_active.avg.per_cycle_active",
    "duration_ns": "gpu__time_duration.sum",
    # where a short launch's cycles go: how many of the elapsed cycles the average SM had work (idle SMs, tails),
    # the L2 read requests the SMs made (TMA's included) and the 32-byte sectors they carried (4 a request on
    # rows aligned to 128 bytes; off the boundaries a line takes two or three requests), and DRAM's share of its
    # peak over the launch
    "sm_active_cycles": "sm__cycles_active.avg",
    "sm_elapsed_cycles": "sm__cycles_elapsed.max",
    "l2_read_requests": "lts__t_requests_srcunit_tex_op_read.sum",
    "l2_read_sectors": "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram_peak_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
}
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
                 "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
                 "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait")
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
_SASS_WAVEFRONTS = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"
_SASS_CONFLICTS = "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_{}.sum"
SMEM_METRICS = {
    "ldsm": {"wavefronts": _SASS_WAVEFRONTS.format("ldsm"), "bank_conflicts": _SASS_CONFLICTS.format("ldsm"),
             "instructions": "smsp__inst_executed_op_ldsm.sum"},
    "ldgsts": {"wavefronts": _SASS_WAVEFRONTS.format("ldgsts"), "bank_conflicts": _SASS_CONFLICTS.format("ldgsts"),
               "instructions": "smsp__inst_executed_op_ldgsts.sum"},
    # ncu counts LDS and STS bank conflicts only together with LDSM and STSM (in "all")
    "lds": {"wavefronts": _SASS_WAVEFRONTS.format("ld"), "instructions": "smsp__inst_executed_op_shared_ld.sum"},
    "sts": {"wavefronts": _SASS_WAVEFRONTS.format("st"), "instructions": "smsp__inst_executed_op_shared_st.sum"},
    "stsm": {"wavefronts": _SASS_WAVEFRONTS.format("stsm"), "bank_conflicts": _SASS_CONFLICTS.format("stsm"),
             "instructions": "smsp__inst_executed_op_shared_stsm.sum"},
    "gmma": {"wavefronts": _SASS_WAVEFRONTS.format("gmma"),
             "bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum",
             "instructions": "smsp__sass_inst_executed_op_shared_gmma.sum"},
    "all": {"wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
            "bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"},
}
METRICS = (SM_CLOCK, *SCALAR_METRICS.values(), *(STALL_METRIC.format(r) for r in STALL_REASONS),
           *(name for fields in SMEM_METRICS.values() for name in fields.values()))
# ncu puts its launch statistics on the raw page unasked (they cost no replay pass; --query-metrics omits them)
LAUNCH_METRICS = {"registers": "launch__registers_per_thread", "grid": "launch__grid_size",
                  "block": "launch__block_size", "smem_dynamic": "launch__shared_mem_per_block_dynamic"}
