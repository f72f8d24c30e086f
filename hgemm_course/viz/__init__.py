"""Figures built from the simulators (:mod:`hgemm_course.sim`) and from recorded results.

Every figure is a function with keyword arguments and defaults that returns a matplotlib
``Figure`` (no pyplot, so it works headless); its ``*_data`` twin returns the numbers drawn.
``FIGURES[name]().savefig(path)`` is what ``hgemm-course viz name`` runs.
"""
from .clocks import clocks_data, clocks_figure
from .fragments import fragments_data, fragments_figure
from .ladder import ladder_data, ladder_figure, ladder_grid_data
from .memory import banks_data, banks_figure, swizzle_data, swizzle_figure
from .occupancy import occupancy_data, occupancy_figure
from .pipeline import pipeline_data, pipeline_figure
from .roofline import roofline_data, roofline_figure
from .schedule import cta_order_data, cta_order_figure, l2_supertile_data, l2_supertile_figure
from .sweep import shape_sweep_data, shape_sweep_figure
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
}

__all__ = [
    "FIGURES", "banks_data", "banks_figure", "clocks_data", "clocks_figure", "cta_order_data", "cta_order_figure", "fragments_data",
    "fragments_figure", "l2_supertile_data", "l2_supertile_figure", "ladder_data", "ladder_figure", "ladder_grid_data",
    "occupancy_data", "occupancy_figure", "pipeline_data", "pipeline_figure", "roofline_data", "roofline_figure",
    "shape_sweep_data", "shape_sweep_figure", "swizzle_data", "swizzle_figure",
    "walk_data", "walk_figure", "waves_data", "waves_figure",
]
