"""Rung 09: rung 07's TMA ring feeding wgmma, Hopper's warpgroup MMA, from shared-memory descriptors."""
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

SOURCE = "k09_wgmma.cu"
NEEDS = ("tma", "wgmma")
THREADS = 128                             # one warpgroup: four consecutive warps
WGMMA_N = (64, 128, 192, 256)             # the N of wgmma.m64nNk16 that ptx_snippets/wgmma.cuh generates


@dataclass(frozen=True)
class WgmmaTiles:
    """A (bm, bn) tile of C per CTA, computed by one warpgroup as bm / 64 wgmma products of
    (64, bn); bk-wide k-slices in a ring of ``stages`` shared-memory buffers."""

    bm: int
    bn: int
    bk: int
    stages: int

    @property
    def threads(self) -> int:
        return THREADS

    @property
    def accumulators(self) -> int:
        """FP32 accumulator registers per thread: (bm * bn) over the warpgroup's 128 threads."""
        return self.bm * self.bn // THREADS

    @property
    def template_args(self) -> tuple[int, ...]:
        return (self.bm, self.bn, self.bk, self.stages)

    def check(self, smem: int) -> None:
        require(self.bk == 64, f"bk={self.bk}: a row of the A stage is one 128-byte swizzle row, so bk must be 64 "
                               "halves (and one TMA box of B is 64 columns of 128 bytes).")
        require(self.bm % 64 == 0 and self.bm <= 256,
                f"bm={self.bm}: the warpgroup issues whole m64 products and a TMA box has at most 256 rows; "
                "use bm = 64, 128, 192 or 256.")
        require(self.bn in WGMMA_N, f"bn={self.bn}: one wgmma covers the whole tile width, and the snippet is "
                                    f"generated for N in {WGMMA_N}.")
        require(self.accumulators <= 128,
                f"A {self.bm}x{self.bn} tile needs {self.accumulators} fp32 accumulators per thread of one "
                "warpgroup; over 128 leaves too few of the 255 registers for addresses and spills. Use "
                "bm * bn <= 16384 (128x128 or 64x256), or more warpgroups (rung 10).")
        require(self.stages >= 3, f"stages={self.stages}: wgmma still reads the previous stage while the next "
                                  "is loaded, so the ring needs at least 3 stages.")
        require_smem(smem, sizing(NEEDS), f"{self.stages} stages")


TILES = WgmmaTiles(**geometry.of("09").tiles)   # rung_geometry.toml: chosen by `hgemm-course tune 09`
SUPER = geometry.of("09").super_mn     # (SUPER_M, SUPER_N) output tiles per super tile
# `hgemm-course tune 09` sweeps these; kernel() refuses what does not fit, and tune skips it with that sentence.
TUNABLE = Tunable(tiles=((128, 128), (128, 256), (64, 256)), stages=(3, 4, 5), supers=((16, 2), (8, 4)))

# ---- a host-side twin of wgmma_desc_128b (ptx_snippets/wgmma.cuh), for tests and notebooks ----
DESC_START_SHIFT, DESC_LBO_SHIFT, DESC_SBO_SHIFT, DESC_BASE_OFFSET_SHIFT, DESC_SWIZZLE_SHIFT = 0, 16, 32, 49, 62
DESC_FIELD_MASK = 0x3FFFF                 # an address or offset keeps its low 18 bits, stored >> 4 in 14 bits
SWIZZLE_128B = 1                          # the descriptor's mode numbers: 0 none, 1 128B, 2 64B, 3 32B
SWIZZLE_ATOM_BYTES = 8 * 128              # 8 rows of 128 bytes
KMAJOR_LBO_UNUSED = 16


def smem_descriptor_128b(address: int, lbo: int, sbo: int) -> int:
    """The 64-bit wgmma shared-memory descriptor of a 128B-swizzled operand at ``address``."""
    def field(x: int) -> int:
        return (x & DESC_FIELD_MASK) >> 4
    return ((field(address) << DESC_START_SHIFT) | (field(lbo) << DESC_LBO_SHIFT) | (field(sbo) << DESC_SBO_SHIFT)
            | (0 << DESC_BASE_OFFSET_SHIFT) | (SWIZZLE_128B << DESC_SWIZZLE_SHIFT))


def descriptor_fields(desc: int) -> dict:
    """The descriptor taken apart again, offsets in bytes."""
    return {"start": (desc >> DESC_START_SHIFT & 0x3FFF) << 4, "lbo": (desc >> DESC_LBO_SHIFT & 0x3FFF) << 4,
            "sbo": (desc >> DESC_SBO_SHIFT & 0x3FFF) << 4, "base_offset": desc >> DESC_BASE_OFFSET_SHIFT & 0x7,
            "swizzle": desc >> DESC_SWIZZLE_SHIFT & 0x3}


@lru_cache(maxsize=None)
def kernel(tiles: WgmmaTiles = TILES, super_mn: tuple[int, int] = SUPER) -> TemplateKernel:
    smem = smem_bytes(tiles)
    tiles.check(smem)
    require(all(s >= 1 for s in super_mn), f"super tile {super_mn}: both sides must be at least one tile.")
    return TemplateKernel(SOURCE, "k09_wgmma", (*tiles.template_args, *super_mn), tiles.threads, smem,
                          needs=NEEDS, grid=lambda M, N: grid_1d(M, N, tiles, super_mn), smem_layout=tma_ring(tiles))


def launch(a, b, c, tiles: WgmmaTiles = TILES, super_mn: tuple[int, int] = SUPER):
    return kernel(tiles, super_mn).launch(a, b, c, *tensor_maps(a, b, tiles.bm, tiles.bk))


RUNG = Rung(
    id="09", slug="wgmma", title="TMA + wgmma, one warpgroup",
    idea="one warpgroup issues wgmma.mma_async on shared-memory descriptors; ldmatrix and mma.sync are gone",
    backend="nvrtc", launch=launch, source=SOURCE, needs=NEEDS, name_expressions=(kernel().name_expression,),
    instantiations=lambda target: (kernel(),),
    multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "super_tile": SUPER, "threads": THREADS, "smem_bytes": smem_bytes(TILES)},
)
