"""The ceiling chain: its microbenchmarks compile for sm_90a without spilling and keep their work,
the record carries every roof, older records still draw, and without a GPU the command says so."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import HAS_GPU
from hgemm_course import viz
from hgemm_course.measurement import ceilings
from hgemm_course.measurement.ceilings import BOUND_CONFIGS, FMA_NAME, compile_ceilings, format_ceilings, roofs
from hgemm_course.library.paths import KERNELS_DIR, PTX_SNIPPETS_DIR
from hgemm_course.measurement.records import write_run
from hgemm_course.measurement.roofline import recorded_ceilings

REGISTERS_PER_SM = 65536


@pytest.fixture(scope="module")
def module():
    return compile_ceilings()


def entry_ptx(module, name_expression) -> str:
    """The PTX of one kernel: from its .entry to the next one."""
    mangled = module.lowered[name_expression]
    start = module.ptx.index(f".entry {mangled}(")
    end = module.ptx.find(".entry ", start + 1)
    return module.ptx[start:end if end > 0 else None]


def test_every_configuration_compiles_without_spilling(module):
    for config in BOUND_CONFIGS:
        res = module.resources_of(config.name_expression)
        assert res.spills == 0 and res.stack_frame == 0, f"{config.label}: {res}"
        assert 0 < res.registers and res.registers * config.warps_per_sm * 32 <= REGISTERS_PER_SM, \
            f"{config.label}: {res.registers} registers do not fit one CTA of {config.warps_per_sm} warps on an SM"
    fma = module.resources_of(FMA_NAME)
    assert fma.spills == 0 and fma.stack_frame == 0
    threads_per_sm = ceilings.FMA_THREADS * ceilings.FMA_CTAS_PER_SM
    assert fma.registers * threads_per_sm <= REGISTERS_PER_SM, "the FMA kernel must fill the SM with threads"


def test_the_work_is_in_the_ptx(module):
    """Each k-step's FRAG_M x FRAG_N mma.sync are there; ldmatrix once (registers) or in the loop (ldmatrix)."""
    for config in BOUND_CONFIGS:
        ptx = entry_ptx(module, config.name_expression)
        mmas = (config.wm // 16) * (config.wn // 8)
        loads = config.wm // 16 + config.wn // 16
        n_mma = ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
        n_ldm = len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.(?:trans\.)?shared\.b16", ptx))
        assert n_mma > 0 and n_mma % mmas == 0, f"{config.label}: {n_mma} mma.sync"
        if config.feed == "registers":
            assert n_ldm == loads, f"{config.label}: {n_ldm} ldmatrix"
        else:
            assert n_ldm == loads * n_mma // mmas, f"{config.label}: {n_ldm} ldmatrix for {n_mma // mmas} k-steps"
        assert "st.global" in ptx
    assert entry_ptx(module, FMA_NAME).count("fma.rn.f32") >= ceilings.FMA_CHAINS


def test_kernels_use_the_snippets_and_never_copy_them():
    text = (KERNELS_DIR / ceilings.SOURCE).read_text()
    assert "asm" not in text
    for header in ("ldmatrix.cuh", "mma_sync.cuh", "swizzle.cuh", "common.cuh"):
        assert f'#include "{header}"' in text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_compiles_standalone_with_nvcc(tmp_path):
    """nvcc sees only the kernel file and the two include folders; explicit instantiations make it compile
    the FMA kernel and the largest-register configuration for sm_90a."""
    wrapper = tmp_path / "instantiate_ceilings.cu"
    wrapper.write_text(f'#include "{ceilings.SOURCE}"\n'
                       f"template __global__ void {BOUND_CONFIGS[1].name_expression}(float*, long long*, int);\n"
                       f"template __global__ void {FMA_NAME}(float*, float, float, int);\n")
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", f"-I{PTX_SNIPPETS_DIR}", f"-I{KERNELS_DIR}",
           "-c", str(wrapper), "-o", str(tmp_path / "ceilings.o")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_the_configurations_asked_for_are_measured():
    shapes = {(c.warps_per_sm, c.wm, c.wn, c.feed) for c in BOUND_CONFIGS}
    for warps, wm, wn in [(8, 64, 64), (16, 64, 32), (4, 64, 64), (8, 32, 64)]:
        assert {(warps, wm, wn, "registers"), (warps, wm, wn, "ldmatrix")} <= shapes


BOUND = [{"warps_per_sm": c.warps_per_sm, "warp_tile": [c.wm, c.wn], "feed": c.feed, "tflops": 500.0 + i,
          "ms": 10.0, "k_steps": 40000, "clock_ghz": 1.98, "flop_per_sm_cycle": 2500.0 + i, "registers": 168}
         for i, c in enumerate(BOUND_CONFIGS)]
FULL = {"fp32_tflops": 66.0, "fp32_ms": 10.0, "fp32_iterations": 150000, "mma_sync_bound": BOUND,
        "mma_sync_tflops": 569.0, "mma_sync_peak": {"warps_per_sm": 16, "warp_tile": [64, 32]},
        "gemm_size": 8192, "cublas_ms": 1.5, "cublas_tflops": 723.5, "datasheet_fp16_tflops": 989.4,
        "datasheet_fp32_tflops": 67.0, "datasheet_bandwidth_gbs": 4800.0, "datasheet_source": ceilings.DATASHEET_SOURCE,
        "copy_bytes": 2**31, "copy_ms": 1.0, "bandwidth_gbs": 4286.0, "repeats": 30}
OLD = {k: FULL[k] for k in ("copy_bytes", "copy_ms", "bandwidth_gbs", "gemm_size", "cublas_ms", "cublas_tflops",
                            "repeats")}


def test_roofs_climb_the_chain_and_skip_what_an_old_record_lacks():
    names = [r["name"] for r in roofs(FULL)]
    assert names == ["FP32 CUDA cores", "mma.sync bound, 8 warps of 64x64", "mma.sync register peak, 16 warps of 64x32",
                     "cuBLAS fp16", "datasheet dense fp16 tensor"]
    assert roofs(FULL)[1]["tflops"] == next(b["tflops"] for b in BOUND if b["warp_tile"] == [64, 64]
                                            and b["warps_per_sm"] == 8 and b["feed"] == "ldmatrix")
    assert [r["measured"] for r in roofs(FULL)] == [True, True, True, True, False]
    assert [r["name"] for r in roofs(OLD)] == ["cuBLAS fp16"]


def test_record_round_trip_and_roofline_data(tmp_path):
    """Written as `hgemm-course ceilings` writes it, read back as chapter 00 reads it, drawn from the data."""
    write_run([FULL], kind="ceilings", folder=tmp_path)
    got = recorded_ceilings(tmp_path)
    assert {k: got[k] for k in FULL} == json.loads(json.dumps(FULL))
    data = viz.roofline_data(ceilings=got, records=[])
    assert [r["tflops"] for r in data["roofs"]] == [66.0, roofs(FULL)[1]["tflops"], 569.0, 723.5, 989.4]
    # the compute roof is the highest measured peak (the mma.sync register peak here, no wgmma in FULL), not cuBLAS
    assert data["peak_tflops"] == 569.0 and data["ridge"] == pytest.approx(569.0e12 / 4286e9)
    with_wgmma = viz.roofline_data(ceilings={**got, "wgmma_tflops": 834.0, "wgmma_peak": [
        {"warpgroups": 2, "n": 256, "tflops": 834.0, "flop_per_sm_cycle": 4096.0}]}, records=[])
    assert with_wgmma["peak_tflops"] == 834.0 and "wgmma peak" in [r["name"][:10] for r in with_wgmma["roofs"]]
    old = viz.roofline_data(ceilings={**OLD, "gpu": "NVIDIA H200", "date": "2026-11-29"}, records=[])
    assert [r["name"] for r in old["roofs"]] == ["cuBLAS fp16"] and old["peak_name"].startswith("cuBLAS (this record")
    viz.roofline_figure(ceilings=got, records=[])


def test_the_recorded_ceilings_still_draw():
    recorded = recorded_ceilings()
    if recorded is None:
        pytest.skip("no recorded ceilings")
    assert roofs(recorded)[-1]["tflops"] > 0
    viz.roofline_figure(ceilings=recorded, records=[])


def test_format_shows_every_roof_against_the_datasheet_and_every_bound_beside_the_model():
    text = format_ceilings(FULL)
    assert "FP32 CUDA cores" in text and "(99%)" in text and "989.4" in text and "4286" in text
    bound_lines = [line for line in text.splitlines() if re.search(r"\d+x\d+ +(registers|ldmatrix)", line)]
    assert len(bound_lines) == len(BOUND_CONFIGS)
    assert "dependent_issue" in text and "shared_memory" in text
    assert "mma.sync" not in format_ceilings(OLD)


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU answer")
def test_cli_without_a_gpu_says_so_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-m", "hgemm_course.course.cli", "ceilings", "--out-dir", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "needs an NVIDIA GPU" in out.stderr and "scripts/h200.sh" in out.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.gpu
def test_measured_chain_is_ordered_and_complete():
    record = ceilings.measure_ceilings(copy_bytes=2**28, gemm_size=4096, repeats=5, target_ms=2.0, progress=False)
    assert set(FULL) <= set(record)
    assert len(record["mma_sync_bound"]) == len(BOUND_CONFIGS)
    assert all(set(r) == set(BOUND[0]) for r in record["mma_sync_bound"])
    assert 0.5 * ceilings.DATASHEET_FP32_TFLOPS < record["fp32_tflops"] < 1.05 * ceilings.DATASHEET_FP32_TFLOPS
    for r in record["mma_sync_bound"]:
        assert 0 < r["tflops"] <= record["mma_sync_tflops"] * 1.05 and 0.5 < r["clock_ghz"] < 2.2, r
    assert record["fp32_tflops"] < record["mma_sync_tflops"] < ceilings.DATASHEET_FP16_TFLOPS
    # an H200's SM does 4096 dense fp16 flops per cycle (989.4 TFLOP/s at 1.83 GHz on 132 SMs): the wgmma loop
    # reaches it, the mma.sync loops do not
    assert len(record["wgmma_peak"]) == len(ceilings.WGMMA_CONFIGS)
    for r in record["wgmma_peak"]:
        assert 0.95 * 4096 < r["flop_per_sm_cycle"] <= 1.001 * 4096 and 0.5 < r["clock_ghz"] < 2.2, r
    assert all(r["flop_per_sm_cycle"] < 0.75 * 4096 for r in record["mma_sync_bound"])
    assert record["mma_sync_tflops"] < record["wgmma_tflops"] < ceilings.DATASHEET_FP16_TFLOPS
