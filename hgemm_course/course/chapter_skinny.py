"""Chapter 13's tables cut to the rows that teach, each idea once: the memory roof at a few shapes (the summary over
every shape of the sweep), split-K's families at a few shapes of the probe, swap-AB's count of the wgmma rows a small
M fills with and without the swap beside cuBLASLt's tiles read from its kernels' names, and the host's time per call
of the shortest kernels; and gemm() timed here on a GPU that runs it, or its recorded rows (:func:`time_or_show`).
Built on :mod:`hgemm_course.course.small_skinny` and :mod:`hgemm_course.course.small_skinny_profiles`; functions
print and return data.
"""
from __future__ import annotations

from . import small_skinny as ss
from .small_skinny_profiles import profile_pairs

WGMMA_M = 64            # the rows of one wgmma product: its M side is fixed; its N side runs from 8 to 256 in steps of 8
WGMMA_N_STEP = 8

# Each family of launches in chapter 13's split-K probe, as the chapter names it, by small_skinny.FAMILIES' label
FAMILY_NAMES = {"rung 11, 64-row or 128x128 tiles": "whole tiles (rung 11)",
                "rung 12, owners add the pieces": "split-K, the owner adds",
                "rung 12, split apart": "split-K, the tile's CTAs add (apart)"}


def show_roof(records: list[dict], ceilings: dict, shapes) -> list[dict]:
    """The memory-roof rows (:func:`small_skinny.roof_rows`) of ``shapes``, then one line over every shape of
    ``records`` below the ridge whose operands come from DRAM. Returns all the rows below the ridge."""
    below = [r for r in ss.roof_rows(records, ceilings) if r["below_ridge"]]
    print(ss.format_roof([r for r in below if tuple(r["shape"]) in set(map(tuple, shapes))]))
    dram = [r for r in below if r["in_l2"] is False]
    print(f"over all {len(dram)} shapes below the ridge with operands from DRAM: gemm() "
          f"{min(r['pct_roof_gemm'] for r in dram):.0f}-{max(r['pct_roof_gemm'] for r in dram):.0f}% of the memory "
          f"roof, the vendor {min(r['pct_roof_vendor'] for r in dram):.0f}-{max(r['pct_roof_vendor'] for r in dram):.0f}%")
    return below


def show_families(probe: dict, shapes) -> list[dict]:
    """Each family's fastest launch at ``shapes`` of a vendor probe (:func:`small_skinny.family_rows`), under the
    chapter's names for them. Returns the rows shown."""
    rows = [r for r in ss.family_rows(probe) if tuple(r["shape"]) in set(map(tuple, shapes))]
    names = [FAMILY_NAMES[f] for f, _ in ss.FAMILIES]
    print(f"{'M x N x K':>16} {'vendor us':>9}  " + "  ".join(f"{n:>38}" for n in names))
    for r in rows:
        cells = [f"{r['best'][f][0]:>30} {r['best'][f][1]:5.0f}%" if f in r["best"] else f"{'-':>37}"
                 for f, _ in ss.FAMILIES]
        print(f"{'x'.join(map(str, r['shape'])):>16} {r['vendor_us']:9.1f}  " + "  ".join(f"{c:>38}" for c in cells))
    print("each family's fastest launch and its % of the faster of cupy.matmul and torch.matmul, the probe's rounds")
    return rows


def wgmma_rows_used(m: int) -> dict:
    """How much of its wgmma products a product with ``m`` rows of C fills: as C = A B, ``m`` on the products' M side
    (whole 64-row products); swapped, as C^T = B^T A^T, ``m`` on their N side (widths in steps of 8)."""
    direct = -(-m // WGMMA_M) * WGMMA_M
    swapped = -(-m // WGMMA_N_STEP) * WGMMA_N_STEP
    return {"m": m, "direct_rows": direct, "direct_used": m / direct, "swapped_width": swapped,
            "swapped_used": m / swapped}


def show_swap_count(ms=(16, 32, 48, 64, 128)) -> list[dict]:
    """Print :func:`wgmma_rows_used` for each M in ``ms``."""
    rows = [wgmma_rows_used(m) for m in ms]
    print(f"{'M':>5} {'C = A B: rows of products':>27} {'used':>6} {'C^T = B^T A^T: product width':>30} {'used':>6}")
    for r in rows:
        print(f"{r['m']:>5} {r['direct_rows']:>27} {r['direct_used']:>6.0%} {'n' + str(r['swapped_width']):>30} "
              f"{r['swapped_used']:>6.0%}")
    return rows


def show_vendor_tiles(shapes) -> list[dict]:
    """At each of ``shapes`` with both profiles recorded (:func:`small_skinny_profiles.profile_pairs`): gemm()'s kernel and
    tile of C, cuBLASLt's kernel and the tile of C its name gives, and each one's SM cycles and clock."""
    pairs = profile_pairs(shapes)
    print(f"{'M x N x K':>15}  {'gemm() tile':>11} {'kcycles':>8} {'MHz':>5}   {'cuBLASLt kernel':<48} {'tile of C':>9} "
          f"{'kcycles':>8} {'MHz':>5}")
    for p in pairs:
        ours, theirs = p["plan"], p["cublaslt"]
        print(f"{'x'.join(map(str, p['shape'])):>15}  {'x'.join(map(str, ours['tile'])):>11} {ours['cycles'] / 1e3:8.1f} "
              f"{ours['mhz']:5.0f}   {theirs['kernel']:<48} {'x'.join(map(str, theirs['tile'])):>9} "
              f"{theirs['cycles'] / 1e3:8.1f} {theirs['mhz']:5.0f}")
    files = sorted(p[t]["file"] for p in pairs for t in ("plan", "cublaslt"))
    print(f"recorded by Nsight Compute on the H200, one launch each: results/profiles/{files[0]} to {files[-1]}")
    return pairs


def show_host(records: list[dict], below_us: float) -> dict:
    """The host-time rows (:func:`small_skinny.host_rows`) of kernels shorter than ``below_us``, then the summary over
    the kernels shorter than :data:`small_skinny.HOST_BOUND_US`. Returns the summary."""
    rows = ss.host_rows(records)
    print(ss.format_host([r for r in rows if r["kernel_us"] < below_us]))
    h = ss.host_summary(rows)
    print(f"over the {h['short']} kernels under {h['short_us']:.0f} us: the host paces gemm() at {h['host_bound']}; "
          f"median host time per call gemm(out=) {h['host_us']:.1f} us, the vendor {h['vendor_host_us']:.1f} us; "
          f"unqueued, gemm() takes less time per call than the vendor at {h['paced_ahead']}")
    return h


# ---------------------------------------------------------------- run here, or show the recorded rows

def time_here(shapes) -> dict:
    """On a GPU that runs gemm()'s plan (wgmma): verify and time ``gemm(a, b, out=c)`` at ``shapes`` against the
    faster vendor library in this process (``hgemm-course bench plan``'s way:
    :func:`hgemm_course.measurement.commands.checked_rungs` and :func:`hgemm_course.measurement.bench.bench`), written
    (:func:`hgemm_course.course.here_or_recorded.measurement_folder`). Returns ``{"label"`` (the GPU, date and file),
    ``"records"}``."""
    from ..library import target
    from ..measurement.bench import bench
    from ..measurement.commands import checked_rungs
    from ..measurement.records import write_run
    from .here_or_recorded import measured_label, measurement_folder

    shapes = [tuple(s) for s in shapes]
    folder = measurement_folder()
    records = [r.as_dict() for r in bench(checked_rungs(["plan"], shapes), shapes, progress=False)]
    return {"label": measured_label(target.runnable(), write_run(records, folder=folder)), "records": records}


def time_or_show(shapes, sweep: dict) -> list[dict]:
    """On a GPU that runs gemm()'s plan: :func:`time_here`, printed under its label. Elsewhere, the one line that says
    why (on a GPU) and the recorded H200 rows of those shapes from ``sweep``
    (:func:`hgemm_course.viz.vendor_sweep.vendor_sweep_data`). Returns the rows printed."""
    from ..library import target
    from ..library.plan import planned_rung
    from ..measurement.bench import format_table
    from ..measurement.verification import refusal_here

    shapes = [tuple(s) for s in shapes]
    here = target.runnable()
    why = None if here is None else refusal_here(planned_rung())
    if here is not None and why is None:
        measured = time_here(shapes)
        print(f"{measured['label']}:")
        print(format_table(measured["records"]))
        return measured["records"]
    if why is not None:
        print(why)
    rows = [sweep["records"][sweep["shapes"].index(s)] for s in shapes if s in sweep["shapes"]]
    print(f"RECORDED on the {sweep['gpu']} ({sweep['file']}, `hgemm-course bench plan`):")
    print(format_table(rows))
    return rows
