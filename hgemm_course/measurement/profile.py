"""Profile one launch of a rung with Nsight Compute, record what it did, and read the records back.

``hgemm-course profile 05`` runs ``ncu`` over a child process, ``python -m hgemm_course.measurement.profile`` (the launch
target, :func:`target_main`): fresh random fp16 inputs, C poisoned with NaN, one warm-up launch, then the launch
ncu profiles, then C is checked. ncu keeps the card's own clocks (``--clock-control none``) and flushes the
caches before each replay pass (``--cache-control all``), so every pass starts from a cold L2. A wrong C makes
the profile worthless: nothing is recorded. The record goes to ``profile_<gpu>_<date>_<suffix>.json`` in
./hgemm-results/ (``--record``: the course's ``results/profiles/``), through :func:`hgemm_course.measurement.records.write_run`
with provenance, and ncu's raw CSV beside it with the same stem.

What a record holds, besides rung, shape, ``variant`` (the launcher settings changed: "default", "super 16x2",
"cluster 2") and ncu's kernel name:

- ``tensor_pipe_active_pct``: cycles the tensor pipe ran HMMA (mma.sync) or HGMMA (wgmma) work, % of the SMs'
  active cycles. Not ncu's "Compute (SM) Throughput", which is the busiest of all the SM's units.
- ``issue_active_pct``: cycles in which a scheduler issued an instruction, % of active cycles.
- ``stalls``: per reason, warps stalled on it per issued instruction (ncu's ``..._per_issue_active.ratio``).
  ``top_stalls``: the five largest as ``{"reason", "share_pct", "warps_per_issue"}``, where ``share_pct`` is
  the reason's ratio over the sum of every reason except ``selected`` (the warp that issues is not stalled).
- ``dram_read_bytes``, ``dram_write_bytes``, ``dram_bytes``, ``l2_hit_pct``, ``dram_peak_pct`` (DRAM's
  throughput over the launch, % of its peak).
- ``sm_active_cycles`` (the average SM's cycles with a warp in flight) against ``sm_elapsed_cycles`` (the
  launch's cycles on its longest-running SM): the share of the GPU that had work. ``l2_read_requests`` and
  ``l2_read_sectors``: reads the SMs asked of the L2 (TMA's too) and the 32-byte sectors they carried.
  Profiles recorded before these were measured lack the five.
- ``smem``: per shared-memory instruction kind the kernel executes (ldsm, ldgsts, lds, sts, stsm, gmma),
  ``{"wavefronts", "bank_conflicts", "instructions"}`` as far as ncu counts them per kind (the ``sass``
  counters: what the instructions' addresses cost); ``all``: every shared-memory wavefront and bank
  conflict the hardware saw.
- ``achieved_occupancy_pct``, ``warps_per_sm``, ``registers``, ``grid``, ``block``, ``smem_dynamic``.
- ``sm_clock_mhz``, ``duration_ns`` and ``cycles`` = duration x SM clock: durations measured at different
  clocks do not compare, cycles do.

``hgemm-course profile cublas`` profiles cuBLAS's own fp16 GEMM (``cupy.matmul``) the same way, so a rung's
cycles can be set against cuBLAS's at the same shape (:func:`cycle_ratios`): a comparison no clock moves.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import shlex
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from . import harness, ncu, records
from ..library import device
from .harness import VerificationError
from ..library.ladder import get, registry
from ..library.ladder.nvrtc_kernel import launched_kernel
from ..library.paths import results_dir, write_atomic

TARGET_MODULE = "hgemm_course.measurement.profile"
PROFILE_TIMEOUT_S = 900         # compile, a dozen replay passes of an 8192^3 launch, the check: minutes at most
VERIFY_ROW_STEP = 61            # rows checked against the reference: a prime stride meets every tile row
VERIFIED = "C verified after the profiled launch"
WRONG_C = "computed a wrong C"

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


class NcuFailed(RuntimeError):
    """ncu gave no usable profile: a metric it rejected, no access to the counters, no kernel matched."""


CUBLAS = "cublas"
# cuBLAS names its GEMM kernels nvjet_* on Hopper (sm90_xmma_gemm_* / cutlass_* elsewhere); the profiled
# process launches no other kernel of such a name before its verification
CUBLAS_KERNELS = "nvjet|gemm|cutlass"


class CublasTarget:
    """cuBLAS's fp16 GEMM as ``cupy.matmul`` calls it, profiled as the rungs are."""
    id = CUBLAS
    slug = "cuBLAS through cupy.matmul"
    kernels = CUBLAS_KERNELS

    @staticmethod
    def launch(a, b, c):
        import cupy

        cupy.matmul(a, b, out=c)


class CublasLtTarget:
    """cuBLASLt's fp16 GEMM as ``torch.matmul`` calls it (the ``compare`` extra). Where it splits K it launches a
    reduction kernel after the GEMM kernel; ncu profiles the GEMM kernel only, so its duration leaves that out."""
    id = "cublaslt"
    slug = "cuBLASLt through torch.matmul"
    kernels = CUBLAS_KERNELS

    @staticmethod
    def launch(a, b, c):
        fn = harness.vendors().get(harness.CUBLASLT_NAME)
        if fn is None:
            raise RuntimeError("Profiling cuBLASLt needs PyTorch: pip install -e \".[compare]\".")
        fn(a, b, c)


class PlanTarget:
    """What ``gemm(a, b, out=c)`` launches for the shape on a Hopper GPU: rung 11 or 12 as the plan picks them."""
    id = "plan"
    slug = "gemm()'s plan"
    kernels = "^k1[12]_(persistent|streamk)"     # the GEMM kernel (rung 12 split apart adds its pieces inside it)

    @staticmethod
    def launch(a, b, c):
        from ..library.api import gemm

        gemm(a, b, out=c)


# The targets that are no rung of the ladder: launched whole, their kernel found by name (``kernels``).
TARGETS = {t.id: t for t in (CublasTarget, CublasLtTarget, PlanTarget)}


def rung_id(rung: str) -> str:
    """A rung's id as the records hold it ("5" -> "05"), or "cublas", "cublaslt", "plan"."""
    return rung.lower() if rung.lower() in TARGETS else get(rung).id


# ---------------------------------------------------------------------------- the launch

def launch_config(rung_id: str, M: int, N: int, K: int, *, super_mn: tuple[int, int] | None = None,
                  cluster_m: int | None = None, tiles: tuple[int, int] | None = None):
    """(rung, launcher overrides, TemplateKernel) of one profiled launch; a ValueError naming the fix for
    anything the rung cannot run. ``rung_id`` "cublas", "cublaslt" or "plan" (:data:`TARGETS`) gives a launch that
    picks its own kernel, so no TemplateKernel (None)."""
    if rung_id.lower() in TARGETS:
        target = TARGETS[rung_id.lower()]()
        if super_mn is not None or cluster_m is not None or tiles is not None:
            raise ValueError(f"{target.slug} picks its own tiles and launch order: drop --tiles, --super and "
                             "--cluster to profile it.")
        return target, {}, None
    rung = get(rung_id)
    if rung.backend != "nvrtc":
        raise ValueError(f"rung {rung.id} ({rung.slug}) is a Numba kernel; profiles cover the NVRTC rungs, "
                         "whose launchers own a TemplateKernel.")
    rung.check_shape(M, N, K)
    takes = inspect.signature(rung.launch).parameters
    overrides = {}
    if super_mn is not None:
        if "super_mn" not in takes:
            with_super = ", ".join(r.id for r in registry().values()
                                   if "super_mn" in inspect.signature(r.launch).parameters)
            raise ValueError(f"rung {rung.id} ({rung.slug}) has no super tiles: its launcher takes no super_mn, so drop "
                             f"--super (rungs {with_super} take it).")
        overrides["super_mn"] = tuple(super_mn)
    if cluster_m is not None:
        if "cluster_m" not in takes:
            raise ValueError(f"rung {rung.id} ({rung.slug}) has no clusters: only rung 11's launcher takes cluster_m.")
        overrides["cluster_m"] = cluster_m
    module = importlib.import_module(rung.launch.__module__)
    if tiles is not None:
        if "tiles" not in takes:
            raise ValueError(f"rung {rung.id} ({rung.slug}) has fixed tiles: its launcher takes no tiles, so drop --tiles.")
        overrides["tiles"] = replace(module.TILES, bm=int(tiles[0]), bn=int(tiles[1]))
    return rung, overrides, launched_kernel(module, M, N, K, **overrides)


def variant_label(overrides: dict) -> str:
    """"default", "super 16x2", "cluster 2", "super 16x2, cluster 2": the launcher settings a profile changed."""
    parts = []
    if "tiles" in overrides:
        parts.append(f"tiles {overrides['tiles'].bm}x{overrides['tiles'].bn}")
    if "super_mn" in overrides:
        parts.append("super {}x{}".format(*overrides["super_mn"]))
    if "cluster_m" in overrides:
        parts.append(f"cluster {overrides['cluster_m']}")
    return ", ".join(parts) or "default"


def _target_args(argv=None):
    p = argparse.ArgumentParser(description="Launch one configuration of one rung a few times, for Nsight "
                                            "Compute to profile; a wrong C exits 1.")
    p.add_argument("--rung", required=True, help="rung id: any NVRTC rung (03 and up), or cublas, cublaslt, plan")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--size", type=int, default=2048, help="M = N = K (default 2048)")
    shape.add_argument("--mnk", type=int, nargs=3, metavar=("M", "N", "K"))
    p.add_argument("--super", type=int, nargs=2, metavar=("SUPER_M", "SUPER_N"),
                   help="super tile in output tiles, for rungs whose launcher takes super_mn")
    p.add_argument("--cluster", type=int, help="CTAs per cluster along M, for rung 11 (cluster_m)")
    p.add_argument("--tiles", type=int, nargs=2, metavar=("BM", "BN"), help="CTA tile, for rungs whose launcher "
                   "takes tiles (default: the rung's own)")
    p.add_argument("--launches", type=int, default=1, help="launches after the warm-up (default 1)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments, print the kernel, launch nothing")
    args = p.parse_args(argv)
    if args.launches < 1:
        p.error(f"--launches {args.launches}: launch at least once after the warm-up.")
    M, N, K = args.mnk or (args.size,) * 3
    try:
        rung, overrides, kernel = launch_config(args.rung, M, N, K, super_mn=args.super, cluster_m=args.cluster,
                                                tiles=args.tiles)
    except ValueError as e:
        p.error(str(e))
    return args, rung, (M, N, K), overrides, kernel


def target_main(argv=None) -> int:
    """The process ncu profiles: one warm-up launch, ``--launches`` more, then C checked (every element
    written, every 61st row against an FP32 reference that kernels other than the rung's compute after the
    profiled launches). Exits 1 on a wrong C, 2 (a sentence naming the fix) on bad arguments."""
    args, rung, (M, N, K), overrides, kernel = _target_args(argv)
    if kernel is None:
        print(f"{rung.slug} M={M} N={N} K={K} launches=1+{args.launches}", flush=True)
    else:
        print(f"rung {rung.id} {kernel.name_expression} M={M} N={N} K={K} grid={kernel.grid(M, N)} "
              f"block=({kernel.threads},) smem={kernel.smem_bytes} launches=1+{args.launches}", flush=True)
    if args.dry_run:
        return 0

    try:
        device.require_gpu("The profile target")
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    import cupy

    a, b, seed = harness.random_inputs(M, N, K, xp=cupy)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    for _ in range(1 + args.launches):
        rung.launch(a, b, c, **overrides)
    cupy.cuda.runtime.deviceSynchronize()

    unwritten = int((~cupy.isfinite(c)).sum())
    rows = cupy.arange(0, M, VERIFY_ROW_STEP)
    reference = cupy.matmul(a[rows].astype(cupy.float32), b.astype(cupy.float32))
    result = harness.compare(c[rows], reference, K=K, rung=rung.id, seed=seed)
    print(f"{result.summary()} ({len(rows)} rows checked), unwritten or non-finite in all of C: {unwritten}",
          flush=True)
    if unwritten or not result.passed:
        print(f"rung {rung.id} {WRONG_C}: the profile of this launch is not worth reading "
              f"(reproduce with harness.verify('{rung.id}', {M}, {N}, {K}, seed={seed})).", file=sys.stderr)
        return 1
    print(VERIFIED, flush=True)
    return 0


# ---------------------------------------------------------------------------- ncu over the launch

def ncu_command(ncu_path: str, rung, M: int, N: int, K: int, overrides: dict, kernel, log_file: Path) -> list[str]:
    """ncu on the second launch of the rung's kernel (the first warms up), raw CSV of METRICS to ``log_file``.
    ``kernel`` None: cuBLAS, whose GEMM kernel is found by name (CUBLAS_KERNELS)."""
    child = [sys.executable, "-m", TARGET_MODULE, "--rung", rung.id, "--mnk", str(M), str(N), str(K)]
    if "super_mn" in overrides:
        child += ["--super", *(str(s) for s in overrides["super_mn"])]
    if "cluster_m" in overrides:
        child += ["--cluster", str(overrides["cluster_m"])]
    if "tiles" in overrides:
        child += ["--tiles", str(overrides["tiles"].bm), str(overrides["tiles"].bn)]
    return [ncu_path, "--clock-control", "none", "--cache-control", "all", "--print-units", "base", "--csv",
            "--page", "raw", "--metrics", ",".join(METRICS), "-k", f"regex:{kernel_filter(kernel, rung)}", "--launch-skip", "1",
            "--launch-count", "1", "--log-file", str(log_file), *child]


def kernel_filter(kernel, target=None) -> str:
    """The regular expression ncu matches the profiled kernel's name with: the rung's kernel, else the
    target's (cuBLAS's by default)."""
    if kernel is None:
        return getattr(target, "kernels", CUBLAS_KERNELS)
    return f"^{kernel.kernel}"


def require_ncu() -> str:
    """The path of ncu, or a RuntimeError that says how to get it."""
    found = ncu.find_ncu()
    if found is None:
        raise RuntimeError("Nsight Compute (ncu) is not in $NCU, on PATH or at /usr/local/cuda/bin/ncu: install it "
                           "(the CUDA toolkit has it) or set NCU=/path/to/ncu.")
    return found


def top_stalls(stalls: dict[str, float | None], n: int = 5) -> list[dict]:
    """The ``n`` reasons warps stall on most, largest first; ``share_pct`` is of the sum over every reason
    but ``selected`` (the issuing warp, which is not stalled)."""
    stalled = {reason: value for reason, value in stalls.items() if reason != "selected" and value}
    total = sum(stalled.values())
    ranked = sorted(stalled.items(), key=lambda item: -item[1])[:n]
    return [{"reason": reason, "share_pct": 100 * value / total, "warps_per_issue": value} for reason, value in ranked]


def _int(value: float | None) -> int | None:
    return None if value is None else int(round(value))


def profile_record(row: dict, *, rung: str, M: int, N: int, K: int, variant: str) -> dict:
    """The record of one profiled kernel from its row of :func:`hgemm_course.measurement.ncu.parse_raw`."""
    metrics = row["metrics"]
    missing = [name for name in METRICS if name not in metrics]
    if missing:
        raise NcuFailed(f"ncu's CSV has no column for {', '.join(missing)}: ncu dropped metrics it was asked for; "
                        "profile again with names this ncu lists in `ncu --query-metrics`.")
    record = {"rung": rung, "M": M, "N": N, "K": K, "variant": variant, "kernel": row["name"]}
    record.update({key: _int(metrics.get(name)) for key, name in LAUNCH_METRICS.items()})
    record.update({key: metrics[name] for key, name in SCALAR_METRICS.items()})
    stalls = {reason: metrics[STALL_METRIC.format(reason)] for reason in STALL_REASONS}
    read, write, clock_hz, duration = (record["dram_read_bytes"], record["dram_write_bytes"], metrics[SM_CLOCK],
                                       record["duration_ns"])
    record.update({
        "stalls": stalls,
        "top_stalls": top_stalls(stalls),
        "dram_bytes": None if read is None or write is None else read + write,
        "smem": {kind: {field: metrics[name] for field, name in fields.items()}
                 for kind, fields in SMEM_METRICS.items() if kind == "all" or metrics[fields["instructions"]]},
        "sm_clock_mhz": None if clock_hz is None else clock_hz / 1e6,
        "cycles": None if clock_hz is None or duration is None else duration * 1e-9 * clock_hz,
    })
    return record


def _ncu_said(*texts: str) -> str:
    """ncu's error lines, else the last line printed: what to show when a run gave no profile."""
    lines = [line.strip() for text in texts for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("==ERROR==")]
    return " ".join(errors) if errors else (lines[-1] if lines else "nothing printed")


def profiles_folder(folder: Path | None = None) -> Path:
    """Where profiles are read from: ``folder``, default the recorded results/profiles/."""
    return Path(folder) if folder else results_dir() / "profiles"


def run_profile(rung_id: str, M: int, N: int, K: int, *, super_mn: tuple[int, int] | None = None,
                cluster_m: int | None = None, tiles: tuple[int, int] | None = None, folder: Path | None = None,
                ncu_path: str | None = None) -> Path:
    """Profile one launch under ncu and record it in ``folder`` (default ./hgemm-results/); returns the JSON's path
    (ncu's CSV beside it, ``.csv``).
    Raises VerificationError on a wrong C and NcuFailed when ncu gives no profile; records nothing then."""
    rung, overrides, kernel = launch_config(rung_id, M, N, K, super_mn=super_mn, cluster_m=cluster_m, tiles=tiles)
    ncu_path = ncu_path or require_ncu()
    with tempfile.TemporaryDirectory() as tmp:
        log_file = Path(tmp) / "ncu_raw.csv"
        command = ncu_command(ncu_path, rung, M, N, K, overrides, kernel, log_file)
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=PROFILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise NcuFailed(f"ncu ran past {PROFILE_TIMEOUT_S} s on rung {rung.id} at {M}x{N}x{K}; profile a smaller "
                            "--size, or run the printed --dry-run command by hand to see where it hangs.") from None
        log = log_file.read_text(errors="replace") if log_file.is_file() else ""
    output = run.stdout + run.stderr
    wrong = next((line for line in output.splitlines() if WRONG_C in line), None)
    if wrong:
        raise VerificationError(f"{wrong} Nothing was recorded.")
    if run.returncode or VERIFIED not in output:
        raise NcuFailed(f"ncu exited {run.returncode} without a verified profile: {_ncu_said(log, output)}")
    try:
        rows = ncu.parse_raw(log)
    except ValueError as e:
        raise NcuFailed(str(e)) from None
    if len(rows) != 1:
        raise NcuFailed(f"ncu profiled {len(rows)} kernels matching {kernel_filter(kernel, rung)}, not one: is another "
                        "kernel of that name launched first?")
    record = profile_record(rows[0], rung=rung.id, M=M, N=N, K=K, variant=variant_label(overrides))
    version = subprocess.run([ncu_path, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    path = records.write_run([record], kind="profile", folder=folder,
                             extra={"ncu": version[-1] if version else None, "ncu_command": shlex.join(command)})
    write_atomic(path.with_suffix(".csv"), log)
    return path


# ---------------------------------------------------------------------------- the records

def load_profiles(folder: Path | None = None) -> list[dict]:
    """Every recorded profile, the newest per (rung, M, N, K, variant), each with the ``file`` it came from."""
    newest = {}
    for path, data in records.load_runs(profiles_folder(folder), kind="profile"):
        for r in data["records"]:
            newest[(r["rung"], r["M"], r["N"], r["K"], r["variant"])] = {**r, "file": path.name}
    return [newest[key] for key in sorted(newest)]


def recorded_profile(rung: str, M: int = 8192, N: int | None = None, K: int | None = None, variant: str = "default",
                     folder: Path | None = None) -> dict | None:
    """The newest recorded profile of ``rung`` at M x N x K (N and K default to M), or None."""
    key = (rung_id(rung), M, M if N is None else N, M if K is None else K, variant)
    return next((r for r in load_profiles(folder) if (r["rung"], r["M"], r["N"], r["K"], r["variant"]) == key), None)


def _num(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "n/a" if value is None else format(value / scale, spec)


def _stalls_text(record: dict, n: int = 3) -> str:
    return ", ".join(f"{s['reason']} {s['share_pct']:.0f}%" for s in record["top_stalls"][:n])


def describe(record: dict) -> str:
    """One paragraph for a learner: where the recorded launch spent its cycles, labelled as recorded."""
    r = record
    return (f"RECORDED ({r.get('file', 'not yet written')}, {r['gpu']}, {r['date'][:10]}): rung {r['rung']} at "
            f"{r['M']}x{r['N']}x{r['K']} ({r['variant']}): tensor pipe active "
            f"{_num(r['tensor_pipe_active_pct'], '.1f')}% of active cycles; issue slots "
            f"{_num(r['issue_active_pct'], '.0f')}%; warps stall on: {_stalls_text(r)} (shares of stalled warps "
            f"per issue); DRAM {_num(r['dram_read_bytes'], ',.0f', 1e6)} MB read, "
            f"{_num(r['dram_write_bytes'], ',.0f', 1e6)} MB written; L2 hit {_num(r['l2_hit_pct'], '.0f')}%; "
            f"{_num(r['warps_per_sm'], '.1f')} warps/SM achieved ({_num(r['achieved_occupancy_pct'], '.1f')}%); "
            f"SM clock {_num(r['sm_clock_mhz'], ',.0f')} MHz, {_num(r['cycles'], ',.0f')} cycles.")


def format_profiles(records: list[dict]) -> str:
    """A table, one row per recorded profile: tensor pipe, issue slots, top stalls, memory, occupancy, clock."""
    head = (f"{'rung':<9}{'shape':<16}{'variant':<22}{'tensor%':>8}{'issue%':>8}  {'top stalls (share %)':<46}"
            f"{'DRAM MB':>9}{'L2 hit%':>8}{'occupancy':>16}{'MHz':>7}  recorded")
    lines = [head]
    for r in records:
        stalls = ", ".join(f"{s['reason']} {s['share_pct']:.0f}" for s in r["top_stalls"][:3])
        occupancy = f"{_num(r['warps_per_sm'], '.1f')} w ({_num(r['achieved_occupancy_pct'], '.1f')}%)"
        shape = f"{r['M']}x{r['N']}x{r['K']}"
        lines.append(f"{r['rung']:<9}{shape:<16}{r['variant']:<22}{_num(r['tensor_pipe_active_pct'], '.1f'):>8}"
                     f"{_num(r['issue_active_pct'], '.1f'):>8}  {stalls:<46}{_num(r['dram_bytes'], ',.0f', 1e6):>9}"
                     f"{_num(r['l2_hit_pct'], '.1f'):>8}{occupancy:>16}{_num(r['sm_clock_mhz'], ',.0f'):>7}  "
                     f"{r['file']} {r['date'][:10]}")
    return "\n".join(lines)



def cycle_ratios(M: int = 8192, N: int | None = None, K: int | None = None, folder: Path | None = None) -> list[dict]:
    """Per rung with a recorded default profile at M x N x K (N, K default to M) and cuBLAS's at the same shape:
    ``{"rung", "cycles", "cublas_cycles", "pct_cublas_cycles"}``, where the last is 100 x cuBLAS's cycles over the
    rung's. Timed on a power-capped GPU, two kernels need not run at one clock; their cycles compare whatever
    the clocks were. Empty without a cuBLAS profile at that shape."""
    N, K = M if N is None else N, M if K is None else K
    records = [r for r in load_profiles(folder) if (r["M"], r["N"], r["K"], r["variant"]) == (M, N, K, "default")
               and r.get("cycles")]
    cublas = next((r for r in records if r["rung"] == CUBLAS), None)
    if cublas is None:
        return []
    return [{"rung": r["rung"], "cycles": r["cycles"], "cublas_cycles": cublas["cycles"],
             "pct_cublas_cycles": 100.0 * cublas["cycles"] / r["cycles"], "file": r["file"],
             "cublas_file": cublas["file"]} for r in records if r["rung"] != CUBLAS]


def format_cycle_ratios(rows: list[dict]) -> str:
    """The rows of :func:`cycle_ratios` as a table, labelled as recorded."""
    if not rows:
        return "No recorded cuBLAS profile at this shape: run `hgemm-course profile cublas --size N` on the GPU."
    lines = [f"RECORDED profiles (Nsight Compute, cuBLAS from {rows[0]['cublas_file']}):",
             f"{'rung':<5}{'SM cycles':>12}{'cuBLAS cycles':>15}{'% of cuBLAS in cycles':>23}"]
    lines += [f"{r['rung']:<5}{r['cycles']:>12,.0f}{r['cublas_cycles']:>15,.0f}{r['pct_cublas_cycles']:>22.1f}%"
              for r in rows]
    return "\n".join(lines)


def before_and_after(folder: Path) -> list[dict]:
    """An ablation recorded as two folders of profiles, ``folder/before`` and ``folder/after`` (the same launches
    with and without one change): per (rung, M, N, K, variant) found in both, ``{"rung", "M", "N", "K", "variant",
    "cycles_before", "cycles_after", "change_pct", "tensor_before", "tensor_after"}``, ``change_pct`` being the
    change in SM cycles (negative: fewer)."""
    before = {(r["rung"], r["M"], r["N"], r["K"], r["variant"]): r for r in load_profiles(folder / "before")}
    rows = []
    for r in load_profiles(folder / "after"):
        key = (r["rung"], r["M"], r["N"], r["K"], r["variant"])
        if key in before and r.get("cycles") and before[key].get("cycles"):
            b = before[key]
            rows.append({"rung": r["rung"], "M": r["M"], "N": r["N"], "K": r["K"], "variant": r["variant"],
                         "cycles_before": b["cycles"], "cycles_after": r["cycles"],
                         "change_pct": 100.0 * (r["cycles"] / b["cycles"] - 1),
                         "tensor_before": b["tensor_pipe_active_pct"], "tensor_after": r["tensor_pipe_active_pct"]})
    return sorted(rows, key=lambda row: row["change_pct"])


def format_before_and_after(rows: list[dict]) -> str:
    """The rows of :func:`before_and_after` as a table."""
    lines = [f"{'rung':<5}{'M x N x K':>18} {'variant':<11}{'cycles before':>15}{'after':>12}{'change':>9}"
             f"{'tensor pipe % before / after':>31}"]
    for r in rows:
        shape = f"{r['M']}x{r['N']}x{r['K']}"
        lines.append(f"{r['rung']:<5}{shape:>18} {r['variant']:<11}{r['cycles_before']:>15,.0f}{r['cycles_after']:>12,.0f}"
                     f"{r['change_pct']:>8.1f}%{_num(r['tensor_before'], '.1f'):>23} / {_num(r['tensor_after'], '.1f')}")
    return "\n".join(lines)



# ---------------------------------------------------------------------------- the commands: profile, profiles, sass

def profile_command(rung: str, shape: tuple[int, int, int], *, super_mn: tuple[int, int] | None = None,
                    cluster_m: int | None = None, tiles: tuple[int, int] | None = None, dry_run: bool = False,
                    out_dir: Path | None = None, record: bool = False) -> int:
    """``hgemm-course profile``: profile one launch under ncu and print what it did (``dry_run``: print the ncu
    command and stop); 1 when C came out wrong or ncu gave no profile."""
    M, N, K = shape
    target, overrides, kernel = launch_config(rung, M, N, K, super_mn=super_mn, cluster_m=cluster_m, tiles=tiles)
    if dry_run:
        print(shlex.join(ncu_command(ncu.find_ncu() or "ncu", target, M, N, K, overrides, kernel, Path("ncu_raw.csv"))))
        return 0
    folder = records.run_folder(out_dir, record=record, recorded=profiles_folder())   # checked before the run
    try:
        device.require_gpu("Profiling")
    except RuntimeError as exc:
        raise RuntimeError(f"{exc} Profile on a GPU machine (the H200); `hgemm-course profiles` shows the recorded "
                           "profiles.") from None
    if target.id == PlanTarget.id:
        from ..library.plan import planned_rung

        harness.require_runs_here(planned_rung())
    elif target.id not in TARGETS:
        harness.require_runs_here(target)
    ncu_path = require_ncu()
    print(f"profiling rung {target.id} at {M}x{N}x{K} ({variant_label(overrides)}) with ncu "
          "(a few seconds per replay pass)...", flush=True)
    try:
        path = run_profile(target.id, M, N, K, super_mn=super_mn, cluster_m=cluster_m, tiles=tiles, folder=folder,
                           ncu_path=ncu_path)
    except (VerificationError, NcuFailed) as exc:
        print(f"hgemm-course profile: {exc}", file=sys.stderr)
        return 1
    print(describe({**json.loads(path.read_text())["records"][0], "file": path.name}))
    print(f"written to {path} (ncu's raw CSV: {path.with_suffix('.csv').name})")
    return 0


def profiles_command(rungs=None, *, folder: Path | None = None, as_json: bool = False) -> int:
    """``hgemm-course profiles``: the recorded profiles (of ``rungs``, default all), newest per rung, shape and
    variant, then each rung's SM cycles against cuBLAS's at the shapes both were profiled at."""
    records = load_profiles(folder)
    if rungs:
        wanted = {rung_id(r) for r in rungs}
        records = [r for r in records if r["rung"] in wanted]
    if as_json:
        print(json.dumps(records, indent=1))
        return 0
    if not records:
        print(f"No recorded profiles in {profiles_folder(folder)} (run `hgemm-course profile RUNG` on a "
              "GPU machine with Nsight Compute).")
        return 0
    print("Recorded profiles (Nsight Compute, not measured now):")
    print(format_profiles(records))
    for M, N, K in sorted({(r["M"], r["N"], r["K"]) for r in records if r["rung"] == CUBLAS}):
        rows = [r for r in cycle_ratios(M, N, K, folder=folder) if r["rung"] in {x["rung"] for x in records}]
        if rows:
            print(f"\nAt {M}x{N}x{K}, against cuBLAS in SM cycles (no clock moves this comparison):")
            print(format_cycle_ratios(rows))
    return 0


def sass_command(rung: str, shape: tuple[int, int, int], *, super_mn: tuple[int, int] | None = None,
                 cluster_m: int | None = None, tiles: tuple[int, int] | None = None) -> int:
    """``hgemm-course sass``: the main loop of the kernel this launch runs, as ptxas scheduled it."""
    from .sass import loop_schedule

    kernel = launch_config(rung, *shape, super_mn=super_mn, cluster_m=cluster_m, tiles=tiles)[2]
    if kernel is None:
        raise ValueError("cuBLAS's kernels come compiled, without their source here: `hgemm-course sass` reads the "
                         "rungs' kernels (03 and up).")
    print(loop_schedule(kernel).describe())
    return 0


if __name__ == "__main__":
    sys.exit(target_main())
