"""ex03_wmma: the kernel exercise is compiled whole; mistakes are reported at the learner's line."""
from pathlib import Path

import pytest

from hgemm_course.check import check

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex03_wmma.cu").read_text()
MMA = "wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);"


def _mine(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ex03_wmma.cu"
    path.write_text(text)
    return path


def test_solution_passes_the_cpu_part():
    result = check("ex03", ROOT / "solutions" / "ex03_wmma.cu", gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "no spills" in result.message and "the CPU part passed" in result.unchecked
    assert "the fragment model ran your region for warps" in result.message


def test_untouched_exercise_fails_with_the_hint():
    result = check("ex03", gpu=False)
    assert result.verdict == "FAIL"
    assert "has no wmma.mma.sync" in result.message
    assert "Hint: load a_frag[i]" in result.message
    assert "Traceback" not in str(result)


def test_syntax_error_is_reported_at_the_learners_line(tmp_path):
    lines = SOLUTION.splitlines()
    at = next(i for i, line in enumerate(lines) if MMA in line)
    lines[at] = lines[at].replace(";", "")
    result = check("ex03", _mine(tmp_path, "\n".join(lines) + "\n"), gpu=False)
    assert result.verdict == "FAIL"
    # NVRTC reports a missing ';' at the next token: the closing brace on the following line
    assert f"ex03_wmma.cu:{at + 2}: error: expected a \";\"" in result.message


def test_missing_products_are_counted(tmp_path):
    result = check("ex03", _mine(tmp_path, SOLUTION.replace(MMA, "if (i == j) " + MMA)), gpu=False)
    assert result.verdict == "FAIL"
    assert "issues 16 x wmma.mma.sync, the rung's kernel 64" in result.message


def test_unpadded_leading_dimension_is_caught(tmp_path):
    text = SOLUTION.replace("* A_LD + kk * 16, A_LD);", "* A_LD + kk * 16, BK);")
    result = check("ex03", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL"
    assert "leading dimension [64]" in result.message and "A_LD = 72" in result.message


def test_a_wrong_fragment_pairing_fails_on_the_cpu(tmp_path):
    """b_frag[i] for b_frag[j]: the counts and strides are right, but the fragment model plays the region and finds
    acc[0][1] multiplied by the wrong B columns, without a GPU."""
    wrong = MMA.replace("b_frag[j]", "b_frag[i]")
    result = check("ex03", _mine(tmp_path, SOLUTION.replace(MMA, wrong)), gpu=False)
    assert result.verdict == "FAIL", str(result)
    assert "acc[0][1] does not hold what the kernel's does" in result.message
    assert "(a_frag[0] of k-step 0 @ b_frag[1] of k-step 0)" in result.message          # what it needs
    assert "(a_frag[0] of k-step 0 @ b_frag[0] of k-step 0)" in result.message          # what it gets


@pytest.mark.parametrize("old, new, says", [
    ("b_tile + kk * 16 * B_LD + warp_n * WN + j * 16", "b_tile + kk * 16 * B_LD + warp_n * WN", "acc[0][1] does not"),
    ("(warp_m * WM + i * 16) * A_LD", "(warp_n * WM + i * 16) * A_LD", "acc[0][0] does not"),
    (MMA, MMA.replace("acc[i][j]);", "acc[0][0]);"), "It lost what it held before the slice"),
    (MMA, "wmma::mma_sync(acc[i][j & ~1], a_frag[i], b_frag[j & ~1], acc[i][j & ~1]);", "(1 times too many)"),
])
def test_the_fragment_model_catches_offsets_and_sums(old, new, says, tmp_path):
    assert SOLUTION.count(old) == 1
    result = check("ex03", _mine(tmp_path, SOLUTION.replace(old, new)), gpu=False)
    assert result.verdict == "FAIL" and says in result.message, str(result)


def test_a_function_is_refused():
    result = check("ex03", lambda: None)
    assert result.verdict == "FAIL" and "pass the path of your .cu file" in result.message


@pytest.mark.gpu
def test_solution_runs_right_on_the_gpu():
    result = check("ex03", ROOT / "solutions" / "ex03_wmma.cu", gpu=True)
    assert result.passed, str(result)
    assert "on this GPU: right on" in result.message


@pytest.mark.gpu
def test_a_mistake_out_of_the_models_reach_is_a_wrong_element_on_the_gpu(tmp_path):
    """CTA column 1 skips its products: the fragment model has no blockIdx, the GPU run finds C wrong."""
    first_load = "#pragma unroll\n            for (int i = 0; i < FRAG_M; ++i) {\n                wmma::load_matrix_sync(a_frag[i]"
    text = SOLUTION.replace(first_load, "if (blockIdx.x == 1) break;\n" + first_load)
    result = check("ex03", _mine(tmp_path, text), gpu=True)
    assert result.verdict == "FAIL"
    assert "first wrong element C[" in result.message


def test_solution_is_the_rung_kernel():
    """The exercise is rung 03's kernel (its source inserts the kernel file): only the region markers differ."""
    from hgemm_course.check.generate import without_markers

    kernel = without_markers((ROOT / "hgemm_course" / "library" / "kernels" / "k03_wmma.cu").read_text())
    body = "".join(line for line in SOLUTION.splitlines(keepends=True) if "SOLUTION" not in line)
    assert body[body.index("template <"):] == kernel[kernel.index("template <"):]
