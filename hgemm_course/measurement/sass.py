"""What ptxas made of a kernel: its SASS (from nvdisasm, no GPU needed) and the schedule of its main loop.

A profile says where a kernel's cycles go; the SASS says what the compiler scheduled. For the mma.sync rungs
the loop's length is what chapter 04 reads: besides a slice's 128 ``mma.sync`` (SASS ``HMMA``), 32 ``ldmatrix``
(``LDSM``) and 12 ``cp.async`` (``LDGSTS``), every instruction in it is address arithmetic or loop control that a
warp issues in order between its ``mma.sync``. The count of ``mma.sync`` after the slice's CTA barrier
(``BAR.SYNC``) is printed too; it moves with ptxas's scheduling and follows no rule the course has found.

``hgemm-course sass 05 [--tiles 128x256]`` prints the main loop of a rung's kernel; :func:`loop_schedule` returns it.
nvdisasm comes with the ``nvidia-cuda-nvdisasm`` wheel (a dependency), found through cuda.pathfinder, or $NVDISASM.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# one letter per instruction in a loop's timeline
TIMELINE_LETTERS = (("HMMA", "H"), ("HGMMA", "W"), ("LDSM", "L"), ("LDGSTS", "G"), ("BAR", "B"), ("DEPBAR", "D"))
_INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*\.(L_x_\d+):")
_TARGET = re.compile(r"`\(\.(L_x_\d+)\)")
_PREDICATE = re.compile(r"^@!?U?P\w+\s+")


@dataclass(frozen=True)
class LoopSchedule:
    """The main loop of a kernel as ptxas scheduled it: the loop with the most tensor-core instructions."""
    kernel: str
    instructions: int                 # in the loop body, the backward branch included
    counts: dict                      # opcode (before the first dot) -> how many
    mma_after_barrier: int | None     # HMMA from the loop's CTA barrier to its end (None: no barrier, or no HMMA)
    timeline: str                     # one letter per instruction: H mma.sync, L ldmatrix, G cp.async, B barrier,
                                      # D cp.async wait, W wgmma, . anything else

    def describe(self) -> str:
        if "HMMA" not in self.counts:
            after = f"{self.counts.get('HGMMA', 0)} wgmma"
        elif self.mma_after_barrier is None:
            after = "no CTA barrier in the loop"
        else:
            after = f"{self.mma_after_barrier} of its {self.counts['HMMA']} mma.sync after the CTA barrier"
        top = ", ".join(f"{op} {n}" for op, n in sorted(self.counts.items(), key=lambda kv: -kv[1])[:8])
        lines = [f"{self.kernel}: main loop of {self.instructions} instructions ({top}); {after}.",
                 "timeline (H mma.sync, L ldmatrix, G cp.async, B barrier, D cp.async wait, W wgmma, . other):"]
        lines += ["  " + self.timeline[i:i + 100] for i in range(0, len(self.timeline), 100)]
        return "\n".join(lines)


def find_nvdisasm() -> str:
    """nvdisasm's path: $NVDISASM, the nvidia-cuda-nvdisasm wheel (through cuda.pathfinder, or beside the
    ``nvidia`` packages on sys.path), or PATH."""
    found = os.environ.get("NVDISASM")
    if not found:
        try:
            from cuda.pathfinder import find_nvidia_binary_utility

            found = find_nvidia_binary_utility("nvdisasm")
        except ImportError:
            found = None
    if not found:               # the wheel's binary wherever the nvidia namespace package lies (pip --target too)
        spec = importlib.util.find_spec("nvidia")
        found = next((str(p) for root in (spec.submodule_search_locations if spec else [])
                      for p in Path(root).glob("cu*/bin/nvdisasm") if os.access(p, os.X_OK)), None)
    found = found or shutil.which("nvdisasm")
    if not found:
        raise RuntimeError("nvdisasm was not found: `pip install nvidia-cuda-nvdisasm` (a dependency of this package) "
                           "or set NVDISASM=/path/to/nvdisasm.")
    return found


def disassemble(cubin: bytes) -> str:
    """nvdisasm's listing of a cubin (``-c``: the code sections only)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        run = subprocess.run([find_nvdisasm(), "-c", str(path)], capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"nvdisasm failed ({run.returncode}): {run.stderr.strip() or run.stdout.strip()}")
    return run.stdout


def opcodes(listing: str) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """(opcode, instruction text) in order, predicates dropped, and each label's instruction index."""
    instructions, labels = [], {}
    for line in listing.splitlines():
        if m := _LABEL.match(line):
            labels[m.group(1)] = len(instructions)
        elif m := _INSTRUCTION.match(line):
            text = _PREDICATE.sub("", m.group(1).strip())
            instructions.append((text.split()[0], text))
    return instructions, labels


def _letter(opcode: str) -> str:
    base = opcode.split(".")[0]
    return next((letter for name, letter in TIMELINE_LETTERS if base == name), ".")


def main_loop(listing: str, kernel: str = "kernel") -> LoopSchedule:
    """The loop (a backward branch and its target) densest in HMMA or HGMMA instructions: the K loop."""
    instructions, labels = opcodes(listing)
    loops = []
    for end, (opcode, text) in enumerate(instructions):
        target = _TARGET.search(text) if opcode.startswith("BRA") else None
        if target and labels.get(target.group(1), end + 1) <= end:
            loops.append((labels[target.group(1)], end))
    if not loops:
        raise ValueError(f"{kernel}: no loop in the SASS (no backward branch).")

    def density(loop):          # tensor-core instructions per instruction: the K loop, not a loop around it
        body = instructions[loop[0]:loop[1] + 1]
        return sum(op.split(".")[0] in ("HMMA", "HGMMA") for op, _ in body) / len(body)
    start, end = max(loops, key=density)
    body = [op.split(".")[0] for op, _ in instructions[start:end + 1]]
    barrier = next((i for i, op in enumerate(body) if op == "BAR"), None)
    counts = dict(Counter(body))
    after = None if barrier is None or "HMMA" not in counts else body[barrier:].count("HMMA")
    return LoopSchedule(kernel, len(body), counts, after, "".join(_letter(op) for op in body))


def loop_schedule(kernel) -> LoopSchedule:
    """The main loop of a rung's compiled kernel (a TemplateKernel), compiled here if need be."""
    return main_loop(disassemble(kernel.compile().cubin), kernel.name_expression)
