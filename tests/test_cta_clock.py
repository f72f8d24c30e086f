"""The timing build: the per-CTA log's arithmetic on made-up logs, the build itself on the CPU (same registers,
no spills, the log present only in the timing build), and on the H200 a launch's cycles and clock."""
import functools

import numpy as np
import pytest

from hgemm_course.library import cta_clock, target
from hgemm_course.library.ladder import get
from hgemm_course.library.ladder.nvrtc_kernel import TemplateKernel
from hgemm_course.measurement.commands import DEFAULT_BENCH_SIZES
from hgemm_course.measurement.records import load_records

NVRTC_RUNGS = ("03", "04", "05", "06", "07", "09", "10", "11", "12")


def _entries(rows):
    """rows of (smid, start_cycles, end_cycles, start_ns, end_ns, launch)"""
    out = np.zeros(len(rows), cta_clock.ENTRY)
    for i, (sm, c0, c1, t0, t1, launch) in enumerate(rows):
        out[i] = (c0, c1, t0, t1, sm, launch)
    return out


def test_a_launchs_cycles_are_its_busiest_sms_span_and_its_clock_cycles_over_ns():
    # SM 0 ran two CTAs back to back at 2 GHz, SM 1 one CTA at 1 GHz; each SM's counter starts elsewhere
    log = _entries([(0, 1_000, 3_000, 100, 1_100, 0), (0, 3_000, 5_000, 1_100, 2_100, 0),
                    (1, 90_000, 91_500, 150, 1_650, 0)])
    clock = cta_clock.launch_clock(log)
    assert clock.cycles == 4_000                  # SM 0: 5000 - 1000
    assert clock.ns == 2_100 - 100                # the whole launch on the global timer
    assert clock.ghz == pytest.approx((4_000 + 1_500) / (2_000 + 1_500))
    assert (clock.sms, clock.ctas) == (2, 3)


def test_a_log_row_of_an_unfinished_launch_is_an_error():
    with pytest.raises(ValueError, match="had not finished"):
        cta_clock.launch_clock(_entries([(0, 1_000, 0, 100, 0, 0)]))


def test_the_last_launches_are_read_from_their_rows_and_a_mixed_row_is_left_out():
    log = np.zeros((cta_clock.SLOTS, cta_clock.CAPACITY), cta_clock.ENTRY)
    ctas, launches = 2, cta_clock.SLOTS + 3
    for launch in range(launches):
        for cta in range(ctas):
            log[launch % cta_clock.SLOTS][cta] = (10, 10 + 100 * (launch + 1), 5, 5 + 50 * (launch + 1), cta, launch)
    log[(launches - 1) % cta_clock.SLOTS][1]["launch"] = launches - 1 - cta_clock.SLOTS  # an old CTA left over
    clocks = cta_clock.last_launches(log, launches * ctas, ctas)
    assert len(clocks) == cta_clock.SLOTS - 1
    assert [c.cycles for c in clocks] == [100 * (n + 1) for n in range(launches - cta_clock.SLOTS, launches - 1)]
    assert all(c.ghz == pytest.approx(2.0) for c in clocks)


def _kernels(rung_id: str) -> tuple[TemplateKernel, ...]:
    return get(rung_id).kernels(target.RECORDED)


@pytest.mark.parametrize("rung_id", NVRTC_RUNGS)
def test_the_timing_build_keeps_the_plain_builds_registers_and_spills(rung_id):
    for kernel in _kernels(rung_id):
        timed = cta_clock.timing_build_of(kernel)
        plain_module, timed_module = kernel.compile(), timed.compile()
        plain = plain_module.resources_of(kernel.name_expression)
        logged = timed_module.resources_of(timed.name_expression)
        assert (logged.spill_stores, logged.spill_loads, logged.stack_frame) == (0, 0, 0), kernel.name_expression
        assert abs(logged.registers - plain.registers) <= 8, (kernel.name_expression, plain, logged)
        assert "%globaltimer" not in plain_module.ptx and "cta_clock_log" not in plain_module.ptx
        assert "%globaltimer" in timed_module.ptx and "cta_clock_log" in timed_module.ptx


REPORTED_SIZES = tuple(n for n, _, _ in DEFAULT_BENCH_SIZES)        # what tour, bench and the chapters time
SLACK = 0.03                                                          # a run's own spread about the recorded ones
LAUNCH_EDGES_MS = 0.010                                               # what a launch's events add to its CTAs' span


@functools.lru_cache(maxsize=None)
def recorded_timing_build_ratios(n: int) -> tuple[float, ...]:
    """Every recorded timed/plain ratio of a CUDA C++ rung at n x n x n on the H200 (read once per size)."""
    return tuple(r["timing_build_ratio"] for r in load_records(latest_only=False, gpu="NVIDIA H200")
                 if r["rung"] in NVRTC_RUNGS and (r["M"], r["N"], r["K"]) == (n, n, n) and r["timing_build_ratio"])


@pytest.mark.parametrize("n", REPORTED_SIZES)
def test_every_reported_size_has_recorded_timing_build_ratios(n):
    assert len(recorded_timing_build_ratios(n)) >= 5, n


@pytest.mark.gpu
@pytest.mark.parametrize("n", REPORTED_SIZES)
@pytest.mark.parametrize("rung_id", NVRTC_RUNGS)
def test_a_timed_launch_gives_cycles_and_a_clock_and_costs_what_the_records_say(rung_id, n):
    """The log a timing build writes costs time where a launch is short: the recorded ratios fall with the size.
    Each run's ratio lies within the range recorded at its size, widened by a run's spread."""
    import cupy

    from hgemm_course.measurement.timing import input_sets, settle, time_with_clock

    recorded = recorded_timing_build_ratios(n)
    low, high = min(recorded) - SLACK, max(recorded) + SLACK
    sets = input_sets(n, n, n, cupy.cuda.Device().attributes["L2CacheSize"])
    settle(get(rung_id).launch, sets)      # as the recorded runs did: timed from a cold card, the clock still falls
    clocked = time_with_clock(get(rung_id).launch, sets, repeats=20)
    assert clocked is not None and len(clocked.launches) == cta_clock.SLOTS
    assert low < clocked.ratio < high, (clocked.ratio, low, high)
    for launch in clocked.launches:
        assert 0.5 < launch.ghz < 2.5
        assert launch.sms == min(launch.ctas, cupy.cuda.Device().attributes["MultiProcessorCount"])
        # the busiest SM's cycles at the launch's clock cover at most the launch, and most of it
        assert 0.8 < launch.cycles / launch.ghz / launch.ns < 1.02  # the global timer ticks in tens of ns
    # the CTAs' span lies inside the events of the launches logged (the last ones), which add the launch's own
    # start and end: a few microseconds, about a third of a launch at 1024^3
    median_ms = float(np.median(clocked.timed_ms[-cta_clock.SLOTS:]))
    span_ms = float(np.median([c.ns for c in clocked.launches])) / 1e6
    assert median_ms - LAUNCH_EDGES_MS < span_ms <= 1.01 * median_ms, (span_ms, median_ms)


@pytest.mark.gpu
def test_a_numba_rung_has_a_timing_build_too():
    import cupy

    from hgemm_course.measurement.timing import input_sets, time_with_clock

    sets = input_sets(256, 256, 256, cupy.cuda.Device().attributes["L2CacheSize"])
    clocked = time_with_clock(get("02").launch, sets)
    assert clocked is not None and clocked.launches and all(c.cycles > 0 for c in clocked.launches)


def test_a_clocked_timing_summarises_as_a_record_keeps_it():
    from hgemm_course.measurement.timing import ClockedTiming

    launches = [cta_clock.LaunchClock(cycles=c, ns=1000, ghz=g, sms=2, ctas=4) for c, g in ((100, 1.5), (300, 1.7),
                                                                                              (200, 1.6))]
    summary = ClockedTiming([1.0, 1.0], [1.01, 1.01], launches).summary()
    assert summary["cycles"] == 200 and summary["clock_ghz"] == 1.6
    assert summary["timing_build_ratio"] == pytest.approx(1.01)
    assert summary["launch_clocks"][0] == {"cycles": 100, "ns": 1000, "ghz": 1.5, "sms": 2, "ctas": 4}
