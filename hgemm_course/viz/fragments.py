"""Fragment figure: which lane of a warp holds each element of mma.m16n8k16's A, B and C."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..sim import a_fragment_coords, b_fragment_coords, c_fragment_coords, fragment_owner


def fragments_data():
    """Lane owning each element: ``{'A': (16, 16), 'B': (16, 8), 'C': (16, 8)}`` int arrays."""
    return {"A": fragment_owner(a_fragment_coords(), (16, 16)),
            "B": fragment_owner(b_fragment_coords(), (16, 8)),
            "C": fragment_owner(c_fragment_coords(), (16, 8))}


def fragments_figure() -> Figure:
    """Which lane of a warp holds each element of mma.m16n8k16's A, B and C fragments."""
    data = fragments_data()
    fig = Figure(figsize=(13, 6), layout="constrained")
    axes = fig.subplots(1, 3, width_ratios=[16, 8, 8])
    names = {"A": "A 16x16 (row, k), f16", "B": "B 16x8 (k, n), f16", "C": "C/D 16x8 (row, n), f32"}
    for ax, (key, owner) in zip(axes, data.items()):
        ax.imshow(owner // 4, cmap="tab10", vmin=0, vmax=9)
        for (r, c), lane in np.ndenumerate(owner):
            ax.text(c, r, str(lane), ha="center", va="center", fontsize=7, color="white")
        ax.set_title(names[key], fontsize=10)
        ax.set_xticks(range(0, owner.shape[1], 2))
        ax.set_yticks(range(0, 16, 2))
    fig.suptitle("mma.m16n8k16: lane l holds rows l//4 and l//4+8 of A and C, column l//4 of B "
                 "(colour = lane // 4)")
    return fig
