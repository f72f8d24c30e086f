"""Chapter 08's experiments, after section 5 of the RTX 5080 HGEMM post, on rung 07: each returns data.

1. ``occupancy_cliff``: CTAs per SM from the driver's occupancy calculator against the dynamic
   shared memory requested, next to the model, and the per-CTA reservation that explains the cliffs.
2. ``carveout``: does asking for the largest shared-memory carveout fit one more CTA? (It cannot
   move the cliff: the reservation is per CTA, the carveout per SM.)
3. ``bk32_under_swizzle128``: BK = 32 under SWIZZLE_128B, refused before launch with the reason
   (the post's kernel crashed with an illegal address instead).
4. ``variant_timings``: BN halved (which halves the warps per SM: still one CTA per SM), two CTAs
   per SM (128x128 tiles of 4 warps, 3 stages: the same 8 warps per SM in two independent CTAs) and
   a stage-count sweep, verified, then timed against cuBLAS in the same process; configurations
   over the shared-memory budget are skipped with the reason.

``run_all`` runs them and writes results/limits_<gpu>_<date>.json.
"""
from __future__ import annotations

import statistics
from dataclasses import replace

from . import timing, vendors, verdict, verification
from ..library import device, tensormap
from ..library.ladder import r07_tma
from ..library.ladder.nvrtc_kernel import MmaTiles
from ..library.target import current
from ..sim import ctas_per_sm


# ---------------------------------------------------------------- the driver's occupancy calculator

# A kernel whose only appetite is the dynamic shared memory it is launched with.
SMEM_ONLY = r"""
extern "C" __global__ void smem_only(float* out) {
    extern __shared__ float staged[];
    staged[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = staged[blockDim.x - 1 - threadIdx.x];
}
"""
SMEM_ONLY_THREADS = 128


def _driver_function(compiled, name: str):
    """A compiled kernel as a driver CUfunction (in CuPy's primary context)."""
    import cupy
    from cuda.bindings import driver

    device = cupy.cuda.runtime.getDevice()
    cupy.cuda.runtime.setDevice(device)        # cudaSetDevice initializes the primary context and makes it current
    err, module = driver.cuModuleLoadData(compiled.cubin)
    _ok(err, "cuModuleLoadData")
    err, fn = driver.cuModuleGetFunction(module, compiled.lowered.get(name, name).encode())
    _ok(err, "cuModuleGetFunction")
    return fn


def _ok(err, what: str) -> None:
    from cuda.bindings import driver

    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what} failed: {err.name}")


def hardware_ctas_per_sm(fn, threads: int, smem_bytes: int, *, carveout: int | None = None) -> int:
    """``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` for a dynamic shared-memory request."""
    from cuda.bindings import driver

    A = driver.CUfunction_attribute
    (err,) = driver.cuFuncSetAttribute(fn, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       current().smem_per_block)
    _ok(err, "cuFuncSetAttribute(max dynamic shared)")
    if carveout is not None:
        (err,) = driver.cuFuncSetAttribute(fn, A.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout)
        _ok(err, "cuFuncSetAttribute(carveout)")
    err, n = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, smem_bytes)
    _ok(err, "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    return n


def cliff_sizes(smem_per_sm: int | None = None, reserve: int = 1024, ctas=range(1, 9)) -> list[int]:
    """Requests on both sides of each k-CTAs-per-SM cliff the model predicts (default: the current target's SM)."""
    smem_per_sm = smem_per_sm or current().smem_per_sm
    sizes = set()
    for k in ctas:
        edge = smem_per_sm // k - reserve
        sizes.update({edge - 1024, edge, edge + 1, edge + 1024})
    return sorted(s for s in sizes if 0 <= s <= current().smem_per_block)


def occupancy_cliff(*, carveout: int | None = None) -> dict:
    """CTAs per SM, driver vs model, against requested dynamic shared memory for a kernel that needs
    nothing else; and, from where the driver's cliffs fall, the shared memory it reserves per CTA."""
    from ..library.build import compile_cuda

    compiled = compile_cuda(SMEM_ONLY, name_expressions=["smem_only"])
    regs = compiled.resources_of("smem_only").registers
    fn = _driver_function(compiled, "smem_only")
    rows = [{"smem_bytes": smem,
             "hardware": hardware_ctas_per_sm(fn, SMEM_ONLY_THREADS, smem, carveout=carveout),
             "model": ctas_per_sm(SMEM_ONLY_THREADS, regs, smem)} for smem in cliff_sizes()]
    reserve = {}
    for k in sorted({r["hardware"] for r in rows if r["hardware"] > 0}):
        fits = [r["smem_bytes"] for r in rows if r["hardware"] >= k]
        reserve[k] = current().smem_per_sm // k - max(fits)     # an upper bound: the largest tested request that fits k
    return {"threads": SMEM_ONLY_THREADS, "registers": regs, "carveout": carveout, "rows": rows,
            "agree": all(r["hardware"] == r["model"] for r in rows), "reserve_bound_bytes": reserve}


def carveout() -> dict:
    """Does the largest carveout (cudaFuncAttributePreferredSharedMemoryCarveout = 100) move any cliff?"""
    default, maxed = occupancy_cliff()["rows"], occupancy_cliff(carveout=100)["rows"]
    changed = [(d["smem_bytes"], d["hardware"], m["hardware"]) for d, m in zip(default, maxed) if d["hardware"] != m["hardware"]]
    return {"changed": changed, "carveout_changes_anything": bool(changed)}


def bk32_under_swizzle128() -> dict:
    """BK = 32 (64-byte rows) under SWIZZLE_128B: what the launcher and the tensor-map check say."""
    out = {}
    try:
        r07_tma.kernel(replace(r07_tma.TILES, bk=32))
        out["launcher"] = "accepted"
    except ValueError as exc:
        out["launcher"] = str(exc)
    try:
        tensormap.check(tensormap.TileMap2D(address=0, rows=8192, cols=8192, row_stride=8192 * 2,
                                            box_rows=r07_tma.TILES.bm, box_cols=32, swizzle=128))
        out["tensormap"] = "accepted"
    except ValueError as exc:
        out["tensormap"] = str(exc)
    out["refused"] = out["launcher"] != "accepted" and out["tensormap"] != "accepted"
    return out


# ---------------------------------------------------------------- timed variants


def variants(base: MmaTiles = r07_tma.TILES) -> list[tuple[str, MmaTiles]]:
    """Rung 07's default, BN halved (the post's experiment 3), two CTAs per SM, and stages 2 to 6."""
    out = [("default", base), ("BN halved", replace(base, bn=base.bn // 2, wn=min(base.wn, base.bn // 2))),
           ("2 CTAs/SM", replace(base, bm=base.bm // 2, stages=3))]
    out += [(f"{s} stages", replace(base, stages=s)) for s in range(2, 7) if s != base.stages]
    return out


def variant_timings(n: int = 8192, *, repeats: int = 30) -> list[dict]:
    """Verify each of :func:`variants` at n^3, then time it alternated launch by launch with cuBLAS
    (``timing.time_paired``, input sets rotated past L2) and with its own timing build (its launches' SM cycles
    and clock, ``timing.time_with_clock``), all in this process."""
    import cupy

    device.require_gpu("Timing the chapter-08 variants")
    a, b, seed = verification.random_inputs(n, n, n, xp=cupy)
    c = cupy.empty((n, n), dtype=cupy.float16)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    sets = timing.input_sets(n, n, n, cupy.cuda.Device().attributes["L2CacheSize"])
    rows = []
    for label, tiles in variants():
        smem = r07_tma.smem_bytes(tiles)
        row = {"variant": label, "tiles": tiles.template_args, "smem_bytes": smem}
        try:
            kernel = r07_tma.kernel(tiles)
        except ValueError as exc:
            rows.append({**row, "skipped": str(exc)})
            continue
        regs = kernel.compile().resources_of(kernel.name_expression).registers
        row.update(registers=regs, ctas_per_sm=ctas_per_sm(tiles.threads, regs, smem))

        def launch(x, y, z, tiles=tiles):
            r07_tma.launch(x, y, z, tiles=tiles)

        c.fill(cupy.nan)
        launch(a, b, c)
        check = verification.compare(c, reference, K=n, rung="07", seed=seed)
        row["rel_fro_err"] = check.rel_fro_err
        if not check.passed:
            rows.append({**row, "failed": check.summary()})
            continue
        t = timing.time_paired(launch, vendors.cublas, sets, warmup=5, repeats=repeats)
        ms, cms = statistics.median(t.fn_ms), statistics.median(t.reference_ms)
        row.update(ms=ms, tflops=timing.tflops(n, n, n, ms), cublas_ms=cms, pct_cublas=100.0 * cms / ms,
                   pct_cublas_pairs=[100.0 * r / f for f, r in zip(t.fn_ms, t.reference_ms)])
        clocked = timing.time_with_clock(launch, sets)
        if clocked and clocked.launches:
            row.update(clocked.summary())
        rows.append(row)
    return rows


def variant_verdicts(rows: list[dict], size: int) -> list:
    """Each timed variant's SM cycles at ``size``^3 against the default's, as verdicts; [] for runs recorded
    without cycles."""
    base = next((r for r in rows if r["variant"] == "default" and r.get("launch_clocks")), None)
    if base is None:
        return []
    cycles = [x["cycles"] for x in base["launch_clocks"]]
    return [verdict.compare("the default", cycles, r["variant"], [x["cycles"] for x in r["launch_clocks"]],
                            f"SM cycles at {size}^3")
            for r in rows if r is not base and r.get("launch_clocks")]


def run_all(*, n: int = 8192, folder=None):
    """Every experiment; written to ``folder`` (default ./hgemm-results/) as limits_<gpu>_<date>_<suffix>.json.
    Returns (path, data)."""
    from .records import write_run

    data = {"occupancy_cliff": occupancy_cliff(), "carveout": carveout(), "bk32": bk32_under_swizzle128(),
            "variants": variant_timings(n), "size": n}
    return write_run([data], kind="limits", folder=folder), data


def format_limits(data: dict) -> str:
    """The experiments as short tables."""
    lines = [f"occupancy (a shared-memory-only kernel, {data['occupancy_cliff']['threads']} threads): "
             f"driver and model agree: {data['occupancy_cliff']['agree']}"]
    lines += [f"  {r['smem_bytes']:>7} B -> driver {r['hardware']}, model {r['model']}" for r in data["occupancy_cliff"]["rows"]]
    lines.append(f"  implied reservation per CTA (bytes, by CTAs/SM): {data['occupancy_cliff']['reserve_bound_bytes']}")
    lines.append(f"carveout 100 changes CTAs/SM: {data['carveout']['carveout_changes_anything']} {data['carveout']['changed']}")
    lines.append(f"BK=32 under SWIZZLE_128B refused: {data['bk32']['refused']}: {data['bk32']['launcher']}")
    lines.append(f"{'variant':<10} {'smem':>7} {'regs':>5} {'CTA/SM':>6} {'TFLOP/s':>8} {'% cuBLAS':>9} {'Mcycles':>8} "
                 f"{'GHz':>6}  (n={data['size']})")
    for r in data["variants"]:
        if "ms" in r:
            clocked = (f" {r['cycles'] / 1e6:>8.3f} {r['clock_ghz']:>6.3f}" if r.get("cycles") else f" {'-':>8} {'-':>6}")
            lines.append(f"{r['variant']:<10} {r['smem_bytes']:>7} {r['registers']:>5} {r['ctas_per_sm']:>6} "
                         f"{r['tflops']:>8.1f} {r['pct_cublas']:>8.1f}%" + clocked)
        else:
            lines.append(f"{r['variant']:<10} {r['smem_bytes']:>7}  {r.get('skipped') or r.get('failed')}")
    judged = variant_verdicts(data["variants"], data["size"])
    lines += [str(v) for v in judged] or ["(this run recorded no cycles, so no verdicts: `hgemm-course limits` on a "
                                          "GPU measures them)"]
    return "\n".join(lines)
