"""On a machine with an NVIDIA GPU a worker still runs under Landlock: its ruleset adds the worker's own
``/proc/self``, below which CUDA writes as it starts, and nothing else."""
import os
import subprocess
import sys
import textwrap

import pytest

from hgemm_course.check import confine


@pytest.fixture
def landlock_asked(monkeypatch):
    """The writable folders each Landlock ruleset was asked for; the kernel's own calls stubbed out."""
    asked = []
    monkeypatch.setattr(confine, "_install_landlock", lambda writable: asked.append(writable) or True)
    monkeypatch.setattr(confine, "_prctl", lambda *args: 0)
    monkeypatch.setattr(confine, "_install_seccomp", lambda: True)
    monkeypatch.setattr(confine, "_drop_capabilities", lambda: True)
    return asked


@pytest.mark.parametrize("gpu", [True, False])
def test_a_worker_may_write_its_own_proc_folder_and_all_of_dev_only_where_there_is_a_gpu(monkeypatch, landlock_asked, gpu):
    monkeypatch.setattr(confine, "gpu_present", lambda: gpu)
    monkeypatch.setattr(confine, "landlock_abi", lambda: 7)
    assert confine.confine(["/work"])["landlock"]
    (asked,) = landlock_asked
    assert asked[0] == "/work" and ("/proc/self" in asked) is gpu and ("/dev" in asked) is gpu
    assert ("/dev/null" in asked) is not gpu and not any(path.startswith("/dev/shm") for path in asked)
    said = [line for line in confine.missing() if line.startswith("Landlock")]
    assert said == ([] if not gpu else [next(line for line in said if "/dev/shm" in line)])


# A worker as the checker starts one: confined to its own folder, then CUDA through CuPy and the course's build,
# then a write outside its folder, which must be refused.
CONFINED_CUDA = textwrap.dedent("""
    import os, sys
    from hgemm_course.check import confine
    work = sys.argv[1]
    os.environ["CUPY_CACHE_DIR"] = os.path.join(work, "cupy")
    taken = confine.confine([work])
    import cupy
    from hgemm_course.library.build import compile_cuda
    x = cupy.arange(64, dtype=cupy.float32)
    cupy.RawKernel('extern "C" __global__ void inc(float* x) { x[threadIdx.x] += 1.f; }', "inc")((1,), (64,), (x,))
    compile_cuda('extern "C" __global__ void twice(float* x) { x[0] *= 2.f; }', arch="sm_90a")
    try:
        open(sys.argv[2], "w").close()
        outside = "written"
    except PermissionError:
        outside = "refused"
    print(taken["landlock"], float(x.sum()), outside)
""")


@pytest.mark.gpu
def test_cuda_starts_in_a_worker_under_landlock_and_the_worker_still_writes_nothing_outside(tmp_path):
    if confine.landlock_abi() == 0:
        pytest.skip("this kernel has no Landlock")
    work, outside = tmp_path / "work", tmp_path / "outside.txt"
    work.mkdir()
    run = subprocess.run([sys.executable, "-c", CONFINED_CUDA, str(work), str(outside)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "TMPDIR": str(work)})
    assert run.stdout.split() == ["True", str(float(sum(range(1, 65)))), "refused"], run.stdout + run.stderr
    assert not outside.exists()
