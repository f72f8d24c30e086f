# Question: what each change between rungs 07, 09, 10 and 11 pays, one change at a time, in time and SM cycles;
# what ring depth, wgmma wait depth, K-unroll and tile width do to the warp-specialized kernel; and how long the
# producer and the consumers of rung 10's ring wait on it.
# Results: results/tuning/2026-12-02/ablate_hopper/ (one JSON per group, with provenance; the ncu source page).
"""Rungs 07 -> 09 -> 10 -> 11 one change at a time, each variant verified, timed and clocked in one process.

    python3 research/ablate_hopper.py --record [--groups ...] [--sizes 4096 8192]     # or --out DIR
    python3 research/ablate_hopper.py --launch GROUP/LABEL --size 4096     # two launches, for ncu

Groups (each a report of the format hgemm_course.course.ablation.show reads, its group in its provenance; with
--record in the recorded results/probes/ablate_hopper/):
    07_to_09     rung 07; rung 07 at rung 09's tile, stages and super tile; rung 09; rung 09 with each of its
                 other settings put back (4 stages, 8x4 super tile, one CTA per SM, prefetch STAGES - 1)
    07_settings  rung 07 moved to rung 09's settings one at a time: the 128x128 tile (and with it 4 warps), then
                 3 stages, then the 16x2 super tile
    09_to_10     rung 09 at 4 stages; warp specialization with one consumer (1p1c) at 128x128; two
                 consumers (1p2c) at 128x128; 1p2c at 128x256 (rung 10)
    ring_depth   1p1c at 128x128 with 2, 3 and 4 stages (wgmma wait depth 0, so 2 stages can run), and rung 10
                 at 3 and 4 stages; each with the ring's waits measured by an instrumented build
    tile_width   1p2c, 128 rows, 4 stages, BN = 64, 128, 192, 256 (and widths the kernel refuses, with why)
    wait_unroll  rung 10 as it is, with wgmma wait depth 0, and with its K loop unrolled by 2
    10_to_11     rung 10; rung 11 without clusters launched non-persistent (one CTA per tile: the TMA-store
                 epilogue alone); the same persistent; with clusters of 2 sharing B (rung 11); clusters
                 non-persistent
Variants that change code are rung sources with the edits below applied, written under .ablate/; each edit
names the text it replaces and fails loudly when that text is gone. Each variant alternates launch by launch
with cuBLAS (% of cuBLAS) and with its own timing build (its SM cycles and clock: hgemm_course/library/cta_clock.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

import numpy as np

from hgemm_course.library import tensormap
from hgemm_course.measurement import records, timing, vendors, verification
from hgemm_course.library.ladder import r07_tma, r09_wgmma, r10_warp_specialized as r10, r11_persistent as r11
from hgemm_course.library.ladder.nvrtc_kernel import TemplateKernel, loaded_module
from hgemm_course.library.ladder.r06_supertile import grid_1d
from hgemm_course.library.paths import KERNELS_DIR

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablate_mma_feeding import verify  # noqa: E402 (the probes' one verification: random inputs, NaN-poisoned C)

ROOT = Path(__file__).resolve().parent.parent
ABLATE = ROOT / ".ablate"
TAIL_SHAPES = ((257, 136, 64), (1000, 1000, 1024), (128, 128, 128))

# ---------------------------------------------------------------- source edits (old text, new text)
# Rung 10 with one consumer warpgroup: the H800 post's 1p1c. The consumer then issues BM / 64 products per k16
# step on all BM rows; the launch bound follows the thread count.
ONE_CONSUMER = (("constexpr int CONSUMERS = 2;", "constexpr int CONSUMERS = 1;"),
                ("__launch_bounds__(384, 1)", "__launch_bounds__(256, 1)"))
# wgmma wait depth 0: each slice's products are waited for before its stage is freed, so the consumers free
# slice kt (not kt - 1) and two stages suffice.
K10_WAIT_DEPTH_0 = (("            wgmma_wait_group<1>();", "            wgmma_wait_group<0>();"),
                    ("if (kt > 0 && lane == 0) mbar_arrive(smem_u32(&ring.empty[(kt - 1) % STAGES]));",
                     "if (lane == 0) mbar_arrive(smem_u32(&ring.empty[kt % STAGES]));"),
                    ("static_assert(STAGES >= 3,", "static_assert(STAGES >= 2,"))
K10_CONSUMER_LOOP = "        for (int kt = 0; kt < k_tiles; ++kt) {\n            mbar_wait_parity(smem_u32(&ring.full"
K10_UNROLL_2 = ((K10_CONSUMER_LOOP, "#pragma unroll 2\n" + K10_CONSUMER_LOOP),)
# The ring's waits: each role sums the cycles its waits take and the cycles it runs, per warp (the producer's one
# thread, each consumer warp's lane 0), into two device counters the host reads after one launch.
_PRODUCER = ("        if (tid == 0) {\n            for (int kt = 0; kt < k_tiles; ++kt) {\n"
             "                if (kt >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[kt % STAGES]), "
             "(kt / STAGES - 1) % 2);\n")
_CONSUMER_WAIT = "            mbar_wait_parity(smem_u32(&ring.full[kt % STAGES]), (kt / STAGES) % 2);\n"
_CONSUMER_END = "        wgmma_wait_group<0>();                        // the last slice's products\n"
K10_RING_WAITS = (
    ('#include "wgmma.cuh"\n', '#include "wgmma.cuh"\n__device__ unsigned long long ring_wait_cycles[2];\n'
                               "__device__ unsigned long long ring_role_cycles[2];\n"),
    (_PRODUCER, "        if (tid == 0) {\n            long long waited = 0; const long long began = clock64();\n"
                "            for (int kt = 0; kt < k_tiles; ++kt) {\n"
                "                const long long t0 = clock64();\n"
                "                if (kt >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[kt % STAGES]), "
                "(kt / STAGES - 1) % 2);\n                waited += clock64() - t0;\n"),
    ("                load_tile(kt % STAGES, kt);\n            }\n        }\n",
     "                load_tile(kt % STAGES, kt);\n            }\n"
     "            atomicAdd(&ring_wait_cycles[0], (unsigned long long)waited);\n"
     "            atomicAdd(&ring_role_cycles[0], (unsigned long long)(clock64() - began));\n        }\n"),
    ("        for (int kt = 0; kt < k_tiles; ++kt) {\n" + _CONSUMER_WAIT,
     "        long long waited = 0; const long long began = clock64();\n"
     "        for (int kt = 0; kt < k_tiles; ++kt) {\n            { const long long t0 = clock64();\n"
     "  " + _CONSUMER_WAIT + "              waited += clock64() - t0; }\n"),
    (_CONSUMER_END, _CONSUMER_END + "        if (lane == 0) {\n"
     "            atomicAdd(&ring_wait_cycles[1], (unsigned long long)waited);\n"
     "            atomicAdd(&ring_role_cycles[1], (unsigned long long)(clock64() - began));\n        }\n"),
)
# Rung 09 with wgmma wait depth 0 and the prefetch distance of rung 07 (STAGES - 1): the slice is waited for
# before its stage is freed, so the producer may run one stage further ahead.
K09_PREFETCH_STAGES_1 = (("for (int s = 0; s < STAGES - 2; ++s) {", "for (int s = 0; s < STAGES - 1; ++s) {"),
                         ("const int next = kt + STAGES - 2;", "const int next = kt + STAGES - 1;"),
                         ("        wgmma_wait_group<1>();", "        wgmma_wait_group<0>();"),
                         ("if (kt > 0 && lane == 0) mbar_arrive(smem_u32(&ring.empty[(kt - 1) % STAGES]));",
                          "if (lane == 0) mbar_arrive(smem_u32(&ring.empty[kt % STAGES]));"))


def edited_source(source: str, name: str, *edit_lists) -> Path:
    """hgemm_course/library/kernels/SOURCE with the edits applied, written as .ablate/NAME.cu (found there, like the
    kernels' own, by the includes' search path: the compiler is given the file's path)."""
    text = (KERNELS_DIR / source).read_text()
    for edits in edit_lists:
        for old, new in edits:
            if text.count(old) != 1:
                raise SystemExit(f"{source}: {old!r} occurs {text.count(old)} times, not once")
            text = text.replace(old, new)
    ABLATE.mkdir(exist_ok=True)
    path = ABLATE / f"{name}.cu"
    path.write_text(text)
    return path


# ---------------------------------------------------------------- variants
WS = r10.WarpSpecializedTiles


def k10_kernel(tiles, consumers: int = 2, edits=(), name: str | None = None, super_mn=r10.SUPER) -> TemplateKernel:
    """Rung 10's kernel for ``tiles`` with ``consumers`` consumer warpgroups and the given source edits."""
    edit_lists = ((ONE_CONSUMER,) if consumers == 1 else ()) + tuple(edits)
    source = str(edited_source(r10.SOURCE, name, *edit_lists)) if edit_lists else r10.SOURCE
    if tiles.stages >= 3:
        tiles.check(r07_tma.smem_bytes(tiles), consumers)
    return TemplateKernel(source, "k10_warp_specialized",
                          (*tiles.template_args, *super_mn, r10.PRODUCER_REGS, r10.CONSUMER_REGS),
                          128 * (1 + consumers), r07_tma.smem_bytes(tiles), needs=r10.NEEDS,
                          grid=lambda M, N: grid_1d(M, N, tiles, super_mn), smem_layout=r07_tma.tma_ring(tiles))


def k10_source_name(consumers: int, edits) -> str | None:
    """The .ablate/ name of rung 10's source with one consumer and/or wait depth 0 (None: the source as it is)."""
    if consumers == 2 and not edits:
        return None
    return "k10" + ("_1p1c" if consumers == 1 else "") + ("_wait0" if edits else "")


def tma_launch(kernel: TemplateKernel, bm: int, bk: int = 64):
    def launch(a, b, c):
        kernel.launch(a, b, c, *tensormap.tensor_maps(a, b, bm, bk))
    return launch


def r11_launch(tiles, cluster_m: int, persistent: bool):
    kernel = r11.kernel(tiles, r11.SUPER, None, cluster_m, 2)
    if not persistent:                  # one CTA per launch position: every tile its own CTA, waves of them
        kernel = dataclasses.replace(kernel, grid=lambda M, N: (r11.launch_positions(M, N, tiles, r11.SUPER,
                                                                                     cluster_m),))

    def launch(a, b, c):
        kernel.launch(a, b, c, *tensormap.tensor_maps(a, b, tiles.bm, tiles.bk),
                      r11._map_c(c.data.ptr, *c.shape, tiles.bm // 2))
    return kernel, launch


RING_DEPTH = {                   # the ring_depth group, label -> (tiles, consumers, edits); each also has its
                                 # ring's waits measured (ring_waits)
    "1p1c 128x128 s2 wait 0": (WS(bm=128, bn=128, bk=64, stages=2), 1, (K10_WAIT_DEPTH_0,)),
    "1p1c 128x128 s3 wait 0": (WS(bm=128, bn=128, bk=64, stages=3), 1, (K10_WAIT_DEPTH_0,)),
    "1p1c 128x128 s4 wait 0": (WS(bm=128, bn=128, bk=64, stages=4), 1, (K10_WAIT_DEPTH_0,)),
    "1p1c 128x128 s3 wait 1": (WS(bm=128, bn=128, bk=64, stages=3), 1, ()),
    "1p1c 128x128 s4 wait 1": (WS(bm=128, bn=128, bk=64, stages=4), 1, ()),
    "10 128x256 s3": (dataclasses.replace(r10.TILES, stages=3), 2, ()),
    "10 128x256 s4 (rung 10)": (r10.TILES, 2, ()),
}


def groups() -> dict[str, list]:
    """group -> [(label, builder)]: a builder gives (kernel, launch) or raises ValueError with the refusal."""
    t09 = r09_wgmma.TILES
    t128 = WS(bm=128, bn=128, bk=64, stages=4)
    t10 = r10.TILES

    def r07(tiles, super_mn):
        return lambda: (r07_tma.kernel(tiles, super_mn), lambda a, b, c: r07_tma.launch(a, b, c, tiles, super_mn))

    def r09(tiles=t09, super_mn=r09_wgmma.SUPER, extra_smem=0, edits=(), name=None):
        def build():
            kernel = r09_wgmma.kernel(tiles, super_mn)
            if edits:
                kernel = dataclasses.replace(kernel, source=str(edited_source(r09_wgmma.SOURCE, name, edits)))
            if extra_smem:                  # more shared memory than the ring needs, so that one CTA fits per SM
                kernel = dataclasses.replace(kernel, smem_bytes=kernel.smem_bytes + extra_smem, smem_layout=None)
            return kernel, tma_launch(kernel, tiles.bm)
        return build

    def k10(tiles, consumers=2, edits=(), name=None):
        def build():
            kernel = k10_kernel(tiles, consumers, edits, name)
            return kernel, tma_launch(kernel, tiles.bm)
        return build

    r07_at_09 = r07_tma.MmaTiles(bm=128, bn=128, bk=64, wm=64, wn=64, stages=3)
    widths = [(f"1p2c 128x{bn}", k10(WS(bm=128, bn=bn, bk=64, stages=4))) for bn in
              (64, 128, 192, 256)]
    widths += [(f"1p2c 128x{bn} (refused)", k10(WS(bm=128, bn=bn, bk=64, stages=4))) for bn in (160, 320)]
    widths += [("1p2c 128x256, 5 stages (refused)", k10(WS(bm=128, bn=256, bk=64, stages=5)))]
    return {
        "07_to_09": [
            ("07 as it is", r07(r07_tma.TILES, r07_tma.SUPER)),
            ("07 at 09's 128x128 s3 16x2", r07(r07_at_09, r09_wgmma.SUPER)),
            ("09 wgmma", r09()),
            ("09 + 4 stages", r09(dataclasses.replace(t09, stages=4))),
            ("09 + 8x4 super tile", r09(super_mn=(8, 4))),
            ("09 + 1 CTA/SM", r09(extra_smem=100 * 1024)),
            ("09 + wait 0, prefetch S-1", r09(edits=K09_PREFETCH_STAGES_1, name="k09_prefetch_stages_1")),
        ],
        "07_settings": [
            ("07 as it is", r07(r07_tma.TILES, r07_tma.SUPER)),
            ("07 at 128x128, 4 warps", r07(dataclasses.replace(r07_at_09, stages=r07_tma.TILES.stages), r07_tma.SUPER)),
            ("07 at 128x128 s3", r07(r07_at_09, r07_tma.SUPER)),
            ("07 at 09's 128x128 s3 16x2", r07(r07_at_09, r09_wgmma.SUPER)),
        ],
        "09_to_10": [
            ("09 at 4 stages", r09(dataclasses.replace(t09, stages=4))),
            ("10 1p1c 128x128", k10(t128, 1, name="k10_1p1c")),
            ("10 1p2c 128x128", k10(t128, 2)),
            ("10 1p2c 128x256 (rung 10)", k10(t10, 2)),
        ],
        "ring_depth": [(label, k10(tiles, consumers, edits, k10_source_name(consumers, edits)))
                       for label, (tiles, consumers, edits) in RING_DEPTH.items()],
        "tile_width": widths,
        "wait_unroll": [
            ("10 as it is (wait 1)", k10(t10)),
            ("10 wait 0", k10(t10, 2, (K10_WAIT_DEPTH_0,), "k10_wait0")),
            ("10 K loop unrolled by 2", k10(t10, 2, (K10_UNROLL_2,), "k10_unroll2")),
        ],
        "10_to_11": [
            ("10 as it is", k10(t10)),
            ("11 no cluster, non-persistent", lambda: r11_launch(r11.TILES, 1, False)),
            ("11 no cluster, persistent", lambda: r11_launch(r11.TILES, 1, True)),
            ("11 cluster 2, persistent (rung 11)", lambda: r11_launch(r11.TILES, 2, True)),
            ("11 cluster 2, non-persistent", lambda: r11_launch(r11.TILES, 2, False)),
        ],
    }


# ---------------------------------------------------------------- ring waits
def ring_waits(label: str, tiles, consumers: int, edits, n: int) -> dict:
    """One launch of the variant's instrumented build at n^3: each role's cycles spent waiting on the ring over
    the cycles it ran (per warp, summed over the grid)."""
    import cupy

    kernel = k10_kernel(tiles, consumers, (*edits, K10_RING_WAITS), "ring_waits_" + "".join(ch if ch.isalnum() else "_" for ch in label))
    a, b, _ = verification.random_inputs(n, n, n, xp=cupy)
    c = cupy.empty((n, n), cupy.float16)
    launch = tma_launch(kernel, tiles.bm)
    launch(a, b, c)                                     # loads the module
    module = loaded_module(kernel, cupy.cuda.runtime.getDevice())
    counters = {name: module.get_global(name) for name in ("ring_wait_cycles", "ring_role_cycles")}
    for ptr in counters.values():
        ptr.memset_async(0, 16)
    launch(a, b, c)
    cupy.cuda.runtime.deviceSynchronize()
    got = {}
    for name, ptr in counters.items():
        host = np.zeros(2, np.uint64)
        ptr.copy_to_host(host.ctypes.data, 16)
        got[name] = [int(x) for x in host]
    waited, ran = got["ring_wait_cycles"], got["ring_role_cycles"]
    return {"size": n, "producer_wait_pct": 100 * waited[0] / ran[0] if ran[0] else None,
            "consumer_wait_pct": 100 * waited[1] / ran[1] if ran[1] else None, **got}




# ---------------------------------------------------------------- the run
def run_group(name: str, variants: list, sizes, repeats: int) -> list[dict]:
    import cupy

    gpu_l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    rows = []
    for label, build in variants:
        try:
            kernel, launch = build()
            res = kernel.compile().resources_of(kernel.name_expression)
        except (ValueError, SystemExit) as exc:
            rows.append({"label": label, "refused": str(exc), "timing": {}})
            print(f"{name} / {label}: refused: {exc}", flush=True)
            continue
        checks = [verify(launch, *shape) for shape in (*TAIL_SHAPES, *((n, n, n) for n in sizes))]
        row = {"label": label, "kernel": kernel.name_expression, "source": Path(kernel.source).name,
               "threads": kernel.threads, "smem_bytes": kernel.smem_bytes, "registers": res.registers,
               "spill_bytes": res.spills, "verified": all(c.passed for c in checks),
               "verify": [c.summary() for c in checks], "timing": {}}
        for n in sizes if row["verified"] else ():
            sets = timing.input_sets(n, n, n, gpu_l2)
            vs_cublas = timing.time_paired(launch, vendors.cublas, sets, warmup=5, repeats=repeats)
            clocked = timing.time_with_clock(launch, sets, warmup=5, repeats=timing.MIN_REPEATS)
            ms, cms = statistics.median(vs_cublas.fn_ms), statistics.median(vs_cublas.reference_ms)
            row["timing"][n] = {
                "ms": ms, "cublas_ms": cms, "pct_cublas": 100 * cms / ms, "tflops": timing.tflops(n, n, n, ms),
                "pct_cublas_pairs": [100 * c / f for f, c in zip(vs_cublas.fn_ms, vs_cublas.reference_ms)],
                **(clocked.summary() if clocked else {})}
        if name == "ring_depth" and row["verified"] and label in RING_DEPTH:
            row["ring_waits"] = ring_waits(label, *RING_DEPTH[label], max(sizes))
        rows.append(row)
        cells = ", ".join(f"{n}: {t['pct_cublas']:.1f}% of cuBLAS, {t.get('cycles', 0) / 1e6:.3f} Mcycles at "
                          f"{t.get('clock_ghz') or 0:.3f} GHz" for n, t in row["timing"].items())
        waits = row.get("ring_waits")
        extra = (f"; waits: producer {waits['producer_wait_pct']:.1f}%, consumers {waits['consumer_wait_pct']:.1f}%"
                 if waits else "")
        print(f"{name} / {label}: regs {res.registers}, spills {res.spills}, verified {row['verified']}; "
              f"{cells}{extra}", flush=True)
    return rows


SIZES = {"tile_width": (8192,)}          # the other groups run at --sizes


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="folder for the reports")
    p.add_argument("--record", action="store_true", help="write them to the recorded results/probes/ablate_hopper/")
    p.add_argument("--groups", nargs="+", default=None, help="groups to run (default: all)")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--launch", help="GROUP/LABEL: launch that variant twice at --size and exit (for ncu)")
    p.add_argument("--size", type=int, default=4096)
    args = p.parse_args()
    import cupy

    table = groups()
    if args.launch:
        group, label = args.launch.split("/", 1)
        _, launch = dict(table[group])[label]()
        a, b, _ = verification.random_inputs(args.size, args.size, args.size, xp=cupy)
        c = cupy.empty((args.size, args.size), cupy.float16)
        launch(a, b, c)
        launch(a, b, c)
        cupy.cuda.runtime.deviceSynchronize()
        return 0
    failed = False
    for name in args.groups or table:
        sizes = SIZES.get(name, tuple(args.sizes))
        rows = run_group(name, table[name], sizes, args.repeats)
        failed |= any(r.get("verified") is False for r in rows)
        if args.out or args.record:
            print("written", records.write_probe({"variants": rows}, probe="ablate_hopper", folder=args.out,
                                                 extra={"group": name, "sizes": list(sizes), "repeats": args.repeats}))
        print(f"\n{name}: {'variant':<36}" + "".join(f"{f'{n}^3: %cuBLAS Mcycles  GHz':>30}" for n in sizes))
        for row in rows:
            cells = "".join(f"{t['pct_cublas']:>15.1f}{(t.get('cycles') or 0) / 1e6:>9.3f}{t.get('clock_ghz') or 0:>6.3f}"
                            if (t := row["timing"].get(n)) else f"{'-':>30}" for n in sizes)
            print(f"{'':>{len(name) + 2}}{row['label']:<36}{cells}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
