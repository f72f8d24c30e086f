"""The two numbers before any kernel: the arithmetic floor and the memory floor of a GEMM."""
from __future__ import annotations

from pathlib import Path

from .records import load_runs


def gemm_floor(M: int, N: int, K: int, *, peak_tflops: float, bandwidth_gbs: float) -> dict:
    """Time floors of C = A @ B in fp16: 2MNK flops at the peak, each matrix moved once at the bandwidth."""
    flops = 2.0 * M * N * K
    moved = 2.0 * (M * K + K * N + M * N)            # bytes: fp16 A and B read once, C written once
    compute_ms = flops / (peak_tflops * 1e12) * 1e3
    memory_ms = moved / (bandwidth_gbs * 1e9) * 1e3
    return {"flops": flops, "bytes": moved, "intensity": flops / moved,
            "ridge": peak_tflops * 1e12 / (bandwidth_gbs * 1e9),
            "compute_ms": compute_ms, "memory_ms": memory_ms, "floor_ms": max(compute_ms, memory_ms),
            "bound": "compute" if compute_ms >= memory_ms else "memory"}


def recorded_ceilings(folder: Path | None = None) -> dict | None:
    """The newest measured ceilings (``hgemm-course ceilings``) with their file and provenance."""
    runs = load_runs(folder, kind="ceilings")
    if not runs:
        return None
    path, data = runs[-1]
    return {**data["records"][0], "file": path.name, "gpu": data["provenance"]["gpu"],
            "date": data["provenance"]["date"]}


def compute_roof(ceilings: dict) -> dict:
    """The roofline's compute roof from a ceilings record: the highest measured peak of the tensor cores, a loop
    that does nothing but multiply (the wgmma peak where it was measured, else the mma.sync register peak).
    cuBLAS is a kernel, not a peak: rungs 11 and 12 beat it in cycles, so it is a reference on the roofline, not
    its roof. A record with neither peak falls back to cuBLAS, and says so in ``name``."""
    if ceilings.get("wgmma_tflops"):
        return {"tflops": ceilings["wgmma_tflops"], "name": "wgmma peak"}
    if ceilings.get("mma_sync_tflops"):
        return {"tflops": ceilings["mma_sync_tflops"], "name": "mma.sync register peak (no wgmma peak recorded)"}
    return {"tflops": ceilings["cublas_tflops"], "name": "cuBLAS (this record has no measured peak)"}
