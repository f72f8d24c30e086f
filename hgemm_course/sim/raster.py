"""CTA launch order: which C tile (bid_m, bid_n) the i-th CTA of a 1-D grid computes.

Row ``i`` of :func:`cta_order` is what the kernel computes for ``blockIdx.x == i``;
the GPU launches CTAs in increasing ``blockIdx.x``, so consecutive rows run together.
"""
from __future__ import annotations

import numpy as np

from ..library.geometry import cdiv
from .cache import cached_njit

ORDERS = ("row_major", "col_major", "supertile", "grouped", "hilbert")


@cached_njit()
def _supertile(grid_m, grid_n, super_m, super_n):
    supers_n = (grid_n + super_n - 1) // super_n
    supers_m = (grid_m + super_m - 1) // super_m
    per_super = super_m * super_n
    n = supers_m * supers_n * per_super
    out = np.empty((n, 2), np.int64)
    for cta in range(n):
        sb, inner = cta // per_super, cta % per_super
        bid_m = (sb // supers_n) * super_m + inner // super_n
        bid_n = (sb % supers_n) * super_n + inner % super_n
        if bid_m < grid_m and bid_n < grid_n:
            out[cta, 0], out[cta, 1] = bid_m, bid_n
        else:
            out[cta, 0], out[cta, 1] = -1, -1
    return out


@cached_njit()
def _grouped(grid_m, grid_n, group_m):
    n = grid_m * grid_n
    out = np.empty((n, 2), np.int64)
    per_group = group_m * grid_n
    for pid in range(n):
        first_m = (pid // per_group) * group_m
        size_m = min(grid_m - first_m, group_m)
        out[pid, 0] = first_m + (pid % per_group) % size_m
        out[pid, 1] = (pid % per_group) // size_m
    return out


@cached_njit()
def _hilbert(grid_m, grid_n):
    side = 1
    while side < max(grid_m, grid_n):
        side *= 2
    out = np.empty((grid_m * grid_n, 2), np.int64)
    count = 0
    for d in range(side * side):
        x, y, t, s = 0, 0, d, 1
        while s < side:
            rx = (t // 2) & 1
            ry = (t ^ rx) & 1
            if ry == 0:
                if rx == 1:
                    x, y = s - 1 - x, s - 1 - y
                x, y = y, x
            x += s * rx
            y += s * ry
            t //= 4
            s *= 2
        if x < grid_m and y < grid_n:
            out[count, 0], out[count, 1] = x, y
            count += 1
    return out


def cta_order(kind, grid_m, grid_n, **params):
    """(bid_m, bid_n) of each CTA in launch order, an int64 array (n, 2).

    - ``row_major``: n fastest (``blockIdx.x = bid_m * grid_n + bid_n``).
    - ``col_major``: m fastest.
    - ``supertile`` (``super_m``, ``super_n``): the grid cut into super tiles of
      super_m x super_n CTAs, n fastest inside one and super tiles in row-major order.
      The grid is rounded up to whole super tiles; positions outside the C grid are
      (-1, -1) (the kernel returns early there), so row i is still ``blockIdx.x == i``.
    - ``grouped`` (``group_m``): Triton's GROUP_SIZE_M order, m fastest inside a group
      of group_m rows of tiles; the last group is shorter when grid_m % group_m != 0.
    - ``hilbert``: a Hilbert curve over the enclosing power-of-two square, cells outside
      the grid skipped.
    """
    if grid_m < 1 or grid_n < 1:
        raise ValueError(f"grid {grid_m} x {grid_n} is empty: both sides need at least one CTA")
    expected = {"row_major": set(), "col_major": set(), "supertile": {"super_m", "super_n"},
                "grouped": {"group_m"}, "hilbert": set()}
    if kind not in expected:
        raise ValueError(f"kind={kind!r} is not one of {', '.join(ORDERS)}")
    if set(params) != expected[kind]:
        need = ", ".join(sorted(expected[kind])) or "no parameters"
        raise ValueError(f"cta_order({kind!r}) takes {need}; got {', '.join(sorted(params)) or 'none'}")
    if any(int(v) < 1 for v in params.values()):
        raise ValueError(f"{params} must all be at least 1")
    if kind == "row_major":
        m, n = np.divmod(np.arange(grid_m * grid_n), grid_n)
        return np.stack([m, n], axis=1)
    if kind == "col_major":
        n, m = np.divmod(np.arange(grid_m * grid_n), grid_m)
        return np.stack([m, n], axis=1)
    if kind == "supertile":
        return _supertile(grid_m, grid_n, int(params["super_m"]), int(params["super_n"]))
    if kind == "grouped":
        return _grouped(grid_m, grid_n, int(params["group_m"]))
    return _hilbert(grid_m, grid_n)


def launch_index_grid(order, grid_m, grid_n):
    """Inverse of an order: an int array (grid_m, grid_n) of the launch index of each C tile."""
    out = np.full((grid_m, grid_n), -1, np.int64)
    valid = order[:, 0] >= 0
    out[order[valid, 0], order[valid, 1]] = np.flatnonzero(valid)
    return out


def cluster_order(M: int, N: int, bm: int, bn: int, super_mn: tuple[int, int], cluster_m: int):
    """Rung 06's launch order of the (cluster_m x bm, bn) cluster tiles: (bid_m, bid_n) per launch
    position, (-1, -1) past the grid's edge."""
    from ..sim.raster import cta_order      # here, not at the top: sim imports Numba, which the registry must not

    return cta_order("supertile", cdiv(cdiv(M, bm), cluster_m), cdiv(N, bn),
                     super_m=super_mn[0] // cluster_m, super_n=super_mn[1])


def tiles_per_cluster(clusters: int, M: int, N: int, bm: int, bn: int, super_mn: tuple[int, int],
                      cluster_m: int) -> list[int]:
    """How many cluster tiles each of ``clusters`` persistent clusters computes when cluster c takes launch
    positions c, c + clusters, ...: counted in one pass over the launch order."""
    order = cluster_order(M, N, bm, bn, super_mn, cluster_m)
    positions = np.flatnonzero(order[:, 0] >= 0)    # launch positions inside the grid
    return np.bincount(positions % clusters, minlength=clusters).tolist()
