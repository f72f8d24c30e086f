"""ex07_mbarrier: the ring's waits, checked by compiling, by the host model of the regions and by a model of the
full/empty ring."""
import shutil
from pathlib import Path

import pytest

from hgemm_course.check import check
from hgemm_course.check.ex07_mbarrier import MAX_CALLS, read_trace
from hgemm_course.check.feedback import Failure
from hgemm_course.check.tma_ring import RingError, format_events, play_all, reference_actions, simulate_ring

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex07_mbarrier.cu").read_text()
FULL_WAIT = "mbar_wait_parity(smem_u32(&ring.full[kt % STAGES]), (kt / STAGES) % 2);"
EMPTY_WAIT = "if (next >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[next % STAGES]), (next / STAGES - 1) % 2);"
EMPTY_PARITY = "(next / STAGES - 1) % 2"
REFILL = "load_tile(next % STAGES, next);"
GUARD = "if (tid == 0 && next < k_tiles) {"
needs_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the regions needs g++")


def _mine(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ex07_mbarrier.cu"
    path.write_text(text)
    return path


@needs_gpp
def test_solution_passes_the_cpu_part():
    result = check("ex07", ROOT / "solutions" / "ex07_mbarrier.cu", gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "one loading thread, every thread waiting for its slice, no stale read, overwrite or hang" in result.message
    assert "the CPU part passed" in result.unchecked


def test_solution_is_the_rung_kernel():
    """The exercise is rung 07's kernel with one fragment buffer (the form chapter 07 first teaches):
    every line of rung 07 but its two fragment buffers (K_STEPS, load_fragments, the first slice's
    wait before the loop and the loop's compute) is in the solution unchanged, the TmaRing and its
    barrier expressions included, and the compute ends with rung 07's release of the stage."""
    kernel = (ROOT / "hgemm_course" / "library" / "kernels" / "k07_tma.cu").read_text()
    body = "".join(line for line in SOLUTION.splitlines(keepends=True) if "SOLUTION" not in line)

    def block(text, start, end):                      # from the line of start to the line of end, both in
        i = text.index(start)
        j = text.index(end, i) + len(end)
        return text[i:text.index("\n", j - 1) + 1]
    for start, end in (("// Rung 07: rung 06", "    constexpr int FRAG_N"),        # header, signature, tiles
                       ("    constexpr int B_PANEL", "    float acc["),           # ring, CTA tile, load_tile, lanes
                       ("    // ---- prologue", "    __syncthreads();"),          # barrier set-up, first slices
                       ("    for (int kt = 0; kt < k_tiles; ++kt) {", "__syncwarp();"),  # the producer's refill
                       ("    // ---- epilogue", "\n}\n")):
        assert block(body, start, end) == block(kernel, start, end), start
    assert "aligned_smem<TmaRing<BM, BN, BK, STAGES>>(smem)" in body

    def statements(text):                             # the code of the release, comments and indentation gone
        code = [line.split("//")[0].strip() for line in text.splitlines()]
        return [line for line in code if line]
    release = ["fence_proxy_async_shared_cta();", "__syncwarp();",
               "if (lane == 0) mbar_arrive(smem_u32(&ring.empty[kt % STAGES]));"]
    for text in (kernel, body):
        code = statements(text)
        at = code.index(release[0])
        assert code[at:at + 3] == release


def test_untouched_exercise_fails_with_the_hint():
    result = check("ex07", gpu=False)
    assert result.verdict == "FAIL"
    assert "has no mbarrier.try_wait.parity" in result.message
    assert "Hint: if tid == 0 and next < k_tiles" in result.message
    assert "Traceback" not in str(result)


def test_syntax_error_is_reported_at_the_learners_line(tmp_path):
    lines = SOLUTION.splitlines()
    at = next(i for i, line in enumerate(lines) if FULL_WAIT in line)
    lines[at] = lines[at].replace("(kt / STAGES) % 2);", "(kt / STAGES % 2);")
    result = check("ex07", _mine(tmp_path, "\n".join(lines) + "\n"), gpu=False)
    assert result.verdict == "FAIL"
    assert f"ex07_mbarrier.cu:{at + 1}: error:" in result.message
    assert "(kt / STAGES % 2);" in result.message


@needs_gpp
def test_parity_never_flipped_is_a_stale_read(tmp_path):
    text = SOLUTION.replace(FULL_WAIT, "mbar_wait_parity(smem_u32(&ring.full[kt % STAGES]), 0);")
    result = check("ex07", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL"
    assert "the ring model finds a stale read" in result.message
    assert "computes slice 4 from stage 0" in result.message


@needs_gpp
def test_missing_empty_wait_is_an_overwrite(tmp_path):
    text = SOLUTION.replace(EMPTY_WAIT, "")
    result = check("ex07", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL"
    assert "the ring model finds an overwrite" in result.message and "while warp" in result.message


@needs_gpp
def test_wrong_empty_parity_hangs(tmp_path):
    text = SOLUTION.replace(EMPTY_PARITY, "(next / STAGES) % 2")
    result = check("ex07", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL"
    assert "The kernel hangs" in result.message and "waits on empty[0] for parity 1" in result.message


@needs_gpp
def test_dropped_refill_hangs(tmp_path):
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(REFILL, "")), gpu=False)
    assert result.verdict == "FAIL"
    assert "The kernel hangs" in result.message and "waits on full[3] for parity 0" in result.message


@needs_gpp
def test_waiting_on_parity_1_before_the_first_round_is_also_right(tmp_path):
    """The common idiom: no guard, the first empty wait asks for parity 1 and returns at once."""
    text = SOLUTION.replace("if (next >= STAGES) mbar_wait_parity", "mbar_wait_parity")
    result = check("ex07", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "no stale read, overwrite or hang" in result.message


@needs_gpp
def test_a_refill_past_the_last_slice_is_a_bad_load(tmp_path):
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(GUARD, "if (tid == 0) {")), gpu=False)
    assert result.verdict == "FAIL"
    assert "the ring model finds a bad load" in result.message
    assert "loads slice 14, but K has 14 slices" in result.message


@needs_gpp
def test_two_loading_threads_fail(tmp_path):
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(GUARD, "if (lane == 0 && next < k_tiles) {")), gpu=False)
    assert result.verdict == "FAIL"
    assert "threads 0 and 32 both call load_tile" in result.message


@needs_gpp
def test_a_full_wait_in_one_lane_only_fails(tmp_path):
    """Every thread of a warp reads the stage: the host model runs every thread, not one a warp."""
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(FULL_WAIT, "if (lane == 0) " + FULL_WAIT)), gpu=False)
    assert result.verdict == "FAIL"
    assert "thread 1 (lane 1 of warp 0) makes no wait, where thread 0 of the same warp waits on full[0] for " \
           "parity 0" in result.message


@needs_gpp
def test_a_stage_count_written_as_a_number_fails_with_another(tmp_path):
    """The regions are played with rung 07's stage count and the others its tuning may choose."""
    wait = "mbar_wait_parity(smem_u32(&ring.full[kt % 4]), (kt / 4) % 2);"
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(FULL_WAIT, wait)), gpu=False)
    assert result.verdict == "FAIL"
    assert "(2 stages, 8 warps)" in result.message and "past the 2 barriers of ring.full" in result.message


@needs_gpp
def test_full_wait_on_the_empty_barrier_hangs(tmp_path):
    text = SOLUTION.replace(FULL_WAIT, "mbar_wait_parity(smem_u32(&ring.empty[kt % STAGES]), (kt / STAGES) % 2);")
    result = check("ex07", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL"
    assert "The kernel hangs" in result.message and "waits on empty[0] for parity 0" in result.message


@needs_gpp
@pytest.mark.parametrize("wait, named", [
    ("mbar_wait_parity(ring.full[kt % STAGES], (kt / STAGES) % 2);",
     "ring.full[0], the barrier's 64-bit state and not its address"),
    ("mbar_wait_parity(smem_u32(&ring.full[kt % STAGES + 1]), (kt / STAGES) % 2);",
     "smem_u32(&ring.full[4]), past the 4 barriers of ring.full"),
    ("mbar_wait_parity(smem_u32(ring.a[kt % STAGES]), (kt / STAGES) % 2);", "in the A tiles"),
])
def test_a_wait_on_no_barrier_is_named_in_the_kernels_terms(tmp_path, wait, named):
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(FULL_WAIT, wait)), gpu=False)
    assert result.verdict == "FAIL"
    assert "the ring model finds a bad barrier" in result.message and named in result.message


@needs_gpp
@pytest.mark.parametrize("wait", [
    "mbar_wait_parity(smem_u32(ring.full + kt % STAGES), (kt / STAGES) % 2);",
    "mbar_wait_parity(smem_u32(&ring.full[0]) + 8 * (kt % STAGES), (kt / STAGES) % 2);",
    "{ const unsigned bar = smem_u32(&ring.full[kt % STAGES]); const unsigned p = kt / STAGES & 1u; "
    "mbar_wait_parity(bar, p); }",
    "auto& bar = ring.full[kt % STAGES]; mbar_wait_parity(smem_u32(&bar), (threadIdx.x * 0 + kt / STAGES) % 2);",
])
def test_other_spellings_of_the_full_barrier_are_read(tmp_path, wait):
    """The host model runs the region as written: pointer arithmetic on ring.full, an offset of 8 bytes a
    barrier, a declaration in a block, a reference to the barrier, threadIdx."""
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(FULL_WAIT, wait)), gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "no stale read, overwrite or hang" in result.message


@pytest.mark.parametrize("line, instruction", [
    ("if (lane == 0) mbar_arrive(smem_u32(&ring.empty[kt % STAGES]));", "mbarrier.arrive.shared"),
    ("fence_proxy_async_shared_cta();               // this warp's reads", "fence.proxy.async"),
])
def test_a_release_without_its_arrive_or_fence_fails(tmp_path, line, instruction):
    """The model takes the end of the loop to be rung 07's; the PTX rules hold the file to it."""
    assert line in SOLUTION
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(line, "//")), gpu=False)
    assert result.verdict == "FAIL"
    assert f"the kernel's PTX has no {instruction}" in result.message


@needs_gpp
def test_a_region_the_host_model_cannot_build_leaves_it_to_the_gpu(tmp_path):
    result = check("ex07", _mine(tmp_path, SOLUTION.replace(FULL_WAIT, "__nanosleep(32); " + FULL_WAIT)), gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "the host model could not build your region" in result.message and "__nanosleep" in result.message
    assert "the GPU run decides whether the waits are right" in result.message


def test_the_record_is_read_within_its_bounds():
    """The caller reads what the host program recorded, no more than MAX_CALLS calls a thread and iteration, and
    an iteration run twice (a region that assigns kt) is a FAIL."""
    head = [["run", "4", "8", "14"], ["at", "0", "0", "0"]]
    runs = read_trace(head + [["wait", str(2 << 20), "3", "122"], ["load", "3", "3", "123"]], "mine.cu")
    assert runs[4]["calls"][(0, 0, 0)] == [("wait", 2 << 20, 1, 122), ("load", 3, 3, 123, 0)]
    with pytest.raises(Failure, match=f"more than {MAX_CALLS} calls"):
        read_trace(head + [["wait", "0", "0", "1"]] * (MAX_CALLS + 1), "mine.cu")
    with pytest.raises(Failure, match="runs iteration kt=0 of the main loop twice"):
        read_trace(head + [["at", "0", "0", "0"]], "mine.cu")


def test_the_reference_plays_through_and_a_dropped_refill_hangs():
    reference = reference_actions(4, 14)
    assert play_all(reference, stages=4, warps=8) == 48
    with pytest.raises(RingError) as info:
        play_all(lambda warp, kt: [a for a in reference(warp, kt) if a[0] != "load"], stages=4, warps=8)
    assert info.value.kind == "hang" and "waits on full[3] for parity 0" in info.value.message


def test_ring_trace_is_a_table_of_phases():
    events = simulate_ring(stages=2, k_tiles=4, warps=2, policy="uniform", seed=1)
    assert [e["action"] for e in events].count("reads") == 2 * 4
    assert events[-1]["full_phases"] == [2, 2] and events[-1]["empty_phases"] == [2, 2]
    assert "full / empty phases" in format_events(events)


@pytest.mark.gpu
def test_solution_runs_right_on_the_gpu():
    result = check("ex07", ROOT / "solutions" / "ex07_mbarrier.cu", gpu=True)
    assert result.passed, str(result)


@pytest.mark.gpu
def test_dropped_refill_is_a_hang_on_the_gpu(tmp_path):
    from hgemm_course.check.ex07_mbarrier import EXERCISE
    from hgemm_course.check.feedback import Failure
    from hgemm_course.check.gpu_verdict import run_on_gpu

    path = _mine(tmp_path, SOLUTION.replace(REFILL, ""))
    with pytest.raises(Failure, match="it hangs"):
        run_on_gpu(EXERCISE, path, timeout=60)
