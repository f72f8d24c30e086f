"""Rung 09 on the GPU: right on random inputs (NaN-poisoned C, relative Frobenius error against
FP32) at square, non-square and tail sizes, with its tuning variants, and the descriptor that
the device builds equal to the host-side twin."""
from __future__ import annotations

import pytest

from hgemm_course import harness
from hgemm_course.build import compile_cuda
from hgemm_course.ladder import get, r09_wgmma
from hgemm_course.ladder.r09_wgmma import WgmmaTiles

SHAPES = [(128, 128, 128), (1000, 1000, 1024), (4096, 2048, 1024), (8192, 128, 4096), (257, 136, 64),
          (4096, 4096, 4096), (200, 8, 8)]
VARIANTS = [WgmmaTiles(128, 128, 64, 4), WgmmaTiles(128, 128, 64, 5), WgmmaTiles(64, 256, 64, 4)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rung_09_is_right(shape):
    result = harness.verify("09", *shape)
    result.raise_if_failed()
    assert result.rel_fro_err < 1e-3


@pytest.mark.gpu
@pytest.mark.parametrize("tiles", VARIANTS, ids=lambda t: f"{t.bm}x{t.bn}s{t.stages}")
@pytest.mark.parametrize("shape", [(1000, 1000, 1024), (257, 136, 64)], ids=lambda s: "x".join(map(str, s)))
def test_variants_are_right(tiles, shape):
    import cupy

    M, N, K = shape
    a, b, seed = harness.random_inputs(M, N, K, seed=11, xp=cupy)
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float16)
    r09_wgmma.launch(a, b, c, tiles=tiles)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    harness.compare(c, reference, K=K, rung="09", seed=seed).raise_if_failed()


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


def test_rung_09_refuses_sizes_with_the_fix():
    with pytest.raises(ValueError, match="K=1000 is not a multiple of 8|K=1001 is not a multiple of 8"):
        get("09").check_shape(256, 256, 1001)
