"""The GPU side of a kernel exercise against kernels that hang, write out of bounds, or go wrong only on the
tails: each is found and named, and the GPU serves the next check. Run on the H200 (`pytest -m gpu`)."""
from pathlib import Path

import pytest

from hgemm_course.check import check

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex03_wmma.cu").read_text()
# The first statement of the learner's region in ex03: the kk loop's loads of A's fragments.
FIRST_LOAD = "#pragma unroll\n            for (int i = 0; i < FRAG_M; ++i) {\n                wmma::load_matrix_sync(a_frag[i]"


def _with_region_prefix(tmp_path: Path, code: str) -> Path:
    """The solution with ``code`` run at the start of the learner's region."""
    assert FIRST_LOAD in SOLUTION
    path = tmp_path / "ex03_wmma.cu"
    path.write_text(SOLUTION.replace(FIRST_LOAD, code + "\n" + FIRST_LOAD, 1))
    return path


def _solution_still_passes():
    result = check("ex03", ROOT / "solutions" / "ex03_wmma.cu", gpu=True)
    assert result.passed, f"the GPU did not serve the next check: {result}"


@pytest.mark.gpu
def test_a_kernel_that_spins_forever_is_timed_out_and_named(tmp_path):
    # a branch to itself in PTX: the loops around it unroll as in the solution, so the CPU part passes it
    spin = 'if (blockIdx.x == 0 && blockIdx.y == 0) { asm volatile("{\\n HANG: bra.uni HANG;\\n}"); }'
    result = check("ex03", _with_region_prefix(tmp_path, spin), gpu=True, timeout=20)
    assert result.verdict == "FAIL" and result.exit_code == 1, str(result)
    assert "did not finish within 20 s: it hangs" in result.message
    _solution_still_passes()


@pytest.mark.gpu
def test_a_kernel_that_writes_out_of_bounds_is_named_as_an_illegal_address(tmp_path):
    wild = "if (threadIdx.x == 0) { C[static_cast<size_t>(1) << 40] = __float2half(1.0f); }"
    result = check("ex03", _with_region_prefix(tmp_path, wild), gpu=True, timeout=60)
    assert result.verdict == "FAIL", str(result)
    assert "illegal memory access" in result.message
    _solution_still_passes()


@pytest.mark.gpu
def test_a_kernel_wrong_only_on_the_tails_is_found(tmp_path):
    """The CTAs of the last tile row skip their products only where M is not a whole number of tiles: every
    whole-tile shape is right, a shape with an M tail is not."""
    tail_only = "if (M % BM != 0 && bid_m == gridDim.y - 1) break;"
    result = check("ex03", _with_region_prefix(tmp_path, tail_only), gpu=True, timeout=60)
    assert result.verdict == "FAIL", str(result)
    assert "first wrong element C[" in result.message
