"""The wheel carries what the package reads at run time: kernel sources, PTX snippets, recorded results."""
import subprocess
import sys
import zipfile

import pytest


@pytest.mark.slow
def test_wheel_contains_kernels_snippets_and_results(tmp_path):
    from hgemm_course.paths import PTX_SNIPPETS_DIR, REPO_ROOT

    if REPO_ROOT is None:
        pytest.skip("installed from a wheel: nothing to build")
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO_ROOT)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("hgemm_course-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for header in PTX_SNIPPETS_DIR.glob("*.cuh"):
        assert f"hgemm_course/ptx_snippets/{header.name}" in names
    for kernel in (REPO_ROOT / "hgemm_course" / "kernels").glob("k*.cu"):
        assert f"hgemm_course/kernels/{kernel.name}" in names
    for result in (REPO_ROOT / "results").glob("*.json"):
        assert f"hgemm_course/results/{result.name}" in names
    assert "hgemm_course/ladder/k01_naive.py" in names
    assert any(n.endswith("entry_points.txt") for n in names)
