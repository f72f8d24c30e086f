"""Profile one launch of a rung with Nsight Compute, record what it did, and read the records back.

``hgemm-course profile 05`` runs ``ncu`` over a child process, ``python -m hgemm_course.measurement.profile_target`` (the
launch target, :func:`~.profile_target.target_main`): fresh random fp16 inputs, C poisoned with NaN, one warm-up launch, then the launch
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

import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from . import ncu, records, verification
from .ncu import (LAUNCH_METRICS, METRICS, SCALAR_METRICS, SM_CLOCK, SMEM_METRICS, STALL_METRIC,
                  STALL_REASONS)
from .profile_target import (CUBLAS, CUBLAS_KERNELS, TARGETS, VERIFIED, WRONG_C, PlanTarget, launch_config, rung_id,
                             variant_label)
from ..library import device
from .verification import VerificationError
from ..library.paths import results_dir, write_atomic

TARGET_MODULE = "hgemm_course.measurement.profile_target"   # the process ncu profiles
PROFILE_TIMEOUT_S = 900         # compile, a dozen replay passes of an 8192^3 launch, the check: minutes at most

class NcuFailed(RuntimeError):
    """ncu gave no usable profile: a metric it rejected, no access to the counters, no kernel matched."""


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


def raw_csv(path: Path) -> Path:
    """Where ncu's raw CSV of the profile recorded at ``path`` is kept, apart from the records: under results/ncu/ as
    the profile is under results/ (results/ncu/profiles/ for results/profiles/), else in an ncu/ folder beside it."""
    recorded = results_dir().resolve()
    folder = Path(path).parent.resolve()
    if folder == recorded or recorded in folder.parents:
        return recorded / "ncu" / folder.relative_to(recorded) / Path(path).with_suffix(".csv").name
    return Path(path).parent / "ncu" / Path(path).with_suffix(".csv").name


def run_profile(rung_id: str, M: int, N: int, K: int, *, super_mn: tuple[int, int] | None = None,
                cluster_m: int | None = None, tiles: tuple[int, int] | None = None, folder: Path | None = None,
                ncu_path: str | None = None) -> Path:
    """Profile one launch under ncu and record it in ``folder`` (default ./hgemm-results/); returns the JSON's path
    (ncu's CSV apart from it: :func:`raw_csv`).
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
    raw = raw_csv(path)
    raw.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(raw, log)
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

        verification.require_runs_here(planned_rung())
    elif target.id not in TARGETS:
        verification.require_runs_here(target)
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
    print(f"written to {path} (ncu's raw CSV: {raw_csv(path)})")
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

