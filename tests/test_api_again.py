"""gemm(out=)'s kept launches (api._launch_again), on the CPU with fake CuPy arrays: what is kept, under which
key, how many, and what sends a call back to the full checks."""
import types

import numpy as np
import pytest

from hgemm_course.library import api, cta_clock


class FakeArray:
    def __init__(self, ptr, shape, dtype=np.float16, contiguous=True):
        self.data = types.SimpleNamespace(ptr=ptr)
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.flags = types.SimpleNamespace(c_contiguous=contiguous)


@pytest.fixture
def fake_cupy(monkeypatch):
    stream = types.SimpleNamespace(ptr=0)
    fake = types.SimpleNamespace(ndarray=FakeArray, cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: 0), get_current_stream=lambda: stream))
    monkeypatch.setattr(api, "_cupy", fake)
    monkeypatch.setattr(api, "_again", {})
    return fake, stream


def _operands(base=0x1000):
    return FakeArray(base, (4, 8)), FakeArray(base + 0x100, (8, 16)), FakeArray(base + 0x200, (4, 16))


def test_a_kept_launch_runs_again_for_the_same_operands(fake_cupy):
    calls = []
    a, b, c = _operands()
    api._keep_again(a, b, c, None, lambda: calls.append(1))
    assert api._launch_again(*_operands(), None) and calls == [1]    # other arrays, same pointers and shapes


@pytest.mark.parametrize("change", ["pointer", "shape", "rung", "stream", "dtype", "layout", "kind", "timing"])
def test_anything_a_kept_launch_was_not_made_for_goes_to_the_full_checks(fake_cupy, monkeypatch, change):
    _, stream = fake_cupy
    calls = []
    a, b, c = _operands()
    api._keep_again(a, b, c, None, lambda: calls.append(1))
    rung = None
    if change == "pointer":
        b = FakeArray(0x9000, b.shape)
    elif change == "shape":
        a, b = FakeArray(0x1000, (8, 4)), FakeArray(0x1100, (4, 16))
    elif change == "rung":
        rung = "11"
    elif change == "stream":
        stream.ptr = 42
    elif change == "dtype":
        a.dtype = np.dtype(np.int16)
    elif change == "layout":
        c.flags.c_contiguous = False
    elif change == "kind":
        a = np.zeros((4, 8), np.float16)
    elif change == "timing":
        monkeypatch.setattr(cta_clock, "timing_builds_on", lambda: True)
    assert not api._launch_again(a, b, c, rung) and calls == []


def test_an_unhashable_rung_goes_to_the_full_checks(fake_cupy):
    assert not api._launch_again(*_operands(), ["11"])


def test_kept_launches_are_bounded_oldest_first(fake_cupy, monkeypatch):
    monkeypatch.setattr(api, "AGAIN_CACHED", 3)
    for i in range(5):
        api._keep_again(*_operands(0x10000 * (i + 1)), None, lambda: None)
    assert len(api._again) == 3
    assert not api._launch_again(*_operands(0x10000), None)        # the first two were dropped
    assert api._launch_again(*_operands(0x50000), None)


def test_no_launch_is_kept_before_cupy_was_used(monkeypatch):
    monkeypatch.setattr(api, "_cupy", None)
    assert not api._launch_again(*_operands(), None)
