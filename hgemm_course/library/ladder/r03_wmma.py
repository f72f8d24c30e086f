"""Rung 03: tensor cores through ``nvcuda::wmma``, a cp.async ring, padded shared tiles."""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from .. import geometry
from ..target import RECORDED, Target, current
from . import Rung
from .nvrtc_kernel import MmaTiles, TemplateKernel, Tunable, cdiv, sized_tiles

SOURCE = "k03_wmma.cu"
PAD = 8                                   # halves added to every shared row (the kernel's A_LD, B_LD)
TILES = MmaTiles(**geometry.of("03").tiles)   # rung_geometry.toml: chosen by `hgemm-course tune 03`
# `hgemm-course tune 03` sweeps these; kernel() refuses what does not fit, and tune skips it with that sentence.
TUNABLE = Tunable(tiles=((256, 128), (128, 256), (128, 128)), stages=(2, 3, 4, 5))
NEEDS = ("cp.async", "mma.sync")          # wmma's m16n16k16 fp16 fragments compile to mma.sync


def smem_bytes(t: MmaTiles) -> int:
    """Dynamic shared memory: ``stages`` padded (bm, bk) A tiles and (bk, bn) B tiles, the kernel's
    PaddedStages (kernels/common.cuh). Compiling the kernel checks this figure against its sizeof
    (TemplateKernel.smem_check)."""
    return t.stages * (t.bm * (t.bk + PAD) + t.bk * (t.bn + PAD)) * 2


def padded_stages(t: MmaTiles) -> str:
    """The C++ type of the kernel's shared memory for these tiles (PaddedStages, kernels/common.cuh)."""
    return f"PaddedStages<{t.bm}, {t.bn}, {t.bk}, {t.stages}, {PAD}>"


def kernel(tiles: MmaTiles | None = None, target: Target | None = None) -> TemplateKernel:
    """The kernel for ``target`` (default: the current one) with ``tiles`` (default: those sized for it)."""
    target = target or current()
    return _kernel(tiles or tiles_for(target), target)


@lru_cache(maxsize=None)
def _kernel(tiles: MmaTiles, target: Target) -> TemplateKernel:
    smem = smem_bytes(tiles)
    tiles.check(smem, target)
    return TemplateKernel(SOURCE, "k03_wmma", tiles.template_args, tiles.threads, smem,
                          grid=lambda M, N: (cdiv(N, tiles.bn), cdiv(M, tiles.bm)), needs=NEEDS, target=target,
                          smem_layout=padded_stages(tiles), smem_aligned=False)


@lru_cache(maxsize=None)
def tiles_for(target: Target) -> MmaTiles:
    """TILES where they fit the target's shared memory, else the best of TUNABLE that does (sized_tiles)."""
    return sized_tiles(TILES, TUNABLE, lambda tiles: _kernel(tiles, target))


def instantiations(target: Target) -> tuple[TemplateKernel, ...]:
    return (kernel(target=target),)


def launch(a, b, c, tiles: MmaTiles | None = None):
    return kernel(tiles).launch(a, b, c)


RUNG = Rung(
    id="03", slug="wmma", title="wmma + cp.async ring, padded smem",
    idea="tensor cores through nvcuda::wmma fragments, fed by a cp.async multi-stage ring with padded rows",
    backend="nvrtc", launch=launch, source=SOURCE, name_expressions=(kernel(TILES, RECORDED).name_expression,),
    needs=NEEDS, instantiations=instantiations, multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "threads": TILES.threads, "smem_bytes": smem_bytes(TILES)},
)
