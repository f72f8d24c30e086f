# Question: in the launches where gemm() trails cuBLASLt, at which instructions do the warps spend their time?
"""Nsight Compute's warp-state sampling (its SourceCounters section) on one launch of gemm()'s plan and one of
cuBLASLt's GEMM kernel (torch.matmul) per shape: every few cycles each SM sub-partition records the instruction
each of its warps sits at, so the samples per SASS instruction say where the warps' time went. The samples are
summed by what the instruction does (INSTRUCTION_KINDS: the tensor products, waits on the ring's mbarriers, the
flags split-K apart waits on, global loads and stores, ...). Needs a GPU and ncu. The report goes to the recorded
results/probes/stall_sites/ and the raw source-page CSVs to results/ncu/stall_sites/ (--out DIR: both to DIR).

    python research/stall_sites.py --shapes 256x256x65536 96x5000x3000
    python research/stall_sites.py --table results/tuning/2026-12-03/stall_sites/stall_sites_*.json
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hgemm_course.library.paths import raw_dir  # noqa: E402
from hgemm_course.measurement import profile, profile_target, records  # noqa: E402

# (kind, SASS opcode pattern), first match wins; the opcode is the instruction's first word with its modifiers
INSTRUCTION_KINDS = (
    ("tensor products (HGMMA)", r"^HGMMA"),
    ("waits for products (WARPGROUP)", r"^WARPGROUP"),
    ("ring waits (mbarrier)", r"^SYNCS\.PHASECHK|^NANOSLEEP\.SYNCS"),     # a try-wait, or a sleep until one
    ("ring signals (mbarrier)", r"^SYNCS"),
    ("TMA copies", r"^(UTMA|UBLKCP)"),
    ("flag reads and sleeps", r"^LDG.*STRONG|^LD\..*STRONG|^NANOSLEEP"),
    ("global loads", r"^(LDG|LD)\b"),
    ("global stores and reductions", r"^(STG|ST|RED|ATOM|ATOMG)\b"),
    ("shared memory", r"^(LDS|STS|LDSM|STSM)\b"),
    ("barriers and fences", r"^(BAR|MEMBAR|FENCE|CCTL|ERRBAR)"),
    ("branches", r"^(BRA|BSSY|BSYNC|EXIT|RET|CALL|WARPSYNC)"),
)
OTHER = "other (arithmetic, addresses, moves)"


def parse_shape(text: str) -> tuple[int, int, int]:
    M, N, K = (int(x) for x in text.lower().split("x"))
    return M, N, K


def opcode(source: str) -> str:
    """``@!P0 LDG.E.STRONG.GPU R4, desc[UR6][R2.64] ;`` -> ``LDG.E.STRONG.GPU``."""
    words = source.strip().split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def kind_of(op: str) -> str:
    return next((kind for kind, pattern in INSTRUCTION_KINDS if re.search(pattern, op)), OTHER)


def source_rows(text: str) -> tuple[str | None, list[dict]]:
    """(kernel name, rows) of ncu's ``--page source --csv`` output: a "Kernel Name" line, then a header line
    starting with "Address" and one row per SASS instruction."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    name = next((next(csv.reader([line]))[1] for line in lines if line.startswith('"Kernel Name"')), None)
    start = next((i for i, line in enumerate(lines) if line.startswith('"Address"')), None)
    if start is None:
        raise ValueError("ncu's source page has no header row starting with Address")
    return name, list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def sample_column(row: dict) -> str:
    names = [k for k in row if "Warp Stall Sampling (All" in k]
    if not names:
        raise ValueError(f"no warp-stall sampling column among {sorted(row)[:12]}...")
    return names[0]


def _number(text) -> float:
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return 0.0


def waited_on(rows: list[dict], i: int, lookback: int = 4) -> str | None:
    """The kind of instruction a predicated branch waits on: a spin loop (an mbarrier's try-wait, a flag's read)
    ends in ``@!P0 BRA``, and its warps sit at the branch until the instruction that sets P0 returns. The kind of
    that instruction, found among the ``lookback`` before the branch, else None."""
    words = rows[i].get("Source", "").replace(",", " ").split()
    if words and words[0].startswith("@"):              # @!P0 BRA target
        predicate = words[0].lstrip("@!")
    elif len(words) > 2 and words[0] == "BRA" and words[1].lstrip("!").startswith(("P", "UP")):
        predicate = words[1].lstrip("!")                 # BRA !P2, target
    else:
        return None
    for r in reversed(rows[max(0, i - lookback):i]):
        operands = r.get("Source", "").replace(",", " ").split()
        op = opcode(r.get("Source", ""))
        first = operands[operands.index(op) + 1] if op in operands and operands.index(op) + 1 < len(operands) else None
        if first == predicate:
            kind = kind_of(op)
            return kind if kind != OTHER else None
    return None


def summarize(rows: list[dict]) -> dict:
    """Samples per instruction kind (counts and % of all), and the ten instructions with the most samples."""
    if not rows:
        raise ValueError("ncu's source page has no instruction rows")
    column = sample_column(rows[0])
    by_kind: dict[str, float] = {}
    per_instruction = []
    for i, r in enumerate(rows):
        samples = _number(r.get(column))
        source = r.get("Source", "")
        kind = kind_of(opcode(source))
        if kind == "branches":
            kind = waited_on(rows, i) or kind
        by_kind[kind] = by_kind.get(kind, 0.0) + samples
        per_instruction.append((samples, r.get("Address", ""), source.strip(), kind))
    total = sum(by_kind.values())
    top = sorted(per_instruction, reverse=True)[:10]
    return {"samples": total, "column": column,
            "kinds_pct": {k: 100 * v / total for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])} if total else {},
            "top": [{"samples": s, "address": a, "instruction": src, "kind": k} for s, a, src, k in top]}


def profile_sites(target: str, M: int, N: int, K: int, ncu: str, keep: Path) -> dict:
    rung, overrides, kernel = profile_target.launch_config(target, M, N, K)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "unused.csv"
        command = profile.ncu_command(ncu, rung, M, N, K, overrides, kernel, log)
        # the same launch and kernel filter as `hgemm-course profile`, with warp sampling instead of counters
        head, child = command[:command.index(sys.executable)], command[command.index(sys.executable):]
        i = head.index("--page")
        head = head[:i] + head[i + 4:]               # drop --page raw --metrics ...
        head = [h for h in head if h not in ("--csv",)]
        j = head.index("--log-file")
        head = head[:j] + head[j + 2:]
        report = Path(tmp) / "sites"
        run = subprocess.run([*head, "--section", "SourceCounters", "-o", str(report), *child],
                             capture_output=True, text=True, timeout=300)
        if run.returncode or profile_target.VERIFIED not in run.stdout:
            raise RuntimeError(f"ncu failed on {target} {M}x{N}x{K}: {(run.stdout + run.stderr)[-600:]}")
        page = subprocess.run([ncu, "-i", f"{report}.ncu-rep", "--page", "source", "--csv", "--print-source", "sass"],
                              capture_output=True, text=True, timeout=300)
        if page.returncode:
            raise RuntimeError(f"ncu -i failed: {(page.stdout + page.stderr)[-600:]}")
        raw = keep / f"source_{target}_{M}x{N}x{K}.csv"
        raw.write_text(page.stdout)
    return summarize_csv(raw, target, M, N, K)


def summarize_csv(raw: Path, target: str, M: int, N: int, K: int) -> dict:
    name, rows = source_rows(raw.read_text())
    return {"target": target, "M": M, "N": N, "K": K, "kernel": name, "csv": raw.name, **summarize(rows)}


def table(report: dict) -> str:
    kinds = [k for k, _ in INSTRUCTION_KINDS] + [OTHER]
    rows = report["rows"]
    used = [k for k in kinds if any(r["kinds_pct"].get(k, 0) >= 1 for r in rows)]
    lines = [f"{'M x N x K':>16} {'':9} {'samples':>8}  " + "  ".join(f"{k[:14]:>14}" for k in used)]
    for r in rows:
        label = "gemm()" if r["target"] == "plan" else "cuBLASLt"
        lines.append(f"{r['M']}x{r['N']}x{r['K']:<6}"[:16].rjust(16) + f" {label:9} {r['samples']:8.0f}  "
                     + "  ".join(f"{r['kinds_pct'].get(k, 0):13.1f}%" for k in used))
    lines.append("gemm()'s samples over cuBLASLt's, and the three kinds that differ most (samples):")
    by_shape = {(r["target"], r["M"], r["N"], r["K"]): r for r in rows}
    for (target, M, N, K), ours in by_shape.items():
        theirs = by_shape.get(("cublaslt", M, N, K))
        if target != "plan" or theirs is None:
            continue
        count = {who: {k: p * r["samples"] / 100 for k, p in r["kinds_pct"].items()}
                 for who, r in (("ours", ours), ("theirs", theirs))}
        diff = {k: count["ours"].get(k, 0) - count["theirs"].get(k, 0) for k in {*count["ours"], *count["theirs"]}}
        most = sorted(diff, key=lambda k: -abs(diff[k]))[:3]
        lines.append(f"  {M}x{N}x{K}: {ours['samples'] / theirs['samples']:.2f}x; "
                     + ", ".join(f"{k} {diff[k]:+.0f}" for k in most))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", default=[])
    p.add_argument("--out", type=Path, help="folder for the report and the source pages (default: the recorded "
                   "results/probes/stall_sites/ and results/ncu/stall_sites/)")
    p.add_argument("--table", type=Path, help="print the table of a recorded report and stop")
    p.add_argument("--from-csv", action="store_true", help="summarize the source pages already kept (one per "
                   "target and shape, as this probe wrote them) into a report, without a GPU")
    args = p.parse_args(argv)
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return 0
    ncu = None if args.from_csv else profile.require_ncu()
    raw = args.out or raw_dir("stall_sites")
    raw.mkdir(parents=True, exist_ok=True)
    rows, failed = [], []
    for text in args.shapes:
        M, N, K = parse_shape(text)
        for target in ("plan", "cublaslt"):
            try:
                row = (summarize_csv(raw / f"source_{target}_{M}x{N}x{K}.csv", target, M, N, K) if args.from_csv
                       else profile_sites(target, M, N, K, ncu, raw))
            except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
                failed.append(f"{target} {text}: {e}")
                print(failed[-1], flush=True)
                continue
            rows.append(row)
            top = ", ".join(f"{k} {v:.0f}%" for k, v in list(row["kinds_pct"].items())[:4])
            print(f"{target:8} {text:>16}: {row['samples']:.0f} samples; {top}", flush=True)
    report = {"probe": "research/stall_sites.py", "rows": rows, "failed": failed}
    path = records.write_probe(report, probe="stall_sites", folder=args.out)
    print(f"written to {path}")
    print(table(report))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
