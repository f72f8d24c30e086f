"""Every tensor-core rung declares its shared memory once, as a struct the kernel indexes: PaddedStages
(rungs 03, 04), SwizzledStages (05, 06) and TmaRing (07, 09, 10) in kernels/common.cuh, RingAndPanels in
k11_persistent.cu. The launchers' ``smem_bytes`` must be sizeof(struct), plus SMEM_ALIGN for the TMA
rungs, for every configuration they accept: compiling a kernel compiles that check beside it
(TemplateKernel.smem_check), and here it is compiled for every configuration of tune's sweeps at once.
The structs keep the byte offsets the kernels computed by hand before them."""
from __future__ import annotations

import dataclasses

import pytest

from hgemm_course.measurement import tune
from hgemm_course.library.build import CompileError, compile_cuda
from hgemm_course.library.ladder import (
    r03_wmma,
    r04_mma_sync,
    r05_swizzle,
    r06_supertile,
    r07_tma,
    r09_wgmma,
    r10_warp_specialized,
    r11_persistent,
)

CP_ASYNC = {"03": r03_wmma, "04": r04_mma_sync, "05": r05_swizzle, "06": r06_supertile}
TMA = {"07": r07_tma, "09": r09_wgmma, "10": r10_warp_specialized, "11": r11_persistent}
MODULES = {**CP_ASYNC, **TMA}


def kernels(rung: str) -> list:
    """The rung's default kernel and every kernel its tune sweep runs (rung 07's: the tiles chapter 08 and
    the ablations try among them)."""
    runnable, _ = tune.plan(rung, tune.sweep(rung))
    return [MODULES[rung].kernel()] + [tune.build(rung, cfg) for cfg in runnable]


@pytest.mark.parametrize("rung", MODULES)
def test_launchers_smem_bytes_is_the_kernels_struct(rung):
    """One NVRTC run per rung instantiates every configuration's check; a disagreement fails it."""
    checks = sorted({k.smem_check for k in kernels(rung)})
    assert len(checks) >= 4
    compile_cuda(MODULES[rung].SOURCE, name_expressions=checks)


def test_a_launcher_figure_off_by_a_block_does_not_compile():
    k = r09_wgmma.kernel()
    with pytest.raises(CompileError, match="smem_bytes is not SMEM_ALIGN"):
        dataclasses.replace(k, smem_bytes=k.smem_bytes + 1024).compile()


def test_a_cp_async_launcher_figure_off_by_a_chunk_does_not_compile():
    k = dataclasses.replace(r05_swizzle.kernel(), smem_bytes=r05_swizzle.kernel().smem_bytes + 16)
    with pytest.raises(CompileError, match="smem_bytes is not sizeof"):
        compile_cuda(r05_swizzle.SOURCE, name_expressions=(k.smem_check,))


def old_offsets(bm: int, bn: int, bk: int, stages: int, consumers: int = 0) -> dict[str, int]:
    """Where the kernels put the buffers before the structs, from the aligned base: A's stages, B's,
    (rung 11) each consumer's min(2, bn / 64) C panels of (bm / consumers, 64) halves, then 8 bytes
    per full and per empty mbarrier."""
    b = stages * bm * bk * 2
    c = b + stages * bk * bn * 2
    full = c + (consumers * min(2, bn // 64) * (bm // consumers) * 128 if consumers else 0)
    return {"b": b, "c": c, "full": full, "empty": full + 8 * stages}


@pytest.mark.parametrize("rung", TMA)
def test_structs_keep_the_offsets_of_before(rung):
    members = ("b", "c", "full", "empty") if rung == "11" else ("b", "full", "empty")
    asserts = set()
    for k in kernels(rung):
        layout_args = k.smem_layout[k.smem_layout.index("<") + 1:-1].split(",")   # bm, bn, bk, stages(, consumers)
        offsets = old_offsets(*map(int, layout_args))
        asserts |= {f'static_assert(__builtin_offsetof({k.smem_layout}, {m}) == {offsets[m]}, "{k.smem_layout}::{m}");'
                    for m in members}
    compile_cuda(f'#include "{MODULES[rung].SOURCE}"\n' + "\n".join(sorted(asserts)) + "\n")


@pytest.mark.parametrize("rung", CP_ASYNC)
def test_cp_async_structs_keep_the_offsets_of_before(rung):
    """Rungs 03-06 put A's stages of bm rows of bk + pad halves at the start, then B's stages of bk rows of
    bn + pad halves (pad: 8 halves in 03 and 04, none in the swizzled 05 and 06)."""
    asserts = set()
    for k in kernels(rung):
        layout = k.smem_layout
        args = [int(a) for a in layout[layout.index("<") + 1:-1].split(",")]   # bm, bn, bk, stages(, pad)
        bm, bn, bk, stages = args[:4]
        pad = args[4] if layout.startswith("PaddedStages") else 0
        a_stage, b_stage = bm * (bk + pad) * 2, bk * (bn + pad) * 2
        asserts |= {f'static_assert(sizeof(static_cast<{layout}*>(nullptr)->a[0]) == {a_stage}, "{layout}::a[0]");',
                    f'static_assert(sizeof(static_cast<{layout}*>(nullptr)->b[0]) == {b_stage}, "{layout}::b[0]");',
                    f'static_assert(__builtin_offsetof({layout}, b) == {stages * a_stage}, "{layout}::b");'}
    compile_cuda(f'#include "{MODULES[rung].SOURCE}"\n' + "\n".join(sorted(asserts)) + "\n")
