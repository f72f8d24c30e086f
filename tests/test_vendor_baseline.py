"""The vendor baseline (CPU only, the GPU's parts faked): bench times the vendor libraries against each other at each
shape and pairs every rung with the faster, naming it in the record; records written before there was a choice
read as cuBLAS through cupy.matmul; format_table names the baseline; PyTorch is never imported by the package and
its absence leaves cuBLAS alone."""
from __future__ import annotations

import builtins
import dataclasses
import json
import subprocess
import sys
import types

import pytest

from hgemm_course.library import device
from hgemm_course.measurement import bench, records, timing, vendors, verification
from hgemm_course.measurement.timing import PairedTiming
from hgemm_course.measurement.vendors import CUBLAS_NAME, CUBLASLT_NAME, VendorChoice

PAIRS = 20


def fake_cupy_matmul(a, b, c):
    """Stands for cuBLAS: 1.0 ms at 1024^3, 2.0 ms at 4096^3."""


def fake_torch_matmul(a, b, c):
    """Stands for cuBLASLt: 0.8 ms at 1024^3 (faster), 2.5 ms at 4096^3 (slower)."""


def fake_rung(a, b, c):
    """Stands for the rung's launch: 1.0 ms everywhere."""


def rung05():
    """Rung 05 with the fake launch."""
    from hgemm_course.library.ladder import get

    return dataclasses.replace(get("05"), launch=fake_rung)


MS = {fake_cupy_matmul: {1024: 1.0, 4096: 2.0}, fake_torch_matmul: {1024: 0.8, 4096: 2.5},
      fake_rung: {1024: 1.0, 4096: 1.0}}


@pytest.fixture
def fake_bench(monkeypatch):
    """bench with every GPU part faked; returns the list of (fn, reference) pairs time_paired was given."""
    import cupy

    monkeypatch.setattr(device, "require_gpu", lambda why: types.SimpleNamespace(l2_bytes=50 << 20))
    monkeypatch.setattr(verification, "why_not_here", lambda r: None)
    monkeypatch.setattr(verification, "verify", lambda r, M, N, K: verification.VerifyResult(r.id, M, N, K, 0, 1e-4, 1e-4, 0))
    monkeypatch.setattr(timing, "input_sets", lambda M, N, K, l2: [(M, N, K)])   # the "arrays" carry the shape
    monkeypatch.setattr(timing, "settle", lambda *a, **k: None)
    monkeypatch.setattr(bench, "sm_clock_reader", lambda: (lambda: None))
    monkeypatch.setattr(timing, "time_with_clock", lambda *a, **k: None)
    monkeypatch.setattr(timing, "host_us_paired",
                        lambda fns, M, N, K: [{fake_rung: 12.0, fake_torch_matmul: 20.0}.get(fn, 30.0) for fn in fns])
    monkeypatch.setattr(vendors, "vendors", lambda: {CUBLAS_NAME: fake_cupy_matmul, CUBLASLT_NAME: fake_torch_matmul})
    monkeypatch.setattr(cupy, "get_default_memory_pool", lambda: types.SimpleNamespace(free_all_blocks=lambda: None))
    calls = []

    def time_paired(fn, reference, inputs, *, warmup, repeats, clock=None):
        calls.append((fn, reference))
        n = inputs[0][0]
        return PairedTiming([MS[fn][n]] * PAIRS, [MS[reference][n]] * PAIRS, [None] * PAIRS, [None] * PAIRS)

    monkeypatch.setattr(timing, "time_paired", time_paired)
    return calls


def test_bench_pairs_each_shape_with_the_faster_vendor_and_names_it(fake_bench):
    made = bench.bench([rung05()], [1024, 4096], progress=False)
    by_n = {r.M: r for r in made}
    assert by_n[1024].vendor == CUBLASLT_NAME and by_n[4096].vendor == CUBLAS_NAME
    assert by_n[1024].vendor_ms == {CUBLAS_NAME: 1.0, CUBLASLT_NAME: 0.8}
    assert by_n[4096].vendor_ms == {CUBLAS_NAME: 2.0, CUBLASLT_NAME: 2.5}
    # the rung's % is of the baseline it was paired with
    assert by_n[1024].cublas_ms == 0.8 and by_n[1024].pct_cublas == pytest.approx(80.0)
    assert by_n[4096].cublas_ms == 2.0 and by_n[4096].pct_cublas == pytest.approx(200.0)
    assert by_n[1024].pct_cublas_pairwise == pytest.approx(80.0)
    # vendors against each other once per shape, then the rung against the faster
    assert fake_bench == [(fake_cupy_matmul, fake_torch_matmul), (fake_rung, fake_torch_matmul),
                          (fake_cupy_matmul, fake_torch_matmul), (fake_rung, fake_cupy_matmul)]
    assert all(r.host_us == 12.0 and r.vendors_host_us == {CUBLAS_NAME: 30.0, CUBLASLT_NAME: 20.0} for r in made)
    assert all(r.vendor_host_us == r.vendors_host_us[r.vendor] for r in made)
    assert records.record_problem(json.loads(json.dumps(by_n[1024].as_dict()))) is None


def test_bench_takes_the_baselines_it_is_given_without_timing_the_vendors(fake_bench):
    records = bench.bench([rung05()], [1024], progress=False, baselines={(1024, 1024, 1024): VendorChoice(CUBLAS_NAME)})
    assert [r.vendor for r in records] == [CUBLAS_NAME] and records[0].vendor_ms is None
    assert fake_bench == [(fake_rung, fake_cupy_matmul)]


def test_one_vendor_alone_is_the_baseline_untimed(fake_bench, monkeypatch):
    monkeypatch.setattr(vendors, "vendors", lambda: {CUBLAS_NAME: fake_cupy_matmul})
    records = bench.bench([rung05()], [1024], progress=False)
    assert records[0].vendor == CUBLAS_NAME and records[0].vendor_ms is None
    assert fake_bench == [(fake_rung, fake_cupy_matmul)]


def test_choose_vendor_pairs_the_others_with_the_first(monkeypatch):
    seen = []

    def time_paired(fn, reference, inputs, **k):
        seen.append((fn, reference))
        return PairedTiming([2.0] * PAIRS, [{"b": 1.5, "c": 3.0}[reference]] * PAIRS, [None] * PAIRS, [None] * PAIRS)

    monkeypatch.setattr(timing, "time_paired", time_paired)
    choice = vendors.choose_vendor({"a": "a", "b": "b", "c": "c"}, [()])
    assert choice == VendorChoice("b", {"a": 2.0, "b": 1.5, "c": 3.0})
    assert seen == [("a", "b"), ("a", "c")]
    assert vendors.choose_vendor({"a": "a"}, [()]) == VendorChoice("a")


# ---------------------------------------------------------------- records old and new

OLD = {"rung": "05", "M": 4096, "N": 4096, "K": 4096, "ms": 1.0, "tflops": 137.4, "cublas_ms": 0.97,
       "cublas_tflops": 141.7, "pct_cublas": 97.0, "samples_ms": [1.0] * 20, "paired": True}
NEW = {**OLD, "vendor": CUBLASLT_NAME, "vendor_ms": {CUBLAS_NAME: 0.99, CUBLASLT_NAME: 0.97}, "host_us": 11.5,
       "vendor_host_us": 25.0}


def test_baseline_name_of_old_and_new_records():
    assert vendors.baseline_name(OLD) == CUBLAS_NAME == "cuBLAS (cupy.matmul)"
    assert vendors.baseline_name({**OLD, "vendor": None}) == CUBLAS_NAME
    assert vendors.baseline_name(NEW) == CUBLASLT_NAME == "cuBLASLt (torch.matmul)"


@pytest.mark.parametrize("kind", ["bench", "tune"])
def test_old_and_new_records_validate(kind):
    extra = {"label": "128x256 s4", "config": {"bm": 128}} if kind == "tune" else {}
    assert records.record_problem({**OLD, **extra}, kind) is None
    assert records.record_problem({**NEW, **extra}, kind) is None
    assert records.record_problem({**NEW, "vendor_ms": None, "host_us": None, "vendor_host_us": None}, kind) is None
    assert "vendor" in records.record_problem({**NEW, "vendor": 3}, kind)
    assert "vendor_ms" in records.record_problem({**NEW, "vendor_ms": {CUBLAS_NAME: "fast"}}, kind)
    assert "host_us" in records.record_problem({**NEW, "host_us": "12"}, kind)
    assert records.record_problem({**NEW, "vendors_host_us": {CUBLAS_NAME: 31.0, CUBLASLT_NAME: 24.0}}, kind) is None
    assert "vendors_host_us" in records.record_problem({**NEW, "vendors_host_us": {CUBLAS_NAME: -1.0}}, kind)


def test_load_records_carries_the_baseline(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "provenance", lambda extra=None: {"date": "2026-12-02T00:00:00+00:00", "gpu": "H200"})
    records.write_run([OLD, {**NEW, "M": 8192, "N": 8192, "K": 8192}], folder=tmp_path)
    rows = {r["M"]: r for r in records.load_records(tmp_path)}
    assert rows[4096]["vendor"] == CUBLAS_NAME and rows[4096]["host_us"] is None
    assert rows[8192]["vendor"] == CUBLASLT_NAME and rows[8192]["vendor_host_us"] == 25.0
    assert rows[8192]["vendor_ms"] == NEW["vendor_ms"]


# ---------------------------------------------------------------- the table

def test_format_table_names_the_vendor_and_the_choice_per_shape():
    lines = bench.format_table([NEW, {**OLD, "M": 1024, "N": 1024, "K": 1024, "vendor": CUBLAS_NAME,
                                      "vendor_ms": {CUBLAS_NAME: 0.1, CUBLASLT_NAME: 0.2}}]).splitlines()
    assert "% vendor" in lines[0] and "host us" in lines[0] and "vendor host us" in lines[0]
    assert "cuBLAS" not in lines[0]
    assert lines[1].split()[-2:] == ["11.5", "25.0"] and lines[2].split()[-2:] == ["-", "-"]
    assert lines[-1] == ("baseline: the faster of cuBLAS and cuBLASLt at each shape: "
                         f"{CUBLASLT_NAME} at 4096x4096x4096; {CUBLAS_NAME} at 1024x1024x1024")


def test_format_table_of_old_records_says_cublas_only_and_how_to_add_cublaslt(monkeypatch):
    monkeypatch.setattr(vendors, "torch_installed", lambda: False)
    lines = bench.format_table([OLD]).splitlines()
    assert "host us" not in lines[0] and len(lines) == 3
    assert lines[-1] == ("baseline: cuBLAS (cupy.matmul) only; install the `compare` extra "
                         "(pip install 'hgemm-course[compare]') to time cuBLASLt too")
    monkeypatch.setattr(vendors, "torch_installed", lambda: True)
    assert bench.format_table([OLD]).splitlines()[-1] == "baseline: cuBLAS (cupy.matmul) only"


def test_torch_installed_reads_a_blocked_import_as_absent(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert vendors.torch_installed() is False


# ---------------------------------------------------------------- PyTorch stays optional

def test_importing_the_package_never_imports_torch():
    code = ("import sys, hgemm_course, hgemm_course.measurement.bench, hgemm_course.measurement.records, hgemm_course.measurement.tune, "
            "hgemm_course.course.cli; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_vendors_without_torch_is_cublas_alone(monkeypatch):
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert vendors.vendors() == {CUBLAS_NAME: vendors.cublas}


def test_vendors_with_torch_adds_cublaslt_after_cublas(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    assert list(vendors.vendors().items()) == [(CUBLAS_NAME, vendors.cublas), (CUBLASLT_NAME, vendors.cublaslt)]


def test_torch_views_are_kept_per_array_and_never_shared_by_a_reused_id(monkeypatch):
    made = []
    fake_torch = types.ModuleType("torch")
    fake_torch.from_dlpack = lambda x: made.append(x) or ("view", len(made))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setattr(vendors, "_torch_views", {})
    a, b = object(), object()
    assert vendors._torch_view(a) is vendors._torch_view(a) and made == [a]
    vendors._torch_views[id(b)] = (object(), "a freed array's view")    # an entry left under b's id
    assert vendors._torch_view(b) == ("view", 2) and made == [a, b]
    vendors.forget_torch_views()
    assert vendors._torch_views == {}


def test_cublaslt_runs_on_cupys_current_stream(monkeypatch):
    """On CuPy's null stream torch.matmul runs on torch's default stream, the same legacy null stream; on any other
    CuPy stream it runs inside torch.cuda.stream(ExternalStream(that stream's pointer)), made once per pointer."""
    import contextlib

    import cupy

    log = []
    fake_torch = types.ModuleType("torch")
    fake_torch.from_dlpack = lambda x: f"view of {x}"
    fake_torch.matmul = lambda a, b, out: log.append(("matmul", a, b, out))

    @contextlib.contextmanager
    def stream(s):
        log.append(("enter", s))
        yield
        log.append(("exit", s))

    fake_torch.cuda = types.SimpleNamespace(ExternalStream=lambda ptr: log.append(("external", ptr)) or f"stream {ptr}",
                                            stream=stream)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setattr(vendors, "_torch_views", {})
    monkeypatch.setattr(vendors, "_torch_streams", {})
    a, b, c = "a", "b", "c"
    monkeypatch.setattr(cupy.cuda, "get_current_stream", lambda: types.SimpleNamespace(ptr=0))
    vendors.cublaslt(a, b, c)
    assert log == [("matmul", "view of a", "view of b", "view of c")]
    log.clear()
    monkeypatch.setattr(cupy.cuda, "get_current_stream", lambda: types.SimpleNamespace(ptr=1234))
    vendors.cublaslt(a, b, c)
    vendors.cublaslt(a, b, c)
    matmul = ("matmul", "view of a", "view of b", "view of c")
    assert log == [("external", 1234), ("enter", "stream 1234"), matmul, ("exit", "stream 1234"),
                   ("enter", "stream 1234"), matmul, ("exit", "stream 1234")]
