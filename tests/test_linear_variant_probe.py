"""The linear variant of rung 04 that the bank model is checked on: built from rung 04's own source."""
import importlib.util

from hgemm_course.build import compile_cuda
from hgemm_course.paths import REPO_ROOT


def _probe():
    spec = importlib.util.spec_from_file_location("linear_variant_probe", REPO_ROOT / "scripts" / "linear_variant_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_variant_differs_from_rung_04_only_in_padding_and_name():
    probe = _probe()
    src = probe.linear_source()
    original = (REPO_ROOT / "hgemm_course" / "kernels" / "k04_mma_sync.cu").read_text()
    changed = [(a, b) for a, b in zip(original.splitlines(), src.splitlines()) if a != b]
    assert len(changed) == 3
    assert any("A_LD = BK + 0" in b for _, b in changed) and any("B_LD = BN + 0" in b for _, b in changed)
    kernel = probe.linear_kernel()
    res = compile_cuda(src, name_expressions=(kernel.name_expression,)).resources_of(kernel.name_expression)
    assert res.spills == 0


def test_the_model_predicts_eight_way_ldmatrix_conflicts_on_the_linear_layout():
    cost = _probe().model(2048)
    for op in ("A ldmatrix.x4", "B ldmatrix.x4.trans"):
        assert cost[op]["wavefronts"] == 8 * cost[op]["ideal_wavefronts"]
