"""Kernel exercises checked for the GPU present: compiled for its architecture with the rung's instantiations
sized for it, and "could not check" (exit code 2), never PASS, where no GPU here runs the rung.

The GPU is faked: ``device.probe_gpu`` answers for an RTX 4090, an RTX 5080, a T4 or no GPU, and the GPU
run (a child process) is replaced, so nothing is launched."""
import importlib
from pathlib import Path

import numpy as np
import pytest

from hgemm_course.library import device, target
from hgemm_course.check import _KERNEL_REGISTRY, KERNEL_EXERCISES, check, run_check
from hgemm_course.check import gpu_verdict, kernel_check
from hgemm_course.check import kernel_exercise as ke
from hgemm_course.check.kernel_compile import compile_learner
from hgemm_course.check.feedback import CheckResult, Unchecked
from hgemm_course.library.device import GpuInfo
from hgemm_course.library.ladder import get

ROOT = Path(__file__).resolve().parent.parent
GPUS = {
    "RTX 4090": GpuInfo(name="NVIDIA GeForce RTX 4090", compute_capability=(8, 9), sm_count=128, l2_bytes=72 * 2**20,
                        smem_per_sm=102400, smem_per_block_optin=101376, regs_per_sm=65536, clock_khz=2520000,
                        memory_bytes=24 * 2**30, threads_per_sm=1536),
    "RTX 5080": GpuInfo(name="NVIDIA GeForce RTX 5080", compute_capability=(12, 0), sm_count=84, l2_bytes=64 * 2**20,
                        smem_per_sm=102400, smem_per_block_optin=101376, regs_per_sm=65536, clock_khz=2617000,
                        memory_bytes=16 * 2**30, threads_per_sm=1536),
    "T4": GpuInfo(name="Tesla T4", compute_capability=(7, 5), sm_count=40, l2_bytes=4 * 2**20, smem_per_sm=65536,
                  smem_per_block_optin=65536, regs_per_sm=65536, clock_khz=1590000, memory_bytes=16 * 2**30,
                  threads_per_sm=1024),
}
NO_GPU = "the NVIDIA driver sees no GPU"
FIRST_LOAD = "#pragma unroll\n            for (int i = 0; i < FRAG_M; ++i) {\n                wmma::load_matrix_sync(a_frag[i]"
SKIPPED_CTA = ("if (blockIdx.x == 1) break;   // CTA column 1 adds nothing: wrong, and out of the host model's reach\n"
               + FIRST_LOAD)


def _fake(monkeypatch, gpu: str | None) -> None:
    """This machine has ``gpu`` (a key of GPUS), or none."""
    answer = (GPUS[gpu], None, "13.0") if gpu else (None, NO_GPU, None)
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(device, "probe_gpu", lambda: answer)
    target._target_of.cache_clear()


@pytest.fixture(autouse=True)
def _forget_the_fake_gpu():
    yield
    target._target_of.cache_clear()


@pytest.fixture
def no_launch(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the checker launched a kernel on a GPU that cannot run it")

    monkeypatch.setattr(kernel_check, "run_on_gpu", refuse)


@pytest.fixture
def launches(monkeypatch) -> list:
    """The GPU run replaced by a note; each call's Compiled (what the CPU part built) is recorded."""
    seen = []

    def fake_run(exercise, path, *, timeout, compiled):
        seen.append(compiled)
        return "on this GPU: (a fake run)"

    monkeypatch.setattr(kernel_check, "run_on_gpu", fake_run)
    return seen


def _solution(name: str) -> Path:
    return ROOT / "solutions" / f"{name}.cu"


@pytest.mark.parametrize("gpu, name, feature", [
    ("RTX 4090", "ex07_mbarrier", "TMA loads"),
    ("RTX 4090", "ex09_wgmma_loop", "wgmma"),
    ("RTX 5080", "ex10_producer", "wgmma"),
    ("RTX 5080", "ex11_tile_loop", "wgmma"),
    ("T4", "ex03_wmma", "mma.sync"),
    ("T4", "ex05_swizzle_kernel", "cp.async"),
])
def test_a_rung_the_gpu_cannot_run_is_not_checked_and_not_launched(gpu, name, feature, monkeypatch, capsys, no_launch):
    _fake(monkeypatch, gpu)
    assert run_check(name, _solution(name)) == 2
    lines = capsys.readouterr().out.splitlines()
    headline = lines[1]
    rung = get(_KERNEL_REGISTRY[name].rung)
    assert headline == (f"{name}: could not check: the CPU part passed, but the kernel was not run: "
                        f"{rung.refusal(target.present())}")
    assert feature in headline and f"this {GPUS[gpu].name} is {target.present().arch}" in headline
    assert "PASS" not in "\n".join(lines)
    # the CPU part ran, for the recorded H200, as on a machine with no GPU
    assert f"compiles for {target.RECORDED.arch} as {rung.name_expressions[0]}" in lines[3]
    assert any(line.strip().startswith(f"Not checked: what C the kernel computes. Run `hgemm-course check {name}")
               for line in lines)


@pytest.mark.parametrize("gpu, name", [("RTX 4090", "ex03_wmma"), ("RTX 4090", "ex05_swizzle_kernel"),
                                       ("RTX 5080", "ex03_wmma"), ("RTX 5080", "ex07_mbarrier")])
def test_a_rung_the_gpu_runs_is_compiled_for_its_arch_with_the_sized_instantiation(gpu, name, monkeypatch, launches):
    _fake(monkeypatch, gpu)
    here = target.present()
    rung = get(_KERNEL_REGISTRY[name].rung)
    sized = rung.kernels(here)
    result = check(name, _solution(name))
    assert result.verdict == "PASS", str(result)
    (compiled,) = launches
    assert compiled.target == here and compiled.arch == sized[0].arch == here.arch
    assert compiled.name_expressions[0] == sized[0].name_expression != rung.name_expressions[0]
    assert {k.name_expression for k in sized} <= set(compiled.name_expressions)
    assert all(k.smem_bytes <= here.smem_per_block for k in sized)
    assert f"compiles for {here.arch} as {sized[0].name_expression} (sized for this {GPUS[gpu].name})" in result.message


@pytest.mark.parametrize("gpu, name", [("RTX 4090", "ex03_wmma"), ("RTX 4090", "ex05_swizzle_kernel"),
                                       ("RTX 5080", "ex07_mbarrier")])
def test_the_launcher_launches_what_the_cpu_part_compiled(gpu, name, monkeypatch):
    """gpu_run's launcher, on the fake GPU, picks for every shape of the GPU run an instantiation the CPU part
    compiled, for the same architecture: the two parts check one kernel."""
    from hgemm_course.check.gpu_run import learner_launch
    from hgemm_course.library.ladder.nvrtc_kernel import TemplateKernel

    _fake(monkeypatch, gpu)
    exercise = _KERNEL_REGISTRY[name]
    compiled = compile_learner(exercise, _solution(name), ke.check_plan(exercise)[0])
    module = importlib.import_module(get(exercise.rung).launch.__module__)
    monkeypatch.setattr(module, "kernel", module.kernel)            # learner_launch replaces it; put it back after
    monkeypatch.setattr(TemplateKernel, "launch", lambda self, *args: None)
    if hasattr(module, "tensor_maps"):
        monkeypatch.setattr(module, "tensor_maps", lambda *args: ())
    launched: list = []
    _, launch = learner_launch(exercise.rung, _solution(name), launched)
    results = []
    for M, N, K in exercise.gpu_shapes:
        launched.clear()
        launch(np.empty((M, K), np.float16), np.empty((K, N), np.float16), np.empty((M, N), np.float16))
        assert launched and all(k.source == str(_solution(name)) for k in launched)
        results.append({"kernels": [{"name_expression": k.name_expression, "arch": k.arch} for k in launched]})
    gpu_verdict.same_kernels(compiled, results)                              # raises Unchecked on a mismatch
    foreign = [{"kernels": [{"name_expression": get(exercise.rung).name_expressions[0], "arch": compiled.arch}]}]
    with pytest.raises(Unchecked, match="the two parts must check one kernel"):
        gpu_verdict.same_kernels(compiled, foreign)


def test_a_launch_of_another_instantiation_is_could_not_check(monkeypatch):
    _fake(monkeypatch, "RTX 4090")

    def other_kernel(exercise, path, *, timeout, compiled):
        gpu_verdict.same_kernels(compiled, [{"kernels": [{"name_expression": "k03_wmma<64, 64, 32, 32, 32, 2>",
                                                 "arch": compiled.arch}]}])

    monkeypatch.setattr(kernel_check, "run_on_gpu", other_kernel)
    result = check("ex03", _solution("ex03_wmma"))
    assert result.verdict == "could not check" and result.exit_code == 2
    assert result.unchecked.startswith("the CPU part passed, but the GPU run launched k03_wmma<64, 64, 32, 32, 32, 2> "
                                       "for sm_89, not what the CPU part checked (k03_wmma<128, 128, 64, 64, 64, 2>")


def test_without_a_gpu_a_wrong_kernel_is_could_not_check_not_pass(monkeypatch, capsys, tmp_path, no_launch):
    """A region that skips the products of one CTA column (blockIdx, which the host model has not) is wrong in a way
    the CPU part cannot see (the counts and strides are right, the fragment model cannot run it), so without a GPU
    the verdict says that the kernel was not run, and the exit code is 2, not 0."""
    _fake(monkeypatch, None)
    solution = _solution("ex03_wmma").read_text()
    assert solution.count(FIRST_LOAD) == 1
    wrong = tmp_path / "ex03_wmma.cu"
    wrong.write_text(solution.replace(FIRST_LOAD, SKIPPED_CTA))
    assert run_check("ex03", wrong) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[1] == f"ex03_wmma: could not check: the CPU part passed, but the kernel was not run: there is no GPU " \
                     f"here: {NO_GPU}"
    assert out[2] == "  The CPU part passed:"
    assert out[-1] == (f"  Not checked: what C the kernel computes. Run `hgemm-course check ex03_wmma --path {wrong}` "
                       "on a GPU with cp.async and mma.sync m16n8k16 (sm_80 and later) to run it and compare C with "
                       "a reference.")


def test_without_a_gpu_a_cpu_part_failure_is_still_a_fail(monkeypatch, capsys, no_launch):
    _fake(monkeypatch, None)
    assert run_check("ex03") == 1                                   # the untouched exercise
    out = capsys.readouterr().out
    assert "ex03_wmma: FAIL" in out and "Hint: load a_frag[i]" in out and "could not check" not in out


@pytest.mark.parametrize("name", sorted(KERNEL_EXERCISES))
def test_a_t4_is_checked_as_a_machine_with_no_gpu(name, monkeypatch):
    exercise = _KERNEL_REGISTRY[name]
    _fake(monkeypatch, None)
    without, why_not = ke.check_plan(exercise)
    assert why_not == f"there is no GPU here: {NO_GPU}"
    _fake(monkeypatch, "T4")
    on_t4, refusal = ke.check_plan(exercise)
    assert on_t4 == without == target.RECORDED
    assert refusal == get(exercise.rung).refusal(target.present()) and "this Tesla T4 is sm_75" in refusal


def test_the_plan_compiles_for_the_gpu_that_runs_the_rung_and_says_why_not_otherwise(monkeypatch):
    ex03, ex07 = _KERNEL_REGISTRY["ex03_wmma"], _KERNEL_REGISTRY["ex07_mbarrier"]
    _fake(monkeypatch, "RTX 4090")
    assert ke.check_plan(ex03) == (target.present(), None)
    assert ke.check_plan(ex03, gpu=False) == (target.present(), "the GPU part was switched off (gpu=False)")
    assert ke.check_plan(ex07) == (target.RECORDED, get("07").refusal(target.present()))
    with target.use(target.named("sm_120")):                        # a target chosen by name, not the GPU here
        on, why_not = ke.check_plan(ex07)
    assert on == target.named("sm_120")
    assert why_not.startswith("the target chosen is the sm_120 target") and "run_here()" in why_not
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")                 # the simulator hides the GPU from the course
    assert ke.check_plan(ex03) == (target.RECORDED, "NUMBA_ENABLE_CUDASIM=1 is set, which hides this NVIDIA GeForce "
                                                    "RTX 4090; unset it to run the kernel")
    _fake(monkeypatch, None)
    with target.use(target.named("sm_89")):
        assert ke.check_plan(ex03) == (target.named("sm_89"), f"there is no GPU here: {NO_GPU}")


def test_could_not_check_is_neither_pass_nor_fail():
    unchecked = CheckResult("ex03_wmma", False, "The CPU part passed:", unchecked="the kernel was not run: no GPU")
    assert (unchecked.verdict, unchecked.exit_code) == ("could not check", 2)
    assert str(unchecked).splitlines()[0] == "ex03_wmma: could not check: the kernel was not run: no GPU"
    assert (CheckResult("ex03_wmma", True, "").exit_code, CheckResult("ex03_wmma", False, "").exit_code) == (0, 1)
    with pytest.raises(ValueError, match="did not pass"):
        CheckResult("ex03_wmma", True, "", unchecked="the kernel was not run")
