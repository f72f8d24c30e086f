"""Figures built from the simulators (:mod:`hgemm_course.sim`) and from recorded results.

Every figure is a function with keyword arguments and defaults that returns a matplotlib
``Figure`` (no pyplot, so it works headless); its ``*_data`` twin returns the numbers drawn.
``FIGURES[name]().savefig(path)`` is what ``hgemm-course viz name`` runs (:func:`draw`).
"""
from __future__ import annotations

import os
from pathlib import Path

from .clocks import clocks_data, clocks_figure
from .fragments import fragments_data, fragments_figure
from .ladder import ladder_data, ladder_figure, ladder_grid_data
from .memory import banks_data, banks_figure, swizzle_data, swizzle_figure
from .occupancy import occupancy_data, occupancy_figure
from .pipeline import pipeline_data, pipeline_figure
from .roofline import roofline_data, roofline_figure
from .schedule import cta_order_data, cta_order_figure, l2_supertile_data, l2_supertile_figure
from .sweep import shape_sweep_data, shape_sweep_figure
from .vendor_sweep import vendor_sweep_data, vendor_sweep_figure
from .waves import walk_data, walk_figure, waves_data, waves_figure

FIGURES = {
    "swizzle": swizzle_figure,
    "banks": banks_figure,
    "cta-order": cta_order_figure,
    "l2-supertile": l2_supertile_figure,
    "occupancy": occupancy_figure,
    "fragments": fragments_figure,
    "ladder": ladder_figure,
    "roofline": roofline_figure,
    "pipeline": pipeline_figure,
    "waves": waves_figure,
    "walk": walk_figure,
    "shape-sweep": shape_sweep_figure,
    "clocks": clocks_figure,
    "vendor-sweep": vendor_sweep_figure,
}

FIGURES_WITH_RUNG = ("pipeline",)    # figures drawn per rung, which take rung=


def draw(name: str, out: str | Path | None = None, rung: str | None = None) -> Path:
    """``hgemm-course viz``: draw the figure ``name`` (of ``rung``, for the figures drawn per rung) into ``out``
    (default: ./NAME.png, ./NAME_RUNG.png with a rung), checked before anything is drawn; returns the file written.
    A file that cannot be written is a ValueError that names the fix."""
    from matplotlib.backend_bases import FigureCanvasBase

    from ..library.ladder import get
    from ..library.paths import PACKAGE_DIR

    options = {}
    if rung is not None:
        if name not in FIGURES_WITH_RUNG:
            raise ValueError(f"viz {name} draws no single rung; --rung goes with {', '.join(FIGURES_WITH_RUNG)}.")
        options["rung"] = get(rung).id
    out = Path(out or f"{'_'.join([name, *options.values()])}.png").resolve()      # default: the current folder
    formats = FigureCanvasBase.get_supported_filetypes()
    if not out.parent.is_dir():
        raise ValueError(f"folder {out.parent} does not exist; create it, or give --out a file in an existing folder.")
    if not os.access(out.parent, os.W_OK) or PACKAGE_DIR in out.parents:
        raise ValueError(f"cannot write into {out.parent}; give --out a file in a folder of your own, e.g. "
                         f"--out ./{out.name}.")
    if out.suffix.lstrip(".") not in formats:
        raise ValueError(f"{out.name}: end --out with a type matplotlib writes: {', '.join(sorted(formats))}.")
    try:
        FIGURES[name](**options).savefig(out, dpi=120, bbox_inches="tight")
    except OSError as exc:
        raise ValueError(f"cannot write {out} ({exc.strerror}); give --out a file in a folder of your own.") from None
    return out


__all__ = [
    "FIGURES", "FIGURES_WITH_RUNG", "draw", "banks_data", "banks_figure", "clocks_data", "clocks_figure", "cta_order_data", "cta_order_figure", "fragments_data",
    "fragments_figure", "l2_supertile_data", "l2_supertile_figure", "ladder_data", "ladder_figure", "ladder_grid_data",
    "occupancy_data", "occupancy_figure", "pipeline_data", "pipeline_figure", "roofline_data", "roofline_figure",
    "shape_sweep_data", "shape_sweep_figure", "swizzle_data", "swizzle_figure", "vendor_sweep_data", "vendor_sweep_figure",
    "walk_data", "walk_figure", "waves_data", "waves_figure",
]
