"""PackedLaunch (ladder/packed.py) on the CPU: the bytes cuLaunchKernel would read through its kernelParams, an
argument changed in place, and the launch handed to CuPy when the driver refuses it."""
import ctypes
import types

import numpy as np
import pytest

from hgemm_course.library import tensormap
from hgemm_course.library.ladder import packed
from hgemm_course.library.ladder.packed import PackedLaunch, argument_bytes


class FakeCupyArray:
    def __init__(self, ptr):
        self.data = types.SimpleNamespace(ptr=ptr)


class FakeFunction:
    """A cupy RawKernel: callable, with the loaded Function (which holds the CUfunction pointer) as ``kernel``."""
    kernel = types.SimpleNamespace(ptr=0xF00D)

    def __init__(self):
        self.calls = []

    def __call__(self, grid, block, args, shared_mem=0):
        self.calls.append((grid, block, args, shared_mem))


@pytest.fixture
def driver(monkeypatch):
    """cuda.bindings' driver with cuLaunchKernel replaced by one that reads each parameter's bytes as the driver
    would (their widths given by the test) and answers ``result``."""
    from cuda.bindings import driver as real

    seen = types.SimpleNamespace(launches=[], widths=None, result=real.CUresult.CUDA_SUCCESS)

    def launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        pointers = (ctypes.c_uint64 * len(seen.widths)).from_address(params)
        seen.launches.append({"f": int(f), "grid": (gx, gy, gz), "block": (bx, by, bz), "smem": smem,
                              "stream": int(stream), "extra": extra,
                              "args": [ctypes.string_at(p, w) for p, w in zip(pointers, seen.widths)]})
        return (seen.result,)

    monkeypatch.setattr(real, "cuLaunchKernel", launch)
    return seen


def _args():
    tmap = np.zeros((), tensormap.TENSOR_MAP_DTYPE)
    tmap["opaque"] = np.arange(16, dtype=np.uint64) * 0x0101010101010101
    return (np.uint64(0x7000_0000_1000), np.int32(-5), np.int32(1234567), tmap[()], FakeCupyArray(0xABCDEF00),
            np.uint32(7))


def test_the_driver_reads_each_argument_s_own_bytes(driver):
    args = _args()
    driver.widths = [len(argument_bytes(a)) for a in args]
    assert driver.widths == [8, 4, 4, 128, 8, 4]
    launch = PackedLaunch(FakeFunction(), (3, 2), (384,), args, 200_000, stream=0x5EED)
    launch()
    launch()
    assert len(driver.launches) == 2
    seen = driver.launches[-1]
    assert seen["f"] == FakeFunction.kernel.ptr and seen["grid"] == (3, 2, 1) and seen["block"] == (384, 1, 1)
    assert seen["smem"] == 200_000 and seen["stream"] == 0x5EED and seen["extra"] == 0
    assert seen["args"] == [a.tobytes() if not isinstance(a, FakeCupyArray) else np.uint64(a.data.ptr).tobytes()
                            for a in args]


def test_put_changes_one_argument_for_the_next_launches_only(driver):
    args = _args()
    driver.widths = [len(argument_bytes(a)) for a in args]
    launch = PackedLaunch(FakeFunction(), (1,), (128,), args, stream=0)
    launch()
    launch.put(5, np.uint32(8))
    launch.put(4, FakeCupyArray(0x1234))
    launch()
    first, second = (d["args"] for d in driver.launches)
    assert first[5] == np.uint32(7).tobytes() and second[5] == np.uint32(8).tobytes()
    assert second[4] == np.uint64(0x1234).tobytes() and second[:4] == first[:4]


def test_put_before_the_first_launch_is_packed_too(driver):
    args = _args()
    driver.widths = [len(argument_bytes(a)) for a in args]
    launch = PackedLaunch(FakeFunction(), (1,), (128,), args, stream=0)
    launch.put(1, np.int32(99))
    launch()
    assert driver.launches[0]["args"][1] == np.int32(99).tobytes()


def test_a_value_of_another_width_is_refused():
    launch = PackedLaunch(FakeFunction(), (1,), (128,), _args(), stream=0)
    with pytest.raises(ValueError, match="argument 5 was 4 bytes, not 8"):
        launch.put(5, np.uint64(1))


@pytest.mark.parametrize("value", [3, 2.5, "x", None])
def test_an_argument_without_a_width_is_refused(value):
    with pytest.raises(TypeError, match="CuPy array or a NumPy scalar"):
        argument_bytes(value)


def test_a_refused_launch_goes_through_cupy_with_the_current_arguments(driver):
    from cuda.bindings import driver as real

    args = _args()
    driver.widths = [len(argument_bytes(a)) for a in args]
    driver.result = real.CUresult.CUDA_ERROR_INVALID_CONTEXT
    fn = FakeFunction()
    launch = PackedLaunch(fn, (4,), (256,), args, 1024, stream=0)
    launch.put(5, np.uint32(9))
    launch()
    assert len(fn.calls) == 1
    grid, block, sent, smem = fn.calls[0]
    assert grid == (4,) and block == (256,) and smem == 1024 and sent[5] == np.uint32(9) and len(sent) == len(args)


def test_slots_are_aligned_for_tensor_maps(driver):
    args = _args()
    driver.widths = [len(argument_bytes(a)) for a in args]
    launch = PackedLaunch(FakeFunction(), (1,), (128,), args, stream=0)
    launch()
    assert all(int(p) % packed.SLOT_ALIGN == 0 for p in launch._pointers)


@pytest.mark.gpu
def test_a_kept_gemm_launch_is_right_from_another_thread():
    """gemm(out=)'s kept launch called from a thread that has not used the GPU yet: C is right whether the driver
    takes the packed launch or refuses it for want of a current context and CuPy launches it."""
    import threading

    import cupy

    import hgemm_course
    from hgemm_course.measurement import verification

    a, b, seed = verification.random_inputs(1000, 776, 520, xp=cupy)
    out = cupy.full((1000, 776), cupy.nan, cupy.float16)
    hgemm_course.gemm(a, b, "11", out=out)
    out.fill(cupy.nan)
    cupy.cuda.Device().synchronize()
    errors = []

    def call():
        try:
            hgemm_course.gemm(a, b, "11", out=out)
            cupy.cuda.Device().synchronize()
        except Exception as exc:        # reported below: an exception in a thread would not fail the test
            errors.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    assert not errors, errors
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    assert verification.compare(out, reference, K=520, rung="11", seed=seed).passed
