"""CTA schedule figures: launch order and waves on the C tile grid, and L2 hit rate per super-tile shape."""
from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from ..library.geometry import of as geometry_of
from ..sim import cta_order, l2_model, launch_index_grid
from ..sim.l2 import H200_L2_BYTES, H200_SMS

R06 = geometry_of("06")       # rung 06's tile and super tile: the figures' defaults


def _wave_edges(ax, waves):
    """White segments between neighbouring C tiles of different waves."""
    right = np.argwhere(waves[:, :-1] != waves[:, 1:])   # edge between (r, c) and (r, c + 1)
    below = np.argwhere(waves[:-1, :] != waves[1:, :])   # edge between (r, c) and (r + 1, c)
    segments = [[(c + 0.5, r - 0.5), (c + 0.5, r + 0.5)] for r, c in right]
    segments += [[(c - 0.5, r + 0.5), (c + 0.5, r + 0.5)] for r, c in below]
    ax.add_collection(LineCollection(segments, colors="white", linewidths=2))


def cta_order_data(*, M=8192, N=8192, BM=128, BN=128, super_m=8, super_n=8, ctas_in_flight=H200_SMS):
    """Launch index and wave of every C tile for row-major and super-tile orders.

    Returns per order ``{'index': (grid_m, grid_n) launch index, 'wave': (grid_m, grid_n) wave number,
    'first_wave_a_tiles', 'first_wave_b_tiles', 'first_wave_bytes_per_k'}`` (the A and B bytes the first
    wave reads per unit of K, 2 bytes per half).
    """
    grid_m, grid_n = -(-M // BM), -(-N // BN)
    out = {}
    for name, kind, params in (("row-major", "row_major", {}),
                               (f"super-tile {super_m}x{super_n}", "supertile", {"super_m": super_m, "super_n": super_n})):
        order = cta_order(kind, grid_m, grid_n, **params)
        valid = order[order[:, 0] >= 0]
        first = valid[:ctas_in_flight]
        a_tiles, b_tiles = len(np.unique(first[:, 0])), len(np.unique(first[:, 1]))
        index = launch_index_grid(valid, grid_m, grid_n)
        out[name] = {"index": index, "wave": index // ctas_in_flight, "first_wave_a_tiles": a_tiles,
                     "first_wave_b_tiles": b_tiles, "first_wave_bytes_per_k": 2 * (a_tiles * BM + b_tiles * BN)}
    return out


def cta_order_figure(*, M=8192, N=8192, BM=128, BN=128, super_m=8, super_n=8, ctas_in_flight=H200_SMS) -> Figure:
    """Launch order and first wave of C's tiles, row-major against super tiles."""
    data = cta_order_data(M=M, N=N, BM=BM, BN=BN, super_m=super_m, super_n=super_n, ctas_in_flight=ctas_in_flight)
    fig = Figure(figsize=(12, 5.8), layout="constrained")
    for ax, (name, d) in zip(fig.subplots(1, 2), data.items()):
        image = ax.imshow(d["index"], cmap="viridis")
        _wave_edges(ax, d["wave"])
        ax.set_title(f"{name}: the first wave reads {d['first_wave_a_tiles']} A + {d['first_wave_b_tiles']} B tiles",
                     fontsize=10)
        ax.set_xlabel("bid_n")
        ax.set_ylabel("bid_m")
        fig.colorbar(image, ax=ax, label="launch index (blockIdx.x)", shrink=0.8)
    (row, sup) = data.values()
    ratio = row["first_wave_bytes_per_k"] / sup["first_wave_bytes_per_k"]
    fig.suptitle(f"{M}x{N} C, {ctas_in_flight} CTAs per wave (white edges): super tiles cut the first wave's "
                 f"A+B footprint {ratio:.1f}x")
    return fig


def l2_supertile_data(*, M=8192, N=8192, K=8192, BM=R06.bm, BN=R06.bn, BK=R06.bk,
                      super_tile_ctas=R06.super_mn[0] * R06.super_mn[1], l2_bytes=H200_L2_BYTES, ctas_in_flight=H200_SMS,
                      progress=True):
    """L2 hit rate and DRAM traffic for super tiles of ``super_tile_ctas`` CTAs, from 1 x n (row-major) to m x 1.

    Defaults are rung 06 at 8192^3: its tiles and super-tile size, one CTA per SM. One
    :func:`~hgemm_course.sim.l2_model` run per shape (about a second each; ``progress``: a tqdm bar on stderr).
    Returns ``{'shapes': [(super_m, super_n)], 'hit_rate', 'dram_bytes', 'wave_footprint_bytes'
    (median bytes of A and B a wave reads over the whole K), 'l2_bytes', 'compulsory_bytes'}``.
    """
    from tqdm import tqdm

    grid_m, grid_n = -(-M // BM), -(-N // BN)
    if super_tile_ctas > grid_n:
        raise ValueError(f"super_tile_ctas={super_tile_ctas} is wider than the {grid_n} tile columns of N={N}, so "
                         f"1 x {super_tile_ctas} would not be row-major; pass at most {grid_n}")
    shapes = [(m, super_tile_ctas // m) for m in (2 ** i for i in range(super_tile_ctas.bit_length()))
              if m <= grid_m and m * (super_tile_ctas // m) == super_tile_ctas]
    hit, dram, footprint = [], [], []
    for super_m, super_n in tqdm(shapes, desc="l2 model", unit="shape", disable=not progress):
        result = l2_model(M, N, K, BM, BN, BK, cta_order("supertile", grid_m, grid_n, super_m=super_m, super_n=super_n),
                          l2_bytes=l2_bytes, ctas_in_flight=ctas_in_flight)
        hit.append(result.hit_rate)
        dram.append(result.dram_bytes)
        footprint.append(float(np.median((result.wave_a_tiles * BM + result.wave_b_tiles * BN) * K * 2)))
    return {"shapes": shapes, "hit_rate": np.array(hit), "dram_bytes": np.array(dram),
            "wave_footprint_bytes": np.array(footprint), "l2_bytes": l2_bytes,
            "compulsory_bytes": (M * K + K * N) * 2}


def l2_supertile_figure(*, M=8192, N=8192, K=8192, BM=R06.bm, BN=R06.bn, BK=R06.bk,
                        super_tile_ctas=R06.super_mn[0] * R06.super_mn[1], l2_bytes=H200_L2_BYTES, ctas_in_flight=H200_SMS,
                        progress=True) -> Figure:
    """L2 hit rate and DRAM traffic of super tiles of each shape, from one row (row-major) to one column."""
    data = l2_supertile_data(M=M, N=N, K=K, BM=BM, BN=BN, BK=BK, super_tile_ctas=super_tile_ctas,
                             l2_bytes=l2_bytes, ctas_in_flight=ctas_in_flight, progress=progress)
    labels = [f"{m}x{n}" for m, n in data["shapes"]]
    x = np.arange(len(labels))
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.subplots()
    bars = ax.bar(x, data["hit_rate"], color="#4e79a7", label="L2 hit rate (model)")
    ax.bar_label(bars, [f"DRAM {b / 2**30:.2f} GiB" for b in data["dram_bytes"]], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("L2 hit rate")
    ax.set_xticks(x, labels)
    ax.set_xlabel(f"super tile (super_m x super_n CTAs of {BM}x{BN}); {labels[0]} is row-major")
    mib = 2 ** 20
    ax2 = ax.twinx()
    ax2.plot(x, data["wave_footprint_bytes"] / mib, "o-", color="#e15759", label="A+B bytes one wave reads")
    ax2.axhline(data["l2_bytes"] / mib, color="black", ls="--", label=f"L2 capacity {data['l2_bytes'] / mib:.0f} MiB")
    ax2.set_ylabel("MiB")
    ax2.set_ylim(0, None)
    handles = ax.get_legend_handles_labels()
    handles2 = ax2.get_legend_handles_labels()
    ax.legend(handles[0] + handles2[0], handles[1] + handles2[1], loc="lower center")
    best = int(np.argmin(data["dram_bytes"]))
    if data["dram_bytes"][best] < data["dram_bytes"][0]:
        finding = (f"super tile {labels[best]} reads {data['dram_bytes'][0] / data['dram_bytes'][best]:.1f}x less from "
                   f"DRAM than row-major (L2 hit rate {data['hit_rate'][0]:.2f} -> {data['hit_rate'][best]:.2f})")
    else:
        finding = "no super tile reads less from DRAM than row-major"
    fig.suptitle(f"Model of {M}x{N}x{K}, {ctas_in_flight} CTAs per wave: {finding}")
    return fig
