"""Checker for ex03_wmma: the wmma load and multiply calls of rung 03's main loop.

The CPU part compares the learner's PTX with the rung's own kernel, compiled the same way (the same
instantiation, sized for the target checked on, and architecture):
per k-slice a warp must issue FRAG_M * BK / 16 ``wmma.load.a``, FRAG_N * BK / 16
``wmma.load.b`` and FRAG_M * FRAG_N * BK / 16 ``wmma.mma.sync`` (the kk, i and j loops are
unrolled, so the counts are the instructions in the PTX), reading shared memory with the
padded leading dimensions A_LD and B_LD. Which element each fragment starts at is an address
computed at run time: the GPU part, which runs the kernel, judges that.
"""
from __future__ import annotations

import re
from collections import Counter

from .feedback import Failure
from .kernel_exercise import Compiled, KernelExercise, PtxRule, count, display_path, entry_ptx, opcode_counts

_MOV_IMM = re.compile(r"mov\.[us]32\s+(%r\d+),\s*(\d+);")
_LOAD = re.compile(r"(wmma\.load\.[ab])\.sync\S*\s+\{[^}]*\},\s*\[[^\]]*\],\s*(%r\d+|\d+);")


def load_strides(ptx: str) -> dict[str, Counter]:
    """The leading dimensions (elements) the ``wmma.load.a`` / ``.b`` instructions use, where the
    PTX gives them as a constant (directly or through one ``mov``)."""
    constants = {reg: int(value) for reg, value in _MOV_IMM.findall(ptx)}
    out: dict[str, Counter] = {"wmma.load.a": Counter(), "wmma.load.b": Counter()}
    for op, stride in _LOAD.findall(ptx):
        value = int(stride) if stride.isdigit() else constants.get(stride)
        out[op][value] += 1
    return out


def _reference(compiled: Compiled) -> tuple[Counter, dict[str, Counter]]:
    """The rung's own kernel compiled as the learner's was: its opcode counts and load strides."""
    from ..build import compile_cuda
    from ..ladder import get

    module = compile_cuda(get("03").source, name_expressions=compiled.name_expressions, arch=compiled.arch)
    ptx = entry_ptx(module.ptx, module.lowered[compiled.name_expressions[0]])
    return opcode_counts(ptx), load_strides(ptx)


def structural(compiled: Compiled) -> str:
    from ..ladder.r03_wmma import PAD, tiles_for

    tiles = tiles_for(compiled.target)
    shown = display_path(compiled.path)
    ref_ops, ref_strides = _reference(compiled)
    frag_m, frag_n, steps = tiles.wm // 16, tiles.wn // 16, tiles.bk // 16
    expected = {"wmma.load.a": (ref_ops, f"FRAG_M x BK/16 = {frag_m} x {steps}: one A fragment per 16 rows of the "
                                         "warp tile per k-step"),
                "wmma.load.b": (ref_ops, f"FRAG_N x BK/16 = {frag_n} x {steps}: one B fragment per 16 columns of the "
                                         "warp tile per k-step"),
                "wmma.mma.sync": (ref_ops, f"FRAG_M x FRAG_N x BK/16 = {frag_m} x {frag_n} x {steps}: every "
                                           "(i, j) pair at every k-step")}
    for op, (ops, why) in expected.items():
        want, got = count(ops, op), count(compiled.opcodes, op)
        if got != want:
            raise Failure(f"{shown}: the main loop issues {got} x {op}, the rung's kernel {want} ({why}). "
                          + ("Fewer means some fragments or products are missing; " if got < want else
                             "More means fragments are loaded or multiplied more than once; ")
                          + "write the loops over i < FRAG_M and j < FRAG_N inside the kk loop, with #pragma unroll.",
                          {"input": op, "expected": want, "got": got})
    mine = load_strides(compiled.kernel_ptx)
    lds = {"wmma.load.a": ("A_LD", tiles.bk + PAD, "BK", tiles.bk), "wmma.load.b": ("B_LD", tiles.bn + PAD, "BN", tiles.bn)}
    for op, (name, value, unpadded, width) in lds.items():
        used = {s for s in mine[op] if s is not None}
        if used and used != {value} and set(ref_strides[op]) == {value}:
            extra = (f" {width} is {unpadded}, the unpadded width: the rows in shared memory are padded by {PAD} "
                     "halves, so every fragment row after the first would come from the wrong place."
                     if width in used else "")
            raise Failure(f"{shown}: {op} reads with leading dimension {sorted(used)}; the shared rows are {name} = "
                          f"{value} halves apart.{extra}", {"input": op, "expected": value, "got": sorted(used)})
    return (f"per k-slice: {count(compiled.opcodes, 'wmma.load.a')} A loads, {count(compiled.opcodes, 'wmma.load.b')} "
            f"B loads, {count(compiled.opcodes, 'wmma.mma.sync')} mma.sync, as in the rung's kernel; leading "
            f"dimensions {tiles.bk + PAD} and {tiles.bn + PAD} (padded)")


EXERCISE = KernelExercise(
    name="ex03_wmma",
    rung="03",
    description="wmma: load a warp's A and B fragments and multiply them in rung 03's main loop (a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("wmma.mma.sync", "the main loop multiplies nothing on the tensor cores, so C stays zero."),
        PtxRule("wmma.load.a", "no A fragment is loaded from shared memory."),
        PtxRule("wmma.load.b", "no B fragment is loaded from shared memory."),
    ),
    structural=structural,
)
