import subprocess
import sys

from hgemm_course.library import device
from conftest import HAS_GPU


def test_known_bad_numba_cuda_numpy_combination_is_flagged_with_its_fix():
    warnings = device.known_bad_combinations({"numba-cuda": "0.30.4", "numpy": "2.5.2"})
    assert len(warnings) == 1
    assert "row_stack" in warnings[0] and "pip install 'numpy<2.5'" in warnings[0]
    assert device.known_bad_combinations({"numba-cuda": "0.30.4", "numpy": "2.4.6"}) == []
    assert device.known_bad_combinations({"numba-cuda": "0.31.0", "numpy": "2.5.2"}) == []


def test_report_lists_toolchain_and_says_what_runs():
    report = device.machine_report()
    assert report.nvrtc_version is not None
    assert set(report.packages) >= {"numpy", "numba", "numba-cuda", "cupy-cuda13x"}
    text = device.format_report(report)
    assert "NVRTC" in text and "Numba CUDA sim." in text
    if not HAS_GPU:
        assert report.gpu is None and report.no_gpu_reason
        assert "Needs a GPU" in text


def test_probing_the_gpu_does_not_import_numba():
    # NUMBA_ENABLE_CUDASIM is read when numba is first imported: the probe must leave that choice open
    code = ("import sys, hgemm_course.library.device as d; d.machine_report(); import hgemm_course; "
            "hgemm_course.rungs(); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_require_gpu_explains_what_still_runs(monkeypatch):
    monkeypatch.setattr(device, "probe_gpu", lambda: (None, "no NVIDIA driver on this machine", None))
    try:
        device.require_gpu("Timing rung 05")
    except RuntimeError as exc:
        assert "Timing rung 05 needs an NVIDIA GPU" in str(exc)
        assert "NUMBA_ENABLE_CUDASIM=1" in str(exc)
    else:
        raise AssertionError("require_gpu did not raise")
