"""Rungs 01-02: compiled for sm_90 by the real Numba CUDA compiler, and run by its simulator."""
import os
import subprocess
import sys
import textwrap

import pytest

from hgemm_course.library import device
from hgemm_course.measurement.verification import verify


def test_numba_kernels_compile_to_sm90_ptx():
    # in a child process: this one may have the simulator switched on
    code = textwrap.dedent("""
        from numba import cuda
        from numba.core import types
        from hgemm_course.library.ladder.k01_naive import naive_gemm
        from hgemm_course.library.ladder.k02_tiled import tiled_gemm, BM, BK, BN
        sig = (types.float16[:, ::1],) * 3
        for k in (naive_gemm, tiled_gemm):
            ptx, _ = cuda.compile_ptx(k.py_func, sig, cc=(9, 0))
            print(k.__name__, ".target sm_90" in ptx, "cvt.f32.f16" in ptx, "bar.sync" in ptx, ".shared" in ptx)
    """)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.strip().splitlines())
    assert lines["naive_gemm"] == "True True False False"      # no shared memory, no barrier
    assert lines["tiled_gemm"] == "True True True True"        # staged tiles behind __syncthreads


@pytest.mark.parametrize("shape", [(1, 1, 1), (64, 64, 16), (70, 3, 129)])
def test_tiles_and_tails_under_the_simulator(shape):
    if not device.cudasim_enabled():
        pytest.skip("the simulator is off (a GPU is present)")
    for rung in ("01", "02"):
        assert verify(rung, *shape).passed


@pytest.mark.gpu
@pytest.mark.parametrize("rung", ["01", "02"])
@pytest.mark.parametrize("shape", [(128, 128, 128), (1000, 1000, 1024), (257, 129, 64), (2048, 512, 1000)])
def test_numba_rungs_on_the_gpu(rung, shape):
    result = verify(rung, *shape)
    assert result.passed, result.summary()
