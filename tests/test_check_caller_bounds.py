"""The verdict process's own work on a learner's answers is bounded in time and memory: the explanation of a wrong
answer (which may ask for more answers and work on them) stops at the check's time limit and keeps the wrong answer
it found; the caller maps at most CALLER_MEMORY_GIB more while it judges (RLIMIT_AS), and what it starts meanwhile
gets the limit it had before; a host model's output is counted before it is split."""
from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hgemm_course.check import sandbox
from hgemm_course.check.caller import caller_time_limit
from hgemm_course.check.feedback import CALLER_MEMORY_GIB, Exercise, explained
from hgemm_course.check.python_exercise import run_in_child

ROOT = Path(__file__).resolve().parent.parent
EX12 = (ROOT / "solutions" / "ex12_streamk.py").read_text()
EX03 = (ROOT / "solutions" / "ex03_wmma.cu").read_text()
EX03_FIRST_LOAD = "#pragma unroll\n            for (int i = 0; i < FRAG_M; ++i) {\n                wmma::load_matrix_sync(a_frag[i]"
CLI_MEMORY_BYTES = 8 << 30      # the CLI runs under this much address space: an unbounded explanation fails loudly


def _learner(tmp_path: Path, text: str) -> Path:
    """``text`` as the learner's ex12 file, in a folder of its own (which its code may write), written to write its
    process's pid beside it on import."""
    folder = tmp_path / "learner"
    folder.mkdir()
    path = folder / "ex12_streamk.py"
    future = "from __future__ import annotations\n"
    assert future in text
    path.write_text(text.replace(future, future + f"import os as _os\nopen({str(folder / 'pid')!r}, 'w')"
                                                  ".write(str(_os.getpid()))\n", 1))
    return path


def _gone(path: Path) -> bool:
    """Whether the learner's process that wrote ``path.parent / 'pid'`` has ended (a zombie has)."""
    pid = int((path.parent / "pid").read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _cli_check(path: Path, timeout: int) -> tuple[subprocess.CompletedProcess, float]:
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (CLI_MEMORY_BYTES, CLI_MEMORY_BYTES))

    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "hgemm_course.course.cli", "check", "ex12", "--path", str(path), "--timeout",
                          str(timeout)], capture_output=True, text=True, cwd=path.parent.parent, timeout=300,
                         preexec_fn=limit)
    return out, time.monotonic() - start


def test_an_ex12_answer_whose_explanation_would_take_gigabytes_is_a_fail_within_the_timeout(tmp_path):
    """ctas_of_tile naming CTA 10**9 as a tile's last: the explanation listed every CTA up to it, in the caller."""
    path = _learner(tmp_path, EX12.replace(
        "    return cta_of(tile * iters_per_tile), cta_of((tile + 1) * iters_per_tile - 1)",
        "    last = cta_of((tile + 1) * iters_per_tile - 1)\n"
        "    return cta_of(tile * iters_per_tile), last if ctas < 66 else 10 ** 9", 1))
    out, took = _cli_check(path, 10)
    text = out.stdout + out.stderr
    assert out.returncode == 1 and "Traceback" not in text and "MemoryError" not in text, text
    assert "ctas_of_tile(tile=0, tiles=144, iters_per_tile=48, ctas=66): expected (0, 0), got (0, 1000000000)." in text
    assert "wait for the flag of CTA(s) 1-1000000000 (CTA 1000000000 is not even in the grid of 66)" in text
    assert took < 10 + 20, took     # the timeout, and the CLI's own start
    assert _gone(path)


def test_an_explanation_whose_answers_come_too_slowly_keeps_the_wrong_answer(tmp_path):
    """The explanation asks for every CTA's range again; here each of those answers takes a second: the check ends
    at its time limit with the wrong answer it found, not with 'no answer'."""
    slow = ("_calls = []\n\n\ndef cta_k_range(cta, tiles, iters_per_tile, ctas):\n"
            "    begin, end = _right(cta, tiles, iters_per_tile, ctas)\n"
            "    if (tiles, ctas) != (144, 66):\n        return begin, end\n"
            "    _calls.append(cta)\n"
            "    if len(_calls) > 66:                # the explanation's calls: slow\n"
            "        import time; time.sleep(1)\n"
            "    return begin, end + (cta == 65)\n")
    path = _learner(tmp_path, EX12.replace("def cta_k_range(", "def _right(", 1) + "\n\n" + slow)
    out, took = _cli_check(path, 6)
    text = out.stdout + out.stderr
    assert out.returncode == 1 and "Traceback" not in text, text
    assert "cta_k_range(cta=65, tiles=144, iters_per_tile=48, ctas=66): expected (6808, 6912), got (6808, 6913)." \
        in text, text
    assert "The rest of the explanation is left out" in text and "No answer after" not in text
    assert took < 6 + 20, took
    assert _gone(path)


def test_an_explanation_past_its_time_is_cut_and_says_so():
    start = time.monotonic()
    with caller_time_limit(0.3):
        note = explained(lambda: [None for _ in iter(int, 1)])     # endless
    assert "left out" in note and "time limit" in note and time.monotonic() - start < 2
    assert explained(lambda: "the explanation") == "the explanation"


def test_the_callers_memory_is_bounded_inside_and_its_children_get_the_limit_it_had():
    before = resource.getrlimit(resource.RLIMIT_AS)
    probe = [sys.executable, "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_AS))"]
    with sandbox.bounded_memory(256 << 20):
        with pytest.raises(MemoryError):
            bytearray(1 << 30)
        inner = sandbox.run(probe, timeout=30, limits=sandbox.Limits(cpu_s=30), stdout_cap=1000, stderr_cap=1000)
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    assert inner.returncode == 0 and inner.stdout.text().strip() == str(before), inner.stderr.text()
    assert len(bytearray(1 << 30)) == 1 << 30                       # the limit is gone with the block


def test_an_answer_the_checker_would_need_gigabytes_for_is_a_one_line_fail():
    """A checker that sizes its own work by what the learner returned (here: bytes of it) stops at the bound."""
    exercise = Exercise("ex05_swizzle", "swizzle_128b", "",
                        verify=lambda learner: str(len(bytes(learner(row=0, chunk=0)))))
    start = time.monotonic()
    result = run_in_child(exercise, func=lambda row, chunk: 64 << 30, timeout=20)
    assert result.verdict == "FAIL" and time.monotonic() - start < 20
    assert f"needed more than the {CALLER_MEMORY_GIB} GiB the checker allows its own work" in result.message
    assert "Traceback" not in str(result)


@pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the regions needs g++")
def test_a_region_that_prints_millions_of_short_lines_is_a_fail_before_they_are_split(tmp_path):
    """Under the 64 MiB cap, two million short lines made the caller split them all, word by word."""
    from hgemm_course.check import check
    from hgemm_course.check.host_model import MAX_EVENTS

    flood = ('#ifndef __CUDACC__\nif (kk == 0) for (int n = 0; n < 2000000; ++n) std::printf("x\\n");\n#endif\n')
    path = tmp_path / "ex03_wmma.cu"
    path.write_text(EX03.replace(EX03_FIRST_LOAD, flood + EX03_FIRST_LOAD))
    result = check("ex03", path, gpu=False)
    assert result.verdict == "FAIL", str(result)
    assert f"printed more than {MAX_EVENTS} lines" in result.message and "Traceback" not in str(result)


@pytest.mark.parametrize("answer", ["list(range(1_000_000))", "'x' * 8_000_000"])
def test_a_huge_wrong_answer_is_quoted_in_a_verdict_a_person_can_read(answer, tmp_path):
    """The verdict quoted the whole repr of what came back: 8 MB of one line for a string of 8 million characters."""
    from hgemm_course.check import check
    from hgemm_course.check.feedback import MAX_LINE

    path = tmp_path / "mine.py"
    path.write_text(f"def swizzle_128b(row, chunk):\n    return {answer}\n")
    result = check("ex05", path)
    assert result.verdict == "FAIL" and "swizzle_128b(row=0, chunk=0) returned" in result.message
    assert max(map(len, str(result).splitlines())) <= MAX_LINE + 40 and "characters more)" in result.message


@pytest.mark.skipif(shutil.which("g++") is None, reason="the host model of the regions needs g++")
@pytest.mark.parametrize("line", ["acc x y", "load"])
def test_a_stray_printf_in_ex03s_region_is_a_one_line_fail(line, tmp_path):
    """ex03's fragment model read its lines unguarded: 'load' gave an IndexError traceback, 'acc x y' a refusal
    (exit 2) that blamed no one, in place of a FAIL."""
    from hgemm_course.check import check

    stray = f'#ifndef __CUDACC__\nif (kk == 0) std::printf("{line}\\n");\n#endif\n'
    path = tmp_path / "ex03_wmma.cu"
    path.write_text(EX03.replace(EX03_FIRST_LOAD, stray + EX03_FIRST_LOAD))
    result = check("ex03", path, gpu=False)
    assert result.verdict == "FAIL" and "Traceback" not in str(result), str(result)
    assert "printed a line the checker cannot read" in result.message
