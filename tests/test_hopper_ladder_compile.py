"""Rungs 09 (TMA + wgmma) and 10 (warp specialization) compile for sm_90a (NVRTC, and nvcc where
present), keep their accumulators in registers, contain the instructions they teach, encode their
shared-memory descriptors as hand-computed, refuse tiles they cannot do, and differ from the rung
before by their idea."""
from __future__ import annotations

import dataclasses
import difflib
import re
import shutil
import subprocess

import pytest

from hgemm_course.library.build import CompileError, compile_cuda
from hgemm_course.check.generate import without_markers
from hgemm_course.library.ladder import get, registry
from hgemm_course.library.ladder import r07_tma, r09_wgmma, r10_warp_specialized
from hgemm_course.library.ladder.r09_wgmma import WgmmaTiles
from hgemm_course.library.ladder.r10_warp_specialized import WarpSpecializedTiles
from hgemm_course.library.paths import KERNELS_DIR, PTX_SNIPPETS_DIR

VARIANTS = [r09_wgmma.TILES, WgmmaTiles(128, 128, 64, 4), WgmmaTiles(128, 128, 64, 5), WgmmaTiles(64, 256, 64, 4)]


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda t: f"{t.bm}x{t.bn}s{t.stages}")
def compiled(request):
    k = r09_wgmma.kernel(request.param)
    return k, k.compile()


def test_rung_09_is_registered():
    rung = registry()["09"]
    assert rung.backend == "nvrtc" and rung.kernel_path.is_file() and rung.arch == "sm_90a"
    assert rung.name_expressions == (r09_wgmma.kernel().name_expression,)
    assert rung.extra["smem_bytes"] == r09_wgmma.kernel().smem_bytes


def test_no_spills_no_local_memory(compiled):
    k, mod = compiled
    res = mod.resources_of(k.name_expression)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert res.smem_static == 0
    assert res.registers <= 255


def test_ptxas_keeps_wgmma_asynchronous(compiled):
    """ptxas serializes wgmma (and says so) when the accumulators are touched while in flight."""
    _, mod = compiled
    assert "serialized" not in mod.log, mod.log


def test_shared_memory_is_rung_07s_ring(compiled):
    k, _ = compiled
    t = next(v for v in VARIANTS if k.template_args[:4] == v.template_args)
    dense = t.stages * (t.bm * t.bk + t.bk * t.bn) * 2
    assert k.smem_bytes == -(-(1024 + dense + 16 * t.stages) // 1024) * 1024 <= 227 * 1024
    assert k.smem_layout == f"TmaRing<{t.bm}, {t.bn}, {t.bk}, {t.stages}>"


def test_ptx_contains_what_the_rung_teaches(compiled):
    k, mod = compiled
    bn = k.template_args[1]
    for text in (f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.f16.f16", "wgmma.fence.sync.aligned",
                 "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned",
                 "cp.async.bulk.tensor.2d.shared::cluster.global", "mbarrier.try_wait.parity",
                 "mbarrier.arrive.expect_tx", "prefetch.tensormap"):
        assert text in mod.ptx, f"no {text} in the PTX of {k.name_expression}"
    for text in ("ldmatrix", "mma.sync", "wmma.", "cp.async.cg"):
        assert text not in mod.ptx, f"{text} should be gone from the PTX of {k.name_expression}"


def test_wgmma_reads_a_k_major_and_b_mn_major():
    """The last four immediates are imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b:
    A row-major (K contiguous) is not transposed, B row-major (N contiguous) is."""
    ptx = r09_wgmma.kernel().compile().ptx
    lines = [line for line in ptx.splitlines() if "wgmma.mma_async" in line]
    assert len(lines) == (128 // 64) * (64 // 16)          # FRAG_M products per k16 step, 4 steps per slice
    for line in lines:
        assert re.search(r"\}, %rd\d+, %rd\d+, scale_d, 1, 1, 0, 1;$", line.strip()), line
        assert len(re.findall(r"%f\d+", line)) == 128 // 2  # N / 2 fp32 accumulators per thread


def test_main_loop_has_no_cta_barrier():
    """The only bar.sync is the one after the mbarriers are set up, as in rung 07."""
    ptx = r09_wgmma.kernel().compile().ptx
    assert len(re.findall(r"\bbar(rier)?\.sync", ptx)) == 1


# ------------------------------------------------------------------ descriptors

def test_descriptor_twin_matches_a_hand_computed_value():
    """B's descriptor at 0x400 with 64-column panels 8192 bytes apart and 8-row atoms 1024 apart:
    start 0x400 >> 4 = 0x40 (bits 0-13), LBO 8192 >> 4 = 0x200 (bits 16-29), SBO 1024 >> 4 = 0x40
    (bits 32-45), swizzle mode 1 = 128B (bits 62-63)."""
    expected = 0x40 | (0x200 << 16) | (0x40 << 32) | (1 << 62)
    assert expected == 0x4000004002000040
    assert r09_wgmma.smem_descriptor_128b(0x400, 8192, 1024) == expected
    assert r09_wgmma.descriptor_fields(expected) == {"start": 0x400, "lbo": 8192, "sbo": 1024, "base_offset": 0,
                                                     "swizzle": 1}
    # A, K-major: the leading offset is unused (16 bytes, stored as 1); a k16 step adds 32 bytes = 2 units
    a = r09_wgmma.smem_descriptor_128b(0x8000 + 32, r09_wgmma.KMAJOR_LBO_UNUSED, 1024)
    assert a == (0x8000 + 32) >> 4 | (1 << 16) | (0x40 << 32) | (1 << 62)


def test_descriptor_snippet_encodes_like_the_twin():
    """wgmma_desc_128b is constexpr: NVRTC checks the same values with static_assert."""
    cases = [(0x400, 8192, 1024), (0x8020, 16, 1024), (0x3FFF0, 16384, 1024), (0x1A400, 8192, 1024)]
    asserts = "\n".join(f"static_assert(wgmma_desc_128b({s:#x}u, {l}u, {b}u) == "
                        f"{r09_wgmma.smem_descriptor_128b(s, l, b):#x}ull, \"case {i}\");"
                        for i, (s, l, b) in enumerate(cases))
    compile_cuda(f'#include "wgmma.cuh"\n{asserts}\n__global__ void k(int* x) {{ *x = 0; }}\n')


def test_snippet_constants_are_the_twins():
    text = (PTX_SNIPPETS_DIR / "wgmma.cuh").read_text()

    def const(name):
        return int(re.search(rf"\b{name} = ([^;]+);", text).group(1).replace("8 * 128", "1024").removesuffix("ull"), 0)
    assert const("WGMMA_DESC_START_SHIFT") == r09_wgmma.DESC_START_SHIFT
    assert const("WGMMA_DESC_LBO_SHIFT") == r09_wgmma.DESC_LBO_SHIFT
    assert const("WGMMA_DESC_SBO_SHIFT") == r09_wgmma.DESC_SBO_SHIFT
    assert const("WGMMA_DESC_BASE_OFFSET_SHIFT") == r09_wgmma.DESC_BASE_OFFSET_SHIFT
    assert const("WGMMA_DESC_SWIZZLE_SHIFT") == r09_wgmma.DESC_SWIZZLE_SHIFT
    assert const("WGMMA_SWIZZLE_128B") == r09_wgmma.SWIZZLE_128B
    assert const("WGMMA_SWIZZLE_ATOM_BYTES") == r09_wgmma.SWIZZLE_ATOM_BYTES
    assert const("WGMMA_KMAJOR_LBO_UNUSED") == r09_wgmma.KMAJOR_LBO_UNUSED


@pytest.mark.parametrize("n", [64, 128, 256])
def test_generated_operand_lists_number_every_operand_once(n):
    """Each generated wgmma names accumulators %0..%(n/2 - 1) and its seven inputs after them."""
    src = ('#include "wgmma.cuh"\n'
           f"__global__ void k(float* out, unsigned long long a, unsigned long long b) {{\n"
           f"    float d[{n} / 8][4] = {{}};\n"
           f"    wgmma_m64nNk16<{n}, WgmmaMajor::K, WgmmaMajor::MN>(d, a, b, true);\n"
           f"    for (int j = 0; j < {n} / 8; ++j) for (int r = 0; r < 4; ++r) out[j * 4 + r] = d[j][r];\n}}\n")
    ptx = compile_cuda(src).ptx
    line = next(line for line in ptx.splitlines() if "wgmma.mma_async" in line)
    assert f"m64n{n}k16" in line
    regs = re.findall(r"%f\d+", line)
    assert len(regs) == n // 2 == len(set(regs))
    assert line.strip().endswith("scale_d, 1, 1, 0, 1;")


# ------------------------------------------------------------------ refusals

@pytest.mark.parametrize("tiles, match", [
    (WgmmaTiles(128, 256, 64, 4), "256 fp32 accumulators"),
    (WgmmaTiles(128, 128, 32, 4), "bk must be 64"),
    (WgmmaTiles(128, 128, 64, 2), "at least 3 stages"),
    (WgmmaTiles(128, 160, 64, 4), "generated for N in"),
    (WgmmaTiles(128, 128, 64, 8), "over the 232448 bytes"),
])
def test_tiles_the_kernel_cannot_do_are_refused(tiles, match):
    with pytest.raises(ValueError, match=match):
        r09_wgmma.kernel(tiles)


def test_sizes_the_rung_cannot_do_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="N=129 is not a multiple of 8"):
        get("09").check_shape(257, 129, 64)
    with pytest.raises(ValueError, match="K=1001 is not a multiple of 8"):
        get("09").check_shape(256, 256, 1001)


# ------------------------------------------------------------------ nvcc, standalone

def nvcc_report(k, tmp_path) -> str:
    """ptxas's report of one instantiation compiled standalone, as the README's nvcc line does."""
    wrapper = tmp_path / f"instantiate_{k.kernel}.cu"
    wrapper.write_text(f'#include "{k.source}"\n'
                       f"template __global__ void {k.name_expression}(const half*, const half*, half*, int, int, int, "
                       "const __grid_constant__ TensorMap, const __grid_constant__ TensorMap);\n")
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", f"-I{PTX_SNIPPETS_DIR}",
           f"-I{KERNELS_DIR}", "-Xptxas", "-v", "-c", str(wrapper), "-o", str(tmp_path / f"{k.kernel}.o")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=KERNELS_DIR.parent.parent, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_compiles_standalone_with_nvcc(tmp_path):
    assert "0 bytes spill stores, 0 bytes spill loads" in nvcc_report(r09_wgmma.kernel(), tmp_path)


# ------------------------------------------------------------------ a rung is a diff

def body(path) -> list[str]:
    text = without_markers(path.read_text())         # the exercises' region markers are no rung's idea
    text = text[text.index("#include"):]
    return text.replace(path.stem, "KERNEL").splitlines()


def test_07_to_09_keeps_the_ring_decode_and_epilogue():
    old, new = body(KERNELS_DIR / r07_tma.SOURCE), body(KERNELS_DIR / r09_wgmma.SOURCE)
    changed = [line for line in difflib.unified_diff(old, new, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    # 09 drops 07's fragment pipeline (ldmatrix into two register buffers) for wgmma on descriptors
    assert 0 < len(changed) <= 115, "\n".join(changed)

    def block(lines, start, end):
        i = next(n for n, line in enumerate(lines) if start in line)
        j = next(n for n, line in enumerate(lines[i:], i) if end in line)
        return lines[i:j]
    for start, end in (("const int grid_m", "const int k_tiles"), ("auto load_tile", "    };"),
                       ("if (tid == 0) {", "fence_mbarrier_init")):
        assert block(old, start, end) == block(new, start, end), start
    stores = [[line for line in lines if "store_pair_guarded" in line] for lines in (old, new)]
    assert stores[0] == stores[1]


# ================================================================== rung 10: warp specialization

VARIANTS_10 = [r10_warp_specialized.TILES, WarpSpecializedTiles(128, 256, 64, 3), WarpSpecializedTiles(256, 128, 64, 4),
               WarpSpecializedTiles(128, 128, 64, 6)]


@pytest.fixture(scope="module", params=VARIANTS_10, ids=lambda t: f"{t.bm}x{t.bn}s{t.stages}")
def compiled_10(request):
    k = r10_warp_specialized.kernel(request.param)
    return k, k.compile()


def test_rung_10_is_registered():
    rung = registry()["10"]
    assert rung.backend == "nvrtc" and rung.kernel_path.is_file() and rung.arch == "sm_90a"
    assert rung.name_expressions == (r10_warp_specialized.kernel().name_expression,)
    assert rung.extra["smem_bytes"] == r10_warp_specialized.kernel().smem_bytes
    assert r10_warp_specialized.kernel().threads == 384


def test_rung_10_has_no_spills(compiled_10):
    """With setmaxnreg, ptxas reports the launch bound's count (65536 / 384 rounded down to 8 = 168),
    not the consumers' 232; what matters is that nothing spills."""
    k, mod = compiled_10
    res = mod.resources_of(k.name_expression)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert res.smem_static == 0
    assert res.registers == 168


def test_rung_10_setmaxnreg_is_honoured(compiled_10):
    """ptxas ignores setmaxnreg with warning C7508 when the kernel has no register cap at entry;
    it serializes wgmma when the accumulators are touched in flight."""
    _, mod = compiled_10
    assert "C7508" not in mod.log and "setmaxnreg" not in mod.log, mod.log
    assert "serialized" not in mod.log, mod.log


def test_rung_10_ptx_contains_what_the_rung_teaches(compiled_10):
    k, mod = compiled_10
    bn = k.template_args[1]
    r = r10_warp_specialized
    for text in (f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.f16.f16", "wgmma.wait_group.sync.aligned",
                 f"setmaxnreg.dec.sync.aligned.u32 {r.PRODUCER_REGS}", f"setmaxnreg.inc.sync.aligned.u32 {r.CONSUMER_REGS}",
                 "cp.async.bulk.tensor.2d.shared::cluster.global", "mbarrier.try_wait.parity",
                 "mbarrier.arrive.expect_tx"):
        assert text in mod.ptx, f"no {text} in the PTX of {k.name_expression}"
    for text in ("ldmatrix", "mma.sync", "cp.async.cg"):
        assert text not in mod.ptx, f"{text} should be gone from the PTX of {k.name_expression}"


def test_rung_10_register_split_fits_the_launch_allocation():
    """setmaxnreg.inc takes registers only from the CTA's pool, which holds what the launch gave:
    384 threads x 168. The producer gives back 168 - 40 per thread, the consumers take 232 - 168.
    The targets reach the kernel as its last two template arguments, where a static_assert checks the pool."""
    r = r10_warp_specialized
    launch_regs = 65536 // r.THREADS // 8 * 8
    assert launch_regs == 168
    assert r.PRODUCER_REGS + r.CONSUMERS * r.CONSUMER_REGS <= (1 + r.CONSUMERS) * launch_regs
    assert r.kernel().template_args[-2:] == (r.PRODUCER_REGS, r.CONSUMER_REGS)
    text = (KERNELS_DIR / r.SOURCE).read_text()
    assert f"CONSUMERS = {r.CONSUMERS};" in text and "__launch_bounds__(384, 1)" in text


def test_rung_10_refuses_a_register_split_over_the_pool():
    r = r10_warp_specialized
    k = dataclasses.replace(r.kernel(), template_args=(*r.kernel().template_args[:-1], 240))
    with pytest.raises(CompileError, match="setmaxnreg.inc only takes what setmaxnreg.dec gave back"):
        k.compile()


def test_rung_10_main_loop_has_no_cta_barrier():
    """The only bar.sync is the one after the mbarriers are set up: producer and consumers meet
    only at the full and empty mbarriers."""
    ptx = r10_warp_specialized.kernel().compile().ptx
    assert len(re.findall(r"\bbar(rier)?\.sync", ptx)) == 1


@pytest.mark.parametrize("n", [24, 40, 232, 240, 256])
def test_setmaxnreg_snippet_takes_multiples_of_8_in_range(n):
    src = ('#include "setmaxnreg.cuh"\n'
           f"__global__ void __launch_bounds__(384, 1) k() {{\n"
           f"    if (threadIdx.x < 128) warpgroup_reg_dealloc<{n}>(); else warpgroup_reg_alloc<{n}>();\n}}\n")
    ptx = compile_cuda(src).ptx
    assert f"setmaxnreg.dec.sync.aligned.u32 {n};" in ptx and f"setmaxnreg.inc.sync.aligned.u32 {n};" in ptx


@pytest.mark.parametrize("n", [20, 44, 264])
def test_setmaxnreg_snippet_refuses_other_counts(n):
    src = ('#include "setmaxnreg.cuh"\n'
           f"__global__ void __launch_bounds__(384, 1) k() {{ warpgroup_reg_alloc<{n}>(); }}\n")
    with pytest.raises(CompileError, match="multiple of 8 in"):
        compile_cuda(src)


@pytest.mark.parametrize("tiles, match", [
    (WarpSpecializedTiles(64, 256, 64, 4), "bm=64: each of the 2 consumer warpgroups"),
    (WarpSpecializedTiles(256, 256, 64, 3), "256 fp32 accumulators"),
    (WarpSpecializedTiles(128, 256, 32, 4), "bk must be 64"),
    (WarpSpecializedTiles(128, 256, 64, 2), "at least 3 stages"),
    (WarpSpecializedTiles(128, 160, 64, 4), "generated for N in"),
    (WarpSpecializedTiles(128, 256, 64, 5), "over the 232448 bytes"),
])
def test_rung_10_refuses_tiles_it_cannot_do(tiles, match):
    with pytest.raises(ValueError, match=match):
        r10_warp_specialized.kernel(tiles)


def test_rung_10_refuses_sizes_with_the_fix():
    with pytest.raises(ValueError, match="N=129 is not a multiple of 8"):
        get("10").check_shape(257, 129, 64)
    with pytest.raises(ValueError, match="K=1001 is not a multiple of 8"):
        get("10").check_shape(256, 256, 1001)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_rung_10_compiles_standalone_with_nvcc(tmp_path):
    report = nvcc_report(r10_warp_specialized.kernel(), tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in report
    assert "Used 168 registers" in report and "C7508" not in report


def test_09_to_10_keeps_the_ring_decode_descriptors_and_epilogue():
    """The diff is the roles: setmaxnreg, the producer loop, the consumers' halves of the tile."""
    old, new = body(KERNELS_DIR / r09_wgmma.SOURCE), body(KERNELS_DIR / r10_warp_specialized.SOURCE)
    changed = [line for line in difflib.unified_diff(old, new, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert 0 < len(changed) <= 110, "\n".join(changed)

    def block(lines, start, end):
        i = next(n for n, line in enumerate(lines) if start in line)
        j = next(n for n, line in enumerate(lines[i:], i) if end in line)
        return lines[i:j]
    for start, end in (("const int grid_m", "const int k_tiles"), ("auto load_tile", "    };"),
                       ("auto desc_a", "    };"),
                       ("auto desc_b", "    };"), ("tma_prefetch_descriptor(&tmap_a)", "mbar_init(smem_u32(&ring.empty")):
        assert block(old, start, end) == block(new, start, end), start
    stores = [[line.strip() for line in lines if "store_pair_guarded" in line] for lines in (old, new)]
    assert stores[0] == stores[1]
