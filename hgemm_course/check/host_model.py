"""Run a learner's kernel regions on the CPU: the region's own C++ compiled with g++ into a small
host program whose stand-ins for the device functions (wgmma, mbarriers, setmaxnreg, TMA loads)
print what they were asked to do, one line each. The checker reads those lines and compares
them with the course's models (the descriptor decoder, the ring, the tile order).

The region is compiled as written, under ``#line`` directives, so g++'s messages name the
learner's file and line. Without g++ the model is skipped: the checker says so in one line.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from ..paths import KERNELS_DIR, PTX_SNIPPETS_DIR
from .feedback import Failure

RUN_TIMEOUT_S = 20
MAX_EVENTS = 1_000_000    # a stand-in stops the program past this many events: a loop that never ends

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


def run(program: str, shown: str) -> list[list[str]]:
    """Compile and run ``program``; its output lines, split into words. A compile error, or no g++,
    is :class:`ModelUnavailable`; a run past :data:`RUN_TIMEOUT_S` or :data:`MAX_EVENTS` is a Failure."""
    compiler = shutil.which("g++")
    if compiler is None:
        raise ModelUnavailable("g++ is not installed, so the host model of your region was skipped")
    with tempfile.TemporaryDirectory(prefix="hgemm-course-model-") as folder:
        source, binary = Path(folder) / "model.cpp", Path(folder) / "model"
        source.write_text(program)
        build = subprocess.run([compiler, "-std=c++17", "-O0", "-w", f"-I{KERNELS_DIR}", f"-I{PTX_SNIPPETS_DIR}",
                                str(source), "-o", str(binary)], capture_output=True, text=True, timeout=120)
        if build.returncode != 0:
            errors = [line for line in build.stderr.splitlines() if "error" in line]
            first = (errors or build.stderr.strip().splitlines() or ["no message"])[0]
            raise ModelUnavailable(f"the host model could not build your region ({first.strip()})")
        try:
            proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failure(f"{shown}: your region, run on the CPU, did not finish within {RUN_TIMEOUT_S} s: a loop "
                          "that never ends (does its counter advance?). On the GPU the kernel would hang.",
                          {"input": shown, "expected": "the loop ends", "got": "no end"}) from None
    lines = [line.split() for line in proc.stdout.splitlines()]
    if lines and lines[-1] == ["TOO_MANY"]:
        raise Failure(f"{shown}: your region, run on the CPU, went on past {MAX_EVENTS} steps: a loop that never "
                      "ends (does its counter advance?). On the GPU the kernel would hang.",
                      {"input": shown, "expected": "the loop ends", "got": "no end"})
    if proc.returncode != 0:
        raise ModelUnavailable(f"the host model of your region stopped with exit code {proc.returncode}")
    return lines
