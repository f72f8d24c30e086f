"""How far apart the two vendor libraries are in the records: cuBLAS (``cupy.matmul``) against cuBLASLt
(``torch.matmul``) on the H200.

Where both are installed, ``hgemm-course bench`` times them against each other in pairs at each shape before it
pairs the rungs with the faster, and each record keeps both medians (``vendor_ms``). :func:`vendor_gap` reads every
such timing once (per run and shape) and gives cuBLAS's median time over cuBLASLt's (above 1: cuBLASLt is faster),
apart for large shapes and the rest; docs/method.md quotes :func:`format_vendor_gap`'s sentence, and a test holds it
to the records.

    python -m hgemm_course.measurement.vendor_gap      # the sentence, from results/
"""
from __future__ import annotations

import statistics

CUBLAS, CUBLASLT = "cuBLAS (cupy.matmul)", "cuBLASLt (torch.matmul)"
LARGE_FLOP = 2 * 4096**3        # a shape with at least the work of 4096^3 counts as large


def _spread(ratios: list[float]) -> dict:
    deciles = statistics.quantiles(ratios, n=10) if len(ratios) > 1 else [ratios[0]] * 9
    return {"n": len(ratios), "median": statistics.median(ratios), "p10": deciles[0], "p90": deciles[-1],
            "min": min(ratios), "max": max(ratios)}


def vendor_gap(records: list[dict] | None = None) -> dict:
    """cuBLAS's median time over cuBLASLt's in every recorded timing of both (``records``: flat bench records with
    ``file`` and ``vendor_ms``; default the H200's in results/). Returns ``{"timings", "runs", "large", "small"
    (each {"n", "median", "p10", "p90", "min", "max"} of the ratios, None where there are none), "cublaslt_lead",
    "cublas_lead" ({"pct", "shape", "file"}: the largest lead of each library)}``."""
    from .records import RECORDED_GPU, load_records

    records = load_records(latest_only=False, gpu=RECORDED_GPU) if records is None else records
    timings = {}
    for r in records:
        ms = r.get("vendor_ms") or {}
        if ms.get(CUBLAS) and ms.get(CUBLASLT):
            timings[(r["file"], r["M"], r["N"], r["K"])] = ms[CUBLAS] / ms[CUBLASLT]
    if not timings:
        raise ValueError("No recorded run timed cuBLAS and cuBLASLt against each other: `hgemm-course bench` with the "
                         "compare extra installed (pip install -e \".[compare]\") records both.")
    large = [x for (_, M, N, K), x in timings.items() if 2 * M * N * K >= LARGE_FLOP]
    small = [x for (_, M, N, K), x in timings.items() if 2 * M * N * K < LARGE_FLOP]
    (f_lt, *lt_shape), lt = max(timings.items(), key=lambda kv: kv[1])
    (f_cb, *cb_shape), cb = min(timings.items(), key=lambda kv: kv[1])
    return {"timings": len(timings), "runs": len({f for f, *_ in timings}),
            "large": _spread(large) if large else None, "small": _spread(small) if small else None,
            "cublaslt_lead": {"pct": 100.0 * (lt - 1.0), "shape": tuple(lt_shape), "file": f_lt},
            "cublas_lead": {"pct": 100.0 * (1.0 / cb - 1.0), "shape": tuple(cb_shape), "file": f_cb}}


def _shape(shape) -> str:
    return "x".join(map(str, shape))


def format_vendor_gap(gap: dict) -> str:
    """The gap as docs/method.md quotes it: one paragraph of figures, each from :func:`vendor_gap`."""
    def spread(s: dict, where: str) -> str:
        return (f"{where}: median {s['median']:.3f}, p10-p90 {s['p10']:.3f}-{s['p90']:.3f}, "
                f"range {s['min']:.3f}-{s['max']:.3f} ({s['n']} timings)")

    parts = [spread(gap[key], where) for key, where in (("large", "at 4096^3 of work or more"),
                                                         ("small", "below it")) if gap[key]]
    lt, cb = gap["cublaslt_lead"], gap["cublas_lead"]
    return (f"In the {gap['timings']} recorded timings of both libraries at a shape ({gap['runs']} runs on the H200), "
            f"cuBLAS's median time over cuBLASLt's reads {'; '.join(parts)}. The largest leads: cuBLASLt "
            f"{lt['pct']:.1f}% at {_shape(lt['shape'])} (`results/{lt['file']}`), cuBLAS {cb['pct']:.1f}% at "
            f"{_shape(cb['shape'])} (`results/{cb['file']}`).")


if __name__ == "__main__":
    print(format_vendor_gap(vendor_gap()))
