"""Check a kernel exercise (a whole ``.cu`` file with regions to fill in, :mod:`.kernel_exercise`).

A kernel exercise is checked in two parts:

1. **CPU, always.** The learner's file is compiled whole with NVRTC for the target it is checked
   on, with the rung's template instantiations sized for that target (:func:`check_plan`: the GPU
   here where it runs the rung, else the recorded H200's), in a child process within the check's time
   and memory limits (:mod:`.kernel_compile`, :mod:`.compile_child`); a compile error is reported at the
   learner's own file and line (``exercises/ex07_mbarrier.cu:123: error: ...``). Then ptxas's
   resource report must show no spills, the PTX must contain the instructions the exercise is
   about, and the exercise's own structural check runs (instruction counts, a model of the pipeline, ...).
2. **GPU, where one runs the rung.** The learner's kernel runs through the rung's launcher in a
   separate process (``python -m hgemm_course.check.gpu_run``) with a timeout, on random
   inputs whose sizes leave tails in M, N and K; that process only produces C, which is compared
   here with this process's own reference (:mod:`.gpu_verdict`). An illegal address, a hang or a wrong
   element is reported; the notebook's own CUDA context never sees the learner's kernel.

Without the GPU part (no GPU, or one that lacks the rung's features) the verdict is "could not
check", with one line saying why and what the CPU part did prove; a CPU-part failure is a FAIL.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..library.target import FEATURES
from . import confine, host_model, sandbox, watch
from .caller import OverTime, caller_time_limit, prepare
from .feedback import CALLER_MEMORY_GIB, CheckResult, Failure, Unchecked
from .gpu_verdict import run_on_gpu
from .kernel_compile import compile_learner, count
from .kernel_exercise import GPU_TIMEOUT_S, Compiled, KernelExercise, check_plan, display_path
from .loader import learner_file

if TYPE_CHECKING:
    from ..library.ladder import Rung


def cpu_checks(exercise: KernelExercise, compiled: Compiled) -> list[str]:
    """Resources, PTX rules and the exercise's structural check; returns the notes of what passed."""
    shown = display_path(compiled.path)
    asm = exercise.asm(compiled) if exercise.asm is not None and not compiled.untouched() else None
    if compiled.spills:
        raise Failure(f"{shown}: ptxas spills {compiled.spills} bytes to local memory ({compiled.registers} registers). "
                      "The rung's kernel does not spill; an array indexed with a value the compiler cannot "
                      "unroll (a loop without #pragma unroll, a runtime index) forces it to.",
                      {"input": shown, "expected": "no spills", "got": f"{compiled.spills} bytes"})
    for rule in exercise.ptx_rules:
        if count(compiled.opcodes, rule.instruction) == 0:
            hint = compiled.todo_hint()
            message = f"{shown}: the kernel's PTX has no {rule.instruction}: {rule.why}"
            if hint:
                lines = [str(line) for _, line in compiled.regions()]
                where = f"region at line {lines[0]} is" if len(lines) == 1 else f"regions at lines {', '.join(lines)} are"
                message += (f"\nThe {where} not written yet (the TODO is still there)."
                            f"\nHint: {hint}")
            raise Failure(message, {"input": shown, "expected": rule.instruction, "got": "absent"})
    extras = [first for _, first in compiled.regions()[len(compiled.regions()) - compiled.extras:]]
    untouched = [first for first in compiled.untouched() if first not in extras]   # the extra question is optional
    if untouched:
        where = f"region at line {untouched[0]} is" if len(untouched) == 1 else \
            f"regions at lines {', '.join(map(str, untouched))} are"
        hint = compiled.todo_hint()
        raise Failure(f"{shown}: the {where} not written yet (the exercise's placeholder is still there)."
                      + (f"\nHint: {hint}" if hint else ""),
                      {"input": shown, "expected": "your code in the marked regions", "got": "the placeholder"})
    notes = [f"compiles for {compiled.arch} as {compiled.name_expressions[0]} (sized for "
             f"{compiled.target.describe()}): {compiled.registers} registers, no spills",
             "PTX has " + ", ".join(f"{count(compiled.opcodes, r.instruction)} x {r.instruction}"
                                    for r in exercise.ptx_rules)]
    if asm:
        notes.append(asm)
    if exercise.structural is not None:
        note = exercise.structural(compiled)
        if note:
            notes.append(note)
    return notes


def runs_on(rung: "Rung") -> str:
    """The features that decide where ``rung`` runs, with where they are: ``cp.async and mma.sync m16n8k16
    (sm_80 and later)``, ``wgmma and setmaxnreg (sm_90a only: H100/H200)``."""
    deciding = [FEATURES[n][1] for n in rung.needs if FEATURES[n][0] == rung.arch]
    names, wheres = zip(*(text.split(" (", 1) for text in deciding))
    if len(set(wheres)) == 1:
        return " and ".join(names) + f" ({wheres[0]}"
    return " and ".join(deciding)


def rerun_command(exercise: KernelExercise, source: Path) -> str:
    """The command that checks ``source`` again: ``hgemm-course check NAME``, with ``--path`` unless it is
    the file the command finds by itself."""
    try:
        found = learner_file(exercise.file_name)
    except Failure:
        found = None
    path = "" if found == Path(source).resolve() else f" --path {display_path(source)}"
    return f"hgemm-course check {exercise.name}{path}"


def check_kernel(exercise: KernelExercise, path: str | Path | None = None, *, gpu: bool | None = None,
                 timeout: float = GPU_TIMEOUT_S) -> CheckResult:
    """Both parts: the CPU part always, the GPU part where :func:`check_plan` lets it run (``gpu``: None
    runs it where a GPU runs the rung, False never). Without the GPU part the verdict is "could not
    check" (exit code 2), not PASS. ``path`` defaults to the learner's copy (see :func:`.loader.learner_file`).
    The compile, every host-model run and the GPU run each take at most ``timeout`` seconds, in processes
    of their own; a change to the course's files or results while they ran is a FAIL (:mod:`.watch`)."""
    prepare(draw=False)
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True   # so the check itself changes no file
    before = watch.snapshot()
    try:
        with confine.Sealed(), host_model.time_limit(timeout), caller_time_limit(3 * timeout + 30):
            result = _check_kernel(exercise, path, gpu, timeout)
    except OverTime as over:
        return CheckResult(exercise.name, False, str(over), {"input": None, "expected": "a verdict in time",
                                                             "got": "no verdict"})
    finally:
        sys.dont_write_bytecode = writes_bytecode
    after = watch.snapshot()
    changed = watch.changes(before, after)
    if changed:
        return CheckResult(exercise.name, False, watch.message(changed, watch.undo(before, after)),
                           {"input": None, "expected": "the course's files unchanged", "got": changed[:5]},
                           source=result.source)
    return result


def _check_kernel(exercise: KernelExercise, path: str | Path | None, gpu: bool | None, timeout: float) -> CheckResult:
    from ..library.ladder import get

    source, unchecked = None, None
    try:
        source = learner_file(exercise.file_name, path)
        on, not_run = check_plan(exercise, gpu)      # before the bound below: it may start CUDA's driver here
        with sandbox.bounded_memory(CALLER_MEMORY_GIB << 30):   # what this process reads of the children's work
            with sandbox.also_writable(watch.own_folders(source)):
                compiled = compile_learner(exercise, source, on, timeout)
                notes = cpu_checks(exercise, compiled)
            if not_run is None:
                notes.append(run_on_gpu(exercise, source, timeout=timeout, compiled=compiled))
            else:
                unchecked = f"the CPU part passed, but the kernel was not run: {not_run}"
    except Failure as failure:
        return CheckResult(exercise.name, False, failure.message, failure.first_failure, source=source)
    except MemoryError:
        return CheckResult(exercise.name, False,
                           f"Checking your file needed more than the {CALLER_MEMORY_GIB} GiB the checker allows its own "
                           "work on what the compiler, the host model of your regions or the GPU run gave back: do "
                           "your regions unroll or print far more than the exercise asks?",
                           {"input": None, "expected": "a verdict", "got": f"over {CALLER_MEMORY_GIB} GiB"},
                           source=source)
    except Unchecked as why:
        unchecked = f"the CPU part passed, but {why}"
    listed = "\n".join(f"- {n}" for n in notes)
    if unchecked is None:
        return CheckResult(exercise.name, True, "Passed:\n" + listed, source=source)
    return CheckResult(
        exercise.name, False,
        f"The CPU part passed:\n{listed}\n"
        f"Not checked: what C the kernel computes. Run `{rerun_command(exercise, source)}` on a GPU with "
        f"{runs_on(get(exercise.rung))} to run it and compare C with a reference.",
        source=source, unchecked=unchecked)
