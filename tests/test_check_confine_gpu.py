"""Where an NVIDIA GPU is present a worker runs without Landlock (CUDA does not start under it), and the checker
says that this protection is off."""
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
def test_a_worker_gets_landlock_only_where_there_is_no_gpu(monkeypatch, landlock_asked, gpu):
    monkeypatch.setattr(confine, "gpu_present", lambda: gpu)
    assert confine.confine(["/work"])["landlock"] is not gpu
    assert landlock_asked == ([] if gpu else [["/work", "/dev"]])
    named = any(line.startswith("Landlock (off where there is an NVIDIA GPU") for line in confine.missing())
    assert named is gpu
