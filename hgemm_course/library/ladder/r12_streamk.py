"""Rung 12: rung 11 with stream-K. The tiles of the whole waves still go out one per cluster; the K-slices
of the rest are divided evenly among the clusters, and the partial sums of a tile split between clusters
meet in a workspace in global memory, so no wave runs part-empty.

The fix-up needs every cluster of the grid resident at once: the cluster that owns a split tile spin-waits
for flags that later clusters raise, so a later cluster left waiting for an SM would never raise its flag.
The grid is sized to the clusters the occupancy API says fit (``resident_clusters``) and a launch refuses a
grid larger than that (``require_co_resident``); the kernel bounds its wait, for what the API cannot see."""
from __future__ import annotations

import threading
from dataclasses import asdict
from functools import lru_cache

import numpy as np

from .. import device, tensormap
from . import Rung
from . import r11_persistent
from .nvrtc_kernel import TemplateKernel, Tunable, cdiv, require
from .r10_warp_specialized import CONSUMER_REGS, CONSUMERS, PRODUCER_REGS, THREADS, WarpSpecializedTiles
from .r11_persistent import CLUSTER_M, NEEDS, SUPER, TILES, _map_c, resident_ctas, smem_bytes

SOURCE = "k12_streamk.cu"
# Whole waves of tiles kept back from the data-parallel part and divided by K with the remainder: 0 divides
# only the last, part-empty wave's tiles; 1 spreads the remainder and one whole wave over every cluster,
# the stream-K paper's "two-tile" hybrid, whose pieces are longer than a fix-up (sim.waves.hybrid_split counts
# them). None: the waves model picks per shape (sim.waves.best_split, as gemm()'s plan does), since the H200 ranked
# them differently at different shapes.
SK_WAVES = None
TUNABLE = Tunable(tiles=((128, 256), (256, 128)), stages=(4, 3), supers=((16, 2), (8, 4)), clusters=(2, 1),
                  consumers=(2,))


def resident_clusters(kern: TemplateKernel, cluster_m: int) -> int:
    """Clusters of ``kern`` that can be resident at once on this GPU: the occupancy API's count
    (:func:`r11_persistent.resident_ctas`: cuOccupancyMaxActiveClusters for clusters of 2, one CTA per SM
    without clusters). It is the count for a GPU this launch has to itself."""
    return resident_ctas(kern, cluster_m) // cluster_m


def require_co_resident(clusters: int, resident: int, cluster_m: int) -> None:
    """Refuse a grid of ``clusters`` clusters when only ``resident`` fit at once: a stream-K owner would spin on
    the flag of a cluster that cannot start until the owner ends, and the launch would hang instead of failing."""
    if clusters > resident:
        raise RuntimeError(
            f"Rung 12 cannot launch {clusters} clusters of {cluster_m} CTA{'s' if cluster_m > 1 else ''}: only "
            f"{resident} can be resident at once on this GPU, and stream-K's fix-up has each owner spin-wait on "
            f"flags raised by later clusters, so every cluster must run at the same time; launch at most {resident} "
            "clusters (the occupancy API's count, as kernel().grid does), on a GPU that no other kernel, MPS client or "
            "green context shares, or use rung 11.")


@lru_cache(maxsize=None)
def kernel(tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER,
           cluster_m: int = CLUSTER_M, consumers: int = CONSUMERS, apart: bool = False) -> TemplateKernel:
    """Rung 12's kernel; ``apart``: the same kernel on split-K apart's grid, a whole number of CTAs per tile."""
    rung11 = r11_persistent.kernel(tiles, super_mn, None, cluster_m, consumers)  # rung 11's refusals hold here too

    def grid(M: int, N: int) -> tuple[int]:
        resident = _grid(device.current_gpu_id())
        if not apart:
            return resident
        tile_count = cdiv(M, tiles.bm) * cdiv(N, tiles.bn)
        return (resident[0] // tile_count * tile_count if tile_count <= resident[0] else resident[0],)

    @lru_cache(maxsize=8)                 # every resident cluster takes a share: the whole GPU, whatever the shape
    def _grid(device_id: int) -> tuple[int]:
        return (resident_clusters(kern, cluster_m) * cluster_m,)

    kern = TemplateKernel(SOURCE, "k12_streamk", (*rung11.template_args, apart), rung11.threads, rung11.smem_bytes,
                          needs=NEEDS, grid=grid,
                          smem_layout=rung11.smem_layout)
    return kern


class Workspace:
    """The partial sums and flags of one GPU's stream-K launches, grown as needed, with the epoch each
    launch raises its flags to (so flags are never cleared). Launches that share a workspace must run
    in order: one per (device, stream)."""

    def __init__(self):
        self.partials = self.flags = None
        self.epoch = 0

    def take(self, ctas: int, tile_floats: int, consumers: int):
        """Room for ``ctas`` CTAs of ``consumers`` consumers each: a tile's partial sums per CTA (its
        consumers' slots side by side) and a flag per consumer; and this launch's epoch."""
        import cupy

        if self.partials is None or self.partials.size < ctas * tile_floats:
            self.partials = cupy.empty(ctas * tile_floats, dtype=cupy.float32)
        if self.flags is None or self.flags.size < ctas * consumers:
            self.flags = cupy.zeros(ctas * consumers, dtype=cupy.uint32)
            self.epoch = 0
        self.epoch = self.epoch % 0xFFFFFFFF + 1   # 1, 2, .., never 0: the flags' first value
        return self.partials, self.flags, self.epoch


_workspaces: dict[tuple[int, int], Workspace] = {}
_workspaces_lock = threading.Lock()


def workspace(device: int, stream: int) -> Workspace:
    with _workspaces_lock:
        return _workspaces.setdefault((device, stream), Workspace())


@lru_cache(maxsize=1024)
def _launch_plan(M: int, N: int, K: int, tiles: WarpSpecializedTiles, super_mn: tuple[int, int], cluster_m: int,
                 consumers: int, sk_waves: int | None, device_id: int,
                 apart: bool = False) -> tuple[TemplateKernel, int, np.int32]:
    """(kernel, CTAs, data-parallel tiles) of one shape on GPU ``device_id`` (the current one; two GPUs of one
    host may hold different numbers of clusters), worked out once: a launch only looks them up."""
    kern = kernel(tiles, super_mn, cluster_m, consumers, apart)
    ctas = kern.grid(M, N)[0]
    units = ctas // cluster_m
    require_co_resident(units, resident_clusters(kern, cluster_m), cluster_m)
    from ...sim.waves import best_split, hybrid_split, split_schedules   # here: sim imports Numba, the registry must not

    if sk_waves is None:                # the plan's choice: weighed on the rung's own tiles and clusters
        sk_waves = best_split(split_schedules(M, N, K, tile_m=TILES.bm, tile_n=TILES.bn, tile_k=TILES.bk, units=units,
                                              cluster_m=CLUSTER_M))
    dp_tiles, _ = hybrid_split(cdiv(cdiv(M, tiles.bm), cluster_m) * cdiv(N, tiles.bn), units, sk_waves=sk_waves)
    return kern, ctas, np.int32(dp_tiles)


def launch(a, b, c, tiles: WarpSpecializedTiles = TILES, super_mn: tuple[int, int] = SUPER,
           cluster_m: int = CLUSTER_M, consumers: int = CONSUMERS, sk_waves: int | None = SK_WAVES,
           apart: bool = False):
    """Launches C = A @ B; returns the launch again as a call of no arguments (None for a timing build), which
    takes the next epoch of the same workspace each time: a launch that raised flags to an epoch already used
    would let the owners of split tiles read partial sums before they are written.

    ``apart``: split-K apart. Every piece of a split tile goes to a slot of the CTA that computed it (two per CTA)
    and, once its pieces are out, each CTA of a split tile adds its share of the tile's fragments: no owner adds
    pieces one after another, and no second kernel runs."""
    import cupy

    require(not apart or cluster_m == 1, f"apart=True with cluster_m={cluster_m}: split-K apart runs without "
                                         "clusters; pass cluster_m=1.")
    M, N = c.shape
    K = a.shape[1]
    kern, ctas, dp_tiles = _launch_plan(M, N, K, tiles, super_mn, cluster_m, consumers, sk_waves,
                                        device.current_gpu_id(), apart)
    space = workspace(a.device.id, cupy.cuda.get_current_stream().ptr)
    maps = (*tensormap.tensor_maps(a, b, tiles.bm, tiles.bk), _map_c(c.data.ptr, M, N, tiles.bm // consumers))
    slots = 2 * ctas if apart else ctas
    partials, flags, epoch = space.take(slots, tiles.bm * tiles.bn, consumers)
    again = kern.launch(a, b, c, *maps, partials, flags, dp_tiles, np.uint32(epoch))
    if again is None:
        return None
    # The workspace's arguments follow A, B, C, M, N, K and the tensor maps: partials, flags, dp_tiles, epoch.
    at_partials, at_flags, at_epoch = len(again.args) - 4, len(again.args) - 3, len(again.args) - 1

    def launch_again() -> None:
        partials, flags, epoch = space.take(slots, tiles.bm * tiles.bn, consumers)
        if partials is not again.args[at_partials] or flags is not again.args[at_flags]:   # the workspace grew
            again.put(at_partials, partials)
            again.put(at_flags, flags)
        again.put(at_epoch, np.uint32(epoch))
        again()

    return launch_again


RUNG = Rung(
    id="12", slug="streamk", title="rung 11 + stream-K: the last waves divided by K, partial tiles fixed up",
    idea=("the K-slices of the tiles past the whole waves are divided evenly among the persistent clusters; "
          "partial tiles meet in a global workspace, announced by per-CTA flags"),
    backend="nvrtc", launch=launch, source=SOURCE, needs=NEEDS,
    name_expressions=(kernel().name_expression, kernel(cluster_m=1, apart=True).name_expression),
    instantiations=lambda target: (kernel(), kernel(cluster_m=1, apart=True)),
    multiple_n=8, multiple_k=8,
    extra={"tiles": asdict(TILES), "super_tile": SUPER, "cluster_m": CLUSTER_M, "threads": THREADS,
           "consumers": CONSUMERS, "sk_waves": SK_WAVES,
           "registers_after_setmaxnreg": {"producer": PRODUCER_REGS, "consumer": CONSUMER_REGS},
           "smem_bytes": smem_bytes(TILES)},
)
