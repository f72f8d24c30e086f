"""The wheel carries what the package reads at run time: kernel sources, PTX snippets, recorded results."""
import subprocess
import sys
import zipfile

import pytest


@pytest.mark.slow
def test_wheel_contains_kernels_snippets_and_results(tmp_path):
    from hgemm_course.library.paths import PTX_SNIPPETS_DIR, REPO_ROOT

    if REPO_ROOT is None:
        pytest.skip("installed from a wheel: nothing to build")
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO_ROOT)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("hgemm_course-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for header in PTX_SNIPPETS_DIR.glob("*.cuh"):
        assert f"hgemm_course/ptx_snippets/{header.name}" in names
    for kernel in (REPO_ROOT / "hgemm_course" / "library" / "kernels").glob("k*.cu"):
        assert f"hgemm_course/library/kernels/{kernel.name}" in names
    for result in (REPO_ROOT / "results").glob("*.json"):
        assert f"hgemm_course/results/{result.name}" in names
    assert "hgemm_course/library/ladder/k01_naive.py" in names
    assert "hgemm_course/py.typed" in names and any(n.endswith("licenses/LICENSE") for n in names)
    assert any(n.endswith("entry_points.txt") for n in names)


@pytest.mark.slow
def test_kernels_compile_from_an_installed_wheel(tmp_path):
    """Installed from the wheel (no checkout beside it), the package still finds its snippets and kernels."""
    from hgemm_course.library.paths import REPO_ROOT

    if REPO_ROOT is None:
        pytest.skip("installed from a wheel already")
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO_ROOT)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = wheels.glob("hgemm_course-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=600)
    code = ("import hgemm_course, hgemm_course.library.paths as p; from hgemm_course.library.ladder import get; "
            "from hgemm_course.library.build import compile_cuda; r = get('07'); "
            "m = compile_cuda(r.source, name_expressions=r.name_expressions); "
            "print(hgemm_course.__file__, p.REPO_ROOT, p.PTX_SNIPPETS_DIR, m.resources_of(r.name_expressions[0]).spills)")
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    module_file, repo_root, snippets, spills = out.stdout.split()
    assert module_file.startswith(str(target)) and repo_root == "None"
    assert snippets == str(target / "hgemm_course" / "ptx_snippets") and spills == "0"
