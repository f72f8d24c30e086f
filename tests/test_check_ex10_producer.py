"""ex10_producer: rung 10's producer, setmaxnreg and release, compiled and run through the host model."""
import shutil
from pathlib import Path

import pytest

from hgemm_course.check import check

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex10_producer.cu").read_text()
EMPTY_PARITY = "(kt / STAGES - 1) % 2"
DEALLOC = "        warpgroup_reg_dealloc<PRODUCER_REGS>();\n        if (tid == 0) {\n"
RELEASE = "if (kt > 0 && lane == 0) mbar_arrive(smem_u32(&ring.empty[(kt - 1) % STAGES]));"

HOST_MODEL = pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the regions needs g++")


def _mine(tmp_path: Path, text: str) -> Path:
    assert text != SOLUTION, "the mistake was not made: its text is not in the solution"
    path = tmp_path / "ex10_producer.cu"
    path.write_text(text)
    return path


@HOST_MODEL
def test_solution_passes_the_cpu_part():
    result = check("ex10_producer", ROOT / "solutions" / "ex10_producer.cu", gpu=False)
    assert result.verdict == "could not check", str(result)
    assert "one producer thread loading every slice" in result.message and "the CPU part passed" in result.unchecked


def test_untouched_exercise_fails_with_the_hint():
    result = check("ex10_producer", gpu=False)
    assert result.verdict == "FAIL"
    assert "has no setmaxnreg.dec" in result.message and "Hint: the producer warpgroup." in result.message
    assert "Traceback" not in str(result)


@HOST_MODEL
def test_wrong_empty_parity_is_played_through_the_ring(tmp_path):
    result = check("ex10_producer", _mine(tmp_path, SOLUTION.replace(EMPTY_PARITY, "(kt / STAGES) % 2")), gpu=False)
    assert result.verdict == "FAIL"
    assert "before loading slice 4 (4 stages) the producer makes a wait on empty[0] for parity 1" in result.message
    assert "rung 10 makes empty[0] for parity 0" in result.message and "the ring model finds" in result.message


@HOST_MODEL
def test_setmaxnreg_inside_the_elected_thread_is_caught(tmp_path):
    text = SOLUTION.replace(DEALLOC, "        if (tid == 0) {\n            warpgroup_reg_dealloc<PRODUCER_REGS>();\n")
    result = check("ex10_producer", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL"
    assert "thread 1 of the producer warpgroup calls warpgroup_reg_dealloc 0 times" in result.message


@HOST_MODEL
def test_releasing_the_stage_still_read_is_an_overwrite(tmp_path):
    text = SOLUTION.replace(RELEASE, "if (lane == 0) mbar_arrive(smem_u32(&ring.empty[kt % STAGES]));")
    result = check("ex10_producer", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL"
    assert "the consumers free stage 0, which holds slice 0; wgmma_wait_group<1> leaves" in result.message


@HOST_MODEL
def test_every_lane_arriving_is_counted(tmp_path):
    text = SOLUTION.replace(RELEASE, "if (kt > 0) mbar_arrive(smem_u32(&ring.empty[(kt - 1) % STAGES]));")
    result = check("ex10_producer", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL" and "consumer warp 0 arrives 32 times" in result.message


@HOST_MODEL
def test_extra_question_off_by_one_is_named(tmp_path):
    text = SOLUTION.replace("kt >= in_flight ? (kt - in_flight) % stages : -1", "kt > in_flight ? (kt - in_flight) % stages : -1")
    result = check("ex10_producer", _mine(tmp_path, text), gpu=False)
    assert result.verdict == "FAIL" and "released_stage(kt=0, stages=2, in_flight=0) = -1, expected 0" in result.message


@pytest.mark.gpu
def test_solution_runs_right_on_the_gpu():
    result = check("ex10_producer", ROOT / "solutions" / "ex10_producer.cu", gpu=True)
    assert result.passed, str(result)
    assert "on this GPU: right on" in result.message
