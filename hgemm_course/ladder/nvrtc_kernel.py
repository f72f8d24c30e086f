"""The launcher shared by the NVRTC rungs: instantiate a kernel template, compile once, launch with CuPy.

A rung module owns its tile constants: it builds a :class:`TemplateKernel` with them,
checks them with sentences a learner can act on, and hands ``launch`` to its ``Rung``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..build import DEFAULT_ARCH, CompiledModule, compile_cuda


@dataclass(frozen=True)
class TemplateKernel:
    """``source`` defines ``template <int...> __global__ void kernel(A, B, C, M, N, K, ...)``."""

    source: str                          # file name under hgemm_course/kernels/
    kernel: str                          # template name, e.g. "k03_wmma"
    template_args: tuple[int, ...]       # in the template's order
    threads: int                         # threads per CTA
    smem_bytes: int                      # dynamic shared memory per CTA
    grid: Callable[[int, int], tuple]    # (M, N) -> grid dims
    arch: str = DEFAULT_ARCH

    @property
    def name_expression(self) -> str:
        return f"{self.kernel}<{', '.join(str(a) for a in self.template_args)}>"

    def compile(self) -> CompiledModule:
        return compile_cuda(self.source, name_expressions=(self.name_expression,), arch=self.arch)

    def function(self):
        fn = self.compile().function(self.name_expression)
        if self.smem_bytes > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = self.smem_bytes
        return fn

    def launch(self, a, b, c, *extra_args) -> None:
        """C = A @ B for row-major fp16 CuPy arrays; ``extra_args`` follow M, N, K (tensor maps, ...)."""
        M, K = a.shape
        N = b.shape[1]
        self.function()(self.grid(M, N), (self.threads,),
                        (a, b, c, np.int32(M), np.int32(N), np.int32(K), *extra_args),
                        shared_mem=self.smem_bytes)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
