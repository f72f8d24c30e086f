"""The tensor-core kernels of rungs 03-07 compile for sm_90a (NVRTC, and nvcc where present),
use no local memory, ask for the shared memory they are designed for, contain the
instructions their rung teaches, and differ from their neighbour by that rung's idea only."""
from __future__ import annotations

import difflib
import inspect
import re
import shutil
import subprocess
from importlib import import_module

import pytest

from hgemm_course.check.generate import without_markers
from hgemm_course.library.ladder import registry
from hgemm_course.library.paths import KERNELS_DIR, PTX_SNIPPETS_DIR

MMA_LADDER = ("03", "04", "05", "06", "07")

# What the PTX of each rung must (and must not) contain: the instructions its chapter teaches.
TEACHES = {
    "03": (["wmma.mma.sync", "wmma.load.a.sync", "cp.async.cg.shared.global"], ["ldmatrix", "mma.sync.aligned.m16n8k16"]),
    "04": (["ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "cp.async.cg.shared.global"], ["wmma"]),
    "05": (["ldmatrix.sync.aligned.m8n8.x4.trans", "mma.sync.aligned.m16n8k16", "cp.async.cg.shared.global"], ["wmma"]),
    "06": (["ldmatrix.sync.aligned.m8n8.x4.trans", "mma.sync.aligned.m16n8k16", "cp.async.cg.shared.global"], ["wmma"]),
    "07": (["cp.async.bulk.tensor.2d.shared::cluster.global", "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx",
            "mbarrier.init", "fence.mbarrier_init", "prefetch.tensormap", "mma.sync.aligned.m16n8k16"],
           ["cp.async.cg", "wmma"]),
}


def module(rung_id):
    return import_module(registry()[rung_id].launch.__module__)


def kernel(rung_id):
    return module(rung_id).kernel()


def instantiations(rung_id):
    """Every kernel the rung's launcher picks from: rungs 04-06 have one with the tail guards and one
    without, for whole tiles."""
    make = module(rung_id).kernel
    if "whole_tiles" in inspect.signature(make).parameters:
        return [make(whole_tiles=whole) for whole in (False, True)]
    return [make()]


@pytest.fixture(scope="module", params=[(rid, i) for rid in MMA_LADDER for i in range(len(instantiations(rid)))],
                ids=lambda p: f"{p[0]}-{p[1]}")
def compiled(request):
    rid, i = request.param
    k = instantiations(rid)[i]
    return rid, k, k.compile()


def test_every_ladder_rung_is_registered():
    rungs = registry()
    for rid in MMA_LADDER:
        assert rungs[rid].backend == "nvrtc" and rungs[rid].kernel_path.is_file()
        assert rungs[rid].name_expressions == tuple(k.name_expression for k in instantiations(rid))


def test_no_spills_no_local_memory(compiled):
    rid, k, mod = compiled
    res = mod.resources_of(k.name_expression)
    assert res.spills == 0, f"rung {rid}: {res.spill_stores} bytes spilled, {res.spill_loads} reloaded"
    assert res.stack_frame == 0, f"rung {rid}: {res.stack_frame}-byte stack frame (an array went to local memory)"
    assert res.registers <= 255


def test_shared_memory_is_as_designed(compiled):
    """Static shared memory: none; dynamic: the rung's stages, counted here independently."""
    rid, k, mod = compiled
    t = module(rid).TILES
    assert mod.resources_of(k.name_expression).smem_static == 0
    dense = t.stages * (t.bm * t.bk + t.bk * t.bn) * 2
    expected = {
        "03": t.stages * (t.bm * (t.bk + 8) + t.bk * (t.bn + 8)) * 2,
        "04": t.stages * (t.bm * (t.bk + 8) + t.bk * (t.bn + 8)) * 2,
        "05": dense,
        "06": dense,
        "07": -(-(1024 + dense + 16 * t.stages) // 1024) * 1024,
    }[rid]
    assert k.smem_bytes == expected == registry()[rid].extra["smem_bytes"]
    assert k.smem_bytes <= 227 * 1024


def test_ptx_contains_what_the_rung_teaches(compiled):
    rid, k, mod = compiled
    must, must_not = TEACHES[rid]
    for text in must:
        assert text in mod.ptx, f"rung {rid}: no {text} in the PTX"
    for text in must_not:
        assert text not in mod.ptx, f"rung {rid}: {text} should be gone from the PTX"


def test_tma_rung_has_no_barrier_in_its_k_loop():
    """Rung 07's only __syncthreads is the one after the barriers are set up."""
    ptx = kernel("07").compile().ptx
    assert len(re.findall(r"\bbar(rier)?\.sync", ptx)) == 1


def test_kernels_use_the_snippets_and_never_copy_them():
    for path in KERNELS_DIR.glob("k0[3-7]_*.cu"):
        text = path.read_text()
        assert "asm" not in text, f"{path.name} has inline PTX; it belongs in ptx_snippets/"
        assert '#include "common.cuh"' in text
        assert not re.search(r"\bcdiv\s*\(int", text), f"{path.name} re-declares cdiv"


def test_every_snippet_is_documented():
    """Each header names its PTX ISA section; each function has a comment line right above."""
    for path in PTX_SNIPPETS_DIR.glob("*.cuh"):
        lines = path.read_text().splitlines()
        if path.name in ("cp_async.cuh", "ldmatrix.cuh", "mma_sync.cuh", "mbarrier.cuh", "tma.cuh", "fence.cuh", "swizzle.cuh"):
            assert any("PTX ISA" in line for line in lines[:6]), f"{path.name} names no PTX ISA section"
        for i, line in enumerate(lines):
            if line.startswith("__device__"):
                above = lines[i - 1] if not lines[i - 1].startswith("template") else lines[i - 2]
                assert above.startswith("//"), f"{path.name}:{i + 1} has no comment above it"


# ------------------------------------------------------------------ nvcc, standalone

ARGS = {"03": "int, int, int", "04": "int, int, int", "05": "int, int, int", "06": "int, int, int",
        "07": "int, int, int, const __grid_constant__ TensorMap, const __grid_constant__ TensorMap"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("rid", MMA_LADDER)
def test_compiles_standalone_with_nvcc(rid, tmp_path):
    """nvcc sees only the kernel file and the two include folders; an explicit instantiation
    makes it compile the template body for sm_90a."""
    rung = registry()[rid]
    k = kernel(rid)
    wrapper = tmp_path / f"instantiate_{rid}.cu"
    wrapper.write_text(f'#include "{rung.source}"\n'
                       f"template __global__ void {k.name_expression}(const half*, const half*, half*, {ARGS[rid]});\n")
    repo = KERNELS_DIR.parent.parent
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", f"-I{PTX_SNIPPETS_DIR}",
           f"-I{KERNELS_DIR}", "-c", str(wrapper), "-o", str(tmp_path / f"{rid}.o")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------ a rung is a diff

def body(rid: str) -> list[str]:
    """The kernel file without its leading rung comment, the kernel's name made neutral."""
    rung = registry()[rid]
    text = without_markers(rung.kernel_path.read_text())  # the exercises' region markers are no rung's idea
    text = text[text.index("#include"):]
    name = rung.source.removesuffix(".cu")
    return text.replace(name, "KERNEL").splitlines()


def changed(a: str, b: str) -> list[str]:
    return [line for line in difflib.unified_diff(body(a), body(b), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


# 03 -> 04 is the largest step: wmma written out as ldmatrix + mma.sync, and fed the way mma.sync
# needs (two fragment buffers, copies spread over the k-steps and addressed once per thread), which
# wmma's API hides. 06 -> 07 swaps the copies (their per-thread addressing included) and the barriers of that
# pipeline for TMA and mbarrier waits.
@pytest.mark.parametrize("a, b, limit", [("03", "04", 160), ("04", "05", 30), ("05", "06", 16), ("06", "07", 125)])
def test_neighbours_differ_by_a_small_diff(a, b, limit):
    lines = changed(a, b)
    assert 0 < len(lines) <= limit, "\n".join(lines)


def test_05_to_06_touches_only_the_block_decode():
    allowed = re.compile(r"SUPER_[MN]|grid_[mn]|\bsb\b|in_sb|sb_[mn]|bid_[mn]|1-D grid|sub-tile; the K loop|^-template <int BM")
    for line in changed("05", "06"):
        assert allowed.search(line), f"05 -> 06 changes a line outside the decode: {line}"


def test_04_to_05_touches_only_shared_addresses():
    allowed = re.compile(r"A_LD|B_LD|B_PANEL|A_STAGE|B_STAGE|swizzle|a_smem|b_smem|a_lane|b_lane|"
                         r"ldmatrix row addresses|lane / 16|keeps row % 8|#include \"swizzle.cuh\"")
    for line in changed("04", "05"):
        assert allowed.search(line), f"04 -> 05 changes a line outside shared-memory addressing: {line}"


def test_compute_and_epilogue_are_shared_from_04_to_07():
    def tail(rid):
        lines = body(rid)
        start = next(i for i, line in enumerate(lines) if "// ---- epilogue" in line)
        return lines[start:]
    assert tail("04") == tail("05") == tail("06") == tail("07")
    mma = [[line for line in body(r) if "mma_m16n8k16(" in line or "ldmatrix_x4" in line] for r in ("05", "06", "07")]
    assert mma[0] == mma[1] == mma[2]
