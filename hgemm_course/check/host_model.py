"""Run a learner's kernel regions on the CPU: the region's own C++ compiled with g++ into a small
host program whose stand-ins for the device functions (wgmma, mbarriers, setmaxnreg, TMA loads)
print what they were asked to do, one line each. The checker reads those lines and compares
them with the course's models (the descriptor decoder, the ring, the tile order).

The region is compiled as written, under ``#line`` directives, so g++'s messages name the
learner's file and line. Without g++ the model is skipped: the checker says so in one line.

The program is the learner's code, so both the compile and the run are supervised (:mod:`.sandbox`):
within the check's time limit (:func:`time_limit`; the run at most :data:`RUN_TIMEOUT_S`), within
:data:`~.feedback.MEMORY_LIMIT_GIB` GiB, output capped at :data:`MAX_OUTPUT_BYTES`, and every process
they start ended when they end.
"""
from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
from pathlib import Path

from ..library.paths import KERNELS_DIR, PTX_SNIPPETS_DIR
from . import sandbox
from .feedback import MEMORY_LIMIT_GIB, OUTPUT_CAP_BYTES, Failure

RUN_TIMEOUT_S = 20
COMPILE_TIMEOUT_S = 120
MAX_EVENTS = 1_000_000    # a stand-in stops the program past this many events: a loop that never ends
MAX_OUTPUT_BYTES = 64 << 20   # what a model may print: its events, a few MiB for the course's regions
MAX_EXTRA_LINES = 1 << 16     # lines a model prints besides its events: what its driver says of threads and steps
_time_limit_s: float | None = None

PRELUDE = f"""// the host stand-ins shared by every model
#include <cstdio>
#include <cstdlib>
#define __host__
#define __device__
#define __forceinline__ inline
#define __syncwarp() ((void)0)
struct int2 {{ int x, y; }};
static long g_events = 0;
static void event_done() {{ if (++g_events > {MAX_EVENTS}) {{ std::printf("\\nTOO_MANY\\n"); std::exit(0); }} }}
constexpr int cdiv(int a, int b) {{ return (a + b - 1) / b; }}
"""


class ModelUnavailable(Exception):
    """The host model cannot run here (no g++) or cannot build the region; the GPU run decides."""


def region(text: str, first_line: int, shown: str) -> str:
    """``text`` under a ``#line`` directive naming the learner's file, then back to the program's own lines."""
    return f'#line {first_line} "{shown}"\n{text}\n#line 1 "host model"\n'


@contextlib.contextmanager
def time_limit(seconds: float):
    """Within the block, no compile or run of a model takes longer than ``seconds`` (the check's timeout)."""
    global _time_limit_s
    before, _time_limit_s = _time_limit_s, seconds
    try:
        yield
    finally:
        _time_limit_s = before


def _limits(seconds: float) -> sandbox.Limits:
    return sandbox.Limits(cpu_s=math.ceil(seconds) + 5, memory_bytes=MEMORY_LIMIT_GIB << 30)


def parsed(reader, lines: list[list[str]], shown: str):
    """``reader(lines)``, the model's output read back; a line it cannot read (the region printed one of its own,
    an empty one) is a Failure that shows it."""
    try:
        return reader(lines)
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, ArithmeticError, RecursionError):
        bad = next((words for words in lines if not words or not words[0].isidentifier()), None)
        shown_line = " ".join(bad)[:200] if bad is not None else None     # else it looks like one of the model's
        what = f" ({shown_line!r})" if shown_line is not None else ""
        raise Failure(f"{shown}: the host model of your region printed a line the checker cannot read{what}: does "
                      "your region print (printf) anything of its own? Remove it.",
                      {"input": shown, "expected": "the model's trace lines", "got": shown_line or "a line out of its "
                                                                                                  "format"}) from None


def run(program: str, shown: str) -> list[list[str]]:
    """Compile and run ``program``; its output lines, split into words. A compile error, or no g++,
    is :class:`ModelUnavailable`; a run past its time, :data:`MAX_EVENTS` or :data:`MAX_OUTPUT_BYTES`,
    is a Failure."""
    compiler = shutil.which("g++")
    if compiler is None:
        raise ModelUnavailable("g++ is not installed, so the host model of your region was skipped")
    compile_s = min(COMPILE_TIMEOUT_S, _time_limit_s or COMPILE_TIMEOUT_S)
    run_s = min(RUN_TIMEOUT_S, _time_limit_s or RUN_TIMEOUT_S)
    with tempfile.TemporaryDirectory(prefix="hgemm-course-model-", ignore_cleanup_errors=True) as folder:
        source, binary = Path(folder) / "model.cpp", Path(folder) / "model"
        source.write_text(program)
        build = sandbox.run([compiler, "-std=c++17", "-O0", "-w", f"-I{KERNELS_DIR}", f"-I{PTX_SNIPPETS_DIR}",
                             str(source), "-o", str(binary)], timeout=compile_s, limits=_limits(compile_s),
                            cwd=folder, stdout_cap=OUTPUT_CAP_BYTES, stderr_cap=OUTPUT_CAP_BYTES)
        if build.timed_out:
            raise Failure(f"{shown}: g++ did not compile the host model of your region within {compile_s:g} s: a "
                          "template or macro that expands without end?",
                          {"input": shown, "expected": "a region that compiles", "got": "no end"})
        if build.returncode != 0:
            errors = [line for line in build.stderr.text().splitlines() if "error" in line]
            first = (errors or build.stderr.text().strip().splitlines() or ["no message"])[0]
            raise ModelUnavailable(f"the host model could not build your region ({first.strip()})")
        proc = sandbox.run([str(binary)], timeout=run_s, limits=_limits(run_s), cwd=folder,
                           stdout_cap=MAX_OUTPUT_BYTES, stderr_cap=OUTPUT_CAP_BYTES, stop_over_cap=True)
    if proc.timed_out:
        raise Failure(f"{shown}: your region, run on the CPU, did not finish within {run_s:g} s: a loop "
                      "that never ends (does its counter advance?). On the GPU the kernel would hang.",
                      {"input": shown, "expected": "the loop ends", "got": "no end"})
    if proc.over_cap:
        raise Failure(f"{shown}: your region, run on the CPU, printed more than {MAX_OUTPUT_BYTES >> 20} MiB, "
                      "where the model's own events take well under one: a loop that never ends, or a printf of "
                      "your own in it? The run was stopped there.",
                      {"input": shown, "expected": "the model's events", "got": f"over {MAX_OUTPUT_BYTES} bytes"})
    if proc.signals:
        raise Failure(f"{shown}: your region, run on the CPU, sent {proc.signals[0]['signal']} to the checker; the "
                      "run was stopped there.", {"input": shown, "expected": "the model's events",
                                                  "got": proc.signals[0]["signal"]})
    text = proc.stdout.text()
    if text.count("\n") > MAX_EVENTS + MAX_EXTRA_LINES:     # counted before anything is split: no event is 2 lines
        raise Failure(f"{shown}: your region, run on the CPU, printed more than {MAX_EVENTS} lines, more than the "
                      "model's stand-ins can have events: a printf of your own in a loop? Remove it.",
                      {"input": shown, "expected": "the model's events", "got": f"over {MAX_EVENTS} lines"})
    lines = [line.split() for line in text.splitlines()]
    if lines and lines[-1] == ["TOO_MANY"]:
        raise Failure(f"{shown}: your region, run on the CPU, went on past {MAX_EVENTS} steps: a loop that never "
                      "ends (does its counter advance?). On the GPU the kernel would hang.",
                      {"input": shown, "expected": "the loop ends", "got": "no end"})
    if proc.returncode != 0:
        raise ModelUnavailable(f"the host model of your region stopped with exit status {proc.returncode}")
    return lines


def all_regions(compiled, shown: str, regions: int) -> list[tuple[str, int]]:
    """The learner's marked regions of a kernel exercise of ``regions`` regions, each as (text, first line); a
    Failure when the file's regions cannot be found."""
    found = compiled.regions()
    if len(found) != regions:
        raise Failure(f"{shown}: the checker finds {len(found)} marked regions, not the exercise's {regions}: keep the "
                      "BEGIN SOLUTION / END SOLUTION lines, or the lines around each region, as the exercise gave them.",
                      {"input": shown, "expected": regions, "got": len(found)})
    return found


def last_region(compiled, shown: str, regions: int) -> tuple[str, int]:
    """The learner's last marked region of a kernel exercise of ``regions`` regions (the loop its host model plays),
    as (text, first line); a Failure when the file's regions cannot be found."""
    return all_regions(compiled, shown, regions)[-1]

