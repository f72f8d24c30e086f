"""ex01_naive: wrong thread-to-element mappings are caught and explained."""
from hgemm_course.check import check
from hgemm_course.check.ex01_naive import reference, warp_sectors


def swapped(block_idx, block_dim, thread_idx):  # x -> row: covers C, uncoalesced
    return block_idx[0] * block_dim[0] + thread_idx[0], block_idx[1] * block_dim[1] + thread_idx[1]


def off_by_one(block_idx, block_dim, thread_idx):
    return block_idx[1] * block_dim[1] + thread_idx[1], block_idx[0] * block_dim[0] + thread_idx[0] + 1


def wrong_block_dim(block_idx, block_dim, thread_idx):  # strides rows by blockDim.x
    return block_idx[1] * block_dim[0] + thread_idx[1], block_idx[0] * block_dim[0] + thread_idx[0]


def no_block_offset(block_idx, block_dim, thread_idx):
    return thread_idx[1], thread_idx[0]


def test_sector_counts():
    assert warp_sectors(reference) == {"A": 1, "B": 2, "C": 2}
    assert warp_sectors(swapped) == {"A": 32, "B": 1, "C": 32}


def test_swapped_axes_is_explained_by_sectors():
    result = check("ex01", swapped)
    assert not result.passed
    assert "naive_thread_output(block_idx=(0, 0), block_dim=(32, 32), thread_idx=(1, 0)): " \
           "expected (0, 1), got (1, 0)." in result.message
    assert "reads 32 sectors of A and 1 sector of B, and its stores to C touch 32 sectors" in result.message and "x is the fast axis" in result.message


def test_off_by_one_leaves_c():
    result = check("ex01", off_by_one)
    assert not result.passed and "is outside C" in result.message


def test_wrong_block_dim_and_missing_offset_compute_an_element_twice():
    result = check("ex01", no_block_offset)
    assert not result.passed and "two threads compute the same element" in result.message
    result = check("ex01", wrong_block_dim)
    assert not result.passed
    assert result.first_failure["input"]["block_dim"][0] != result.first_failure["input"]["block_dim"][1]
