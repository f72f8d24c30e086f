"""ex02_tiling: missed, doubled, misaligned and uncoalesced tile copies are caught."""
from hgemm_course.check import check
from hgemm_course.check.ex02_tiling import reference


def per_thread_runs(tid, threads, tile_rows, tile_cols, vec):  # covers the tile, uncoalesced
    per_row = tile_cols // vec
    total = tile_rows * per_row
    mine = -(-total // threads)
    return [(v // per_row, (v % per_row) * vec) for v in range(tid * mine, min(total, (tid + 1) * mine))]


def forgets_vec(tid, threads, tile_rows, tile_cols, vec):
    per_row = tile_cols // vec
    return [(v // per_row, v % per_row) for v in range(tid, tile_rows * per_row, threads)]


def warp_stride(tid, threads, tile_rows, tile_cols, vec):  # strides by 32, not by the block
    per_row = tile_cols // vec
    return [(v // per_row, (v % per_row) * vec) for v in range(tid, tile_rows * per_row, 32)]


def stops_early(tid, threads, tile_rows, tile_cols, vec):
    per_row = tile_cols // vec
    return [(v // per_row, (v % per_row) * vec) for v in range(tid, tile_rows * per_row - 1, threads)]


def rows_and_cols_swapped(tid, threads, tile_rows, tile_cols, vec):
    return [(c, r) for r, c in reference(tid, threads, tile_rows, tile_cols, vec)]


def test_uncoalesced_cover_is_named():
    result = check("ex02", per_thread_runs)
    assert not result.passed and "covered exactly once, but not coalesced" in result.message


def test_misaligned_vectors():
    result = check("ex02", forgets_vec)
    assert not result.passed and "not a multiple of vec=8" in result.message


def test_duplicates_and_misses():
    result = check("ex02", warp_stride)
    assert not result.passed and "is loaded twice" in result.message
    result = check("ex02", stops_early)
    assert not result.passed and "is never loaded" in result.message
    assert "thread 127 should load it" in result.message


def test_swapped_coordinates_leave_the_tile():
    result = check("ex02", rows_and_cols_swapped)
    assert not result.passed and "does not fit in the 128x32 tile" in result.message


def test_not_a_list():
    result = check("ex02", lambda tid, threads, tile_rows, tile_cols, vec: None)
    assert not result.passed and "must return a list of (row, col) tuples" in result.message
