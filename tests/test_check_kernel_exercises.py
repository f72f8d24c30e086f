"""The kernel exercises as a set: names, the CLI, and the host model's plumbing."""
from pathlib import Path

import pytest

from hgemm_course.check import KERNEL_EXERCISES, resolve
from hgemm_course.check.host_model import ModelUnavailable, run
from hgemm_course.course.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("given, name", [
    ("05", "ex05_swizzle"), ("09", "ex09_wgmma_desc"), ("10", "ex10_ring_parity"), ("ex11", "ex11_persistent"),
    ("ex09_wgmma_loop", "ex09_wgmma_loop"), ("wgmma_loop", "ex09_wgmma_loop"), ("producer", "ex10_producer"),
    ("ex10_producer.cu", "ex10_producer"), ("tile_loop", "ex11_tile_loop"), ("mbarrier", "ex07_mbarrier"),
])
def test_a_number_means_the_python_exercise_and_a_name_the_kernel_one(given, name):
    assert resolve(given) == name


def test_the_list_shows_the_kernel_exercises(capsys):
    assert main(["check", "--list"]) == 0
    shown = capsys.readouterr().out
    for name in KERNEL_EXERCISES:
        assert name in shown


@pytest.fixture
def no_gpu(monkeypatch):
    from hgemm_course.library import target

    monkeypatch.setattr("hgemm_course.library.device.probe_gpu", lambda: (None, "the NVIDIA driver sees no GPU", None))
    target._target_of.cache_clear()


@pytest.mark.parametrize("name", ["ex09_wgmma_loop", "ex10_producer", "ex11_tile_loop"])
def test_the_cli_checks_a_kernel_exercise_on_the_cpu(name, capsys, no_gpu):
    """Without a GPU the solution's CPU part passes, and the verdict says the kernel was not run (exit code 2)."""
    assert main(["check", name, "--path", str(ROOT / "solutions" / f"{name}.cu")]) == 2
    headline = capsys.readouterr().out.splitlines()[1]
    assert headline == (f"{name}: could not check: the CPU part passed, but the kernel was not run: there is no GPU "
                        "here: the NVIDIA driver sees no GPU")
    assert main(["check", name]) == 1                         # the untouched exercise
    assert "Hint:" in capsys.readouterr().out


def test_a_region_the_host_cannot_build_leaves_it_to_the_gpu():
    with pytest.raises(ModelUnavailable, match="could not build"):
        run("int main() { return undefined_name; }\n", "mine.cu")


def test_without_gpp_the_model_is_skipped(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(ModelUnavailable, match="g\\+\\+ is not installed"):
        run("int main() { return 0; }\n", "mine.cu")


@pytest.mark.parametrize("name", ["ex05_swizzle_kernel", "ex07_mbarrier", "ex09_wgmma_loop", "ex10_producer",
                                  "ex11_tile_loop"])
def test_without_gpp_a_solution_passes_the_cpu_part_with_a_note_and_the_exercise_still_fails(name, monkeypatch):
    from hgemm_course.check import check

    monkeypatch.setattr("shutil.which", lambda program: None)
    result = check(name, ROOT / "solutions" / f"{name}.cu", gpu=False)
    assert result.verdict == "could not check" and "g++ is not installed" in result.message
    assert check(name, gpu=False).verdict == "FAIL"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(KERNEL_EXERCISES))
def test_on_the_gpu_the_untouched_exercise_fails_with_a_hint_and_the_solution_passes(name):
    """With the GPU run switched on: the course's untouched copy is refused with a hint, not a traceback, and
    the solution passes the whole check, the kernel run and C's comparison included."""
    from hgemm_course.check import check

    untouched = check(name, ROOT / "exercises" / f"{name}.cu", gpu=True)
    assert not untouched.passed and "Hint" in untouched.message and "Traceback" not in untouched.message
    solved = check(name, ROOT / "solutions" / f"{name}.cu", gpu=True)
    assert solved.passed, solved.message
