"""The course on the learner's GPU: one target through the build, the rungs, verification and timing, gemm(), the plan
and the CLI. Every architecture is compiled for here on the CPU; other GPUs are faked at the driver probe."""
import json

import numpy as np
import pytest

from conftest import FAKE_GPUS
from hgemm_course import NoGPUError
from hgemm_course.library import api, device, target
from hgemm_course.measurement import bench, timing, verification
from hgemm_course.course.cli import main
from hgemm_course.library.ladder import get, registry
from hgemm_course.library.target import KNOWN, RECORDED, features_of, lowest_arch, named

# What each runs past the Numba rungs 01-02 (by the features the rungs declare).
RUNS = {"A100": ["03", "04", "05", "06"], "RTX 4090": ["03", "04", "05", "06"],
        "RTX 5080": ["03", "04", "05", "06", "07"], "B200": ["03", "04", "05", "06", "07"], "T4": []}


def _reset_caches():
    target._target_of.cache_clear()
    api._rung.cache_clear()
    api._require_gpu_for.cache_clear()


@pytest.fixture
def fake_gpu(monkeypatch, request):
    """This machine with the named GPU in it, as far as the driver probe says."""
    info = FAKE_GPUS[request.param]
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(device, "probe_gpu", lambda: (info, None, "13.0"))
    _reset_caches()
    yield request.param
    _reset_caches()


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(device, "probe_gpu", lambda: (None, "no NVIDIA driver on this machine", None))
    _reset_caches()
    yield
    _reset_caches()


# ---------------------------------------------------------------- the target itself


def test_features_by_architecture():
    assert features_of("sm_75") == frozenset()
    assert features_of("sm_80") == features_of("sm_89") == {"cp.async", "ldmatrix", "mma.sync"}
    assert features_of("sm_120") == features_of("sm_100") == {"cp.async", "ldmatrix", "mma.sync", "tma", "clusters"}
    assert features_of("sm_90a") == {"cp.async", "ldmatrix", "mma.sync", "tma", "clusters", "wgmma", "setmaxnreg"}


def test_the_lowest_architecture_of_each_rung():
    assert [get(r).arch for r in ("01", "03", "06", "07", "09", "12")] == ["any", "sm_80", "sm_80", "sm_90", "sm_90a",
                                                                          "sm_90a"]
    assert lowest_arch(()) == "sm_75"


@pytest.mark.parametrize("spelling", ["sm_89", "89", "sm89", "compute_89", " SM_89 "])
def test_named_targets_take_the_usual_spellings(spelling):
    assert named(spelling) is KNOWN["sm_89"]


def test_an_unknown_target_names_the_known_ones():
    with pytest.raises(ValueError, match="No target 'sm_61': the course knows sm_75, sm_80"):
        named("sm_61")


def test_hopper_is_built_as_sm_90a():
    assert named("sm_90") is RECORDED and RECORDED.arch == "sm_90a"


# ---------------------------------------------------------------- every rung on every architecture


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90a", "sm_100", "sm_120"])
def test_every_rung_the_target_runs_compiles_without_spills_within_its_shared_memory(arch):
    """Through the package's own build, for the target's own architecture: no spills, and the dynamic shared
    memory each kernel asks for fits what one CTA may have there."""
    t = named(arch)
    for rung in registry().values():
        if rung.refusal(t) is not None or rung.backend != "nvrtc":
            continue
        for kernel in rung.kernels(t):
            assert kernel.arch == arch
            res = kernel.compile().resources_of(kernel.name_expression)
            assert res.spills == 0, (arch, kernel.name_expression, res)
            assert kernel.smem_bytes + res.smem_static <= t.smem_per_block, (arch, kernel.name_expression)


@pytest.mark.parametrize("arch, runs", [("sm_75", []), ("sm_80", RUNS["A100"]), ("sm_86", RUNS["A100"]),
                                        ("sm_89", RUNS["RTX 4090"]), ("sm_100", RUNS["B200"]),
                                        ("sm_120", RUNS["RTX 5080"]),
                                        ("sm_90a", ["03", "04", "05", "06", "07", "09", "10", "11", "12"])])
def test_what_each_target_runs_and_why_not_the_rest(arch, runs):
    t = named(arch)
    tensor_core = [r for r in registry().values() if r.backend == "nvrtc"]
    assert [r.id for r in tensor_core if r.refusal(t) is None] == runs
    for rung in tensor_core:
        why = rung.refusal(t)
        if why is not None:
            assert why.startswith(f"rung {rung.id} ({rung.slug}) needs ") and arch in why and "\n" not in why
            with pytest.raises(ValueError, match="needs"):
                rung.kernels(t)


def test_the_recorded_h200_configurations_are_unchanged():
    """On sm_90a each rung runs exactly the instantiations its recorded figures were measured with."""
    for rung in registry().values():
        if rung.backend == "nvrtc":
            assert tuple(k.name_expression for k in rung.kernels(RECORDED)) == rung.name_expressions


@pytest.mark.parametrize("arch, tiles", [
    ("sm_89", {"03": (128, 128, 2), "04": (128, 128, 2), "05": (128, 128, 3), "06": (128, 128, 3)}),
    ("sm_120", {"05": (128, 128, 3), "06": (128, 128, 3), "07": (128, 128, 3)}),
    ("sm_80", {"03": (256, 128, 3), "04": (128, 256, 3), "05": (256, 128, 3), "06": (256, 128, 3)}),
])
def test_rungs_size_their_tiles_for_the_targets_shared_memory(arch, tiles):
    """99 KiB: 128x128 tiles with 2-3 stages; the A100's 163 KiB keeps the H200's tiles with fewer stages."""
    for rid, (bm, bn, stages) in tiles.items():
        (kernel, *_) = get(rid).kernels(named(arch))
        assert kernel.template_args[:2] == (bm, bn) and kernel.template_args[5] == stages, (rid, kernel)


def test_a_target_run_from_ptx_builds_each_rung_for_its_lowest_architecture():
    """`--as sm_89` on the H200: sm_89's configuration, built as sm_80 PTX (rung 07 of sm_120 as sm_90)."""
    as_89 = KNOWN["sm_89"].__class__(**{**KNOWN["sm_89"].__dict__, "run_from_ptx": True})
    as_120 = KNOWN["sm_120"].__class__(**{**KNOWN["sm_120"].__dict__, "run_from_ptx": True})
    assert {k.arch for k in get("05").kernels(as_89)} == {"sm_80"}
    assert get("05").kernels(as_89)[0].template_args == get("05").kernels(KNOWN["sm_89"])[0].template_args
    assert get("07").kernels(as_120)[0].arch == "sm_90"


# ---------------------------------------------------------------- faked GPUs: every entry point


@pytest.mark.parametrize("fake_gpu", list(FAKE_GPUS), indirect=True)
def test_gemm_defaults_to_the_fastest_rung_this_gpu_runs(fake_gpu):
    expected = {"A100": "06", "RTX 4090": "06", "RTX 5080": "07", "B200": "07", "T4": "02"}[fake_gpu]
    assert api._rung(None).id == expected


@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "RTX 5080", "T4"], indirect=True)
def test_gemm_refuses_a_rung_this_gpu_cannot_run_in_one_line(fake_gpu):
    a, b = np.ones((64, 64), np.float16), np.ones((64, 64), np.float16)
    with pytest.raises(NoGPUError) as exc:
        api.gemm(a, b, rung="09")
    text = str(exc.value)
    assert text.startswith("Rung 09 (wgmma) needs wgmma") and FAKE_GPUS[fake_gpu].name in text and "\n" not in text


@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "B200", "T4"], indirect=True)
def test_verify_skips_what_this_gpu_cannot_run_with_one_line(fake_gpu, capsys):
    assert main(["verify", "09", "11"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in out] == ["skip: rung 09", "skip: rung 11"]
    assert all(FAKE_GPUS[fake_gpu].name in line for line in out)


@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "A100"], indirect=True)
def test_verify_runs_the_rest(fake_gpu, monkeypatch, capsys):
    ran = []

    def fake_verify(rung, M, N, K, *, seed=None):
        ran.append(rung.id)
        return verification.VerifyResult(rung.id, M, N, K, 0, 1e-4, 1e-4, 0)

    monkeypatch.setattr(verification, "verify", fake_verify)
    assert main(["verify", "05", "07", "--sizes", "128"]) == 0
    assert ran == ["05"]
    assert "skip: rung 07 (tma) needs TMA" in capsys.readouterr().out


@pytest.mark.parametrize("fake_gpu", ["RTX 4090"], indirect=True)
def test_verify_refuses_before_launching(fake_gpu):
    with pytest.raises(verification.NotForThisGPU, match="rung 10 .* needs wgmma .*; this NVIDIA GeForce RTX 4090 is sm_89; "
                                                    "its recorded H200 figures are shown instead"):
        verification.verify("10", 128, 128, 128)


@pytest.fixture
def gpu_parts(monkeypatch):
    """bench's GPU work faked: inputs, settling, the clock reader, the timing build's run (no clocks logged),
    the host's time per call and CuPy's memory pool."""
    import types

    import cupy

    monkeypatch.setattr(timing, "input_sets", lambda *a: [("a", "b", "c")])
    monkeypatch.setattr(timing, "settle", lambda *a, **k: None)
    monkeypatch.setattr(bench, "sm_clock_reader", lambda: (lambda: None))
    monkeypatch.setattr(timing, "time_with_clock", lambda *a, **k: None)
    monkeypatch.setattr(timing, "host_us_paired", lambda fns, *a, **k: [10.0] * len(fns))
    monkeypatch.setattr(cupy, "get_default_memory_pool", lambda: types.SimpleNamespace(free_all_blocks=lambda: None))


@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "RTX 5080"], indirect=True)
def test_bench_skips_what_this_gpu_cannot_run_and_times_the_rest(fake_gpu, gpu_parts, monkeypatch):
    """The real bench with the GPU's parts faked: inputs, cuBLAS, the clock and the paired timing."""
    monkeypatch.setattr(verification, "verify", lambda rung, M, N, K: verification.VerifyResult(rung.id, M, N, K, 0, 1e-4, 1e-4, 0))
    monkeypatch.setattr(timing, "time_paired", lambda *a, **k: timing.PairedTiming([2.0] * 20, [1.0] * 20,
                                                                                      [None] * 20, [None] * 20))
    skipped = []
    records = bench.bench(["05", "07", "11"], [256], progress=False, skipped=skipped)
    runs = {"RTX 4090": ["05"], "RTX 5080": ["05", "07"]}[fake_gpu]
    assert [r.rung for r in records] == runs
    assert [r.id for r, _ in skipped] == [r for r in ("05", "07", "11") if r not in runs]
    with pytest.raises(verification.NotForThisGPU):
        bench.bench(["11"], [256], progress=False)


@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "RTX 5080"], indirect=True)
def test_bench_of_nothing_this_gpu_runs_exits_2(fake_gpu, gpu_parts, tmp_path, capsys):
    assert main(["bench", "11", "--sizes", "256", "--out-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("skip: rung 11 (persistent) needs wgmma")


@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "B200"], indirect=True)
def test_plan_says_what_gemm_runs_on_a_gpu_without_wgmma(fake_gpu, capsys):
    assert main(["plan", "4096"]) == 0
    out = capsys.readouterr().out
    rung = {"RTX 4090": "06", "B200": "07"}[fake_gpu]
    assert out.startswith(f"gemm() on this {FAKE_GPUS[fake_gpu].name} runs rung {rung} at every shape")
    assert out.count("\n") == 1


@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "T4"], indirect=True)
def test_tune_refuses_a_rung_this_gpu_cannot_run(fake_gpu, capsys):
    assert main(["tune", "09"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hgemm-course tune: rung 09 (wgmma) needs wgmma") and err.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "RTX 5080", "T4"], indirect=True)
def test_doctor_reports_what_this_gpu_runs(fake_gpu, capsys):
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["target"]["arch"] == target.arch_of(FAKE_GPUS[fake_gpu].compute_capability)
    assert [r["rung"] for r in report["rungs"] if r["runs"]] == ["01", "02", *RUNS[fake_gpu]]
    assert main(["doctor"]) == 0
    text = capsys.readouterr().out
    assert "rungs 01-06 still run" not in text and f"What runs on this {FAKE_GPUS[fake_gpu].name}" in text


def test_doctor_and_compile_for_a_named_target(no_gpu, capsys):
    assert main(["doctor", "--arch", "sm_120", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    by_rung = {r["rung"]: r for r in report["rungs"]}
    assert by_rung["07"]["runs"] and by_rung["07"]["kernels"][0]["spill_bytes"] == 0
    assert by_rung["07"]["kernels"][0]["kernel"].startswith("k07_tma<128, 128, 64, 64, 64, 3,")
    assert not by_rung["09"]["runs"] and "wgmma" in by_rung["09"]["why"]
    assert main(["compile", "--arch", "sm_75", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all("not_for_target" in r for r in rows) and len(rows) == 9


def test_as_needs_a_gpu_and_says_so(no_gpu, capsys):
    assert main(["verify", "05", "--as", "sm_89"]) == 2
    err = capsys.readouterr().err
    assert "--as sm_89 runs sm_89's code on this machine's GPU, and there is none" in err and err.count("\n") == 1


@pytest.mark.parametrize("fake_gpu", ["A100"], indirect=True)
def test_as_runs_a_rung_only_where_the_gpu_here_has_its_features(fake_gpu, capsys):
    """sm_120's rung 07 is built as sm_90 PTX: an A100 has no TMA to run it; the H200 does."""
    assert main(["verify", "07", "--as", "sm_120"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("skip: rung 07 (tma) needs TMA") and "this NVIDIA A100-SXM4-40GB is sm_80, so it cannot run "\
        "sm_120's code for it" in out


def test_the_ceilings_fill_each_targets_sm_and_refuse_one_without_mma_sync():
    from hgemm_course.measurement import ceilings

    assert ceilings.fma_ctas_per_sm(named("sm_89")) == 1 and ceilings.fma_ctas_per_sm(RECORDED) == 2
    module = ceilings.compile_ceilings(named("sm_89"))
    assert module.arch == "sm_89" and module.resources_of(ceilings.fma_name(1)).spills == 0
    with pytest.raises(ValueError, match="the ceiling chain's mma.sync bounds needs ldmatrix .* and mma.sync"):
        ceilings.compile_ceilings(named("sm_75"))


@pytest.mark.parametrize("fake_gpu", ["RTX 4090", "T4"], indirect=True)
def test_profile_and_limits_refuse_what_this_gpu_cannot_run(fake_gpu, capsys, tmp_path):
    assert main(["profile", "09", "--size", "1024", "--out-dir", str(tmp_path)]) == 2
    assert "rung 09 (wgmma) needs wgmma" in capsys.readouterr().err
    assert main(["limits", "--out-dir", str(tmp_path)]) == 2
    assert "rung 07 (tma) needs TMA" in capsys.readouterr().err


def test_the_occupancy_model_takes_a_targets_limits():
    """A CTA of 98304 bytes of shared memory: two fit the H200's 228 KiB per SM, one sm_89's 100 KiB."""
    from hgemm_course.sim.occupancy import H200, hardware_of, occupancy_report

    assert hardware_of(RECORDED) == H200
    assert occupancy_report(256, 128, 98304)["limits"]["shared_memory"] == 2
    assert occupancy_report(256, 128, 98304, **hardware_of(named("sm_89")))["limits"]["shared_memory"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("fake_gpu", ["RTX 4090"], indirect=True)
def test_tour_on_a_gpu_without_hopper_times_what_it_runs_and_shows_the_rest_recorded(fake_gpu, gpu_parts, monkeypatch,
                                                                                      tmp_path, capsys):
    monkeypatch.setattr(verification, "verify", lambda rung, M, N, K: verification.VerifyResult(rung.id, M, N, K, 0, 1e-4, 1e-4, 0))
    monkeypatch.setattr(timing, "time_paired", lambda *a, **k: timing.PairedTiming([2.0] * 20, [1.0] * 20,
                                                                                      [None] * 20, [None] * 20))
    assert main(["tour", "--sizes", "256", "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "== Every CUDA kernel compiled for this NVIDIA GeForce RTX 4090 (sm_89), each sized for it" in out
    assert "07    not for this target: rung 07 (tma) needs TMA" in out
    skips = [line for line in out.splitlines() if line.startswith("skip: ")]
    assert [line.split(" (")[0] for line in skips] == ["skip: rung 07", "skip: rung 09", "skip: rung 10", "skip: rung 11",
                                                       "skip: rung 12"]
    assert all(line.endswith("its recorded H200 figures are shown instead") for line in skips)
    assert "== Recorded H200 results (from results/, not measured now) ==" in out
    timed = json.loads(next(tmp_path.glob("bench_*.json")).read_text())["records"]
    assert [r["rung"] for r in timed] == ["01", "02", "03", "04", "05", "06"]


def test_results_show_the_learners_own_runs_beside_the_recorded_ones(tmp_path, monkeypatch, capsys):
    """A run in ./hgemm-results/ on another GPU is listed after the recorded H200 runs, labelled with its GPU."""
    from hgemm_course.measurement import records

    record = {"rung": "05", "M": 4096, "N": 4096, "K": 4096, "ms": 1.0, "tflops": 137.4, "cublas_ms": 0.97,
              "cublas_tflops": 141.7, "pct_cublas": 97.0, "samples_ms": [1.0] * 20, "paired": True}
    monkeypatch.setattr(records, "provenance", lambda extra=None: {"date": "2026-12-02T00:00:00+00:00",
                                                                   "gpu": "NVIDIA GeForce RTX 4090", "arch": "sm_89"})
    monkeypatch.chdir(tmp_path)
    records.write_run([record], folder=tmp_path / "hgemm-results")
    assert main(["results"]) == 0
    out = capsys.readouterr().out
    recorded, own = out.split("\nYour runs on the NVIDIA GeForce RTX 4090 (")
    assert "Recorded results (not measured now):" in recorded and "4096x4096x4096" in own and "97.0%" in own


def test_readmes_table_of_what_runs_where_is_the_one_the_rungs_give():
    from hgemm_course.library.paths import REPO_ROOT
    from hgemm_course.course.target_report import TARGETS_BEGIN, TARGETS_END, targets_markdown

    readme = (REPO_ROOT / "README.md").read_text()
    table = readme[readme.index(TARGETS_BEGIN) + len(TARGETS_BEGIN):readme.index(TARGETS_END)].strip()
    assert table == targets_markdown(), "README's table is out of date: paste support.targets_markdown()"
