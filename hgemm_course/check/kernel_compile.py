"""Compile a learner's kernel exercise whole, in a child process, and read what came back: the PTX of its entry
and the count of each opcode, ptxas's resources, a compile error at the learner's own file and line.

The file is compiled with NVRTC for the target it is checked on, with the rung's template instantiations sized for
that target, as its launcher compiles them, within the check's time and
:data:`~.feedback.MEMORY_LIMIT_GIB` GiB (:mod:`.compile_child`); the child only produces the PTX and the reports,
read here against their format.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from ..library.target import Target
from . import sandbox
from .feedback import MEMORY_LIMIT_GIB, OUTPUT_CAP_BYTES, Failure
from .kernel_exercise import GPU_TIMEOUT_S, MAX_REPORT_BYTES, Compiled, KernelExercise, check_plan, display_path


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
