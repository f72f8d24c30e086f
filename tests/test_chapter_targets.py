"""The chapters' calls on a learner's GPU (hgemm_course.course.here_or_recorded, and roofs, chapter_limits, compiled and
profile_tables beside it): what the GPU runs is measured, what it cannot run is refused in one line and shown from the
H200's records, and nothing raises.

The GPU is faked at the driver probe (an RTX 4090, an RTX 5080, a T4, or none), and measurement's ``bench`` and
``verify`` (and the ceilings and limits runs) are replaced by recorders: no kernel is launched. Each test runs in its
own folder, where a measured cell writes ./hgemm-results/, with the provenance of a run on 2026-12-04."""
import json
from pathlib import Path

import pytest

from conftest import FAKE_GPUS
from hgemm_course.course import chapter_limits, compiled, here_or_recorded, profile_tables, roofs
from hgemm_course.library import device, target
from hgemm_course.measurement import bench, ceilings, limits, records, timing, verification
from hgemm_course.library.device import GpuInfo
from hgemm_course.measurement.bench import BenchRecord
from hgemm_course.measurement.verification import VerifyResult
from hgemm_course.library.ladder import get, registry
from hgemm_course.measurement.roofline import recorded_ceilings

H200 = GpuInfo("NVIDIA H200", (9, 0), 132, 60 * 2**20, 228 * 1024, 227 * 1024, 65536, 1980000, 141 * 2**30, 2048)
ARCHES = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100", "sm_120"]


def _probe(monkeypatch, answer):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(device, "probe_gpu", lambda: answer)
    target._target_of.cache_clear()


DATE = "2026-12-04T00:47:00+00:00"


def _provenance(extra=None):
    gpu = device.probe_gpu()[0]
    return {"date": DATE, "gpu": gpu.name if gpu else None, "driver": "580.0", "cuda_runtime": "13.0",
            "nvrtc": "13.0", "packages": {"cupy": "13.6"}, "python": "CPython 3.12.3", **(extra or {})}


@pytest.fixture
def calls(monkeypatch, tmp_path):
    """What the chapter asked bench and verify (and the ceilings and limits runs) to do, in order."""
    asked = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(here_or_recorded.RECORD_ENV, raising=False)
    monkeypatch.setattr(records, "provenance", _provenance)

    def verify(rung, M, N, K, **_):
        asked.append(("verify", rung, (M, N, K)))
        return VerifyResult(rung, M, N, K, 0, 1e-4, 1e-4, 0)

    def fake_bench(rungs, sizes, **kwargs):
        asked.append(("bench", list(rungs), list(sizes)))
        assert kwargs.get("skipped") == [], "bench is given a skipped list, and nothing it would skip"
        return [BenchRecord(r, n, n, n, 1.0, 100.0, 0.8, 125.0, 80.0) for n in sizes for r in rungs]

    def measure_ceilings(**_):
        asked.append(("ceilings",))
        return recorded_ceilings()

    def run_all(*, folder, **_):
        asked.append(("limits",))
        fake = {"fake": True, "occupancy_cliff": {}, "carveout": {}, "bk32": {}, "variants": [], "size": 8192}
        return records.write_run([fake], kind="limits", folder=folder), {"fake": True}

    monkeypatch.setattr(verification, "verify", verify)
    monkeypatch.setattr(bench, "bench", fake_bench)
    monkeypatch.setattr(ceilings, "measure_ceilings", measure_ceilings)
    monkeypatch.setattr(limits, "run_all", run_all)
    monkeypatch.setattr(limits, "format_limits", lambda data: "the limits table")
    yield asked
    target._target_of.cache_clear()


@pytest.fixture
def gpu(monkeypatch, request):
    """This machine with the named GPU in it, as far as the driver probe says."""
    _probe(monkeypatch, ({**FAKE_GPUS, "H200": H200}[request.param], None, "13.0"))
    yield request.param
    target._target_of.cache_clear()


@pytest.fixture
def no_gpu(monkeypatch):
    _probe(monkeypatch, (None, "no NVIDIA driver on this machine", None))
    yield
    target._target_of.cache_clear()


SHAPES = [(1000, 1000, 1000), (257, 136, 72)]


@pytest.mark.parametrize("gpu", ["RTX 4090"], indirect=True)
def test_a_4090_times_05_and_06_and_shows_07_recorded(gpu, calls, capsys):
    here_or_recorded.run_or_show(["05", "06", "07"], SHAPES, [4096])
    out = capsys.readouterr().out
    assert calls == [("verify", "06", SHAPES[0]), ("verify", "06", SHAPES[1]), ("bench", ["05", "06"], [4096])]
    (path,) = (Path("hgemm-results")).glob("bench_*.json")
    assert f"measured on NVIDIA GeForce RTX 4090, 2026-12-04, written to {path.resolve()}:" in out
    assert [(r["rung"], r["M"]) for r in json.loads(path.read_text())["records"]] == [("05", 4096), ("06", 4096)]
    line = verification.refusal_here(get("07"))
    assert line.endswith("; its recorded H200 figures are shown instead") and "this NVIDIA GeForce RTX 4090 is sm_89" in line
    assert out.count(line) == 1
    recorded = out[out.index(line):]
    assert "RECORDED on the NVIDIA H200 (bench_" in recorded
    assert any(row.startswith("07 ") and "4096x4096x4096" in row for row in recorded.splitlines())
    assert out.index("measured on") < out.index(line)


@pytest.mark.parametrize("gpu", ["RTX 5080"], indirect=True)
def test_a_5080_runs_05_to_07_and_shows_nothing_recorded(gpu, calls, capsys):
    here_or_recorded.run_or_show(["05", "06", "07"], SHAPES, [4096])
    out = capsys.readouterr().out
    assert calls == [("verify", "07", SHAPES[0]), ("verify", "07", SHAPES[1]), ("bench", ["05", "06", "07"], [4096])]
    assert "measured on NVIDIA GeForce RTX 5080, 2026-12-04, written to " in out
    assert "RECORDED" not in out and "shown instead" not in out


@pytest.mark.parametrize("gpu", ["RTX 4090", "RTX 5080", "T4"], indirect=True)
def test_wgmma_is_refused_in_one_line_and_shown_recorded(gpu, calls, capsys):
    here_or_recorded.run_or_show(["09"], SHAPES, [4096, 8192])
    out = capsys.readouterr().out
    assert calls == []
    line = verification.refusal_here(get("09"))
    assert line.startswith("rung 09 (wgmma) needs wgmma (sm_90a only: H100/H200); this ")
    assert out.startswith(line + "\nRECORDED on the NVIDIA H200 (")
    assert {row.split()[0] for row in out.splitlines() if row[:2].isdigit()} == {"09"}
    assert "measured" not in out and not Path("hgemm-results").exists()


@pytest.mark.parametrize("gpu", ["T4"], indirect=True)
def test_a_t4_times_only_the_numba_rungs(gpu, calls, capsys):
    rows = here_or_recorded.bench_or_show(["02", "03"], [4096])
    out = capsys.readouterr().out
    assert calls == [("bench", ["02"], [4096])]
    assert "measured on Tesla T4, 2026-12-04, written to " in out and verification.refusal_here(get("03")) in out
    assert [r["rung"] for r in rows if "file" not in r] == ["02"]
    assert {r["rung"] for r in rows if "file" in r} == {"03"}


def test_without_a_gpu_the_last_rung_is_compiled_for_the_current_target(no_gpu, calls, capsys):
    with target.use(target.named("sm_89")):
        here_or_recorded.run_or_show(["04", "05"], SHAPES, [4096])
    out = capsys.readouterr().out
    assert calls == []
    sized = [k.name_expression for k in get("05").kernels(target.named("sm_89"))]
    assert sized != list(get("05").name_expressions)           # sm_89's tiles, not the H200's
    assert out.startswith("no GPU here: rung 05 compiled for the sm_89 target (RTX 4090, L4), not run:")
    assert all(f"  {name} (cubin for sm_89): " in out for name in sized)
    assert "RECORDED on the NVIDIA H200 (" in out


def test_without_a_gpu_a_rung_the_target_lacks_is_not_compiled(no_gpu, calls, capsys):
    with target.use(target.named("sm_89")):
        here_or_recorded.run_or_show(["07", "09"], SHAPES, [4096])
    out = capsys.readouterr().out
    assert out.startswith(f"no GPU here: {get('09').refusal(target.named('sm_89'))}; not compiled\n")
    assert "RECORDED on the NVIDIA H200 (" in out and calls == []


@pytest.mark.parametrize("gpu", ["RTX 4090"], indirect=True)
def test_ceilings_are_measured_on_a_gpu_with_mma_sync(gpu, calls, capsys):
    assert roofs.ceilings_or_show()["cublas_tflops"] > 0
    assert calls == [("ceilings",)]
    (path,) = Path("hgemm-results").glob("ceilings_*.json")
    assert capsys.readouterr().out.startswith(f"measured on NVIDIA GeForce RTX 4090, 2026-12-04, written to "
                                              f"{path.resolve()}: copy ")


@pytest.mark.parametrize("gpu", ["T4"], indirect=True)
def test_ceilings_are_shown_recorded_on_a_gpu_without_mma_sync(gpu, calls, capsys):
    assert roofs.ceilings_or_show() == recorded_ceilings()
    out = capsys.readouterr().out.splitlines()
    assert calls == []
    assert out[0].startswith("measuring the ceiling chain needs ") and "this Tesla T4 is sm_75" in out[0]
    assert out[0].endswith("; the recorded H200 chain is shown instead")
    assert out[1].startswith("RECORDED on the NVIDIA H200 (ceilings_")


@pytest.mark.parametrize("gpu", ["RTX 4090", "RTX 5080"], indirect=True)
def test_chapter_08s_experiments_run_only_where_rung_07_does(gpu, calls, capsys):
    data = chapter_limits.limits_or_show()
    out = capsys.readouterr().out
    if gpu == "RTX 5080":
        assert calls == [("limits",)] and data == {"fake": True}
        (path,) = Path("hgemm-results").glob("limits_*.json")
        assert out == f"measured on NVIDIA GeForce RTX 5080, 2026-12-04, written to {path.resolve()}:\nthe limits table\n"
    else:
        assert calls == [] and "occupancy_cliff" in data
        assert out.startswith(verification.refusal_here(get("07")) + "\nRECORDED on the NVIDIA H200 (limits_")


@pytest.mark.parametrize("gpu", ["RTX 4090"], indirect=True)
def test_the_chapters_compile_cells_build_the_h200s_configurations(gpu, capsys):
    from hgemm_course.library.ladder import r07_tma, r09_wgmma

    with compiled.recorded_build() as t:
        assert target.current() is t is target.RECORDED
        assert r09_wgmma.kernel().arch == "sm_90a" and r07_tma.kernel().name_expression == get("07").name_expressions[0]
    assert target.current().present
    assert capsys.readouterr().out.startswith("compiled for the sm_90a target (H100, H200), where the chapter's "
                                              "figures were recorded, not for this NVIDIA GeForce RTX 4090 (sm_89)")


def test_the_compile_cells_say_nothing_where_the_target_is_the_h200s(no_gpu, capsys):
    with compiled.recorded_build():
        pass
    assert capsys.readouterr().out == ""


@pytest.fixture
def fake_compiles(monkeypatch):
    """support.kernel_row without NVRTC: what a clean compile reports."""
    from hgemm_course.course import target_report as support

    def kernel_row(kernel, t):
        return {"kernel": kernel.name_expression, "arch": kernel.arch, "threads": kernel.threads,
                "smem_dynamic": kernel.smem_bytes, "from_ptx": kernel.arch != t.arch, "registers": 128,
                "smem_static": 0, "spill_bytes": 0, "stack_frame": 0}

    monkeypatch.setattr(support, "kernel_row", kernel_row)


def test_what_runs_where_matches_each_rungs_refusal(fake_compiles, capsys):
    rows = compiled.what_runs_where(ARCHES)
    out = capsys.readouterr().out
    assert len(rows) == len(ARCHES) * len(registry())
    for row in rows:
        rung, t = get(row["rung"]), target.named(row["arch"])
        assert row["why"] == rung.refusal(t)
        assert row["runs"] == (row["why"] is None)
        if not row["runs"]:
            assert row["config"] == f"needs {rung.arch}"
        elif rung.backend == "numba":
            assert row["config"] == "Numba"
        else:
            first = rung.kernels(t)[0]
            bm, bn = first.name_expression.split("<")[1].split(", ")[:2]
            assert row["config"].startswith(f"{bm}x{bn} s")
    table = out.splitlines()
    assert table[0].split() == ["rung", *ARCHES]
    by_rung = {line.split()[0]: line for line in table[1:len(registry()) + 1]}
    assert by_rung["09"].split()[2:] == ["needs", "sm_90a"] * 4 + ["128x128", "s3"] + ["needs", "sm_90a"] * 2
    for row in rows:
        if not row["runs"]:
            assert row["why"].partition("; ")[0] in out


def test_what_runs_where_sizes_rung_07_for_the_rtx_5080(fake_compiles, capsys):
    rows = {(r["rung"], r["arch"]): r for r in compiled.what_runs_where(["sm_89", "sm_120"])}
    assert rows["07", "sm_89"]["config"] == "needs sm_90" and not rows["07", "sm_89"]["runs"]
    assert rows["07", "sm_120"]["runs"]
    assert rows["07", "sm_120"]["kernels"][0]["smem_dynamic"] <= target.named("sm_120").smem_per_block


def test_what_runs_where_compiles_for_real(capsys):
    rows = compiled.what_runs_where(["sm_89"])
    assert all("error" not in k for r in rows for k in r["kernels"])
    assert {r["rung"] for r in rows if r["runs"]} == {"01", "02", "03", "04", "05", "06"}
    assert all(k["registers"] > 0 for r in rows for k in r["kernels"])


def test_tensor_instructions_reads_the_recorded_profiles(capsys):
    rows = {r["rung"]: r for r in profile_tables.tensor_instructions(("cublas", "07"), 8192)}
    assert rows["cublas"]["kernel"].startswith("nvjet_sm90_")
    assert rows["cublas"]["wgmma"] == rows["cublas"]["tensor_instructions"] > 0 and rows["cublas"]["ldmatrix"] == 0
    assert rows["07"]["wgmma"] == 0 and rows["07"]["ldmatrix"] > 0
    assert capsys.readouterr().out.startswith("RECORDED on the NVIDIA H200 (profile_")


@pytest.fixture
def recorded_folder(monkeypatch, tmp_path):
    """The course's results/, moved to a scratch folder, as the site's execution of the chapters writes it."""
    folder = tmp_path / "results"
    monkeypatch.setattr(records, "results_dir", lambda: folder)
    monkeypatch.setattr(here_or_recorded, "results_dir", lambda: folder)
    monkeypatch.setenv(here_or_recorded.RECORD_ENV, "1")
    return folder


@pytest.mark.parametrize("gpu", ["H200"], indirect=True)
def test_the_sites_execution_records_what_a_chapter_measures_in_results(gpu, calls, recorded_folder, capsys):
    here_or_recorded.bench_or_show(["09"], [4096])
    out = capsys.readouterr().out
    (path,) = recorded_folder.glob("bench_nvidia-h200_*.json")
    assert out.startswith(f"measured on NVIDIA H200, 2026-12-04, written to results/{path.name}:\n")
    assert not Path("hgemm-results").exists()


@pytest.mark.parametrize("gpu", ["RTX 4090"], indirect=True)
def test_the_sites_execution_measures_nothing_it_cannot_record(gpu, calls, recorded_folder):
    with pytest.raises(RuntimeError, match="takes only an H200 run"):
        here_or_recorded.bench_or_show(["05"], [4096])
    assert calls == [] and not recorded_folder.exists()


@pytest.mark.parametrize("gpu", ["RTX 5080"], indirect=True)
def test_a_comparison_measured_here_is_written_and_named(gpu, calls, monkeypatch, capsys):
    import sys
    from types import SimpleNamespace as NS

    monkeypatch.setitem(sys.modules, "cupy", NS(cuda=NS(Device=lambda: NS(attributes={"L2CacheSize": 64 << 20}))))
    monkeypatch.setattr(timing, "input_sets", lambda *a: ["sets"])
    monkeypatch.setattr(timing, "time_paired", lambda *a, **k: NS(fn_ms=[0.9, 0.91, 0.89, 0.9], reference_ms=[1.0] * 4))
    monkeypatch.setattr(timing, "time_with_clock",
                        lambda launch, sets: NS(launches=[NS(cycles=c) for c in (100.0, 101.0, 99.0, 100.0)]))
    found = here_or_recorded.compare_or_show("05", "06", 4096)
    out = capsys.readouterr().out
    (path,) = Path("hgemm-results").glob("compare_*.json")
    assert out.startswith(f"measured on NVIDIA GeForce RTX 5080, 2026-12-04, written to {path.resolve()}, "
                          "rungs 05 and 06 at 4096^3:\n")
    report = json.loads(path.read_text())
    assert report["rungs"] == ["05", "06"] and report["b_ms"] == [0.9, 0.91, 0.89, 0.9]
    assert report["verdicts"] == [str(v) for v in found] and len(found) == 2
