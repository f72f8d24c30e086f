"""Repository-wide pytest setup (tests/ and, through nbval, chapters/).

Without a GPU, the Numba CUDA simulator is switched on here, before anything
imports Numba, so rungs 01-02 run on the CPU; tests marked ``gpu`` are skipped.
"""
import os

import matplotlib
import pytest

from hgemm_course.library.device import GpuInfo, has_gpu

matplotlib.use("Agg")
HAS_GPU = has_gpu()
if not HAS_GPU:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (on a machine with one, `pytest -m gpu tests` runs these)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# The GPUs a learner brings, as their drivers describe them, for tests that fake one at the driver probe
# (hgemm_course.library.device.probe_gpu): tests/test_targets.py, test_chapter_targets.py, test_check_targets.py.
KIB = 1024
FAKE_GPUS = {
    "A100": GpuInfo("NVIDIA A100-SXM4-40GB", (8, 0), 108, 40 * 2**20, 164 * KIB, 163 * KIB, 65536, 1410000,
                    40 * 2**30, 2048),
    "RTX 4090": GpuInfo("NVIDIA GeForce RTX 4090", (8, 9), 128, 72 * 2**20, 100 * KIB, 99 * KIB, 65536, 2520000,
                        24 * 2**30, 1536),
    "RTX 5080": GpuInfo("NVIDIA GeForce RTX 5080", (12, 0), 84, 64 * 2**20, 100 * KIB, 99 * KIB, 65536, 2617000,
                        16 * 2**30, 1536),
    "B200": GpuInfo("NVIDIA B200", (10, 0), 148, 126 * 2**20, 228 * KIB, 227 * KIB, 65536, 1965000, 180 * 2**30, 2048),
    "T4": GpuInfo("Tesla T4", (7, 5), 40, 4 * 2**20, 64 * KIB, 64 * KIB, 65536, 1590000, 16 * 2**30, 1024),
}
