"""What a kernel exercise is (a whole ``.cu`` file with regions for the learner to write) and what the CPU part of
its check knows about the learner's kernel once it has compiled it (:class:`Compiled`: the PTX, the resources, the
learner's regions), and where it is checked (:func:`check_plan`: the target its file is compiled for, and whether
the GPU part runs). How such an exercise is checked is :mod:`.kernel_check`'s.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..library.paths import REPO_ROOT
from ..library.target import RECORDED, Target
from .feedback import Failure

if TYPE_CHECKING:
    from .generate import Region

GPU_TIMEOUT_S = 120
MAX_REPORT_BYTES = 256 << 20   # what a compile or GPU-run child may send back (PTX, reports)
GPU_SHAPES = ((1000, 1000, 1000), (257, 136, 72), (384, 512, 4096))   # tails in M, N and K; a long K


@dataclass(frozen=True)
class PtxRule:
    """The PTX must contain ``instruction`` (a prefix of an opcode); ``why`` says what it does."""

    instruction: str
    why: str


@dataclass(frozen=True)
class KernelExercise:
    """A ``.cu`` exercise: the rung's kernel with one region for the learner to write."""

    name: str                       # "ex07_mbarrier"
    rung: str                       # "07": whose launcher, template instantiation and target it uses
    description: str                # one line for ``hgemm-course check --list``
    ptx_rules: tuple[PtxRule, ...]  # instructions the finished region must produce
    structural: Callable[["Compiled"], str] | None = None  # raises Failure or returns a note
    asm: Callable[["Compiled"], str] | None = None  # the learner's asm, checked before the resources once every
                                                    # region is written: a wrong operand can make ptxas spill
    gpu_shapes: tuple[tuple[int, int, int], ...] = GPU_SHAPES

    @property
    def file_name(self) -> str:
        return f"{self.name}.cu"


@dataclass
class Compiled:
    """What the CPU part knows about the learner's kernel."""

    path: Path
    text: str
    ptx: str                         # PTX of the whole module
    kernel_ptx: str                  # PTX of the kernel's entry only
    registers: int
    spills: int
    target: Target                   # the target it is compiled for and checked on: its tiles are sized for it
    arch: str                        # the architecture it is compiled for
    name_expressions: tuple[str, ...]  # what was compiled: the rung's instantiations for ``target`` (the first
                                       # is the kernel read above), with their shared-memory size checks
    opcodes: Counter = field(default_factory=Counter)
    exercise_regions: list[Region] = field(default_factory=list)  # the exercise's regions: stubs and neighbours
    extras: int = 0                  # how many of the last regions are extra questions (optional)

    def regions(self) -> list[tuple[str, int]]:
        """The learner's regions, each with its first line number: between the BEGIN/END SOLUTION
        markers, else (markers deleted, or a solution file) between the lines that surround each
        region in the exercise; the whole file from line 1 when neither is found."""
        lines = self.text.splitlines()
        out, start = [], None
        for i, line in enumerate(lines):
            if line.strip() == "// BEGIN SOLUTION" and start is None:
                start = i + 1
            elif line.strip() == "// END SOLUTION" and start is not None:
                out.append(("\n".join(lines[start:i]), start + 1))
                start = None
        return out or self._anchored(lines) or [(self.text, 1)]

    def _anchored(self, lines: list[str]) -> list[tuple[str, int]]:
        out, pos = [], 0
        stripped = [line.strip() for line in lines]
        for region in self.exercise_regions:
            try:
                start = stripped.index(region.before, pos) + 1
                end = self._end(stripped, region, start) if region.after else len(lines)
            except ValueError:
                return []
            out.append(("\n".join(lines[start:end]), start + 1))
            pos = end
        return out

    @staticmethod
    def _end(stripped: list[str], region: Region, start: int) -> int:
        """Where the region that starts at line ``start`` ends: the first line ``region.after`` after which the
        region's braces balance as the course's solution's do (a region's own loop can end with the same ``}``
        as the line after it), else the first such line."""
        def balance(lines) -> int:
            return sum(line.count("{") - line.count("}") for line in lines)

        want, first = balance(region.solution), stripped.index(region.after, start)
        end = first
        while balance(stripped[start:end]) != want:
            try:
                end = stripped.index(region.after, end + 1)
            except ValueError:
                return first
        return end

    def untouched(self) -> list[int]:
        """The first lines of the regions that still hold the exercise's stub, word for word."""
        def code(text):
            return [line.strip() for line in text.splitlines() if line.strip()]
        mine = self.regions()
        if len(mine) != len(self.exercise_regions):
            return []
        return [first for (text, first), stub in zip(mine, self.exercise_regions) if code(text) == code("".join(stub.stub))]

    def extra_written(self) -> bool:
        """Whether the learner has written the extra question's regions (they are optional)."""
        if not self.extras:
            return False
        firsts = [first for _, first in self.regions()[-self.extras:]]
        return not set(firsts) <= set(self.untouched())

    def extra_question(self, name: str, check: Callable[[], None]) -> str:
        """The note on the extra question ``name``: ``check()`` (a Failure when wrong) runs when its region is
        written; a wrong answer fails the check, saying that the rest passed."""
        if not self.extra_written():
            return f"extra question ({name}): not checked, its region is not written yet"
        try:
            check()
        except Failure as failure:
            raise Failure("The rest passed, but the extra question is wrong (it is optional: leave its region as "
                          f"the exercise gave it to skip it):\n{failure.message}", failure.first_failure) from None
        return f"extra question: {name} is right"

    def todo_hint(self) -> str | None:
        """The TODO comment of the first region that still has one, joined into sentences."""
        hints = []
        for region, _ in self.regions():
            lines = [line.strip().removeprefix("//").strip() for line in region.splitlines()
                     if line.strip().startswith("//")]
            todo = next((i for i, line in enumerate(lines) if line.startswith("TODO:")), None)
            if todo is not None:
                hints.append(" ".join([lines[todo].removeprefix("TODO:").strip(), *lines[todo + 1:]]))
        return hints[0] if hints else None


def display_path(path: Path) -> str:
    """``exercises/ex07_mbarrier.cu`` for a file of the checkout, else the path as given."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(REPO_ROOT)) if REPO_ROOT else str(path)
    except ValueError:
        return str(path)


def check_plan(exercise: KernelExercise, gpu: bool | None = None) -> tuple[Target, str | None]:
    """Where the learner's kernel is checked, decided before any of it runs: the target its file is
    compiled for, and why the GPU part cannot run (None: it runs, on :func:`hgemm_course.library.target.runnable`).

    The file is compiled for the current target (the GPU here, or the one chosen) where that runs the rung,
    else for the recorded H200's, as on a machine with no GPU. ``gpu=False`` switches the GPU part off;
    ``gpu=True`` asks for it, which still needs a GPU that runs the rung."""
    from ..library import target
    from ..library.ladder import get

    rung = get(exercise.rung)
    chosen = target.current()
    compile_for = chosen if rung.refusal(chosen) is None else RECORDED
    if gpu is False:
        return compile_for, "the GPU part was switched off (gpu=False)"
    here = target.runnable()
    if here is None:
        return compile_for, _no_gpu(chosen)
    return compile_for, rung.refusal(here)


def _no_gpu(chosen: Target) -> str:
    """Why no GPU runs kernels here, in one line."""
    from ..library import device, target

    info, reason, _ = device.probe_gpu()
    if info is None:
        return f"there is no GPU here: {reason}"
    if device.cudasim_enabled():
        return f"NUMBA_ENABLE_CUDASIM=1 is set, which hides this {info.name}; unset it to run the kernel"
    return (f"the target chosen is {chosen.describe()}, not {target.present().describe()}: "
            f"target.named({chosen.arch!r}).run_here() runs its code on this GPU")
