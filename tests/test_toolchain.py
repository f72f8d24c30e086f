"""toolchain: the driver's CUDA against the installed wheels', and the one command that fixes a mismatch."""
import pytest

from hgemm_course.library import toolchain
from hgemm_course.library.toolchain import advice, cupy_package, driver_cuda, wheels_cuda_major

CU13 = {"cupy-cuda13x": "14.2.0", "nvidia-cuda-nvrtc": "13.5.37", "cuda-bindings": "13.5.0"}
CU12 = {"cupy-cuda12x": "14.2.0", "nvidia-cuda-nvrtc-cu12": "12.9.86", "cuda-bindings": "12.9.10"}
DEV_ONLY = {"cuda-bindings": "13.5.0"}       # `.[dev]` alone: numba-cuda brings cuda-bindings, nothing else


@pytest.mark.parametrize("text, expected", [
    ("13.0", (13, 0)), ("12.4", (12, 4)), (" 12.8\n", (12, 8)), ("12.4.1", (12, 4)),
    (None, None), ("", None), ("13", None), ("n/a", None),
])
def test_driver_cuda_reads_the_version_probe_gpu_gives(text, expected):
    assert driver_cuda(text) == expected


def test_wheels_major_of_each_set():
    assert wheels_cuda_major(CU13, nvrtc=(13, 5)) == 13
    assert wheels_cuda_major(CU12, nvrtc=(12, 9)) == 12
    assert wheels_cuda_major(CU12, nvrtc=None) == 12            # the NVRTC wheel counts even where it does not load
    assert cupy_package(CU13) == "cupy-cuda13x" and cupy_package(CU12) == "cupy-cuda12x"


def test_no_set_installed_is_none_whatever_cuda_bindings_numba_cuda_brought():
    assert wheels_cuda_major(DEV_ONLY, nvrtc=None) is None and cupy_package(DEV_ONLY) is None
    assert wheels_cuda_major({}, nvrtc=None) is None


def test_a_mixed_set_needs_its_newest_major():
    assert wheels_cuda_major({**CU12, "cuda-bindings": "13.0.0"}, nvrtc=(12, 9)) == 13
    assert wheels_cuda_major(CU12, nvrtc=(13, 0)) == 13         # a CUDA 13 NVRTC found elsewhere (CUDA_HOME)


def test_wheels_that_fit_the_driver_need_no_advice():
    assert advice((13, 0), 13) is None
    assert advice((12, 4), 12) is None
    assert advice((13, 1), 12) is None                          # a newer driver runs the older wheels
    assert advice(None, 13) is None and advice(None, 12) is None    # no driver: NVRTC compiles anyway


def test_cuda13_wheels_on_a_cuda12_driver_name_the_cu12_extra_and_the_driver_update():
    text = advice((12, 4), 13)
    assert text == ('the driver supports CUDA 12.4 but the installed wheels are CUDA 13: '
                    '`pip install -e ".[cu12,dev]"` in a fresh venv (or update the driver to 580 or newer)')


def test_no_cuda_set_names_the_extra_for_the_driver():
    assert '".[cu12,dev]"' in advice((12, 4), None) and "cu13" not in advice((12, 4), None)
    assert '".[cu13,dev]"' in advice((13, 0), None) and "cu12" not in advice((13, 0), None)
    no_driver = advice(None, None)
    assert "CuPy is missing" in no_driver and '".[cu13,dev]"' in no_driver and '".[cu12,dev]"' in no_driver


def test_a_driver_older_than_cuda12_needs_an_update():
    text = advice((11, 8), 12)
    assert "CUDA 11.8" in text and "525" in text and "pip install" not in text
    assert "525" in advice((11, 8), None)


def test_every_advice_is_one_sentence():
    for driver in ((11, 8), (12, 4), (13, 0), None):
        for wheels in (None, 12, 13):
            text = advice(driver, wheels)
            assert text is None or (text.count("\n") == 0 and not text.endswith("."))


def test_doctor_names_the_fix_for_this_machines_driver(monkeypatch):
    import hgemm_course.library.device as device

    monkeypatch.setattr(device, "probe_gpu", lambda: (None, "no GPU", "12.4"))
    monkeypatch.setattr(toolchain, "installed_versions", lambda names=toolchain.WHEELS: dict(CU13))
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: (13, 5))
    report = device.machine_report()
    assert report.wheels_cuda == 13
    assert any("`pip install -e \".[cu12,dev]\"`" in w for w in report.warnings)
    assert "CUDA wheels      CUDA 13" in device.format_report(report)
    monkeypatch.setattr(toolchain, "installed_versions", lambda names=toolchain.WHEELS: dict(DEV_ONLY))
    assert any("CuPy is missing" in w for w in device.machine_report().warnings)


def test_this_machine_reads_without_error():
    major = wheels_cuda_major()
    assert major is None or major >= 11
    assert toolchain.nvrtc_version() is None or len(toolchain.nvrtc_version()) == 2
