# Question: are gemm()'s padded-path copies (kernels/copy_corners.cu) and its kept launches clean under
# compute-sanitizer? Run as `compute-sanitizer --tool memcheck --report-api-errors no python3
# scripts/padded_memcheck.py` (needs a GPU): cuda.bindings asks the driver for entry points it lacks
# (cuGetProcAddress), which memcheck otherwise counts as errors (results/logs/padded_memcheck_h200_20261204T0231.txt:
# 34 such, no memory errors).
"""A few ragged shapes (N or K off a multiple of 8, tails of every tile, one row), each into the same out three
times (the second and third through the kept launches), on the default stream and on a stream of its own."""
import cupy
import numpy as np

import hgemm_course

SHAPES = ((77, 1001, 999), (5, 8, 3), (1, 7, 9), (130, 9, 4095), (1000, 264, 1001), (264, 1500, 264))

for stream in (cupy.cuda.Stream.null, cupy.cuda.Stream(non_blocking=True)):
    with stream:
        for M, N, K in SHAPES:
            a, b = cupy.ones((M, K), cupy.float16), cupy.ones((K, N), cupy.float16)
            out = cupy.empty((M, N), cupy.float16)
            for _ in range(3):
                hgemm_course.gemm(a, b, out=out)
            if not bool((out == np.float16(K)).all()):     # each element sums K ones, rounded to fp16
                raise SystemExit(f"{M}x{N}x{K}: C is not K everywhere")
    stream.synchronize()
print("padded_memcheck: every C right")
