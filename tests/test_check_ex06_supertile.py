"""ex06_supertile: wrong decodes are caught, with the decode worked through."""
from hgemm_course.check import check


def _ceil(a, b):
    return -(-a // b)


def m_fastest_inside(block_id, grid_m, grid_n, super_m, super_n):
    sb, inner = divmod(block_id, super_m * super_n)
    sb_m, sb_n = divmod(sb, _ceil(grid_n, super_n))
    m, n = sb_m * super_m + inner % super_m, sb_n * super_n + inner // super_m
    return (m, n) if m < grid_m and n < grid_n else (-1, -1)


def m_fastest_super_tiles(block_id, grid_m, grid_n, super_m, super_n):
    sb, inner = divmod(block_id, super_m * super_n)
    sb_n, sb_m = divmod(sb, _ceil(grid_m, super_m))
    m, n = sb_m * super_m + inner // super_n, sb_n * super_n + inner % super_n
    return (m, n) if m < grid_m and n < grid_n else (-1, -1)


def no_edge_check(block_id, grid_m, grid_n, super_m, super_n):
    sb, inner = divmod(block_id, super_m * super_n)
    sb_m, sb_n = divmod(sb, _ceil(grid_n, super_n))
    return sb_m * super_m + inner // super_n, sb_n * super_n + inner % super_n


def floor_super_tiles(block_id, grid_m, grid_n, super_m, super_n):
    sb, inner = divmod(block_id, super_m * super_n)
    sb_m, sb_n = divmod(sb, grid_n // super_n)
    m, n = sb_m * super_m + inner // super_n, sb_n * super_n + inner % super_n
    return (m, n) if m < grid_m and n < grid_n else (-1, -1)


def test_m_fastest_inside_a_super_tile():
    result = check("ex06", m_fastest_inside)
    assert not result.passed and "your block 1 sits below block 0" in result.message


def test_m_fastest_super_tiles():
    result = check("ex06", m_fastest_super_tiles)
    assert not result.passed and "super tiles also go n-fastest" in result.message
    assert "Block 4 is number 0 (= 4 % 4) of super tile 1" in result.message


def test_edge_blocks_must_exit():
    result = check("ex06", no_edge_check)
    assert not result.passed and result.first_failure["expected"] == (-1, -1)
    assert "return (-1, -1) and the block exits" in result.message


def test_floor_instead_of_ceil():
    result = check("ex06", floor_super_tiles)
    assert not result.passed
    assert result.first_failure["input"]["grid_n"] % result.first_failure["input"]["super_n"] != 0


def test_picture_of_a_wrong_order(tmp_path):
    result = check("ex06", m_fastest_inside, draw=True, figure_dir=tmp_path)
    assert result.figure is not None and result.figure.is_file()
