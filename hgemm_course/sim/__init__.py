"""Host-side simulators of the mechanisms the kernels rely on, each checked against the H200.

Pure functions over numpy arrays with keyword hardware settings (H200 defaults) that return
data; drawing them is :mod:`hgemm_course.viz`'s job.
"""
from .banks import (
    ideal_wavefronts,
    lane_banks,
    ldmatrix_addrs,
    ldmatrix_positions,
    load4_addrs,
    load4_positions,
    main_loop_bank_conflicts,
    operand_layouts,
    request_cost,
    store16_addrs,
    store16_positions,
    wavefronts,
)
from .fragments import (
    a_fragment_coords,
    a_matrix_from_regs,
    a_regs_from_matrix,
    b_fragment_coords,
    b_matrix_from_regs,
    b_regs_from_matrix,
    c_fragment_coords,
    c_matrix_from_regs,
    c_regs_from_matrix,
    fragment_owner,
    ldmatrix,
    ldmatrix_x4_src_row_reference,
    mma_m16n8k16,
)
from .l2 import L2Result, l2_model
from .occupancy import H200, ctas_per_sm, occupancy_report
from .raster import ORDERS, cta_order, launch_index_grid
from .swizzle import LAYOUTS, TileLayout, chunk_map, swizzle, swizzle_128b, swizzle_address, tile_byte_offset
from .waves import WaveSchedule, hybrid_split, predicted_efficiency, schedule, streamk_ranges

__all__ = [
    "H200", "LAYOUTS", "ORDERS", "L2Result", "TileLayout",
    "a_fragment_coords", "a_matrix_from_regs", "a_regs_from_matrix", "b_fragment_coords",
    "b_matrix_from_regs", "b_regs_from_matrix", "c_fragment_coords", "c_matrix_from_regs",
    "c_regs_from_matrix", "chunk_map", "cta_order", "ctas_per_sm", "fragment_owner",
    "ideal_wavefronts", "l2_model", "lane_banks", "launch_index_grid", "ldmatrix", "ldmatrix_addrs",
    "ldmatrix_positions", "ldmatrix_x4_src_row_reference", "load4_addrs", "load4_positions",
    "main_loop_bank_conflicts", "mma_m16n8k16", "occupancy_report", "operand_layouts", "request_cost",
    "store16_addrs", "store16_positions", "swizzle", "swizzle_128b", "swizzle_address",
    "tile_byte_offset", "wavefronts",
    "WaveSchedule", "hybrid_split", "predicted_efficiency", "schedule", "streamk_ranges",
]
