"""Rung 01: one thread per output element, in Numba CUDA (the kernel is k01_naive.py).

Every thread reads a whole row of A and a whole column of B from global memory:
2*K loads for 2*K flops. The warp-wide loads are coalesced, but nothing is reused,
which is why this rung runs at about a percent of cuBLAS.
"""
from __future__ import annotations

from .. import cta_clock
from . import Rung, numba_stream
from .nvrtc_kernel import cdiv


def launch(a, b, c) -> None:
    from .k01_naive import BLOCK_X, BLOCK_Y, naive_gemm, naive_gemm_body

    M, N = c.shape
    cta_clock.launch_numba(naive_gemm, naive_gemm_body, (cdiv(N, BLOCK_X), cdiv(M, BLOCK_Y)), (BLOCK_X, BLOCK_Y),
                           numba_stream(c), a, b, c)


RUNG = Rung(
    id="01", slug="naive", backend="numba", cudasim=True, launch=launch, source="k01_naive.py",
    title="Naive: one thread per output (Numba CUDA)",
    idea="one thread per element of C; threadIdx.x along a row of C so warps coalesce",
    max_bench_size=4096,
)
