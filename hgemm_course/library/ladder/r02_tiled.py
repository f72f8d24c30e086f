"""Rung 02: shared-memory tiles and 2-D register blocking, in Numba CUDA (the kernel is k02_tiled.py).

A CTA stages each k-slice of A and B in shared memory once for all its threads,
and each thread accumulates a 4x4 block of C in registers, so one shared-memory
load feeds 4 multiply-adds. Still plain FP32 arithmetic: no tensor cores yet.
"""
from __future__ import annotations

from .. import cta_clock
from . import Rung, numba_stream
from .nvrtc_kernel import cdiv


def launch(a, b, c) -> None:
    from .k02_tiled import BM, BN, THREADS_X, THREADS_Y, tiled_gemm, tiled_gemm_body

    M, N = c.shape
    cta_clock.launch_numba(tiled_gemm, tiled_gemm_body, (cdiv(N, BN), cdiv(M, BM)), (THREADS_X, THREADS_Y),
                           numba_stream(c), a, b, c)


RUNG = Rung(
    id="02", slug="tiled", backend="numba", cudasim=True, launch=launch, source="k02_tiled.py",
    title="Tiled: shared-memory tiles + 4x4 register blocking (Numba CUDA)",
    idea="stage BMxBK and BKxBN slices in shared memory; each thread accumulates a 4x4 block in registers",
)
