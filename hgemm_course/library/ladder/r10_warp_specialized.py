"""Rung 10: rung 09's TMA ring and wgmma split by role: a producer warpgroup that only loads and two
consumer warpgroups that only compute, each on half of the output tile, registers moved by setmaxnreg."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

from .. import geometry
from ..tensormap import tensor_maps
from ..target import sizing
from . import Rung
from .nvrtc_kernel import TemplateKernel, Tunable, require, require_smem
from .r06_supertile import grid_1d
from .r07_tma import smem_bytes, tma_ring
from .r09_wgmma import WGMMA_N, WgmmaTiles

SOURCE = "k10_warp_specialized.cu"
NEEDS = ("tma", "wgmma", "setmaxnreg")
CONSUMERS = geometry.of("10").consumers    # consumer warpgroups per CTA, one half of the tile each
THREADS = 128 * (1 + CONSUMERS)           # the producer warpgroup first, then the consumers
# setmaxnreg targets per thread, the kernels' template arguments (rungs 10 and 11): the producer, one thread issuing
# TMA, keeps 40; a consumer takes 232 for up to 128 accumulators and its addresses.
PRODUCER_REGS, CONSUMER_REGS = 40, 232


@dataclass(frozen=True)
class WarpSpecializedTiles(WgmmaTiles):
    """A (bm, bn) tile of C per CTA: consumer warpgroup c computes rows c * bm / 2.. as bm / 128
    wgmma products of (64, bn); one producer warpgroup feeds a ring of ``stages`` buffers."""

    @property
    def threads(self) -> int:
        return THREADS

    @property
    def accumulators(self) -> int:
        """FP32 accumulator registers per consumer thread: (bm / 2) * bn over the warpgroup's 128 threads."""
        return self.accumulators_with(CONSUMERS)

    def accumulators_with(self, consumers: int) -> int:
        """FP32 accumulator registers per consumer thread when ``consumers`` warpgroups share the tile."""
        return self.bm // consumers * self.bn // 128

    def check(self, smem: int, consumers: int = CONSUMERS) -> None:
        """The rules of the warp-specialized kernels, for ``consumers`` consumer warpgroups (rung 10 has 2;
        rung 11 can also run seed 001's first version with 1)."""
        who = "the consumer warpgroup" if consumers == 1 else f"each of the {consumers} consumer warpgroups"
        fits = "64x256 or 128x128" if consumers == 1 else "128x256 or 256x128"
        require(self.bk == 64, f"bk={self.bk}: a row of the A stage is one 128-byte swizzle row, so bk must be 64 "
                               "halves (and one TMA box of B is 64 columns of 128 bytes).")
        require(self.bm % (64 * consumers) == 0 and self.bm <= 256,
                f"bm={self.bm}: {who} issues whole m64 products on its "
                f"{'rows' if consumers == 1 else 'half'} of the tile, and a TMA box has at most 256 rows; use bm = "
                f"{'64, 128' if consumers == 1 else '128'} or 256.")
        require(self.bn in WGMMA_N, f"bn={self.bn}: one wgmma covers the whole tile width, and the snippet is "
                                    f"generated for N in {WGMMA_N}.")
        acc = self.accumulators_with(consumers)
        require(acc <= 128,
                f"A {self.bm}x{self.bn} tile gives each consumer thread {acc} fp32 accumulators; "
                f"over 128 leaves too few of its {CONSUMER_REGS} registers for addresses. Use bm * bn <= "
                f"{16384 * consumers} ({fits}).")
        require(self.stages >= 3, f"stages={self.stages}: wgmma still reads the previous stage while the next "
                                  "is waited for, so the ring needs at least 3 stages.")
        require_smem(smem, sizing(NEEDS), f"{self.stages} stages")


TILES = WarpSpecializedTiles(**geometry.of("10").tiles)   # rung_geometry.toml: chosen by `hgemm-course tune 10`
SUPER = geometry.of("10").super_mn     # (SUPER_M, SUPER_N) output tiles per super tile
# `hgemm-course tune 10` sweeps these; kernel() refuses what does not fit, and tune skips it with that sentence.
TUNABLE = Tunable(tiles=((128, 256), (256, 128), (128, 128)), stages=(3, 4, 5), supers=((16, 2), (8, 4)))


@lru_cache(maxsize=None)
def kernel(tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER) -> TemplateKernel:
    smem = smem_bytes(tiles)
    tiles.check(smem)
    require(all(s >= 1 for s in super_mn), f"super tile {super_mn}: both sides must be at least one tile.")
    args = (*tiles.template_args, *super_mn, PRODUCER_REGS, CONSUMER_REGS)
    return TemplateKernel(SOURCE, "k10_warp_specialized", args, tiles.threads, smem,
                          needs=NEEDS, grid=lambda M, N: grid_1d(M, N, tiles, super_mn), smem_layout=tma_ring(tiles))


def launch(a, b, c, tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER):
    return kernel(tiles, super_mn).launch(a, b, c, *tensor_maps(a, b, tiles.bm, tiles.bk))


RUNG = Rung(
    id="10", slug="warp_specialized", title="TMA + wgmma, producer and 2 consumer warpgroups",
    idea="a producer warpgroup only loads, two consumer warpgroups only compute; setmaxnreg moves registers to them",
    backend="nvrtc", launch=launch, source=SOURCE, needs=NEEDS, name_expressions=(kernel().name_expression,),
    instantiations=lambda target: (kernel(),),
    multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "super_tile": SUPER, "threads": THREADS, "consumers": CONSUMERS,
           "registers_after_setmaxnreg": {"producer": PRODUCER_REGS, "consumer": CONSUMER_REGS},
           "smem_bytes": smem_bytes(TILES)},
)
