"""Repository-wide pytest setup (tests/ and, through nbval, chapters/).

Without a GPU, the Numba CUDA simulator is switched on here, before anything
imports Numba, so rungs 01-02 run on the CPU; tests marked ``gpu`` are skipped.
"""
import os

import matplotlib
import pytest

from hgemm_course.device import has_gpu

matplotlib.use("Agg")
HAS_GPU = has_gpu()
if not HAS_GPU:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run `pytest -m gpu` on the H200 via scripts/h200.sh)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
