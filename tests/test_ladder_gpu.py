"""Rungs 03-07 on the GPU: every rung right on random inputs (NaN-poisoned C, relative
Frobenius error against FP32) at square, non-square and tail sizes."""
from __future__ import annotations

from importlib import import_module

import pytest

from hgemm_course.measurement import verification
from hgemm_course.library.ladder import get

MMA_LADDER = ("03", "04", "05", "06", "07")
SHAPES = [(128, 128, 128), (1024, 1024, 1024), (4096, 4096, 4096), (4096, 2048, 1024),
          (8192, 128, 4096), (1000, 1000, 1024), (257, 136, 64), (200, 8, 8)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("rid", MMA_LADDER)
def test_rung_is_right(rid, shape):
    result = verification.verify(rid, *shape)
    result.raise_if_failed()
    assert result.rel_fro_err < 1e-3


@pytest.mark.gpu
@pytest.mark.parametrize("rid", ("05", "06"))
def test_tma_swizzle_equals_the_software_swizzle(rid):
    """With the same tiles, rungs 05, 06 and 07 add the same products in the same order, so their
    outputs agree to the bit: TMA's SWIZZLE_128B placed every chunk where swizzle_128b says."""
    import cupy

    tiles = import_module(get(rid).launch.__module__).TILES
    tma = import_module(get("07").launch.__module__)
    a, b, _ = verification.random_inputs(1000, 1024, 1024, seed=5, xp=cupy)
    c_soft = cupy.full((1000, 1024), cupy.nan, dtype=cupy.float16)
    c_tma = cupy.full((1000, 1024), cupy.nan, dtype=cupy.float16)
    get(rid).launch(a, b, c_soft)
    tma.launch(a, b, c_tma, tiles=tiles)
    assert bool((c_soft.view(cupy.uint16) == c_tma.view(cupy.uint16)).all())


@pytest.mark.parametrize("rid", MMA_LADDER)
def test_sizes_the_rung_cannot_do_are_refused_with_the_fix(rid):
    with pytest.raises(ValueError, match="N=129 is not a multiple of 8"):
        get(rid).check_shape(257, 129, 64)
    with pytest.raises(ValueError, match="K=1000 is not a multiple of 8|K=1001 is not a multiple of 8"):
        get(rid).check_shape(256, 256, 1001)
