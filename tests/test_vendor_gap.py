"""The gap between cuBLAS and cuBLASLt as the records hold it, and docs/method.md's sentence about it."""
from pathlib import Path

import pytest

from hgemm_course.measurement.vendor_gap import CUBLAS, CUBLASLT, format_vendor_gap, vendor_gap

METHOD = Path(__file__).resolve().parent.parent / "docs" / "method.md"


def _rec(M, N, K, cublas_ms, cublaslt_ms, file="run.json"):
    return {"rung": "11", "M": M, "N": N, "K": K, "file": file, "vendor_ms": {CUBLAS: cublas_ms, CUBLASLT: cublaslt_ms}}


def test_each_timing_counts_once_and_each_librarys_largest_lead_is_found():
    records = [_rec(8192, 8192, 8192, 1.0, 1.0), _rec(8192, 8192, 8192, 1.0, 1.0),      # two rungs, one timing
               _rec(4096, 4096, 4096, 1.01, 1.0), _rec(512, 512, 512, 1.0, 1.1), _rec(16, 4096, 4096, 1.08, 1.0),
               {"rung": "11", "M": 64, "N": 64, "K": 64, "file": "run.json", "vendor_ms": {CUBLAS: 1.0}}]
    gap = vendor_gap(records)
    assert gap["timings"] == 4 and gap["runs"] == 1
    assert gap["large"]["n"] == 2 and gap["large"]["max"] == pytest.approx(1.01)
    assert gap["small"]["n"] == 2 and gap["small"]["min"] == pytest.approx(1 / 1.1)
    assert gap["cublaslt_lead"]["shape"] == (16, 4096, 4096) and gap["cublaslt_lead"]["pct"] == pytest.approx(8.0)
    assert gap["cublas_lead"]["shape"] == (512, 512, 512) and gap["cublas_lead"]["pct"] == pytest.approx(10.0)
    assert "cuBLASLt 8.0% at 16x4096x4096 (`results/run.json`), cuBLAS 10.0% at 512x512x512" in format_vendor_gap(gap)


def test_no_timing_of_both_is_an_error_that_names_the_command():
    with pytest.raises(ValueError, match="compare extra"):
        vendor_gap([_rec(64, 64, 64, 1.0, 1.0) | {"vendor_ms": None}])


def test_method_quotes_the_recorded_gap():
    page = " ".join(METHOD.read_text().split())
    assert format_vendor_gap(vendor_gap()) in page, "write python -m hgemm_course.measurement.vendor_gap's sentence into method.md"


def test_the_records_read_as_method_says():
    """Large shapes level (the median within the timings' own p10-p90 of 1), small ones led by either library."""
    gap = vendor_gap()
    large, small = gap["large"], gap["small"]
    assert large["p10"] <= 1.0 <= large["p90"] and abs(large["median"] - 1.0) <= large["p90"] - large["p10"]
    assert small["min"] < 1.0 < small["max"]
