"""The machinery shared by the kernel exercises (a whole ``.cu`` file with one region to fill in).

A kernel exercise is checked in two parts:

1. **CPU, always.** The learner's file is compiled whole with NVRTC for the target it is checked
   on, with the rung's template instantiations sized for that target (:func:`check_plan`: the GPU
   here where it runs the rung, else the recorded H200's), in a child process within the check's time
   and memory limits (:mod:`.compile_child`); a compile error is reported at the
   learner's own file and line (``exercises/ex07_mbarrier.cu:123: error: ...``). Then ptxas's
   resource report must show no spills, the PTX must contain the instructions the exercise is
   about, and the exercise's own structural check runs (instruction counts, a model of the pipeline, ...).
2. **GPU, where one runs the rung.** The learner's kernel runs through the rung's launcher in a
   separate process (``python -m hgemm_course.check.gpu_run``) with a timeout, on random
   inputs whose sizes leave tails in M, N and K; that process only produces C, which is compared
   here with this process's own reference. An illegal address, a hang or a wrong element is
   reported; the notebook's own CUDA context never sees the learner's kernel.

Without the GPU part (no GPU, or one that lacks the rung's features) the verdict is "could not
check", with one line saying why and what the CPU part did prove; a CPU-part failure is a FAIL.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..library.paths import REPO_ROOT
from ..library.target import FEATURES, RECORDED, Target
from . import confine, host_model, sandbox, watch
from .feedback import CALLER_MEMORY_GIB, MEMORY_LIMIT_GIB, OUTPUT_CAP_BYTES, CheckResult, Failure, Unchecked
from .loader import learner_file

if TYPE_CHECKING:
    from ..library.ladder import Rung
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


def opcode_counts(ptx: str) -> Counter:
    """How often each PTX opcode (``wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32``) occurs."""
    counts: Counter = Counter()
    for line in ptx.splitlines():
        line = line.strip()
        if not line or line.startswith(("//", ".", "{", "}", "$")) or line.endswith(":"):
            continue
        if line.startswith("@"):
            line = line.split(None, 1)[1] if " " in line else ""
        opcode = line.split(None, 1)[0].rstrip(";") if line else ""
        if opcode:
            counts[opcode] += 1
    return counts


def count(opcodes: Counter, prefix: str) -> int:
    return sum(n for op, n in opcodes.items() if op.startswith(prefix))


def entry_ptx(ptx: str, mangled: str) -> str:
    """The PTX of one entry: from its ``.entry`` line to the next function (inline asm opens and
    closes its own braces, so braces do not tell where the entry ends)."""
    start = ptx.find(f".entry {mangled}(")
    if start < 0:
        return ptx
    end = re.compile(r"^\s*(?:\.weak\s+|\.visible\s+)*\.(?:entry|func)\s", re.M).search(ptx, start + 1)
    return ptx[start:end.start() if end else len(ptx)]


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


def compile_learner(exercise: KernelExercise, path: Path, on: Target | None = None,
                    timeout: float = GPU_TIMEOUT_S) -> Compiled:
    """Compile the learner's file whole for target ``on`` (default: :func:`check_plan`'s) with the rung's
    instantiations sized for it, as its launcher compiles them, in a child process within ``timeout``
    seconds and :data:`~.feedback.MEMORY_LIMIT_GIB` GiB (:mod:`.compile_child`); a compile error becomes a
    Failure at the learner's file and line."""
    from ..library.build import CompileError
    from ..library.ladder import get
    from ..library.target import use
    from .generate import extra_count, regions_of

    rung = get(exercise.rung)
    on = on or check_plan(exercise, gpu=False)[0]
    path = Path(path)
    if not path.is_file():
        raise Failure(f"There is no file {path}.")
    shown = display_path(path)
    try:
        path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise Failure(f"{shown} cannot be read as CUDA source text in UTF-8 ({exc}).",
                      {"input": shown, "expected": "a .cu file", "got": type(exc).__name__}) from None
    with use(on):                # a kernel built for "the current target" (rungs 09-12) builds for ``on``
        kernels = rung.kernels(on)
        arch = kernels[0].arch
    names = tuple(dict.fromkeys(name for k in kernels for name in (k.name_expression, k.smem_check) if name))
    answer = _compiled_in_child(path.resolve(), names, arch, timeout, shown)
    if "compile_error" in answer:
        exc = CompileError(str(path.resolve()), answer["compile_error"])
        raise Failure(_compile_message(exc, path, shown),
                      {"input": shown, "expected": "a kernel that compiles", "got": exc.errors[:1] or exc.log})
    if "refused" in answer:
        raise Failure(f"{shown} could not be compiled: {answer['refused']}\nKeep the kernel's name and template "
                      "parameters as the exercise gave them.")
    expression = kernels[0].name_expression
    mangled = answer["lowered"].get(expression, expression)
    resources = answer["resources"].get(mangled)
    if resources is None:
        raise Failure(f"{shown} could not be compiled: ptxas reported nothing for {expression}.\nKeep the kernel's "
                      "name and template parameters as the exercise gave them.")
    kernel_ptx = entry_ptx(answer["ptx"], mangled)
    return Compiled(path, path.read_text(), answer["ptx"], kernel_ptx, resources["registers"],
                    resources["spill_stores"] + resources["spill_loads"], on, arch, names, opcode_counts(kernel_ptx),
                    regions_of(exercise.file_name), extra_count(exercise.file_name))


_COMPILED: dict[tuple, dict] = {}   # (source, headers, names, arch) -> the compile child's answer


def _compiled_in_child(path: Path, names: tuple[str, ...], arch: str, timeout: float, shown: str) -> dict:
    """The compile child's answer for ``path`` (cached by the source and every header it includes); a Failure
    when the compile runs past ``timeout`` seconds, dies (out of memory) or answers out of its format."""
    from ..library.build import _headers_digest
    from ..library.paths import KERNELS_DIR, PTX_SNIPPETS_DIR

    text = path.read_text()
    key = (text, _headers_digest(text, (PTX_SNIPPETS_DIR, KERNELS_DIR, path.parent)), names, arch)
    if key in _COMPILED:
        return _COMPILED[key]
    with tempfile.TemporaryDirectory(prefix="hgemm-course-compile-", ignore_cleanup_errors=True) as folder:
        out = Path(folder) / "answer.json"
        request = json.dumps({"path": str(path), "names": list(names), "arch": arch})
        finished = sandbox.run([sys.executable, "-P", str(Path(__file__).with_name("compile_child.py")), request,
                                str(out)],
                               timeout=timeout, cwd=folder, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
                               limits=sandbox.Limits(cpu_s=math.ceil(timeout) + 5,
                                                     memory_bytes=MEMORY_LIMIT_GIB << 30),
                               stdout_cap=OUTPUT_CAP_BYTES, stderr_cap=OUTPUT_CAP_BYTES)
        if finished.timed_out:
            raise Failure(f"{shown} did not compile within {timeout:g} s. A macro or template that expands "
                          "without end, or an #include of something endless, keeps the compiler busy; if it is "
                          "only slow, give it longer with --timeout SECONDS.",
                          {"input": shown, "expected": "a kernel that compiles", "got": f"no end after {timeout:g} s"})
        size = out.stat().st_size if out.is_file() else 0
        if finished.returncode != 0 or not 0 < size <= MAX_REPORT_BYTES:
            tail = "\n".join(finished.stderr.text().strip().splitlines()[-4:])
            why = (f"the compiler ran out of the {MEMORY_LIMIT_GIB} GiB it may use, or crashed"
                   if finished.returncode != 0 else f"its output is {size} bytes")
            raise Failure(f"{shown} could not be compiled: {why} (exit status {finished.returncode}).\n{tail}".rstrip(),
                          {"input": shown, "expected": "a kernel that compiles", "got": f"exit {finished.returncode}"})
        answer = json.loads(out.read_text())
    if not (isinstance(answer, dict) and (set(answer) in ({"compile_error"}, {"refused"})
                                          or set(answer) == {"ptx", "lowered", "resources"})):
        raise Failure(f"{shown} could not be compiled: the compile child answered out of its format.")
    _COMPILED[key] = answer
    return answer


def _compile_message(exc, path: Path, shown: str) -> str:
    """The compiler's errors, the learner's own first, each as ``file:line: error: message`` and the line."""
    mine = str(path.resolve())
    lines = path.read_text().splitlines()
    out = []
    errors = [e for e in exc.errors if e["kind"] != "warning"] or exc.errors
    errors.sort(key=lambda e: Path(e["file"]).resolve() != Path(mine))
    for err in errors[:5]:
        in_mine = str(Path(err["file"]).resolve()) == mine
        where = shown if in_mine else display_path(Path(err["file"]))
        out.append(f"{where}:{err['line']}: {err['kind']}: {err['message']}")
        if in_mine and 1 <= err["line"] <= len(lines):
            out.append(f"    {lines[err['line'] - 1].strip()}")
    if not out:
        out = [exc.log.strip()]
    return f"{shown} does not compile:\n" + "\n".join(out) + "\nFix the first error and check again."


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


def run_on_gpu(exercise: KernelExercise, path: Path, *, timeout: float = GPU_TIMEOUT_S, seed: int = 0,
               compiled: Compiled | None = None) -> str:
    """Run the learner's kernel through the rung's launcher in a child process; a Failure on
    a compile, launch or verification problem, a timeout (hang) or a crash (illegal address).
    With ``compiled`` (the CPU part's), the child runs for its target, and every kernel the launcher
    launched must be one the CPU part compiled, for the same architecture (else :class:`Unchecked`)."""
    shown = display_path(path)
    with tempfile.TemporaryDirectory(prefix="hgemm-course-gpu-run-", ignore_cleanup_errors=True) as folder:
        command = [sys.executable, "-P", "-m", "hgemm_course.check.gpu_run", exercise.rung, str(Path(path).resolve()),
                   "--seed", str(seed), "--out", folder,
                   "--shapes", *(f"{m}x{n}x{k}" for m, n, k in exercise.gpu_shapes)]
        if compiled is not None and compiled.target.run_from_ptx:
            command += ["--as", compiled.target.arch]
        finished = sandbox.run(command, timeout=timeout, cwd=folder, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
                               limits=sandbox.Limits(cpu_s=math.ceil(timeout) + 10),   # no RLIMIT_AS: CUDA maps much
                               stdout_cap=OUTPUT_CAP_BYTES, stderr_cap=OUTPUT_CAP_BYTES)
        if finished.timed_out:
            raise Failure(f"{shown}: the kernel did not finish within {timeout:.0f} s: it hangs. A wait on an mbarrier "
                          "phase that never completes spins forever; check which phase each wait asks for.",
                          {"input": shown, "expected": "the kernel finishes", "got": "timeout (hang)"})
        report = Path(folder) / "results.jsonl"
        size = report.stat().st_size if report.is_file() else 0
        results = gpu_results(report.read_text(), shown) if 0 < size <= MAX_REPORT_BYTES else []
        for result in results:
            if "error" in result:
                raise Failure(f"{shown}: {result['error']}", {"input": result["shape"], "expected": None,
                                                              "got": result["error"].splitlines()[0]})
            _compare_c(Path(folder) / result["c"], result, exercise.rung, shown)
    if finished.returncode != 0 or len(results) != len(exercise.gpu_shapes):
        tail = "\n".join((finished.stderr.text() or finished.stdout.text()).strip().splitlines()[-6:])
        raise Failure(f"{shown}: the GPU run stopped (exit status {finished.returncode}):\n{tail}",
                      {"input": shown, "expected": "a clean run", "got": f"exit status {finished.returncode}"})
    if compiled is not None:
        same_kernels(compiled, results)
    shapes = ", ".join("x".join(map(str, r["shape"])) for r in results)
    return f"on this GPU: right on {shapes} (random inputs, tails in M, N and K)"


def _compare_c(path: Path, result: dict, rung: str, shown: str) -> None:
    """C from the GPU run against this process's own reference, A @ B in FP32 of the same inputs."""
    import numpy as np

    from ..measurement.verification import compare, random_inputs

    M, N, K = result["shape"]
    try:
        if path.stat().st_size > M * N * 2 + 4096:
            raise ValueError(f"{path.stat().st_size} bytes")
        c = np.load(path, allow_pickle=False)
        if c.shape != (M, N) or c.dtype != np.float16:
            raise ValueError(f"a {c.dtype} array of shape {c.shape}")
    except (OSError, ValueError) as exc:
        raise Failure(f"{shown}: the GPU run's C for {M}x{N}x{K} cannot be read as a ({M}, {N}) float16 array: {exc}",
                      {"input": {"M": M, "N": N, "K": K}, "expected": "C", "got": str(exc)}) from None
    a, b, _ = random_inputs(M, N, K, seed=result["seed"])
    verdict = compare(c, a.astype(np.float32) @ b.astype(np.float32), K=K, rung=rung, seed=result["seed"])
    if not verdict.passed:
        bad = verdict.first_bad or {}
        where = (f"first wrong element C[{bad['row']}, {bad['col']}]: expected {bad['expected']:.5g}, "
                 f"got {bad['got']:.5g}" if bad else "the errors are too large")
        raise Failure(f"{shown}: wrong result on {M}x{N}x{K} (seed {result['seed']}): {where}.\n  {verdict.summary()}",
                      {"input": {"M": M, "N": N, "K": K, **({k: bad[k] for k in ('row', 'col')} if bad else {})},
                       "expected": bad.get("expected"), "got": bad.get("got")})


def gpu_results(text: str, shown: str) -> list[dict]:
    """The GPU run's report, one JSON object a line (:mod:`.gpu_run`), each checked against its format: a
    Failure that shows the first line out of it."""
    out = []
    for line in text.splitlines():
        try:
            result = json.loads(line)
            shape = result["shape"]
            assert isinstance(shape, list) and len(shape) == 3 and all(type(v) is int and v > 0 for v in shape)
            if "error" in result:
                assert set(result) == {"shape", "error"} and type(result["error"]) is str
            else:
                assert set(result) == {"shape", "seed", "c", "kernels"} and type(result["seed"]) is int
                assert result["c"] == f"c{len(out)}.npy"
                assert isinstance(result["kernels"], list) and all(
                    isinstance(k, dict) and set(k) == {"name_expression", "arch"} for k in result["kernels"])
        except (ValueError, KeyError, TypeError, AssertionError):
            raise Failure(f"{shown}: the GPU run's report is not in its format: {line[:200]!r}",
                          {"input": shown, "expected": "the GPU run's report", "got": line[:200]}) from None
        out.append(result)
    return out


def same_kernels(compiled: Compiled, results: list[dict]) -> None:
    """Every kernel the GPU run launched is one the CPU part compiled and checked, for the same architecture:
    else the two parts checked different code, and :class:`Unchecked` says so."""
    for result in results:
        for launched in result.get("kernels", []):
            if launched["name_expression"] not in compiled.name_expressions or launched["arch"] != compiled.arch:
                raise Unchecked(f"the GPU run launched {launched['name_expression']} for {launched['arch']}, not "
                                f"what the CPU part checked ({compiled.name_expressions[0]} for {compiled.arch}, sized "
                                f"for {compiled.target.describe()}); the two parts must check one kernel")


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
    from .child import OverTime, caller_time_limit, prepare

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


# --------------------------------------------------------------- reading C expressions of a region

C_BITS = 64                  # the widest integer a region's index math may hold


class CInt(int):
    """An int with C's ``/`` and ``%`` (truncating toward zero), for evaluating a learner's index math."""

    def _wrap(self, value):
        return CInt(_bounded(value)) if isinstance(value, int) and not isinstance(value, bool) else value

    def __truediv__(self, other):
        if int(other) == 0:
            raise ZeroDivisionError("division by zero")
        q = abs(int(self)) // abs(int(other))
        return CInt(q if (self >= 0) == (other >= 0) else -q)

    def __rtruediv__(self, other):
        return CInt(other).__truediv__(self)

    def __mod__(self, other):
        return CInt(int(self) - int(other) * int(self.__truediv__(other)))

    def __rmod__(self, other):
        return CInt(other).__mod__(self)

    __floordiv__ = __truediv__

    def __add__(self, other):
        return self._wrap(int(self) + int(other))

    __radd__ = __add__

    def __sub__(self, other):
        return self._wrap(int(self) - int(other))

    def __rsub__(self, other):
        return self._wrap(int(other) - int(self))

    def __mul__(self, other):
        return self._wrap(int(self) * int(other))

    __rmul__ = __mul__

    def __neg__(self):
        return CInt(-int(self))

    def __and__(self, other):
        return self._wrap(int(self) & int(other))

    __rand__ = __and__

    def __xor__(self, other):
        return self._wrap(int(self) ^ int(other))

    __rxor__ = __xor__

    def __or__(self, other):
        return self._wrap(int(self) | int(other))

    __ror__ = __or__

    def __lshift__(self, other):
        return self._wrap(int(self) << _shift(other))

    def __rshift__(self, other):
        return self._wrap(int(self) >> _shift(other))

    def __rlshift__(self, other):
        return CInt(other).__lshift__(self)

    def __rrshift__(self, other):
        return CInt(other).__rshift__(self)


def _shift(count) -> int:
    """A shift count C defines (0 to 63); Unsupported for any other, which would be undefined in C."""
    if not 0 <= int(count) < C_BITS:
        raise Unsupported(f"a shift by {int(count)} is undefined in C (the count must be 0 to {C_BITS - 1})")
    return int(count)


def _bounded(value: int) -> int:
    if not -(1 << C_BITS) < value < (1 << C_BITS):
        raise Unsupported(f"a value of {value.bit_length()} bits, wider than C's {C_BITS}-bit integers")
    return value


_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+[uU]?|[A-Za-z_]\w*|&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%()<>!&|^~,])")
_KEYWORDS = {"&&": " and ", "||": " or ", "!": " not "}


class Unsupported(Exception):
    """The region uses C the small evaluator does not read; the GPU run decides instead."""


def c_expression(text: str) -> str:
    """A C integer expression as Python source evaluated with :class:`CInt` variables."""
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise Unsupported(f"cannot read {text[pos:]!r}")
        token = m.group(1)
        pos = m.end()
        if token[0].isdigit():
            out.append(f"CInt({_bounded(int(token.rstrip('uU'), 0))})")
        elif token in _KEYWORDS:
            out.append(_KEYWORDS[token])
        elif token in ("true", "false"):
            out.append("True" if token == "true" else "False")
        else:
            out.append(token)
    return " ".join(out)          # spaced: C's "* *" never reads as Python's power


def evaluate(expression: str, env: dict) -> int:
    """Evaluate a C integer expression with the names in ``env``."""
    try:
        value = eval(c_expression(expression), {"__builtins__": {}, "CInt": CInt},  # noqa: S307 - C subset only
                     {k: CInt(v) if isinstance(v, int) and not isinstance(v, bool) else v for k, v in env.items()})
    except Unsupported:
        raise
    except Exception as exc:
        raise Unsupported(f"cannot evaluate {expression.strip()!r}: {exc}") from None
    return int(value)
