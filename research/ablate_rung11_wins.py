# Question: on big squares, does either of two remaining ideas pay on rung 11: multicast of A as well as B (clusters
# of 2 x 2 CTAs), or a Hilbert launch order of the cluster tiles?
# Results: results/tuning/2026-12-01/rung11_wins/ (see its README).
"""Rung 11 variants timed in pairs with cuBLAS on the GPU, each verified first.

    python3 research/ablate_rung11_wins.py --record [--sizes 2048 4096 8192] [--rounds 2] [--only LABEL ...]
    python3 research/ablate_rung11_wins.py --launch LABEL --size 8192      # one warm-up + one launch, for ncu
    python3 research/ablate_rung11_wins.py --verify-only                    # tails only (for compute-sanitizer)

A variant is rung 11's launcher (its tiles, stages, tensor maps) with the kernel source rewritten from the
current k11_persistent.cu into .ablate/ (which git ignores), so the variants follow the rung as it changes:
- "11 a+b multicast": clusters of 2 x 2 CTAs. The two CTAs of a cluster row share A: each loads 64 of the 128 rows
  of A's slice and multicasts them to both; the two of a cluster column share B as in rung 11 (two panels each).
  A consumer warp frees a stage on all four CTAs' empty barriers. The cluster tiles are 256 x 512.
- "11 hilbert": the cluster tiles in the order of a Hilbert curve over the enclosing power-of-two square (positions
  outside the grid skipped), instead of rung 06's super tiles.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import statistics
import sys
from pathlib import Path

from ablate_mma_feeding import verify         # research/, on the path when run as a script

from hgemm_course.library import device, tensormap
from hgemm_course.measurement import clocks, records, timing, vendors, verification
from hgemm_course.library.ladder import r11_persistent as r11
from hgemm_course.library.ladder.nvrtc_kernel import cdiv

ROOT = Path(__file__).resolve().parent.parent
ABLATE = ROOT / ".ablate"
SOURCE = ROOT / "hgemm_course" / "library" / "kernels" / r11.SOURCE
TAIL_SHAPES = ((257, 136, 72), (1000, 1992, 1024), (640, 768, 4096), (3000, 2000, 1000), (2304, 2304, 2048),
               (130, 1032, 520))


def rewritten(name: str, edits: list[tuple[str, str]]) -> Path:
    text = SOURCE.read_text()
    for old, new in edits:
        if old not in text:
            raise SystemExit(f"{SOURCE.name} changed: {old[:60]!r} not found")
        text = text.replace(old, new)
    ABLATE.mkdir(exist_ok=True)
    path = ABLATE / f"k11_{name}.cu"
    path.write_text(text)
    return path


def a_multicast_source() -> Path:
    """Clusters of CLUSTER_M x 2 CTAs (rank = rank_m + CLUSTER_M * rank_n); needs CLUSTER_M = 2 and A's tensor
    map in boxes of (BM / 2, BK)."""
    walk = ("const int2 tile = tile_of<SUPER_CM, SUPER_N>(t, grid_cm, grid_n);\n"
            "                if (tile.x >= grid_cm || tile.y >= grid_n) continue;")
    return rewritten("a_multicast", [
        ("__cluster_dims__(CLUSTER_M, 1, 1)", "__cluster_dims__(CLUSTER_M * 2, 1, 1)"),
        ("const int tiles = cdiv(grid_cm, SUPER_CM) * cdiv(grid_n, SUPER_N) * SUPER_CM * SUPER_N;",
         "static_assert(CLUSTER_M == 2, \"2 x 2 clusters\");\n"
         "    const int grid_cn = cdiv(grid_n, 2);\n"
         "    constexpr int SUPER_CN = SUPER_N / 2 > 0 ? SUPER_N / 2 : 1;\n"
         "    const int tiles = cdiv(grid_cm, SUPER_CM) * cdiv(grid_cn, SUPER_CN) * SUPER_CM * SUPER_CN;"),
        ("const int rank = CLUSTER_M > 1 ? cluster_ctarank() : 0;",
         "const int rank = cluster_ctarank() % CLUSTER_M; const int rank_n = cluster_ctarank() / CLUSTER_M;"),
        ("const int cluster = blockIdx.x / CLUSTER_M;", "const int cluster = blockIdx.x / (CLUSTER_M * 2);"),
        ("const int clusters = gridDim.x / CLUSTER_M;", "const int clusters = gridDim.x / (CLUSTER_M * 2);"),
        (walk, walk.replace("tile_of<SUPER_CM, SUPER_N>(t, grid_cm, grid_n)", "tile_of<SUPER_CM, SUPER_CN>(t, grid_cm, grid_cn)")
         .replace("tile.y >= grid_n", "tile.y >= grid_cn")),
        ("const int2 tile = tile_of<SUPER_CM, SUPER_N>(t, grid_cm, grid_n);\n"
         "            if (tile.x >= grid_cm || tile.y >= grid_n) continue;",
         "const int2 tile = tile_of<SUPER_CM, SUPER_CN>(t, grid_cm, grid_cn);\n"
         "            if (tile.x >= grid_cm || tile.y >= grid_cn) continue;"),
        ("load_tile(it % STAGES, kt, (tile.x * CLUSTER_M + rank) * BM, tile.y * BN);",
         "load_tile(it % STAGES, kt, (tile.x * CLUSTER_M + rank) * BM, (tile.y * 2 + rank_n) * BN);"),
        ("const int n0 = tile.y * BN;", "const int n0 = (tile.y * 2 + rank_n) * BN;"),
        ("tma_load_2d(a_stage, &tmap_a, k0, m0, full);",
         "tma_load_2d_multicast(a_stage + rank_n * (BM / 2) * 128, &tmap_a, k0, m0 + rank_n * (BM / 2), full,\n"
         "                              (1 << rank) | (1 << (rank + CLUSTER_M)));"),
        ("full, (1 << CLUSTER_M) - 1);", "full, ((1 << CLUSTER_M) - 1) << (rank_n * CLUSTER_M));"),
        ("if (lane < CLUSTER_M) mbar_arrive_cluster", "if (lane < CLUSTER_M * 2) mbar_arrive_cluster"),
        ("mbar_init(smem_u32(&ring.empty[s]), CLUSTER_M * (THREADS - 128) / 32);",
         "mbar_init(smem_u32(&ring.empty[s]), CLUSTER_M * 2 * (THREADS - 128) / 32);"),
    ])


HILBERT = """
// Launch position d -> (row, column) of a Hilbert curve over a side x side square (side a power of two).
__device__ __forceinline__ int2 hilbert_tile(int d, int side) {
    int x = 0, y = 0;
    for (int s = 1; s < side; s *= 2) {
        const int rx = (d / 2) & 1, ry = (d ^ rx) & 1;
        if (ry == 0) {
            if (rx == 1) { x = s - 1 - x; y = s - 1 - y; }
            const int swap = x; x = y; y = swap;
        }
        x += s * rx;
        y += s * ry;
        d /= 4;
    }
    return {x, y};
}
"""


def hilbert_source() -> Path:
    return rewritten("hilbert", [
        ("// The shared memory of rung 11:", HILBERT + "\n// The shared memory of rung 11:"),
        ("const int tiles = cdiv(grid_cm, SUPER_CM) * cdiv(grid_n, SUPER_N) * SUPER_CM * SUPER_N;",
         "int side = 1;\n    while (side < grid_cm || side < grid_n) side *= 2;\n    const int tiles = side * side;"),
        ("tile_of<SUPER_CM, SUPER_N>(t, grid_cm, grid_n);\n                if",
         "hilbert_tile(t, side);\n                if"),
        ("tile_of<SUPER_CM, SUPER_N>(t, grid_cm, grid_n);\n            if", "hilbert_tile(t, side);\n            if"),
    ])


@dataclasses.dataclass
class Variant:
    label: str
    source: Path | None           # None: rung 11's own kernel
    cluster_n: int = 1            # CTAs per cluster along N (2: A shared by multicast too)
    super_mn: tuple = r11.SUPER

    @functools.cached_property
    def kernel(self):
        """Built once: a launch must not pay for the driver's cluster count (or anything else) on the host."""
        kern = r11.kernel(super_mn=self.super_mn)
        if self.source is None:
            return kern
        kern = dataclasses.replace(kern, source=str(self.source))
        if self.cluster_n == 1:
            return kern
        ctas = r11.CLUSTER_M * self.cluster_n

        def grid(M, N):
            tiles = r11.TILES
            grid_cm, grid_cn = cdiv(cdiv(M, tiles.bm), r11.CLUSTER_M), cdiv(cdiv(N, tiles.bn), self.cluster_n)
            super_cm, super_cn = self.super_mn[0] // r11.CLUSTER_M, max(self.super_mn[1] // self.cluster_n, 1)
            positions = cdiv(grid_cm, super_cm) * super_cm * cdiv(grid_cn, super_cn) * super_cn
            resident = r11._clusters_that_fit(kern, ctas)
            return (min(positions, resident) * ctas,)

        kern = dataclasses.replace(kern, grid=grid)
        return kern

    def launch(self, a, b, c):
        kern = self.kernel
        a_rows = r11.TILES.bm // (2 if self.cluster_n == 2 else 1)
        map_a, map_b = tensormap.tensor_maps(a, b, a_rows, r11.TILES.bk)
        kern.launch(a, b, c, map_a, map_b, r11._map_c(c.data.ptr, *c.shape, r11.TILES.bm // r11.CONSUMERS))


def variants() -> list[Variant]:
    return [Variant("11 now", None),
            Variant("11 a+b multicast", a_multicast_source(), cluster_n=2),
            Variant("11 hilbert", hilbert_source())]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="folder for the report")
    p.add_argument("--record", action="store_true", help="write it to the recorded results/probes/ablate_rung11_wins/")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--repeats", type=int, default=40)
    p.add_argument("--rounds", type=int, default=2, help="time every variant this many times in turn")
    p.add_argument("--only", nargs="+", help="labels to run (default: all)")
    p.add_argument("--launch", help="launch this variant twice (for ncu) and exit")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--verify-only", action="store_true", help="verify at the tail shapes only, nothing timed")
    args = p.parse_args()
    import cupy

    table = {v.label: v for v in variants()}
    chosen = [table[label] for label in args.only] if args.only else list(table.values())
    if args.launch:
        n = args.size
        a, b, _ = verification.random_inputs(n, n, n, xp=cupy)
        c = cupy.full((n, n), cupy.nan, dtype=cupy.float16)
        for _ in range(2):
            table[args.launch].launch(a, b, c)
        cupy.cuda.runtime.deviceSynchronize()
        print(f"{args.launch}: launched twice at {n}^3")
        return 0

    rows, ok = {}, True
    for v in chosen:
        kern = v.kernel
        res = kern.compile().resources_of(kern.name_expression)
        checks = [verify(v.launch, *shape) for shape in (*TAIL_SHAPES, *((n, n, n) for n in args.sizes))]
        rows[v.label] = {"label": v.label, "source": str(v.source.relative_to(ROOT)) if v.source else "current",
                         "registers": res.registers, "spill_bytes": res.spills, "grid_8192": kern.grid(8192, 8192),
                         "verified": all(c.passed for c in checks),
                         "verify": [c.summary() for c in checks], "timing": {n: [] for n in args.sizes}}
        ok &= rows[v.label]["verified"]
        print(f"{v.label}: regs {res.registers}, spills {res.spills}, grid at 8192^3 {kern.grid(8192, 8192)}, "
              f"verified {rows[v.label]['verified']}", flush=True)
        if not rows[v.label]["verified"]:
            print("\n".join(c for c in rows[v.label]["verify"] if "ok" not in c))
    timed = [v for v in chosen if rows[v.label]["verified"]]
    gpu, clock = device.require_gpu("Timing"), clocks.sm_clock_reader()
    for n in args.sizes:
        inputs = timing.input_sets(n, n, n, gpu.l2_bytes)
        timing.settle(vendors.cublas, inputs)
        for rnd in range(args.rounds):
            for v in timed:
                pair = timing.time_paired(v.launch, vendors.cublas, inputs, warmup=5, repeats=args.repeats,
                                          clock=clock).summary()
                rows[v.label]["timing"][n].append({"round": rnd, **pair})
                print(f"{n}^3 round {rnd} {v.label}: {pair['pct_cublas']:.1f}% of cuBLAS", flush=True)
    if args.out or args.record:
        built = json.loads(json.dumps(list(rows.values()), default=str))
        print("written", records.write_probe({"variants": built}, probe="ablate_rung11_wins", folder=args.out,
                                             extra={"sizes": args.sizes, "repeats": args.repeats,
                                                    "rounds": args.rounds}))
    print(f"\n{'variant':<20}{'regs':>5}{'spill':>6}" + "".join(f"{f'{n}^3 % cuBLAS (rounds)':>30}" for n in args.sizes))
    for row in rows.values():
        cells = ""
        for n in args.sizes:
            pcts = [t["pct_cublas"] for t in row["timing"][n]]
            cells += f"{statistics.median(pcts):>12.1f} ({' '.join(f'{x:.1f}' for x in pcts)})".rjust(30) if pcts \
                else f"{'not timed':>30}"
        print(f"{row['label']:<20}{row['registers']:>5}{row['spill_bytes']:>6}{cells}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
