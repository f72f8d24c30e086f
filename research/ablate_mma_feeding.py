# Question: what each change in how rungs 04-07 feed mma.sync (fragment buffers, copy bursts, 2-CTA/SM, fences,
# copy addresses) gains.
# Results: results/tuning/2026-12-01/ablate_mma_feeding_round{1..5}{.json,_table.txt} (see results/tuning/README.md).
"""How rungs 04-07 feed mma.sync: time kernel sources side by side on the GPU, each verified first.

    python3 research/ablate_mma_feeding.py --record [--sizes 4096 8192] [--only LABEL ...]     # or --out DIR
    python3 research/ablate_mma_feeding.py --launch LABEL --size 8192     # one warm-up + one launch, for ncu

A variant is a rung's launcher (its tiles, super tile, tensor maps) with the kernel source swapped
for another file that defines the same template: the source committed before a change (kept
under .ablate/, which git ignores), or the current one. Every variant is verified (fresh random
inputs, NaN-poisoned C, FP32 reference) at tail shapes and at each timed size before it is timed;
cuBLAS is timed between the variants in the same process and the ratios use its median.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from importlib import import_module
from pathlib import Path

from hgemm_course.measurement import records, timing, verification
from hgemm_course.library.ladder.nvrtc_kernel import MmaTiles, launched_kernel
from hgemm_course.library.tensormap import tensor_maps

ROOT = Path(__file__).resolve().parent.parent
ABLATE = ROOT / ".ablate"
TAIL_SHAPES = ((257, 136, 64), (1000, 1000, 1024), (4096, 2048, 1024), (128, 128, 128))
MODULES = {"04": "r04_mma_sync", "05": "r05_swizzle", "06": "r06_supertile", "07": "r07_tma"}
ROW_MAJOR = (1, 64)          # super tiles one tile high and 64 wide: row-major launch order up to 8192
WIDE = MmaTiles(bm=128, bn=256, bk=64, wm=64, wn=64, stages=4)      # the same 8 warps, 2 x 4 of them
THREE_STAGES = MmaTiles(bm=256, bn=128, bk=64, wm=64, wn=64, stages=3)
PAIR = MmaTiles(bm=128, bn=128, bk=64, wm=64, wn=64, stages=3)     # 4 warps: two CTAs fit on an SM
DEEP = MmaTiles(bm=128, bn=256, bk=128, wm=64, wn=64, stages=2)    # half the slices, so half the CTA barriers
DEEP_TALL = MmaTiles(bm=256, bn=128, bk=128, wm=64, wn=64, stages=2)
PADDED = ("constexpr int A_LD = BK + 8;", "constexpr int B_LD = BN + 8;")   # rung 04's rows, and without the pad
LINEAR = ("constexpr int A_LD = BK + 0;", "constexpr int B_LD = BN + 0;")


def unpadded_source() -> Path | None:
    """Rung 04's current kernel with the 8 halves of padding removed (the "linear" layout of
    sim.banks): still a correct GEMM, but every ldmatrix meets an 8-way bank conflict."""
    text = (ROOT / "hgemm_course" / "library" / "kernels" / "k04_mma_sync.cu").read_text()
    if not all(padded in text for padded in PADDED):
        return None                            # the padding is declared elsewhere now (PaddedStages, common.cuh)
    for padded, linear in zip(PADDED, LINEAR):
        text = text.replace(padded, linear)
    ABLATE.mkdir(exist_ok=True)
    path = ABLATE / "k04_mma_sync_unpadded.cu"
    path.write_text(text)
    return path


def producer_warp_source() -> Path:
    """Rung 07's current kernel with a ninth warp that only refills the ring (waiting on each stage's empty
    barrier, then asking TMA for the slice), instead of thread 0 of compute warp 0 doing it between its own
    mma.sync; the launch gets 32 more threads ("extra_threads")."""
    text = (ROOT / "hgemm_course" / "library" / "kernels" / "k07_tma.cu").read_text()
    edits = [
        ("__launch_bounds__((BM / WM) * (BN / WN) * 32, 1)", "__launch_bounds__((BM / WM) * (BN / WN) * 32 + 32, 1)"),
        ("    __syncthreads();\n    mbar_wait_parity(smem_u32(&ring.full[0]), 0);",
         "    __syncthreads();\n"
         "    if (warp == THREADS / 32) {                       // the producer warp: refills only\n"
         "        if (lane == 0) {\n"
         "            for (int next = STAGES - 1; next < k_tiles; ++next) {\n"
         "                if (next >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[next % STAGES]), (next / STAGES - 1) % 2);\n"
         "                load_tile(next % STAGES, next);\n"
         "            }\n"
         "        }\n"
         "        return;\n"
         "    }\n"
         "    mbar_wait_parity(smem_u32(&ring.full[0]), 0);"),
        ("        if (tid == 0 && next < k_tiles) {", "        if (false && next < k_tiles) {"),
    ]
    for old, new in edits:
        if old not in text:
            raise SystemExit(f"k07_tma.cu changed: {old[:40]!r} not found")
        text = text.replace(old, new)
    ABLATE.mkdir(exist_ok=True)
    path = ABLATE / "k07_tma_producer_warp.cu"
    path.write_text(text)
    return path


def stmatrix_epilogue_source() -> Path:
    """Rung 07's current kernel with C stored through shared memory: after the k-loop (and a CTA barrier, since
    the ring is reused) every warp writes its (WM, WN) tile as halves with stmatrix into its own 128B-swizzled
    rows, then copies them out as 16-byte row pieces, four rows of C per warp-wide store, instead of 4-byte
    pairs straight from the accumulators."""
    text = (ROOT / "hgemm_course" / "library" / "kernels" / "k07_tma.cu").read_text()
    old_start = "    // ---- epilogue: fp32 accumulators -> fp16 pairs, straight from registers to C ---------"
    if old_start not in text or "#include \"mma_sync.cuh\"" not in text:
        raise SystemExit("k07_tma.cu changed: its epilogue or includes not found")
    epilogue = """    // ---- epilogue: accumulators -> halves in shared memory (stmatrix) -> 16-byte rows of C ---
    static_assert(WN == 64 && (BM / WM) * (BN / WN) * WM * WN * 2 <= sizeof(ring.a), "a warp's C tile: 64 columns");
    __syncthreads();                                  // every warp is done with the ring
    const unsigned c_tile = smem_u32(ring.a) + warp * WM * WN * 2;   // this warp's (WM, 64) halves, swizzled
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; j += 2) {         // a 16x16 piece: tiles (top, j), (bottom, j), (top, j+1), (bottom, j+1)
            const int t = lane / 8;
            const int row = i * 16 + (t % 2) * 8 + lane % 8;
            stmatrix_x4(c_tile + swizzle_128b(row, j + t / 2),
                        pack_half2(acc[i][j][0], acc[i][j][1]), pack_half2(acc[i][j][2], acc[i][j][3]),
                        pack_half2(acc[i][j + 1][0], acc[i][j + 1][1]), pack_half2(acc[i][j + 1][2], acc[i][j + 1][3]));
        }
    }
    __syncwarp();
#pragma unroll
    for (int it = 0; it < WM / 4; ++it) {
        const int row = it * 4 + lane / 8;
        const int chunk = lane % 8;
        const int grow = m0 + warp_m * WM + row;
        const int gcol = n0 + warp_n * WN + chunk * 8;
        const uint4 v = ld_shared_16(c_tile + swizzle_128b(row, chunk));
        if (grow < M && gcol < N) *reinterpret_cast<uint4*>(C + static_cast<size_t>(grow) * N + gcol) = v;
    }
}
"""
    head = text[:text.index(old_start)]
    helpers = """#include "stmatrix.cuh"

__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
    const half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
}
__device__ __forceinline__ uint4 ld_shared_16(unsigned addr) {
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}
"""
    head = head.replace("#include \"mma_sync.cuh\"\n", "#include \"mma_sync.cuh\"\n" + helpers, 1)
    ABLATE.mkdir(exist_ok=True)
    path = ABLATE / "k07_tma_stmatrix_epilogue.cu"
    path.write_text(head + epilogue)
    return path


def variants() -> list[dict]:
    """(label, rung, source file or None for the current kernel, launcher keyword arguments); "before"
    marks a source from before the WHOLE_TILES template parameter."""
    unpadded = unpadded_source()
    producer = producer_warp_source()
    out = [{"label": "04 unpadded", "rung": "04", "source": unpadded, "kwargs": {}}] if unpadded else []
    for rung, stem in (("04", "k04_mma_sync"), ("05", "k05_swizzle"), ("06", "k06_supertile")):
        out += [{"label": f"{rung} before", "rung": rung, "source": ABLATE / f"{stem}_base.cu", "kwargs": {},
                 "before": True},
                {"label": f"{rung} now", "rung": rung, "source": None, "kwargs": {}},
                {"label": f"{rung} copies in one burst", "rung": rung, "source": ABLATE / f"{stem}_burst.cu",
                 "kwargs": {}}]
    # the kernels from before the copies' addresses were worked out once per thread (written by
    # `git show 1a31af7:hgemm_course/library/kernels/STEM.cu > .ablate/STEM_indexed_copies.cu`): each copy's row and
    # column divided out of a flat chunk index, its source multiplied out in 64 bits, inside the k-loop
    out += [{"label": f"{rung} copies indexed per chunk", "rung": rung,
             "source": ABLATE / f"{stem}_indexed_copies.cu", "kwargs": {}}
            for rung, stem in (("04", "k04_mma_sync"), ("05", "k05_swizzle"), ("06", "k06_supertile"))]
    # the same first version with each thread's first chunk kept as a 64-bit pointer instead of a 32-bit offset
    out += [{"label": f"{rung} pointer per thread", "rung": rung,
             "source": ABLATE / f"{stem}_pointer_per_thread.cu", "kwargs": {}}
            for rung, stem in (("04", "k04_mma_sync"), ("05", "k05_swizzle"), ("06", "k06_supertile"))]
    out += [{"label": "07 before", "rung": "07", "source": ABLATE / "k07_tma_base.cu", "kwargs": {}},
            {"label": "07 now", "rung": "07", "source": None, "kwargs": {}},
            {"label": "07 stmatrix epilogue", "rung": "07", "source": stmatrix_epilogue_source(), "kwargs": {}},
            {"label": "07 stmatrix epilogue 128x256", "rung": "07", "source": stmatrix_epilogue_source(),
             "kwargs": {"tiles": WIDE}},
            {"label": "07 producer warp", "rung": "07", "source": producer, "kwargs": {}, "extra_threads": 32},
            {"label": "07 producer warp 128x256", "rung": "07", "source": producer, "kwargs": {"tiles": WIDE},
             "extra_threads": 32},
            {"label": "07 now 128x256", "rung": "07", "source": None, "kwargs": {"tiles": WIDE}},
            {"label": "05 now 128x256", "rung": "05", "source": None, "kwargs": {"tiles": WIDE}},
            {"label": "05 now 3 stages", "rung": "05", "source": None, "kwargs": {"tiles": THREE_STAGES}},
            {"label": "06 now row-major", "rung": "06", "source": None, "kwargs": {"super_mn": ROW_MAJOR}},
            {"label": "07 now row-major", "rung": "07", "source": None, "kwargs": {"super_mn": ROW_MAJOR}},
            {"label": "07 before 128x128 2CTA/SM", "rung": "07", "source": ABLATE / "k07_tma_base.cu",
             "kwargs": {"tiles": PAIR}},
            {"label": "07 now 128x128 2CTA/SM", "rung": "07", "source": None, "kwargs": {"tiles": PAIR}},
            {"label": "04 now bk128 2 stages", "rung": "04", "source": None, "kwargs": {"tiles": DEEP}},
            {"label": "04 now 256x128 bk128 2 stages", "rung": "04", "source": None, "kwargs": {"tiles": DEEP_TALL}}]
    # the committed-before kernel with one change each, to find what its 2-CTA/SM failure needs
    out += [{"label": f"07 before + {change} 2CTA/SM", "rung": "07", "source": ABLATE / f"k07_base_{stem}.cu",
             "kwargs": {"tiles": PAIR}}
            for change, stem in (("__syncwarp after the full wait", "syncwarp_after_wait"),
                                 ("proxy fence before release", "proxy_fence"),
                                 ("full wait before the refill", "wait_first"))]
    return [v for v in out if v["source"] is None or v["source"].is_file()]


def launcher(variant: dict):
    """(the kernel timed at whole tiles, launch(a, b, c)) through the rung's own launcher with the
    kernel source swapped. Like the launchers, launch picks the instantiation without tail guards
    when M, N and K are whole tiles; a source from before that template parameter gets neither."""
    module = import_module(f"hgemm_course.library.ladder.{MODULES[variant['rung']]}")
    tiles = variant["kwargs"].get("tiles", module.TILES)

    def kernel_for(M, N, K):
        kernel = launched_kernel(module, M, N, K, **variant["kwargs"])
        if variant.get("before"):                # that source has no WHOLE_TILES parameter yet
            kernel = dataclasses.replace(kernel, template_args=kernel.template_args[:-1])
        if variant.get("extra_threads"):
            kernel = dataclasses.replace(kernel, threads=kernel.threads + variant["extra_threads"])
        return dataclasses.replace(kernel, source=str(variant["source"])) if variant["source"] else kernel

    def launch(a, b, c):
        (M, K), N = a.shape, b.shape[1]
        extra = tensor_maps(a, b, tiles.bm, tiles.bk) if variant["rung"] == "07" else ()
        kernel_for(M, N, K).launch(a, b, c, *extra)

    return kernel_for(8192, 8192, 8192), launch


def verify(launch, M, N, K):
    import cupy

    a, b, seed = verification.random_inputs(M, N, K, xp=cupy)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    launch(a, b, c)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    return verification.compare(c, reference, K=K, seed=seed)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="folder for the report")
    p.add_argument("--record", action="store_true", help="write it to the recorded results/probes/ablate_mma_feeding/")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--only", nargs="+", help="labels to run (default: all)")
    p.add_argument("--launch", help="launch this variant once after a warm-up (for ncu) and exit")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--verify-only", action="store_true",
                   help="verify at the small tail shapes only, nothing timed (for compute-sanitizer)")
    p.add_argument("--stress", type=int, default=0, metavar="N",
                   help="verify N more times at 4096x2048x1024, the shape that caught a race before")
    args = p.parse_args()
    import cupy

    table = {v["label"]: v for v in variants()}
    if args.launch:
        kernel, launch = launcher(table[args.launch])
        n = args.size
        a, b, _ = verification.random_inputs(n, n, n, xp=cupy)
        c = cupy.full((n, n), cupy.nan, dtype=cupy.float16)
        launch(a, b, c)
        launch(a, b, c)
        cupy.cuda.runtime.deviceSynchronize()
        print(f"{args.launch}: {kernel.name_expression} launched twice at {n}^3")
        return 0

    chosen = [table[label] for label in args.only] if args.only else list(table.values())
    if args.verify_only:
        checks = [(v["label"], verify(launcher(v)[1], *shape)) for v in chosen for shape in TAIL_SHAPES[:2]]
        for label, check in checks:
            print(f"{label}: {check.summary()}")
        return 0 if all(check.passed for _, check in checks) else 1
    if args.stress:
        for v in chosen:
            launch = launcher(v)[1]
            failed = [c.summary() for c in (verify(launch, 4096, 2048, 1024) for _ in range(args.stress)) if not c.passed]
            print(f"{v['label']}: {args.stress - len(failed)} of {args.stress} verifications at 4096x2048x1024 passed"
                  + (f"; first failure: {failed[0]}" if failed else ""))
        return 0
    inputs = {n: [verification.random_inputs(n, n, n, xp=cupy)[:2] + (cupy.empty((n, n), cupy.float16),)
                  for _ in range(2 if n <= 4096 else 1)] for n in args.sizes}

    def cublas(a, b, c):
        cupy.matmul(a, b, out=c)

    cublas_ms = {n: [] for n in args.sizes}
    rows = []
    for v in chosen:
        kernel, launch = launcher(v)
        res = kernel.compile().resources_of(kernel.name_expression)
        row = {"label": v["label"], "rung": v["rung"], "kernel": kernel.name_expression,
               "source": str(v["source"].relative_to(ROOT)) if v["source"] else "current",
               "registers": res.registers, "spill_bytes": res.spills, "timing": {}}
        checks = [verify(launch, *shape) for shape in (*TAIL_SHAPES, *((n, n, n) for n in args.sizes))]
        row["verified"] = all(c.passed for c in checks)
        row["verify"] = [c.summary() for c in checks]
        if row["verified"]:
            for n in args.sizes:
                cublas_ms[n] += timing.time_launches(cublas, inputs[n], warmup=3, repeats=args.repeats)
                ms = statistics.median(timing.time_launches(launch, inputs[n], warmup=3, repeats=args.repeats))
                row["timing"][n] = {"ms": ms, "tflops": timing.tflops(n, n, n, ms)}
        rows.append(row)
        print(f"{v['label']}: regs {res.registers}, spills {res.spills}, verified {row['verified']}, "
              + ", ".join(f"{n}: {t['tflops']:.1f} TF/s" for n, t in row["timing"].items()), flush=True)
    cublas = {n: statistics.median(ms) for n, ms in cublas_ms.items() if ms}
    for row in rows:
        for n, t in row["timing"].items():
            t["pct_cublas"] = 100.0 * cublas[n] / t["ms"]
    if args.out or args.record:
        print("written", records.write_probe({"cublas_ms": cublas, "variants": rows}, probe="ablate_mma_feeding",
                                             folder=args.out, extra={"sizes": args.sizes, "repeats": args.repeats}))
    print(f"\n{'variant':<28}{'regs':>5}{'spill':>6}  " + "".join(f"{f'{n}^3 TF/s (% cuBLAS)':>24}" for n in args.sizes))
    print(f"{'cuBLAS':<41}" + "".join(f"{timing.tflops(n, n, n, cublas[n]):>24.1f}" for n in cublas))
    for row in rows:
        cells = "".join(f"{row['timing'][n]['tflops']:>15.1f} ({row['timing'][n]['pct_cublas']:5.1f}%)"
                        if n in row["timing"] else f"{'FAILED verification':>24}" for n in args.sizes)
        print(f"{row['label']:<28}{row['registers']:>5}{row['spill_bytes']:>6}  {cells}")
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
