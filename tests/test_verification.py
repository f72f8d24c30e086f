import numpy as np
import pytest

from hgemm_course.measurement import verification
from hgemm_course.measurement.verification import compare, random_inputs, verify


def _case(M=64, N=48, K=80, seed=3):
    a, b, _ = random_inputs(M, N, K, seed=seed)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    return ref, ref.astype(np.float16)


def test_inputs_are_random_nonzero_and_fresh_each_call():
    a1, b1, s1 = random_inputs(32, 16, 24)
    a2, b2, s2 = random_inputs(32, 16, 24)
    assert a1.dtype == np.float16 and b1.shape == (24, 16)
    assert np.count_nonzero(a1) > 0.99 * a1.size and np.abs(a1).max() <= 1
    assert s1 != s2 and not np.array_equal(a1, a2)
    a3, _, _ = random_inputs(32, 16, 24, seed=s1)
    assert np.array_equal(a1, a3)


def test_correct_fp16_result_passes():
    ref, c = _case()
    result = compare(c, ref, K=80)
    assert result.passed and result.rel_fro_err < 5e-4 and result.first_bad is None


def test_wrong_element_is_caught_and_named():
    ref, c = _case()
    c[17, 5] += 0.5
    result = compare(c, ref, K=80)
    assert not result.passed
    assert (result.first_bad["row"], result.first_bad["col"]) == (17, 5)
    with pytest.raises(verification.VerificationError, match=r"C\[17, 5\]"):
        result.raise_if_failed()


def test_unwritten_element_left_as_nan_poison_is_caught():
    ref, c = _case()
    c[-1, -1] = np.nan
    result = compare(c, ref, K=80)
    assert not result.passed and result.nonfinite == 1
    assert (result.first_bad["row"], result.first_bad["col"]) == (63, 47)


def test_systematic_small_error_fails_the_norm_test():
    ref, _ = _case()
    result = compare((ref * 1.003).astype(np.float16), ref, K=80)
    assert not result.passed and result.rel_fro_err > verification.REL_FRO_TOL


def test_transposed_result_is_caught():
    ref, _ = _case(M=32, N=32, K=32)
    assert not compare(ref.T.astype(np.float16), ref, K=32).passed


@pytest.mark.parametrize("rung", ["01", "02"])
@pytest.mark.parametrize("shape", [(48, 40, 72), (17, 65, 33)])
def test_numba_rungs_verify_under_the_simulator(rung, shape, monkeypatch):
    from hgemm_course.library import device

    if not device.cudasim_enabled():
        pytest.skip("the simulator is off (a GPU is present)")
    result = verify(rung, *shape)
    assert result.passed, result.summary()
    assert result.backend == "cudasim"


def test_verify_reports_a_broken_kernel(monkeypatch):
    from hgemm_course.library import device
    from hgemm_course.library.ladder import get

    if not device.cudasim_enabled():
        pytest.skip("the simulator is off (a GPU is present)")
    good = get("01")

    def leaves_last_row_unwritten(a, b, c):
        tmp = np.empty_like(c)
        good.launch(a, b, tmp)
        c[:-1] = tmp[:-1]

    from dataclasses import replace

    broken = replace(good, launch=leaves_last_row_unwritten)
    result = verify(broken, 20, 12, 16)
    assert not result.passed and result.nonfinite == 12


@pytest.mark.gpu
def test_bench_never_times_a_wrong_kernel():
    from dataclasses import replace

    from hgemm_course.measurement.bench import bench
    from hgemm_course.measurement.verification import VerificationError
    from hgemm_course.library.ladder import get

    good = get("02")

    def off_by_one_row(a, b, c):
        good.launch(a, b, c)
        c[0] = c[1]

    broken = replace(good, id="02", launch=off_by_one_row)
    failures = []
    assert bench([broken], [256], repeats=20, progress=False, failures=failures) == []
    assert len(failures) == 1 and not failures[0].passed
    with pytest.raises(VerificationError):
        bench([broken], [256], repeats=20, progress=False)
    (record,) = bench([good], [512], repeats=20, progress=False)
    assert record.rel_fro_err < 1e-3 and len(record.samples_ms) == 20 and record.pct_cublas > 0
