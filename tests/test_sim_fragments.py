"""mma.m16n8k16 fragments and the ldmatrix emulator, against a literal reading of the PTX ISA tables."""
import numpy as np
import pytest

from hgemm_course.sim import fragments as fr
from hgemm_course.sim.swizzle import tile_byte_offset


def slow_fragment_tables():
    """The PTX ISA tables, element by element: (row, col) of a_i, (k, n) of b_i, (row, col) of c_i per lane."""
    a, b, c = {}, {}, {}
    for lane in range(32):
        group, tig = lane // 4, lane % 4
        for i in range(8):
            row = group if i in (0, 1, 4, 5) else group + 8
            col = tig * 2 + (i & 1) if i < 4 else tig * 2 + (i & 1) + 8
            a[lane, i] = (row, col)
        for i in range(4):
            b[lane, i] = (tig * 2 + (i & 1) if i < 2 else tig * 2 + (i & 1) + 8, group)
            c[lane, i] = (group if i < 2 else group + 8, tig * 2 + (i & 1))
    return a, b, c


def slow_ldmatrix(smem_bytes, addrs, num, trans):
    halfs = np.frombuffer(smem_bytes, dtype=np.float16)
    out = np.zeros((32, num, 2), np.float16)
    for j in range(num):
        matrix = np.array([halfs[addrs[8 * j + r] // 2: addrs[8 * j + r] // 2 + 8] for r in range(8)])
        if trans:
            matrix = matrix.T
        for lane in range(32):
            out[lane, j] = matrix[lane // 4, 2 * (lane % 4): 2 * (lane % 4) + 2]
    return out


def test_fragment_coords_match_the_ptx_tables():
    a, b, c = slow_fragment_tables()
    for table, coords in ((a, fr.a_fragment_coords()), (b, fr.b_fragment_coords()), (c, fr.c_fragment_coords())):
        for (lane, i), where in table.items():
            assert tuple(coords[lane, i]) == where


@pytest.mark.parametrize("coords, shape, per_lane", [
    (fr.a_fragment_coords(), (16, 16), 8), (fr.b_fragment_coords(), (16, 8), 4), (fr.c_fragment_coords(), (16, 8), 4)])
def test_every_element_has_exactly_one_owner(coords, shape, per_lane):
    owner = fr.fragment_owner(coords, shape)
    assert (owner >= 0).all()
    assert np.bincount(owner.ravel(), minlength=32).tolist() == [per_lane] * 32


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_agrees_with_slow_twin(num, trans):
    rng = np.random.default_rng(num + 10 * trans)
    smem = rng.standard_normal(1024).astype(np.float16)
    addrs = 16 * rng.choice(2 * 1024 // 16, size=32, replace=False)
    got = fr.ldmatrix(smem, addrs, num, trans=trans)
    np.testing.assert_array_equal(got, slow_ldmatrix(smem.tobytes(), addrs, num, trans))


def test_ldmatrix_rejects_misaligned_rows():
    with pytest.raises(ValueError, match="lane 3 .*16-byte aligned"):
        fr.ldmatrix(np.zeros(256, np.float16), [0, 16, 32, 40] + [0] * 28, 4)


def test_mma_computes_a_times_b_plus_c():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d_regs = fr.mma_m16n8k16(fr.a_regs_from_matrix(a), fr.b_regs_from_matrix(b), fr.c_regs_from_matrix(c))
    np.testing.assert_allclose(fr.c_matrix_from_regs(d_regs), a.astype(np.float32) @ b.astype(np.float32) + c,
                               rtol=1e-6, atol=1e-5)


def test_reference_addresses():
    assert [fr.ldmatrix_x4_src_row_reference(lane) for lane in (0, 7, 8, 15, 16, 31)] == \
        [(0, 0), (7, 0), (8, 0), (15, 0), (0, 1), (15, 1)]
    with pytest.raises(ValueError):
        fr.ldmatrix_x4_src_row_reference(32)


@pytest.mark.parametrize("layout", ["linear", "padded", "swizzle128"])
def test_ldmatrix_then_mma_gives_a_at_b(layout):
    """A (16 x 16) sits in a 16 x 64-half tile, B (16 x 8) in a 16 x 64-half tile, both in ``layout``;
    ldmatrix.x4 with the reference addresses gives A's fragment, ldmatrix.x2.trans gives B's, mma gives A @ B."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    kw = {"layout": layout, "row_bytes": 128, "pad_bytes": 16, "tile_rows": 16}
    a_k0, b_n0 = 16, 24  # the fragments sit at column 16 (A) and 24 (B) of their tiles
    smem = np.zeros(2 * 16 * 72, np.float16)
    b_base = 16 * 72 * 2
    rows, cols = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    smem[tile_byte_offset(rows, 2 * (a_k0 + cols), **kw) // 2] = a
    rows, cols = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
    smem[(b_base + tile_byte_offset(rows, 2 * (b_n0 + cols), **kw)) // 2] = b

    a_addrs = [tile_byte_offset(row, 2 * a_k0 + 16 * chunk, **kw)
               for row, chunk in map(fr.ldmatrix_x4_src_row_reference, range(32))]
    a_regs = fr.ldmatrix(smem, a_addrs, 4)
    np.testing.assert_array_equal(a_regs, fr.a_regs_from_matrix(a))
    b_addrs = [b_base + tile_byte_offset(lane % 16, 2 * b_n0, **kw) for lane in range(32)]
    b_regs = fr.ldmatrix(smem, b_addrs, 2, trans=True)
    np.testing.assert_array_equal(b_regs, fr.b_regs_from_matrix(b))

    d = fr.c_matrix_from_regs(fr.mma_m16n8k16(a_regs, b_regs, np.zeros((32, 4), np.float32)))
    np.testing.assert_allclose(d, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-6, atol=1e-5)
