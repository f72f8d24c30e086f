"""Rung 11: rung 10 made persistent: one CTA per SM walks the output tiles in rung 06's super-tile order
with its TMA ring running on across tiles, and stores C through shared memory with stmatrix and TMA.
Optionally (``cluster_m=2``) the CTAs pair up in clusters that share B's k-slices by TMA multicast."""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache


from .. import device, geometry, tensormap
from ..target import sizing
from . import Rung
from .nvrtc_kernel import TemplateKernel, Tunable, cdiv, require, require_smem
from .r07_tma import MBARRIER_BYTES, SMEM_ALIGN
from .r10_warp_specialized import (
    CONSUMER_REGS,
    CONSUMERS,
    PRODUCER_REGS,
    THREADS,
    WarpSpecializedTiles,
)

SOURCE = "k11_persistent.cu"
NEEDS = ("tma", "wgmma", "setmaxnreg", "clusters")
# __launch_bounds__(384, 1) hands each of the 384 threads 168 registers: 64512 of the SM's 65536, so one
# CTA per SM (and the ring plus the C panel buffers take most of the shared memory anyway).
CTAS_PER_SM = 1

TILES = WarpSpecializedTiles(**geometry.of("11").tiles)   # rung_geometry.toml: chosen by `hgemm-course tune 11`
SUPER = geometry.of("11").super_mn     # (SUPER_M, SUPER_N) output tiles per super tile
CLUSTER_M = geometry.of("11").cluster_m   # CTAs per cluster along M, sharing B by multicast (1 or 2)
# `hgemm-course tune 11` sweeps these; kernel() refuses what does not fit, and tune skips it with that sentence.
TUNABLE = Tunable(tiles=((128, 256), (256, 128), (128, 128), (64, 256)), stages=(3, 4, 5),
                  supers=((16, 2), (8, 4), (4, 8)), clusters=(1, 2), consumers=(2, 1))


def c_buffer_bytes(t: WarpSpecializedTiles, consumers: int = CONSUMERS) -> int:
    """The epilogue's panel buffers: per consumer, two (or, for bn = 64, one) fp16 panels of
    (bm / consumers, 64)."""
    return consumers * min(2, t.bn // 64) * (t.bm // consumers) * 64 * 2


def smem_bytes(t: WarpSpecializedTiles, consumers: int = CONSUMERS) -> int:
    """Dynamic shared memory: the kernel's RingAndPanels (k11_persistent.cu), the ring's stages, the C panel
    buffers and a full and an empty mbarrier per stage, in whole 1024-byte blocks as the struct's alignment
    rounds it, plus SMEM_ALIGN bytes of slack to start it on a 1024-byte boundary. Compiling the kernel checks
    this figure against sizeof(RingAndPanels) (TemplateKernel.smem_check)."""
    ring = t.stages * ((t.bm * t.bk + t.bk * t.bn) * 2 + 2 * MBARRIER_BYTES) + c_buffer_bytes(t, consumers)
    return SMEM_ALIGN + cdiv(ring, SMEM_ALIGN) * SMEM_ALIGN


def launch_positions(M: int, N: int, tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER,
                     cluster_m: int = CLUSTER_M) -> int:
    """Rung 06's grid size over the (cluster_m x bm, bn) cluster tiles, in CTAs: whole super tiles of
    super_m / cluster_m x super_n cluster tiles; the kernel skips the positions past the grid's edge."""
    return geometry.launch_positions(M, N, tiles.bm, tiles.bn, super_mn, cluster_m)


def persistent_grid(M: int, N: int, resident: int, tiles: WarpSpecializedTiles = TILES,
                    super_mn: tuple[int, int] = SUPER, max_ctas: int | None = None,
                    cluster_m: int = CLUSTER_M) -> tuple[int]:
    """As many CTAs as run at once (``resident``: the SMs, or the CTAs of the clusters that fit), or
    fewer when there are fewer launch positions (or when ``max_ctas`` asks for fewer: the tests make
    a few CTAs walk many tiles each); whole clusters."""
    ctas = min(launch_positions(M, N, tiles, super_mn, cluster_m), resident, max_ctas or resident)
    return (max(ctas - ctas % cluster_m, cluster_m),)


def cluster_order(M: int, N: int, tiles: WarpSpecializedTiles, super_mn: tuple[int, int], cluster_m: int):
    """Rung 06's launch order (sim.raster) of the (cluster_m x bm, bn) cluster tiles: (bid_m, bid_n) per launch
    position, (-1, -1) past the grid's edge."""
    from ...sim import raster    # here, not at the top: sim imports Numba, which the registry must not

    return raster.cluster_order(M, N, tiles.bm, tiles.bn, super_mn, cluster_m)


def cta_tiles(cta: int, grid: int, M: int, N: int, tiles: WarpSpecializedTiles = TILES,
              super_mn: tuple[int, int] = SUPER, cluster_m: int = CLUSTER_M) -> list[tuple[int, int]]:
    """The (bid_m, bid_n) tiles CTA ``cta`` of a ``grid``-CTA launch computes, in order: the Python
    twin of the kernel's loop t = cluster, cluster + clusters, ... over rung 06's launch order
    (sim.raster) of the cluster tiles, of which CTA rank ``cta % cluster_m`` takes its row. A tile
    row past the grid (grid_m odd, in clusters of 2) is computed on zeros and stored nowhere: left out."""
    grid_m = cdiv(M, tiles.bm)
    order = cluster_order(M, N, tiles, super_mn, cluster_m)
    rank, cluster, clusters = cta % cluster_m, cta // cluster_m, grid // cluster_m
    tiles_of_cta = [(int(m) * cluster_m + rank, int(n)) for m, n in order[cluster::clusters] if m >= 0]
    return [(m, n) for m, n in tiles_of_cta if m < grid_m]


def tiles_per_cluster(clusters: int, M: int, N: int, tiles: WarpSpecializedTiles = TILES,
                      super_mn: tuple[int, int] = SUPER, cluster_m: int = CLUSTER_M) -> list[int]:
    """How many cluster tiles each of ``clusters`` clusters computes: the lengths of cta_tiles for each
    cluster's first CTA, counted in one pass over the launch order instead of one pass per cluster."""
    from ...sim import raster

    return raster.tiles_per_cluster(clusters, M, N, tiles.bm, tiles.bn, super_mn, cluster_m)


def resident_ctas(kern: TemplateKernel, cluster_m: int) -> int:
    """CTAs of this kernel that run at once on the GPU: one per SM, or for clusters the driver's count
    of clusters that fit (cuOccupancyMaxActiveClusters: a cluster's CTAs share one GPC, so an SM left
    over in a GPC stays idle) times their size."""
    sms = device.require_gpu("Launching rung 11").sm_count
    if cluster_m == 1:
        return sms * CTAS_PER_SM
    return _clusters_that_fit(kern, cluster_m, device.current_gpu_id()) * cluster_m


@lru_cache(maxsize=None)
def _clusters_that_fit(kern: TemplateKernel, cluster_m: int, device_id: int) -> int:
    """The driver's answer for the kernel's cubin, loaded here through the driver API (CuPy keeps its own
    handle of the loaded kernel private), with the dynamic shared memory it launches with, on GPU ``device_id``
    (the current one: two GPUs of one host may differ)."""
    from cuda.bindings import driver
    from cupy.cuda import runtime

    def checked(result, call: str):
        if result[0] != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"{call} failed ({result[0].name}) for {kern.name_expression}.")
        return result[1] if len(result) > 1 else None

    runtime.setDevice(runtime.getDevice())    # cudaSetDevice: the GPU's primary context, initialized and current
    compiled = kern.compile()
    module = checked(driver.cuModuleLoadData(compiled.cubin), "cuModuleLoadData")
    try:
        function = checked(driver.cuModuleGetFunction(module, compiled.lowered[kern.name_expression].encode()),
                           "cuModuleGetFunction")
        checked(driver.cuFuncSetAttribute(
            function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kern.smem_bytes),
            "cuFuncSetAttribute")
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = cluster_m, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = kern.threads, 1, 1
        config.sharedMemBytes = kern.smem_bytes
        clusters = checked(driver.cuOccupancyMaxActiveClusters(function, config), "cuOccupancyMaxActiveClusters")
    finally:
        driver.cuModuleUnload(module)
    if clusters < 1:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters finds no room for a cluster of {cluster_m} CTAs of "
                           f"{kern.name_expression}: the GPU cannot run this kernel's clusters.")
    return int(clusters)


@lru_cache(maxsize=None)
def kernel(tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER,
           max_ctas: int | None = None, cluster_m: int = CLUSTER_M, consumers: int = CONSUMERS) -> TemplateKernel:
    require(consumers in (1, 2), f"consumers={consumers}: the kernel has one or two consumer warpgroups.")
    smem = smem_bytes(tiles, consumers)
    c_buffer = c_buffer_bytes(tiles, consumers)
    require_smem(smem, sizing(NEEDS), f"{tiles.stages} stages of {tiles.bm}x{tiles.bk} + {tiles.bk}x{tiles.bn} halves and "
                 f"the {c_buffer}-byte C panel buffers",
                 "use fewer stages (4 for a 128x256 tile, 3 for 256x128) or smaller tiles")
    tiles.check(smem, consumers)
    require(all(s >= 1 for s in super_mn), f"super tile {super_mn}: both sides must be at least one tile.")
    require(max_ctas is None or max_ctas >= 1, f"max_ctas={max_ctas}: the grid needs at least one CTA.")
    require(cluster_m in (1, 2), f"cluster_m={cluster_m}: the kernel pairs CTAs along M (2) or not at all (1).")
    require(super_mn[0] % cluster_m == 0 and (tiles.bn // 64) % cluster_m == 0,
            f"cluster_m={cluster_m}: the super tile's {super_mn[0]} rows must hold whole clusters and B's "
            f"{tiles.bn // 64} panels of 64 columns must split evenly between the cluster's CTAs.")
    def grid(M: int, N: int) -> tuple[int]:
        return _grid(M, N, device.current_gpu_id())

    @lru_cache(maxsize=256)               # the grid is Python arithmetic: worked out once per shape and GPU
    def _grid(M: int, N: int, device_id: int) -> tuple[int]:
        return persistent_grid(M, N, resident_ctas(kern, cluster_m), tiles, super_mn, max_ctas, cluster_m)

    kern = TemplateKernel(SOURCE, "k11_persistent",
                          (*tiles.template_args, *super_mn, cluster_m, consumers, PRODUCER_REGS, CONSUMER_REGS),
                          128 * (1 + consumers), smem, needs=NEEDS, grid=grid,
                          smem_layout=f"RingAndPanels<{tiles.bm}, {tiles.bn}, {tiles.bk}, {tiles.stages}, {consumers}>")
    return kern


@lru_cache(maxsize=tensormap.MAPS_CACHED)
def _map_c(c_ptr: int, M: int, N: int, rows: int):
    """Tensor map of C for the TMA stores: boxes of (rows, 64), one consumer's rows and one 128-byte
    swizzled panel; TMA drops the parts of a box past M or N. Cached per buffer and shape."""
    return tensormap.encode(tensormap.TileMap2D(c_ptr, M, N, N * 2, rows, 64))


def launch(a, b, c, tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER,
           max_ctas: int | None = None, cluster_m: int = CLUSTER_M, consumers: int = CONSUMERS):
    return kernel(tiles, super_mn, max_ctas, cluster_m, consumers).launch(
        a, b, c, *tensormap.tensor_maps(a, b, tiles.bm, tiles.bk), _map_c(c.data.ptr, *c.shape, tiles.bm // consumers))


RUNG = Rung(
    id="11", slug="persistent", title="TMA + wgmma, warp-specialized, persistent, clusters, TMA-store epilogue",
    idea=("one CTA per SM walks the tiles with its ring running on across them; CTA pairs share B by TMA multicast; "
          "C leaves via stmatrix and TMA stores"),
    backend="nvrtc", launch=launch, source=SOURCE, needs=NEEDS, name_expressions=(kernel().name_expression,),
    instantiations=lambda target: (kernel(),),
    multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "super_tile": SUPER, "cluster_m": CLUSTER_M, "threads": THREADS,
           "consumers": CONSUMERS,
           "ctas_per_sm": CTAS_PER_SM,
           "registers_after_setmaxnreg": {"producer": PRODUCER_REGS, "consumer": CONSUMER_REGS},
           "smem_bytes": smem_bytes(TILES)},
)
