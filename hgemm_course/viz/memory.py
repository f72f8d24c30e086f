"""Shared-memory figures: the 128-byte swizzle map and one warp request's banks per layout."""
from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from ..sim import banks, chunk_map
from ..sim.swizzle import TileLayout

CHUNK_COLOURS = ListedColormap(["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"])


def swizzle_data(rows=8):
    """Where each logical 16-byte chunk of 128-byte rows lands, linear vs 128B swizzle.

    Returns ``{'linear', 'swizzled'}``: int arrays (rows, physical chunk) holding the logical chunk
    stored there, plus ``'bank_groups_per_chunk'``: how many bank groups (16 bytes = 4 banks each)
    the ``rows`` rows of each logical chunk occupy after swizzling.
    """
    chunks = 8

    def stored_at(kind):
        physical = chunk_map(rows, chunks, layout=kind) % chunks
        out = np.empty_like(physical)
        np.put_along_axis(out, physical, np.arange(chunks)[None, :].repeat(rows, 0), axis=1)
        return out, physical

    linear, _ = stored_at("linear")
    swizzled, physical = stored_at("swizzle128")
    return {"linear": linear, "swizzled": swizzled,
            "bank_groups_per_chunk": [len(set(physical[:, c])) for c in range(chunks)]}


def swizzle_figure(*, rows=8) -> Figure:
    """Where the 128B swizzle stores each 16-byte chunk of a tile's rows, next to the linear layout."""
    data = swizzle_data(rows)
    fig = Figure(figsize=(10, 0.45 * rows + 1.0), layout="constrained")
    for ax, key in zip(fig.subplots(1, 2), ("linear", "swizzled")):
        grid = data[key]
        ax.imshow(grid, cmap=CHUNK_COLOURS, vmin=0, vmax=7)
        for (r, c), logical in np.ndenumerate(grid):
            ax.text(c, r, str(logical), ha="center", va="center", color="white", fontsize=10)
        ax.set_title(f"{key}: logical chunk stored at each position")
        ax.set_xlabel("physical 16-byte chunk = bank group (banks 4g..4g+3)")
        ax.set_ylabel("row")
        ax.set_xticks(range(8))
        ax.set_yticks(range(rows))
    groups = min(data["bank_groups_per_chunk"])
    fig.suptitle(f"128B swizzle: {min(rows, 8)} rows of one logical chunk hit {groups} different bank groups "
                 f"(linear: 1)")
    return fig


def banks_data(*, access="ldmatrix.x4", kinds=("linear", "padded", "swizzle128"), row_bytes=128, pad_bytes=16):
    """Phase 0 of one warp request per layout: which banks each lane touches and which are in conflict.

    ``access``: ``"ldmatrix.x4"`` (16-byte rows, 8 lanes per phase), ``"cp.async 16B"`` or
    ``"lds.32 column"`` (32 lanes reading down a column). Returns, per layout kind,
    ``{'addrs', 'wavefronts', 'ideal', 'lanes': (phase lanes, 32) bool of banks touched,
    'ways': (32,) distinct words per bank in phase 0}``.
    """
    out = {}
    for kind in kinds:
        layout = TileLayout(kind, row_bytes=row_bytes, pad_bytes=pad_bytes)
        if access == "ldmatrix.x4":
            addrs, width = banks.ldmatrix_addrs(layout), 16
        elif access == "cp.async 16B":
            addrs, width = banks.store16_addrs(layout, 0), 16
        elif access == "lds.32 column":
            addrs, width = banks.load4_addrs(layout, "column"), 4
        else:
            raise ValueError(f"access={access!r} is not 'ldmatrix.x4', 'cp.async 16B' or 'lds.32 column'")
        phase = addrs[: banks.PHASE_LANES[width]]
        words = phase[:, None] // banks.BANK_BYTES + np.arange(width // banks.BANK_BYTES)  # (lanes, words)
        touched = np.zeros((len(phase), banks.NUM_BANKS), bool)
        np.put_along_axis(touched, words % banks.NUM_BANKS, True, axis=1)
        distinct = np.unique(words)
        out[kind] = {"addrs": addrs, "wavefronts": banks.wavefronts(addrs, width),
                     "ideal": banks.ideal_wavefronts(len(addrs), width), "lanes": touched,
                     "ways": np.bincount(distinct % banks.NUM_BANKS, minlength=banks.NUM_BANKS)}
    return out


def banks_figure(*, access="ldmatrix.x4", kinds=("linear", "padded", "swizzle128"), row_bytes=128,
                 pad_bytes=16) -> Figure:
    """Bank conflicts of one warp's shared-memory access on linear, padded and swizzled rows."""
    data = banks_data(access=access, kinds=kinds, row_bytes=row_bytes, pad_bytes=pad_bytes)
    fig = Figure(figsize=(11, 2.2 + 1.6 * len(kinds)), layout="constrained")
    for ax, kind in zip(np.atleast_1d(fig.subplots(len(kinds), 1)), kinds):
        d = data[kind]
        conflict = d["lanes"] & (d["ways"] > 1)[None, :]
        image = np.where(conflict, 2, d["lanes"].astype(int))
        ax.imshow(image, cmap=ListedColormap(["#f4f4f4", "#59a14f", "#e15759"]), vmin=0, vmax=2, aspect="auto")
        ax.set_title(f"{kind}: {d['wavefronts']} wavefronts (ideal {d['ideal']}); phase 0's busiest bank "
                     f"serves {d['ways'].max()} distinct words (red: more than one)", fontsize=10)
        ax.set_ylabel("lane")
        ax.set_xticks(range(0, 32, 4))
    ax.set_xlabel("bank")
    costs = ", ".join(f"{k} {data[k]['wavefronts']}" for k in kinds)
    fig.suptitle(f"{access} on {row_bytes}-byte rows costs {costs} wavefronts")
    return fig
