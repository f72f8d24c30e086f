# Question: how many shared-memory wavefronts one 16-byte cp.async (LDGSTS) costs, layout by layout (sim.banks' rule).
# Results: results/ncu/ldgsts_probe_20261129T1821.{csv,txt}, ldgsts_probe_runtime_zfill_20261129T1830.{csv,txt}.
"""Measure what one 16-byte ``cp.async`` (SASS LDGSTS) costs in shared-memory wavefronts, layout by layout.

    python3 research/ldgsts_wavefronts.py --dry-run            # the plan: configurations and the ncu command
    python3 research/ldgsts_wavefronts.py --profile DIR        # on the GPU: ncu over every configuration
    python3 research/ldgsts_wavefronts.py --parse DIR/ldgsts.csv [--out-table T.txt]

One kernel, ``ldgsts_probe``, one CTA per launch: thread ``t`` of copy iteration ``i`` copies the 16
bytes at global byte offset ``goff[i][t]`` to shared byte offset ``soff[i][t]`` (a negative global
offset leaves the lane idle), then commits and waits. Each configuration is one launch, so ncu's
``sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum`` over
``smsp__sass_inst_executed_op_ldgsts.sum`` is exactly the wavefronts per LDGSTS of that layout.

The configurations (in this order, so ncu's rows are matched to them by position, and a run cut
short by ``--deadline`` keeps the most useful ones):

- ``real_*``: the exact tile copies of rungs 03/04 (padded: A 256x64 halfs, pitch 144 bytes; B 64x128
  halfs, pitch 272) and 05/06 (swizzled, chunk ^ row % 8, B as two 128-byte panels), 256 threads,
  global rows 4096 bytes apart (2048^3), ``cp.async`` with zero-fill as the kernels issue it;
- ``row8_s<o>`` / ``row16_s<o>``: one 128-byte (8 lanes) or 256-byte (16 lanes) global line
  copied to shared offset ``o`` (0, 16, .., 112): the cost of one row as a function of where it lands;
- ``sweep_L<l>_P<p>_g<g>``: one warp, one instruction, ``l`` lanes per row, shared pitch ``p``, global
  row stride ``g`` (``packed`` = ``16 l`` bytes, or 4096);
- ``swz_*`` controls, ``off16_*`` (shared start 16 mod 32), ``gmis_*`` (global line split), plain
  ``cp.async`` without zero-fill;

each ``cold`` (ncu flushes the caches before every launch: the line comes from DRAM) and, for most,
``warm`` (the kernel first reads the same bytes with ``ld.global.cg``, so the line is in L2).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hgemm_course.measurement.ncu import find_ncu, parse_raw

KERNEL_NAME = "ldgsts_probe"
METRICS = (
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
    "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
    "sm__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
    "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",
)
WAVEFRONTS, CONFLICTS, INSTRUCTIONS, REQUESTS, SECTORS = METRICS
GLOBAL_BYTES = 1 << 22

SOURCE = r"""
#include "cp_async.cuh"

// Thread t of iteration i copies 16 bytes from gmem + goff[i * blockDim.x + t] to shared offset
// soff[...]; goff < 0 leaves the lane idle. warm: read the same bytes first (ld.global.cg, into L2).
extern "C" __global__ void ldgsts_probe(const unsigned char* __restrict__ gmem, const int* __restrict__ goff,
                                        const int* __restrict__ soff, int iters, int warm, int zfill,
                                        unsigned* __restrict__ sink) {
    extern __shared__ __align__(1024) unsigned char smem[];
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    const int tid = threadIdx.x;
    const int n = blockDim.x;
    int g[16], s[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        g[i] = i < iters ? goff[i * n + tid] : -1;
        s[i] = i < iters ? soff[i * n + tid] : 0;
    }
    if (warm) {
        unsigned acc = 0;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            if (g[i] < 0) continue;
            unsigned a, b, c, d;
            asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(gmem + g[i]));
            acc ^= a ^ b ^ c ^ d;
        }
        if (acc == 0x9e3779b9u) sink[1] = acc;     // keeps the loads, and waits for them
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        if (g[i] < 0) continue;
        if (zfill) cp_async_16_zfill(base + s[i], gmem + g[i], zfill);   // src-size from a register, as in the rungs
        else cp_async_16(base + s[i], gmem + g[i]);
    }
    cp_async_commit_group();
    cp_async_wait_group<0>();
    __syncthreads();
    if (tid == 0) sink[0] = base;
}
"""


@dataclass
class Config:
    name: str
    goff: np.ndarray                 # (iters, threads) int32, -1 = idle
    soff: np.ndarray                 # (iters, threads) int32
    warm: bool = False
    zfill: bool = False
    note: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def iters(self) -> int:
        return self.goff.shape[0]

    @property
    def threads(self) -> int:
        return self.goff.shape[1]

    @property
    def smem_bytes(self) -> int:
        return int((self.soff.max() + 16 + 1023) // 1024 * 1024)

    def expected_instructions(self) -> int:
        """Warp instructions issued: one per warp and iteration with any active lane."""
        active = (self.goff >= 0).reshape(self.iters, -1, 32).any(axis=2)
        return int(active.sum())

    def requests(self) -> np.ndarray:
        """Shared byte addresses per warp instruction, (instructions, 32), -1 for idle lanes."""
        s = np.where(self.goff >= 0, self.soff, -1).reshape(self.iters, -1, 32).reshape(-1, 32)
        return s[(s >= 0).any(axis=1)]

    def global_requests(self) -> np.ndarray:
        g = self.goff.reshape(self.iters, -1, 32).reshape(-1, 32)
        return g[(g >= 0).any(axis=1)]


def _temp(name, warm):
    return f"{name}_{'warm' if warm else 'cold'}"


def layout(threads, iters, lanes_per_row, pitch, gstride, *, s0=0, g0=0, swizzle=False, panel_rows=None):
    """Offsets of a row-major tile copy: chunk c = i * threads + t is row c // L, chunk c % L."""
    c = np.arange(iters)[:, None] * threads + np.arange(threads)[None, :]
    row, chunk = c // lanes_per_row, c % lanes_per_row
    goff = g0 + row * gstride + 16 * chunk
    if swizzle:
        # 128-byte rows, chunk ^ row % 8; a wider row as panels of 8 chunks, panel_rows rows each
        panel, cin = chunk // 8, chunk % 8
        soff = s0 + panel * (panel_rows or 0) * 128 + row * 128 + 16 * (cin ^ (row % 8))
    else:
        soff = s0 + row * pitch + 16 * chunk
    return goff.astype(np.int32), soff.astype(np.int32)


def single(lanes_per_row, pitch, gstride, *, active=32, s0=0, g0=0, swizzle=False, panel_rows=None):
    goff, soff = layout(32, 1, lanes_per_row, pitch, gstride, s0=s0, g0=g0, swizzle=swizzle, panel_rows=panel_rows)
    goff[:, active:] = -1
    return goff, soff


def configs() -> list[Config]:
    out: list[Config] = []

    def add(name, offsets, warm=False, zfill=False, note="", **meta):
        out.append(Config(_temp(name, warm), *offsets, warm=warm, zfill=zfill, note=note, meta=meta))

    # 1. the rungs' own tile copies (one k-step of one CTA, 8 warps, zero-fill as the kernels do)
    real = {
        "real_padA": (layout(256, 8, 8, 144, 4096), "rung 03/04 A tile 256x64, pitch 144"),
        "real_padB": (layout(256, 4, 16, 272, 4096), "rung 03/04 B tile 64x128, pitch 272"),
        "real_swzA": (layout(256, 8, 8, 128, 4096, swizzle=True), "rung 05/06 A tile, 128B swizzle"),
        "real_swzB": (layout(256, 4, 16, 256, 4096, swizzle=True, panel_rows=64), "rung 05/06 B tile, 2 panels"),
    }
    for warm in (False, True):
        for name, (offs, note) in real.items():
            add(name, offs, warm=warm, zfill=True, note=note)
    # 2. one global line to every 16-byte offset in a 128-byte shared segment
    for warm in (False, True):
        for s0 in range(0, 128, 16):
            add(f"row8_s{s0}", single(8, 128, 4096, active=8, s0=s0), warm=warm, note="8 lanes, one 128B line")
    for s0 in range(0, 128, 16):
        add(f"row16_s{s0}", single(16, 256, 4096, active=16, s0=s0), note="16 lanes, one 256B row")
    # 3. the sweep: one warp, one instruction
    pitches = {8: (128, 144, 160, 192, 256, 272, 288, 512), 16: (256, 272, 288, 512), 32: (512,)}
    for warm in (False, True):
        for L, ps in pitches.items():
            for P in ps:
                for g in ("packed", 4096):
                    add(f"sweep_L{L}_P{P}_g{g}", single(L, P, 16 * L if g == "packed" else g), warm=warm,
                        note=f"{L} lanes/row, pitch {P}")
    # 4. controls and variants
    for warm in (False, True):
        for g in ("packed", 4096):
            add(f"swz_L8_g{g}", single(8, 128, 128 if g == "packed" else g, swizzle=True), warm=warm,
                note="128B swizzle, chunk ^ row%8")
    for g in ("packed", 4096):
        add(f"swz_L16_g{g}", single(16, 256, 256 if g == "packed" else g, swizzle=True, panel_rows=64),
            note="256B rows as two swizzled 128B panels")
    for L, P in ((8, 128), (8, 144), (16, 256), (16, 272)):
        add(f"off16_L{L}_P{P}", single(L, P, 4096, s0=16), note="shared start 16 mod 32")
    for s0 in (0, 64):
        add(f"gmis_row8_s{s0}", single(8, 128, 4096, active=8, s0=s0, g0=64), note="global line split at 64B")
    add("plain_padA", layout(256, 8, 8, 144, 4096), note="rung 03/04 A tile, cp.async without zero-fill")
    add("plain_padB", layout(256, 4, 16, 272, 4096), note="rung 03/04 B tile, cp.async without zero-fill")
    add("again_real_padA", layout(256, 8, 8, 144, 4096), zfill=True, note="repeat: is the count stable?")
    add("again_real_padB", layout(256, 4, 16, 272, 4096), zfill=True, note="repeat: is the count stable?")
    names = [c.name for c in out]
    assert len(names) == len(set(names)), "configuration names must be unique"
    return out


# ----------------------------------------------------------------------------- device side


def compile_probe():
    from hgemm_course.library.build import compile_cuda

    return compile_cuda(SOURCE)


def run(deadline_s: float) -> int:
    import cupy as cp

    function = compile_probe().function(KERNEL_NAME)
    gmem = cp.asarray(np.arange(GLOBAL_BYTES // 4, dtype=np.uint32))
    sink = cp.zeros(4, dtype=np.uint32)
    t0 = time.monotonic()
    launched = 0
    for i, c in enumerate(configs()):
        if time.monotonic() - t0 > deadline_s:
            print(f"deadline of {deadline_s:g}s reached: {launched} of {len(configs())} configurations launched")
            break
        if c.iters > 16:
            raise ValueError(f"{c.name}: at most 16 copy iterations per thread")
        if int(c.goff.max()) + 16 > GLOBAL_BYTES:
            raise ValueError(f"{c.name}: global offsets past the {GLOBAL_BYTES}-byte buffer")
        goff, soff = cp.asarray(c.goff.ravel()), cp.asarray(c.soff.ravel())
        function((1,), (c.threads,), (gmem, goff, soff, np.int32(c.iters), np.int32(c.warm), np.int32(16 if c.zfill else 0), sink),
                 shared_mem=c.smem_bytes)
        cp.cuda.runtime.deviceSynchronize()
        launched += 1
        if i == 0:
            print(f"shared base address of the dynamic tile: {int(sink[0].get()):#x}")
    print(f"launched {launched} configurations in {time.monotonic() - t0:.1f}s")
    return 0


def ncu_command(csv_path: Path, deadline_s: float, metrics=METRICS) -> list[str]:
    return [find_ncu() or "ncu", "--clock-control", "none", "--cache-control", "all", "--csv", "--page", "raw",
            "--print-units", "base", "--metrics", ",".join(metrics), "-k", f"regex:{KERNEL_NAME}",
            "--log-file", str(csv_path), sys.executable, str(Path(__file__).resolve()), "--run",
            "--deadline", str(deadline_s)]


def profile(folder: Path, deadline_s: float) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = folder / "ldgsts.csv"
    prov = []
    for args in (["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                 [find_ncu() or "ncu", "--version"]):
        try:
            prov.append(subprocess.run(args, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[-1])
        except (OSError, subprocess.SubprocessError, IndexError) as error:
            prov.append(f"{args[0]}: {error}")
    (folder / "provenance.txt").write_text(f"gpu,driver,max_sm_clock: {prov[0]}\nncu: {prov[1]}\n"
                                           f"measured_at: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n")
    for metrics in (METRICS, METRICS[:3]):    # the three core names were accepted on the H200 before
        t0 = time.monotonic()
        proc = subprocess.run(ncu_command(csv_path, deadline_s, metrics), text=True, capture_output=True)
        (folder / "run.log").write_text(proc.stdout + proc.stderr)
        print(proc.stdout[-2000:] + proc.stderr[-2000:])
        print(f"ncu exited {proc.returncode} after {time.monotonic() - t0:.1f}s")
        try:
            if any(KERNEL_NAME in r["name"] for r in read_rows(csv_path.read_text(errors="replace"))):
                break
        except (OSError, ValueError) as error:
            print(f"no usable CSV with {len(metrics)} metrics ({error}); {'retrying' if len(metrics) > 3 else 'giving up'}")
            if csv_path.exists():
                csv_path.rename(folder / f"ldgsts_failed_{len(metrics)}.csv")
            deadline_s = min(deadline_s, 40.0)
    return parse(csv_path, folder / "table.txt")


# ----------------------------------------------------------------------------- reading ncu back


def read_rows(text: str) -> list[dict]:
    """The kernel rows of ``ncu --csv --page raw`` (:func:`hgemm_course.measurement.ncu.parse_raw`), this probe's
    counters at the top level (None for n/a)."""
    return [{"name": r["name"], "id": r["id"], **{m: r["metrics"].get(m) for m in METRICS}} for r in parse_raw(text)]


def segments_per_phase(config: Config, segment=128, phase=8) -> int:
    """Candidate rule: distinct ``segment``-byte shared segments each ``phase``-lane group writes, summed."""
    total = 0
    for request in config.requests():
        for start in range(0, 32, phase):
            addrs = request[start:start + phase]
            addrs = addrs[addrs >= 0]
            if addrs.size:
                total += len(np.unique(addrs // segment))
    return total


def ideal(config: Config) -> int:
    return sum(-(-int((r >= 0).sum()) // 8) for r in config.requests())


def table(cfgs: list[Config], rows: list[dict]) -> str:
    head = (f"{'#':>3} {'configuration':<28}{'instr':>6}{'exp':>5}{'wavefr':>8}{'wf/inst':>8}{'ideal':>6}"
            f"{'seg128':>7}{'confl':>6}{'gsect':>6}{'greq':>5}  note")
    lines = [head]
    for i, c in enumerate(cfgs):
        if i >= len(rows):
            lines.append(f"{i:>3} {c.name:<28}  (not profiled)")
            continue
        r = rows[i]
        inst, wf = r[INSTRUCTIONS], r[WAVEFRONTS]
        flag = "" if inst == c.expected_instructions() else "  INSTRUCTION COUNT MISMATCH"

        def f(x, fmt=".0f"):
            return "-" if x is None else format(x, fmt)
        per = None if not inst or wf is None else wf / inst
        lines.append(f"{i:>3} {c.name:<28}{f(inst):>6}{c.expected_instructions():>5}{f(wf):>8}{f(per, '.3f'):>8}"
                     f"{ideal(c):>6}{segments_per_phase(c):>7}{f(r[CONFLICTS]):>6}{f(r[SECTORS]):>6}{f(r[REQUESTS]):>5}"
                     f"  {c.note}{flag}")
    lines.append(f"{len(rows)} ncu rows for {len(cfgs)} configurations; columns: instr = LDGSTS executed (exp = "
                 "expected), wavefr = shared wavefronts, ideal = one per 8-lane phase, seg128 = distinct 128B shared "
                 "segments per 8-lane phase, confl = bank conflicts, gsect/greq = global sectors/requests")
    return "\n".join(lines)


def parse(csv_path: Path, table_path: Path | None = None) -> int:
    rows = [r for r in read_rows(Path(csv_path).read_text(errors="replace")) if KERNEL_NAME in r["name"]]
    cfgs = configs()
    text = table(cfgs, rows)
    if table_path:
        Path(table_path).write_text(text + "\n")
    print(text)
    return 0 if rows else 1


def dry_run(deadline_s: float) -> int:
    cfgs = configs()
    print(f"{len(cfgs)} configurations, one launch of {KERNEL_NAME} each:")
    print(f"{'#':>3} {'configuration':<28}{'threads':>8}{'iters':>6}{'instr':>6}{'smem':>7}{'ideal':>6}{'seg128':>7}  note")
    for i, c in enumerate(cfgs):
        print(f"{i:>3} {c.name:<28}{c.threads:>8}{c.iters:>6}{c.expected_instructions():>6}{c.smem_bytes:>7}"
              f"{ideal(c):>6}{segments_per_phase(c):>7}  {c.note}")
    print("ncu command:", " ".join(ncu_command(Path("$OUT/ldgsts.csv"), deadline_s)))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--dry-run", action="store_true", help="print the plan and the ncu command")
    g.add_argument("--run", action="store_true", help="launch every configuration (under ncu)")
    g.add_argument("--profile", type=Path, metavar="DIR", help="run ncu over --run, then --parse")
    g.add_argument("--parse", type=Path, metavar="CSV", help="ncu's CSV -> the table")
    p.add_argument("--deadline", type=float, default=75.0, help="--run stops launching after this many seconds")
    p.add_argument("--out-table", type=Path)
    args = p.parse_args(argv)
    if args.dry_run:
        return dry_run(args.deadline)
    if args.run:
        return run(args.deadline)
    if args.profile:
        return profile(args.profile, args.deadline)
    return parse(args.parse, args.out_table)


if __name__ == "__main__":
    sys.exit(main())
