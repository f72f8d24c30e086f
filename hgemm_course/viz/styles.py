"""Styles that keep many series apart: matplotlib's ten tab10 colours, and past ten the same colours again with
another hatch (bars) or marker (points), so that the eleventh series is never the first one's twin."""
from __future__ import annotations

from matplotlib import colormaps

COLOURS = colormaps["tab10"].colors      # ten colours, the default cycle's
HATCHES = ("", "//", "..", "xx")         # one per round of the ten colours, for bars
MARKERS = ("o", "s", "^", "D")           # one per round of the ten colours, for points


def bar_style(i: int) -> dict:
    """Keywords for ``ax.bar`` of series ``i`` (0, 1, ...): its colour, and from the eleventh a hatch, drawn in white."""
    return {"color": COLOURS[i % len(COLOURS)], "hatch": HATCHES[i // len(COLOURS) % len(HATCHES)],
            "edgecolor": "white", "linewidth": 0}


def point_style(i: int) -> dict:
    """Keywords for ``ax.scatter`` or ``ax.plot`` of series ``i``: its colour, and from the eleventh another marker."""
    return {"color": COLOURS[i % len(COLOURS)], "marker": MARKERS[i // len(COLOURS) % len(MARKERS)]}
