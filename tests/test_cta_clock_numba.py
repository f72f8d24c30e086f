"""The timing build of the Numba rungs 01-02: its log's words read as cta_clock.ENTRY rows, its stamps run by the
simulator with made-up clocks, its PTX (the registers read only in the timing build, the plain kernel's registers
kept), and on the H200 each rung's cycles and clock in bench's records."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hgemm_course.library import cta_clock, device
from hgemm_course.library.ladder import get


def _words(rows):
    """rows of rows of (smid, start_cycles, end_cycles, start_ns, end_ns, launch), one row per log slot"""
    out = np.zeros((len(rows), len(rows[0]), cta_clock.ENTRY_WORDS), np.uint64)
    for slot, ctas in enumerate(rows):
        for cta, (sm, c0, c1, t0, t1, launch) in enumerate(ctas):
            out[slot, cta] = (c0, c1, t0, t1, sm | launch << 32)
    return out


def test_a_numba_log_word_lays_out_an_entry():
    # the kernel writes words 0-3 as ENTRY's first four fields and smid | launch << 32 as the fifth
    assert [cta_clock.ENTRY.fields[f][1] for f in ("start_cycles", "end_cycles", "start_ns", "end_ns")] == \
        [8 * w for w in (cta_clock.START_CYCLES, cta_clock.END_CYCLES, cta_clock.START_NS, cta_clock.END_NS)]
    assert (cta_clock.ENTRY.fields["smid"][1], cta_clock.ENTRY.fields["launch"][1]) == \
        (8 * cta_clock.SMID_AND_LAUNCH, 8 * cta_clock.SMID_AND_LAUNCH + 4)
    entries = cta_clock.numba_log_entries(_words([[(7, 10, 20, 30, 40, 3)]]))
    assert entries.shape == (1, 1)
    assert entries[0, 0].tolist() == (10, 20, 30, 40, 7, 3)


def test_a_hand_built_numba_log_gives_each_launchs_busiest_sm_and_clock():
    # two launches of three CTAs in slots 0 and 1: SM 0 runs two CTAs back to back at 2 GHz, SM 1 one at 1 GHz
    launch = [[(0, 1_000, 3_000, 100, 1_100, n), (0, 3_000, 5_000, 1_100, 2_100, n), (1, 90_000, 91_500, 150, 1_650, n)]
              for n in range(2)]
    log = np.zeros((cta_clock.SLOTS, 3, cta_clock.ENTRY_WORDS), np.uint64)
    log[:2] = _words(launch)
    clocks = cta_clock.last_launches(cta_clock.numba_log_entries(log), started=2 * 3, ctas=3)
    assert len(clocks) == 2
    for clock in clocks:
        assert (clock.cycles, clock.ns, clock.sms, clock.ctas) == (4_000, 2_000, 2, 3)
        assert clock.ghz == pytest.approx((4_000 + 1_500) / (2_000 + 1_500))


def test_a_numba_log_of_another_shape_is_refused():
    with pytest.raises(ValueError, match="5 words per CTA"):
        cta_clock.numba_log_entries(np.zeros((2, 3, 4), np.uint64))


def _simulated():
    if not device.cudasim_enabled():
        pytest.skip("the simulator is off (a GPU is present)")


@pytest.mark.parametrize("rung_id, shape", [("01", (70, 37, 129)), ("02", (70, 130, 33))])
def test_the_stamps_log_every_cta_of_every_launch_under_the_simulator(monkeypatch, rung_id, shape):
    """The timing kernel's bookkeeping, run by the simulator with a counter for each register: every CTA of each
    launch in its launch's row, its end after its start, and C still right."""
    _simulated()
    import threading

    from hgemm_course.measurement.verification import compare, random_inputs
    from hgemm_course.library.ladder import k01_naive, k02_tiled

    ticks, lock = iter(range(1, 10**9)), threading.Lock()

    def tick():
        with lock:
            return np.uint64(next(ticks))

    monkeypatch.setattr(cta_clock, "_numba_readers", lambda: (tick, tick, lambda: np.uint32(5)))
    body, grid, block = {
        "01": (k01_naive.naive_gemm_body, lambda M, N: (-(-N // k01_naive.BLOCK_X), -(-M // k01_naive.BLOCK_Y)),
               (k01_naive.BLOCK_X, k01_naive.BLOCK_Y)),
        "02": (k02_tiled.tiled_gemm_body, lambda M, N: (-(-N // k02_tiled.BN), -(-M // k02_tiled.BM)),
               (k02_tiled.THREADS_X, k02_tiled.THREADS_Y)),
    }[rung_id]
    timed = cta_clock.numba_timing_kernel.__wrapped__(body)    # built with the counters, not cached
    M, N, K = shape
    a, b, seed = random_inputs(M, N, K, seed=1)
    ctas = int(np.prod(grid(M, N)))
    log = np.zeros((cta_clock.SLOTS, ctas, cta_clock.ENTRY_WORDS), np.uint64)
    started = np.zeros(1, np.uint32)
    for _ in range(3):
        c = np.full((M, N), np.nan, np.float16)
        timed[grid(M, N), block](a, b, c, log, started)
        assert compare(c, a.astype(np.float32) @ b.astype(np.float32), K=K, rung=rung_id, seed=seed).passed
    assert started[0] == 3 * ctas
    entries = cta_clock.numba_log_entries(log)
    for launch in range(3):
        assert (entries[launch]["launch"] == launch).all() and (entries[launch]["smid"] == 5).all()
    clocks = cta_clock.last_launches(entries, int(started[0]), ctas)
    assert [c.ctas for c in clocks] == [ctas] * 3 and all(c.cycles > 0 for c in clocks)


def test_inside_timing_builds_the_simulator_runs_the_plain_kernel():
    _simulated()
    from hgemm_course.measurement.timing import time_with_clock
    from hgemm_course.measurement.verification import random_inputs, run_rung

    a, b, _ = random_inputs(33, 17, 9, seed=2)
    for rung_id in ("01", "02"):
        c = np.full((33, 17), np.nan, np.float16)
        assert cta_clock.timing_build_launched(get(rung_id).launch, (a, b, c)) is None
        assert np.isfinite(c).all()
        assert time_with_clock(get(rung_id).launch, [(a, b, c)]) is None
        assert np.isfinite(run_rung(get(rung_id), a, b)).all()


# In a child process with the simulator off: Numba's compiler runs without a GPU, the simulator's would not.
_COMPILE = textwrap.dedent("""
    import json
    from numba import cuda
    from numba.core import types
    from hgemm_course.library import cta_clock
    from hgemm_course.library.ladder.k01_naive import naive_gemm, naive_gemm_body
    from hgemm_course.library.ladder.k02_tiled import tiled_gemm, tiled_gemm_body
    mat = types.float16[:, ::1]
    log = (types.uint64[:, :, ::1], types.uint32[::1])
    out = {}
    for plain, body in ((naive_gemm, naive_gemm_body), (tiled_gemm, tiled_gemm_body)):
        for cc in ((9, 0, "a"), (8, 0)):
            arch = "sm_%d%d%s" % (cc[0], cc[1], cc[2] if len(cc) > 2 else "")
            timed = cta_clock.numba_timing_kernel(body)
            out[plain.__name__ + " " + arch] = {
                "plain": cuda.compile_ptx(plain.py_func, (mat,) * 3, cc=cc)[0],
                "timed": cuda.compile_ptx(timed.py_func, (mat,) * 3 + log, cc=cc)[0]}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def ptx():
    import json

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", _COMPILE], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_timing_kernels_compile_for_sm90a_and_sm80(ptx):
    assert sorted(ptx) == ["naive_gemm sm_80", "naive_gemm sm_90a", "tiled_gemm sm_80", "tiled_gemm sm_90a"]
    for name, builds in ptx.items():
        arch = name.split()[1]
        for build in builds.values():
            assert f".target {arch}" in build, name


def test_the_clock_registers_are_read_only_in_the_timing_build(ptx):
    for name, builds in ptx.items():
        for register in ("%clock64", "%globaltimer", "%smid"):
            assert register not in builds["plain"], (name, register)
        # clock64 and globaltimer at the start and at each warp's end, smid once
        counts = [builds["timed"].count(register) for register in ("%clock64", "%globaltimer", "%smid")]
        assert counts == [2, 2, 1], (name, counts)
        assert builds["timed"].count("atom.global.max.u64") == 2 and "atom.global.add.u32" in builds["timed"], name
        assert "call" not in builds["timed"], name     # inline reads: no function call, no stack frame


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (a CUDA toolkit) to count registers")
def test_the_timing_build_keeps_the_plain_kernels_registers_and_no_stack(ptx, tmp_path):
    import re

    def resources(text: str, arch: str) -> tuple[int, int]:
        source = tmp_path / "kernel.ptx"
        source.write_text(text)
        out = subprocess.run(["ptxas", f"-arch={arch}", "-v", "-o", str(tmp_path / "kernel.o"), str(source)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return int(re.search(r"Used (\d+) registers", out.stderr)[1]), int(re.search(r"(\d+) bytes stack frame", out.stderr)[1])

    for name, builds in ptx.items():
        arch = name.split()[1]
        plain_registers, _ = resources(builds["plain"], arch)
        timed_registers, stack = resources(builds["timed"], arch)
        assert stack == 0 and 0 <= timed_registers - plain_registers <= 2, (name, plain_registers, timed_registers)


@pytest.mark.gpu
def test_bench_records_the_cycles_and_clock_of_rungs_01_and_02():
    from hgemm_course.measurement.bench import bench

    records = bench(["01", "02"], [512], repeats=20, progress=False)
    assert [r.rung for r in records] == ["01", "02"]
    for record in records:
        assert len(record.launch_clocks) == cta_clock.SLOTS, record.rung
        assert record.cycles > 0, record.rung
        assert 0.5 < record.clock_ghz < 3, (record.rung, record.clock_ghz)
        assert 0.8 < record.timing_build_ratio < 1.25, (record.rung, record.timing_build_ratio)
