"""Read Nsight Compute's ``--csv --page details`` output: what one profiled kernel did, in numbers.

The recorded profiles under results/ncu/ were written on the H200 by scripts/h200_rung11.sh (ncu with
``--clock-control none``, so the SM clock is whatever the card ran at). Wall-clock durations of two
kernels profiled at different clocks do not compare; SM cycles (duration x SM frequency) do.
"""
from __future__ import annotations

import csv
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
_UNIT_SCALE = {"ns": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "nsecond": 1.0,
               "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/nsecond": 1e9,
               "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9}


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


def _number(text: str, unit: str) -> float:
    value = float(text.replace(",", ""))
    return value * _UNIT_SCALE.get(unit.strip().lower(), 1.0)


def kernel_summary(path: str | Path) -> dict:
    """The figures that explain a GEMM kernel's speed, with ``cycles`` = duration x SM frequency
    (durations in ns, frequencies in Hz, whatever units ncu printed them in)."""
    kernel, metrics = read_details(path)
    out: dict = {"kernel": kernel, "file": Path(path).name}
    for name, key in _METRICS.items():
        if name in metrics:
            out[key] = _number(*metrics[name])
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
