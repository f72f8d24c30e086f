"""Where an NVIDIA GPU is present a worker runs without Landlock (CUDA does not start under it), and the checker
says that this protection is off."""
from hgemm_course.check import confine


def test_with_a_gpu_a_worker_gets_no_landlock_and_the_checker_names_it(monkeypatch):
    installed = []
    monkeypatch.setattr(confine, "gpu_present", lambda: True)
    monkeypatch.setattr(confine, "_install_landlock", lambda writable: installed.append(writable) or True)
    monkeypatch.setattr(confine, "_prctl", lambda *args: 0)
    monkeypatch.setattr(confine, "_install_seccomp", lambda: True)
    monkeypatch.setattr(confine, "_drop_capabilities", lambda: True)
    assert confine.confine(["/work"])["landlock"] is False and installed == []
    assert any(line.startswith("Landlock (off where there is an NVIDIA GPU") for line in confine.missing())


def test_without_a_gpu_a_worker_gets_landlock(monkeypatch):
    installed = []
    monkeypatch.setattr(confine, "gpu_present", lambda: False)
    monkeypatch.setattr(confine, "_install_landlock", lambda writable: installed.append(writable) or True)
    monkeypatch.setattr(confine, "_prctl", lambda *args: 0)
    monkeypatch.setattr(confine, "_install_seccomp", lambda: True)
    monkeypatch.setattr(confine, "_drop_capabilities", lambda: True)
    assert confine.confine(["/work"])["landlock"] is True and installed == [["/work", "/dev"]]
