"""Rungs 09 and 10 on the GPU: right on random inputs (NaN-poisoned C, relative Frobenius error
against FP32) at square, non-square and tail sizes, with their tuning variants, and the descriptor
that the device builds equal to the host-side twin."""
from __future__ import annotations

import pytest

from hgemm_course.measurement import verification
from hgemm_course.library.build import compile_cuda
from hgemm_course.library.ladder import get, r09_wgmma, r10_warp_specialized
from hgemm_course.library.ladder.r09_wgmma import WgmmaTiles
from hgemm_course.library.ladder.r10_warp_specialized import WarpSpecializedTiles

SHAPES = [(128, 128, 128), (1000, 1000, 1024), (4096, 2048, 1024), (8192, 128, 4096), (257, 136, 64),
          (4096, 4096, 4096), (200, 8, 8)]
VARIANTS = [(r09_wgmma, WgmmaTiles(128, 128, 64, 4)), (r09_wgmma, WgmmaTiles(128, 128, 64, 5)),
            (r09_wgmma, WgmmaTiles(64, 256, 64, 4)), (r09_wgmma, WgmmaTiles(64, 192, 64, 4)),
            (r10_warp_specialized, WarpSpecializedTiles(128, 256, 64, 3)),
            (r10_warp_specialized, WarpSpecializedTiles(256, 128, 64, 4)),
            (r10_warp_specialized, WarpSpecializedTiles(128, 128, 64, 6)),
            (r10_warp_specialized, WarpSpecializedTiles(128, 192, 64, 4))]


@pytest.mark.gpu
@pytest.mark.parametrize("rung", ["09", "10"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rung_is_right(rung, shape):
    result = verification.verify(rung, *shape)
    result.raise_if_failed()
    assert result.rel_fro_err < 1e-3


def variant_id(v) -> str:
    """r09 / r10 for a rung module, 128x256s4 for its tiles."""
    return v.__name__.split(".")[-1][:3] if hasattr(v, "__name__") else f"{v.bm}x{v.bn}s{v.stages}"


@pytest.mark.gpu
@pytest.mark.parametrize("module, tiles", VARIANTS, ids=variant_id)
@pytest.mark.parametrize("shape", [(1000, 1000, 1024), (257, 136, 64)], ids=lambda s: "x".join(map(str, s)))
def test_variants_are_right(module, tiles, shape):
    import cupy

    M, N, K = shape
    a, b, seed = verification.random_inputs(M, N, K, seed=11, xp=cupy)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    module.launch(a, b, c, tiles=tiles)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    verification.compare(c, reference, K=K, rung=module.RUNG.id, seed=seed).raise_if_failed()


@pytest.mark.gpu
def test_device_descriptor_equals_the_twin():
    import cupy
    import numpy as np

    cases = [(0x400, 8192, 1024), (0x8020, 16, 1024), (0x1A400, 16384, 1024)]
    src = ('#include "wgmma.cuh"\n'
           'extern "C" __global__ void descs(const unsigned* in, unsigned long long* out) {\n'
           '    const int i = threadIdx.x;\n'
           '    out[i] = wgmma_desc_128b(in[3 * i], in[3 * i + 1], in[3 * i + 2]);\n}\n')
    fn = compile_cuda(src).function("descs")
    flat = cupy.asarray(np.array(cases, dtype=np.uint32).ravel())
    out = cupy.zeros(len(cases), dtype=cupy.uint64)
    fn((1,), (len(cases),), (flat, out))
    assert out.get().tolist() == [r09_wgmma.smem_descriptor_128b(*c) for c in cases]


@pytest.mark.parametrize("rung", ["09", "10"])
def test_rungs_refuse_sizes_with_the_fix(rung):
    with pytest.raises(ValueError, match="K=1001 is not a multiple of 8"):
        get(rung).check_shape(256, 256, 1001)


# ================================================================== rung 11: persistent, TMA-store epilogue

SHAPES_11 = [(128, 256, 64), (257, 136, 64), (200, 8, 8), (1000, 1000, 1024), (8192, 128, 4096), (4096, 2048, 1024),
             (4096, 4096, 4096)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES_11, ids=lambda s: "x".join(map(str, s)))
def test_rung_11_is_right(shape):
    result = verification.verify("11", *shape)
    result.raise_if_failed()
    assert result.rel_fro_err < 1e-3


def launch_11_and_compare(shape, **kwargs):
    import cupy

    from hgemm_course.library.ladder import r11_persistent

    M, N, K = shape
    a, b, seed = verification.random_inputs(M, N, K, seed=13, xp=cupy)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    r11_persistent.launch(a, b, c, **kwargs)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    verification.compare(c, reference, K=K, rung="11", seed=seed).raise_if_failed()


@pytest.mark.gpu
@pytest.mark.parametrize("cluster_m", [1, 2])
@pytest.mark.parametrize("max_ctas", [1, 3, 7])
@pytest.mark.parametrize("shape", [(1000, 1000, 1024), (257, 136, 64), (2048, 1024, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_rung_11_few_ctas_walk_many_tiles(shape, max_ctas, cluster_m):
    """A small grid makes each CTA run its ring over many tiles: the k-slice counter and the parities
    carry over from tile to tile, and the C panel buffers are reused after each TMA store has read them.
    With clusters of 2 the grid rounds down to whole clusters (1 -> 2, 3 -> 2, 7 -> 6 CTAs)."""
    launch_11_and_compare(shape, max_ctas=max_ctas, cluster_m=cluster_m)


@pytest.mark.gpu
@pytest.mark.parametrize("cluster_m", [1, 2])
@pytest.mark.parametrize("shape", [(384, 512, 200), (257, 136, 72), (640, 256, 64), (4096, 4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_rung_11_with_and_without_clusters(shape, cluster_m):
    """Clusters of 2 CTAs sharing B by multicast, and none: odd tile-row counts (3 and 5 rows of 128: the
    last cluster's second CTA computes on zero-filled A and stores nothing), K not a multiple of 64."""
    launch_11_and_compare(shape, cluster_m=cluster_m)


@pytest.mark.gpu
@pytest.mark.parametrize("tiles", [WarpSpecializedTiles(256, 128, 64, 3), WarpSpecializedTiles(128, 128, 64, 4)],
                         ids=variant_id)
@pytest.mark.parametrize("shape", [(1000, 1000, 1024), (257, 136, 64)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("cluster_m", [1, 2])
def test_rung_11_variants_are_right(tiles, shape, cluster_m):
    launch_11_and_compare(shape, tiles=tiles, cluster_m=cluster_m)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1000, 1000, 1024), (257, 136, 64)], ids=lambda s: "x".join(map(str, s)))
def test_rung_11_and_12_with_three_b_panels_are_right(shape):
    """128x192 tiles (wgmma's n192): three 64-column panels of B, so no cluster pairs (they split B's panels)."""
    import cupy

    from hgemm_course.library.ladder import r12_streamk

    tiles = WarpSpecializedTiles(128, 192, 64, 4)
    launch_11_and_compare(shape, tiles=tiles, cluster_m=1)
    launch_11_and_compare(shape, tiles=tiles, cluster_m=1, max_ctas=3)
    M, N, K = shape
    a, b, seed = verification.random_inputs(M, N, K, seed=12, xp=cupy)
    for sk_waves in (0, 1):
        c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
        r12_streamk.launch(a, b, c, tiles=tiles, cluster_m=1, sk_waves=sk_waves)
        reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
        verification.compare(c, reference, K=K, rung="12", seed=seed).raise_if_failed()


@pytest.mark.gpu
@pytest.mark.parametrize("cluster_m", [1, 2])
@pytest.mark.parametrize("tiles", [WarpSpecializedTiles(64, 256, 64, 4), WarpSpecializedTiles(128, 128, 64, 5)],
                         ids=variant_id)
@pytest.mark.parametrize("shape", [(257, 136, 72), (1000, 1000, 1024), (2048, 1024, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_rung_11_with_one_consumer(tiles, shape, cluster_m):
    """Seed 001's 1p1c: one consumer warpgroup owns the tile (its C map's boxes are bm rows); also with a
    small grid, so that the ring and the panel buffers run on across many tiles."""
    launch_11_and_compare(shape, tiles=tiles, cluster_m=cluster_m, consumers=1)
    launch_11_and_compare(shape, tiles=tiles, cluster_m=cluster_m, consumers=1, max_ctas=3)
