"""CTA orders, against slow twins written from the kernels' and Triton's decode code."""
import numpy as np
import pytest

from hgemm_course.sim.raster import cta_order, launch_index_grid


def slow_supertile(grid_m, grid_n, super_m, super_n):
    supers_n = -(-grid_n // super_n)
    total = -(-grid_m // super_m) * super_m * supers_n * super_n
    out = []
    for cta in range(total):
        sb, inner = divmod(cta, super_m * super_n)
        bid_m = (sb // supers_n) * super_m + inner // super_n
        bid_n = (sb % supers_n) * super_n + inner % super_n
        out.append((bid_m, bid_n) if bid_m < grid_m and bid_n < grid_n else (-1, -1))
    return out


def slow_grouped(grid_m, grid_n, group_m):
    out = []
    for pid in range(grid_m * grid_n):
        num_pid_in_group = group_m * grid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * group_m
        group_size_m = min(grid_m - first_pid_m, group_m)
        out.append((first_pid_m + ((pid % num_pid_in_group) % group_size_m), (pid % num_pid_in_group) // group_size_m))
    return out


def is_permutation_of_grid(order, grid_m, grid_n):
    valid = order[order[:, 0] >= 0]
    return sorted(map(tuple, valid.tolist())) == [(m, n) for m in range(grid_m) for n in range(grid_n)]


@pytest.mark.parametrize("grid_m, grid_n", [(1, 1), (3, 5), (8, 8), (7, 12)])
def test_row_and_col_major(grid_m, grid_n):
    rm = cta_order("row_major", grid_m, grid_n)
    cm = cta_order("col_major", grid_m, grid_n)
    assert rm.tolist() == [[m, n] for m in range(grid_m) for n in range(grid_n)]
    assert cm.tolist() == [[m, n] for n in range(grid_n) for m in range(grid_m)]


def test_supertile_and_grouped_agree_with_slow_twins():
    rng = np.random.default_rng(0)
    for _ in range(40):
        grid_m, grid_n, a, b = (int(x) for x in rng.integers(1, 13, 4))
        st = cta_order("supertile", grid_m, grid_n, super_m=a, super_n=b)
        assert [tuple(r) for r in st.tolist()] == slow_supertile(grid_m, grid_n, a, b)
        assert is_permutation_of_grid(st, grid_m, grid_n)
        gr = cta_order("grouped", grid_m, grid_n, group_m=a)
        assert [tuple(r) for r in gr.tolist()] == slow_grouped(grid_m, grid_n, a)


@pytest.mark.parametrize("grid_m, grid_n", [(1, 1), (4, 4), (16, 16), (5, 9), (13, 3)])
def test_hilbert_visits_every_tile_and_steps_to_neighbours(grid_m, grid_n):
    order = cta_order("hilbert", grid_m, grid_n)
    assert is_permutation_of_grid(order, grid_m, grid_n)
    if grid_m == grid_n and grid_m & (grid_m - 1) == 0:
        assert (np.abs(np.diff(order, axis=0)).sum(axis=1) == 1).all()


def test_launch_index_grid_inverts_the_order():
    order = cta_order("supertile", 5, 7, super_m=2, super_n=4)
    index = launch_index_grid(order, 5, 7)
    for i, (m, n) in enumerate(order.tolist()):
        if m >= 0:
            assert index[m, n] == i


def test_errors():
    with pytest.raises(ValueError, match="takes super_m, super_n"):
        cta_order("supertile", 4, 4, super_m=2)
    with pytest.raises(ValueError, match="not one of"):
        cta_order("zigzag", 4, 4)
    with pytest.raises(ValueError, match="empty"):
        cta_order("row_major", 0, 4)
