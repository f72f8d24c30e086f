import pytest

from hgemm_course.measurement import timing
from hgemm_course.measurement.timing import input_sets_needed


def test_input_sets_rotate_until_l2_is_outrun():
    l2 = 60 * 2**20
    assert input_sets_needed(8192, 8192, 8192, l2) == 1
    n = input_sets_needed(1024, 1024, 1024, l2)
    assert n * 2 * (2 * 1024 * 1024) >= 4 * l2 or n == 32


def test_the_stream_hold_compiles_to_one_small_kernel():
    from hgemm_course.library.build import compile_cuda

    resources = compile_cuda("hold.cu", name_expressions=("hold_stream",)).resources_of("hold_stream")
    assert resources.spill_stores == 0 and resources.smem_static == 0


def test_held_batches_cover_every_launch_once():
    batches = timing._held_batches(2 * timing.HOLD_LAUNCHES + 3)
    assert [i for b in batches for i in b] == list(range(2 * timing.HOLD_LAUNCHES + 3))
    assert max(len(b) for b in batches) == timing.HOLD_LAUNCHES


def _slow_host_launch(host_s):
    """A launcher that spends ``host_s`` on the host before it queues a few-microsecond kernel."""
    import time

    import cupy

    def launch(x):
        time.sleep(host_s)
        x += 1
    return launch, [(cupy.zeros(1024, cupy.float32),)]


@pytest.mark.gpu
def test_timed_launches_exclude_the_hosts_preparation():
    launch, inputs = _slow_host_launch(0.002)
    ms = timing.time_launches(launch, inputs, warmup=1, repeats=8)
    assert max(ms) < 0.5, f"2 ms of host work per launch showed in the events: {ms}"
    t = timing.time_paired(launch, launch, inputs, warmup=1, repeats=6)
    assert max(t.fn_ms + t.reference_ms) < 0.5, t
    assert not timing.StreamHold.timed_out()


@pytest.mark.gpu
def test_a_hold_the_host_never_releases_gives_up_and_says_so(monkeypatch):
    import time

    import cupy

    monkeypatch.setattr(timing, "HOLD_TIMEOUT_S", 0.05)
    with timing.StreamHold():
        time.sleep(0.3)
    cupy.cuda.get_current_stream().synchronize()
    assert timing.StreamHold.timed_out()
    assert not timing.StreamHold.timed_out()      # read once, then cleared
