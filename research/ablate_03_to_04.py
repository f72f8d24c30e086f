# Question: what each change from rung 03 to rung 04 gains, in time and in SM cycles, and which counters move.
# Results: results/tuning/2026-12-02/ablate_03_to_04* (the JSON holds provenance, every variant's verification,
# times, cycles and clock; the ncu CSVs the counters).
"""Rung 03 to rung 04 one change at a time, each variant verified, timed and clocked in one process.

    python3 research/ablate_03_to_04.py --record [--sizes 4096 8192] [--ncu-size 8192]   # or --out DIR
    python3 research/ablate_03_to_04.py --launch LABEL --size 8192      # two launches, for ncu

The variants are rung 04's kernel as committed at each step of its history (``git show``), each with one
more change than the one before, all launched through rung 04's launcher with rung 03's tiles until the
last two steps change the tiles:

    03 wmma                      rung 03 as it is (256x128 tiles, 3 stages)
    04a mma.sync for wmma        ldmatrix + mma.sync in rung 03's loop (930698b)
    04b + fragment buffers       two fragment buffers; a slice's copies still leave in one burst (806bd61, edited)
    04c + spread copies          the next slice's copies spread over the k-steps (806bd61)
    04d + whole-tile build       no tail guards where M, N, K are whole tiles (d5d2e19)
    04e + copy addresses         each thread's copy addresses worked out once (the current kernel)
    04f + 4 stages               the current kernel, 256x128, 4 stages
    04  + 128x256 tiles          rung 04 as it is

Each variant alternates launch by launch with cuBLAS (% of cuBLAS) and with its own timing build (its SM
cycles and the clock it ran at: hgemm_course/library/cta_clock.py). The historical sources get the timing build's
one line where the current kernels have it.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

from hgemm_course.library.paths import raw_dir
from hgemm_course.measurement import ncu, profile, records, timing, vendors, verification
from hgemm_course.library.ladder import r03_wmma, r04_mma_sync
from hgemm_course.library.ladder.nvrtc_kernel import launched_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablate_mma_feeding import verify  # noqa: E402 (the probes' one verification: random inputs, NaN-poisoned C)

ROOT = Path(__file__).resolve().parent.parent
ABLATE = ROOT / ".ablate"
TAIL_SHAPES = ((257, 136, 64), (1000, 1000, 1024), (128, 128, 128))
R03 = r03_wmma.TILES                                   # 256x128, 3 stages
R03_4_STAGES = dataclasses.replace(R03, stages=4)
CLOCK_LINE = "    const CtaClock cta_clock;  // the timing build logs this CTA's start and end (cta_clock.cuh)\n"
BURST = (("constexpr int COPY_PARTS = K_STEPS - 1;", "constexpr int COPY_PARTS = 1;"),
         ("if (next < k_tiles) load_tile(next % STAGES, next, kk);",
          "if (next < k_tiles && kk == 0) load_tile(next % STAGES, next, 0);"))
NCU_METRICS = (ncu.SM_CLOCK, "sm__cycles_elapsed.max", ncu.TENSOR_PIPE_ACTIVE,
               ncu.SCALAR_METRICS["issue_active_pct"], ncu.SCALAR_METRICS["duration_ns"],
               *(ncu.STALL_METRIC.format(r) for r in ("long_scoreboard", "barrier", "short_scoreboard",
                                                      "mio_throttle", "math_pipe_throttle", "wait")))


def historical_source(commit: str, name: str, edits=()) -> Path:
    """k04_mma_sync.cu as committed at ``commit``, with ``edits`` and the timing build's line, under .ablate/
    (where there is no git history, as on the device machine, the file written there before)."""
    path = ABLATE / f"k04_{name}.cu"
    shown = subprocess.run(["git", "show", f"{commit}:hgemm_course/library/kernels/k04_mma_sync.cu"], cwd=ROOT,
                           capture_output=True, text=True)
    if shown.returncode != 0 and path.is_file():
        return path
    text = shown.stdout
    for old, new in edits:
        if old not in text:
            raise SystemExit(f"k04_mma_sync.cu at {commit}: {old!r} not found")
        text = text.replace(old, new)
    if "CtaClock" not in text:
        head = re.search(r"\nk04_mma_sync\([^{]*\{\n", text)
        text = text[:head.end()] + CLOCK_LINE + text[head.end():]
    ABLATE.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def variants() -> list[dict]:
    """label, launcher module, source (None: the current one), tiles, and whether the source has WHOLE_TILES."""
    return [
        {"label": "03 wmma", "module": r03_wmma, "source": None, "tiles": R03, "whole": False},
        {"label": "04a mma.sync for wmma", "module": r04_mma_sync, "tiles": R03, "whole": False,
         "source": historical_source("930698b", "mma_only")},
        {"label": "04b + fragment buffers", "module": r04_mma_sync, "tiles": R03, "whole": False,
         "source": historical_source("806bd61", "fragment_buffers", BURST)},
        {"label": "04c + spread copies", "module": r04_mma_sync, "tiles": R03, "whole": False,
         "source": historical_source("806bd61", "spread_copies")},
        {"label": "04d + whole-tile build", "module": r04_mma_sync, "tiles": R03, "whole": True,
         "source": historical_source("d5d2e19", "whole_tiles")},
        {"label": "04e + copy addresses", "module": r04_mma_sync, "source": None, "tiles": R03, "whole": True},
        {"label": "04f + 4 stages", "module": r04_mma_sync, "source": None, "tiles": R03_4_STAGES, "whole": True},
        {"label": "04 + 128x256 tiles", "module": r04_mma_sync, "source": None, "tiles": r04_mma_sync.TILES,
         "whole": True},
    ]


def launcher(variant: dict):
    """(kernel_for(M, N, K), launch(a, b, c)) through the rung's own launcher, the source swapped; a source
    from before the WHOLE_TILES parameter gets the tail-guarded kernel at every shape."""
    module, tiles = variant["module"], variant["tiles"]

    def kernel_for(M, N, K):
        kernel = launched_kernel(module, M, N, K, tiles=tiles)
        if module is r04_mma_sync and not variant["whole"]:
            kernel = r04_mma_sync.kernel(tiles, False)
            if variant["source"] is not None:      # that source has no WHOLE_TILES parameter yet
                kernel = dataclasses.replace(kernel, template_args=kernel.template_args[:-1])
        return dataclasses.replace(kernel, source=str(variant["source"])) if variant["source"] else kernel

    def launch(a, b, c):
        (M, K), N = a.shape, b.shape[1]
        kernel_for(M, N, K).launch(a, b, c)

    return kernel_for, launch


def counters(label: str, size: int, out: Path) -> dict:
    """ncu on the second of two launches of the variant (--clock-control none): the metrics above."""
    ncu = profile.require_ncu()
    log = ncu_log(out, label, size)
    subprocess.run([ncu, "--clock-control", "none", "--cache-control", "all", "--print-units", "base", "--csv",
                    "--page", "raw", "--metrics", ",".join(NCU_METRICS), "-k", "regex:^k0[34]", "--launch-skip", "1",
                    "--launch-count", "1", "--log-file", str(log), sys.executable, __file__, "--launch", label,
                    "--size", str(size)], check=True, capture_output=True)
    from hgemm_course.measurement import ncu as ncu_csv

    row = ncu_csv.read_raw(log)[0]["metrics"]
    return {name: row.get(name) for name in NCU_METRICS}


def ncu_log(out: Path, label: str, size: int) -> Path:
    return out / f"ncu_{re.sub(r'[^A-Za-z0-9]+', '_', label).strip('_')}_{size}.csv"


def reread(out: Path) -> int:
    """The ncu fields of a run's JSON read again from the CSVs ncu wrote beside it (the JSON's provenance says so)."""
    from hgemm_course.measurement import ncu as ncu_csv

    path = out / "ablate_03_to_04.json"
    data = json.loads(path.read_text())
    size = data["provenance"]["ncu_size"]
    for row in data["variants"]:
        got = ncu_csv.read_raw(ncu_log(out, row["label"], size))[0]["metrics"]
        row["ncu"] = {str(size): {name: got.get(name) for name in NCU_METRICS}}
    data["provenance"]["ncu_reread"] = "ncu fields read from the CSVs by --reread"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="folder for the report and ncu's CSVs")
    p.add_argument("--record", action="store_true", help="write the report to the recorded "
                   "results/probes/ablate_03_to_04/ and ncu's CSVs to results/ncu/ablate_03_to_04/")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--ncu-size", type=int, default=0, help="profile each variant at this n^3 (0: no ncu)")
    p.add_argument("--launch", help="launch this variant twice at --size and exit (for ncu)")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--reread", type=Path, metavar="DIR",
                   help="fill the ncu fields of DIR/ablate_03_to_04.json from the CSVs beside it, and exit")
    args = p.parse_args()
    raw = args.out or (raw_dir("ablate_03_to_04") if args.record else None)     # ncu's CSVs
    if args.reread:
        return reread(args.reread)
    import cupy

    table = {v["label"]: v for v in variants()}
    if args.launch:
        _, launch = launcher(table[args.launch])
        a, b, _ = verification.random_inputs(args.size, args.size, args.size, xp=cupy)
        c = cupy.empty((args.size, args.size), cupy.float16)
        launch(a, b, c)
        launch(a, b, c)
        cupy.cuda.runtime.deviceSynchronize()
        return 0
    gpu_l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    rows = []
    for v in table.values():
        kernel_for, launch = launcher(v)
        kernel = kernel_for(max(args.sizes), max(args.sizes), max(args.sizes))
        res = kernel.compile().resources_of(kernel.name_expression)
        checks = [verify(launch, *shape) for shape in (*TAIL_SHAPES, *((n, n, n) for n in args.sizes))]
        row = {"label": v["label"], "kernel": kernel.name_expression,
               "source": str(v["source"].relative_to(ROOT)) if v["source"] else kernel.source,
               "registers": res.registers, "spill_bytes": res.spills, "verified": all(c.passed for c in checks),
               "verify": [c.summary() for c in checks], "timing": {}}
        for n in args.sizes if row["verified"] else ():
            sets = timing.input_sets(n, n, n, gpu_l2)
            vs_cublas = timing.time_paired(launch, vendors.cublas, sets, warmup=5, repeats=args.repeats)
            clocked = timing.time_with_clock(launch, sets, warmup=5, repeats=timing.MIN_REPEATS)
            ms, cms = statistics.median(vs_cublas.fn_ms), statistics.median(vs_cublas.reference_ms)
            row["timing"][n] = {
                "ms": ms, "cublas_ms": cms, "pct_cublas": 100 * cms / ms, "tflops": timing.tflops(n, n, n, ms),
                "pct_cublas_pairs": [100 * c / f for f, c in zip(vs_cublas.fn_ms, vs_cublas.reference_ms)],
                **clocked.summary()}
        if args.ncu_size and row["verified"] and raw:
            raw.mkdir(parents=True, exist_ok=True)
            row["ncu"] = {args.ncu_size: counters(v["label"], args.ncu_size, raw)}
        rows.append(row)
        print(f"{v['label']}: regs {res.registers}, spills {res.spills}, verified {row['verified']}, "
              + ", ".join(f"{n}: {t['pct_cublas']:.1f}% of cuBLAS, {t['cycles'] / 1e6:.3f} Mcycles at "
                          f"{t['clock_ghz']:.3f} GHz" for n, t in row["timing"].items()), flush=True)
    if args.out or args.record:
        print("written", records.write_probe({"variants": rows}, probe="ablate_03_to_04", folder=args.out,
                                             extra={"sizes": args.sizes, "repeats": args.repeats,
                                                    "ncu_size": args.ncu_size}))
    print(f"\n{'variant':<26}{'regs':>5}" + "".join(f"{f'{n}^3: % cuBLAS  Mcycles  GHz':>34}" for n in args.sizes))
    for row in rows:
        cells = "".join(f"{t['pct_cublas']:>17.1f}{t['cycles'] / 1e6:>9.3f}{t['clock_ghz']:>6.3f}"
                        if (t := row["timing"].get(n)) else f"{'FAILED verification':>32}" for n in args.sizes)
        print(f"{row['label']:<26}{row['registers']:>5}{cells}")
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
