"""What a learner's inline-asm function does, read from the PTX NVRTC makes of it: the function is called from a
small probe kernel of the checker's (its inputs kernel parameters, its outputs stored to a global array), the
learner's file and the probes are compiled together in the compile child (:mod:`.compile_child`), and each
probe's PTX is read symbolically: every register holds a parameter, an output of one of the asm's instructions,
or something else. So the checker sees which operand of which instruction each argument became, through the
learner's own constraints, as the compiler bound them, and the probes need no GPU.
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import host_model
from .feedback import Failure

PROBE_TIMEOUT_S = 120
_PARAM = re.compile(r"\[(\w+)_param_(\d+)\]")
_REG = re.compile(r"%[a-z]+\d+")


@dataclass(frozen=True)
class Value:
    """What a register holds: ``("param", 3)``, ``("out", instruction, operand)``, ``("const", 0)``, ``("undefined",)``
    (read before anything wrote it) or ``("other", opcode)``."""

    what: tuple

    def __str__(self) -> str:
        kind = self.what[0]
        return {"param": lambda: f"parameter {self.what[1]}", "out": lambda: f"output {self.what[2]} of "
                f"instruction {self.what[1]}", "const": lambda: f"the constant {self.what[1]}",
                "undefined": lambda: "a register nothing wrote"}.get(kind, lambda: f"the result of {self.what[1]}")()


@dataclass
class Instruction:
    """One instruction of interest: its opcode and its operands, each a Value or a list of them (``{...}``), or an
    address (``("addr", Value, offset)``)."""

    opcode: str
    operands: list
    line: str


@dataclass
class Probe:
    """A probe kernel's PTX read through: the instructions of interest in order, and what each store wrote
    (output array index -> Value)."""

    instructions: list[Instruction] = field(default_factory=list)
    stores: dict[int, Value] = field(default_factory=dict)

    def of(self, prefix: str) -> list[Instruction]:
        return [i for i in self.instructions if i.opcode.startswith(prefix)]


def _split(operands: str) -> list[str]:
    """Top-level comma-separated operands, braces and brackets kept whole."""
    out, depth, current = [], 0, ""
    for ch in operands:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        out.append(current.strip())
    return out


def read(ptx: str, interesting: tuple[str, ...]) -> Probe:
    """Read a probe entry's straight-line PTX: the instructions whose opcode starts with one of ``interesting``,
    each operand as what its register holds, and the global stores by element (4-byte) index."""
    regs: dict[str, Value] = {}
    probe = Probe()

    def value(token: str):
        token = token.strip()
        if token.startswith("{"):
            return [value(t) for t in _split(token[1:-1])]
        if token.startswith("["):
            inner = token[1:-1].replace(" ", "")
            base, _, offset = inner.partition("+")
            return ("addr", regs.get(base, Value(("undefined",))) if base.startswith("%") else Value(("symbol", base)),
                    int(offset or "0", 0))
        if token.startswith("%"):
            return regs.get(token, Value(("undefined",)))
        try:
            return Value(("const", int(token, 0)))
        except ValueError:
            return Value(("symbol", token))

    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or line.startswith((".", "{", "}", "$", "@")) or line.endswith(":") or not line.endswith(";"):
            continue
        opcode, _, rest = line.rstrip(";").partition(" ")
        operands = _split(rest)
        if opcode.startswith("ld.param"):
            m = _PARAM.search(rest)
            regs[operands[0]] = Value(("param", int(m.group(2)))) if m else Value(("other", opcode))
        elif opcode.startswith(("mov.", "cvta.")) and len(operands) == 2 and not operands[0].startswith("{"):
            source = value(operands[1])
            regs[operands[0]] = source if isinstance(source, Value) else Value(("other", opcode))
        elif opcode.startswith("st.global"):
            address, data = value(operands[0]), value(operands[1])
            width = 8 if opcode.endswith(("64", ".f64")) else 4
            for k, v in enumerate(data if isinstance(data, list) else [data]):
                probe.stores[(address[2] + k * width) // 4] = v
        elif opcode.startswith(interesting):
            index = len(probe.instructions)
            first = operands[0] if operands else ""
            outputs = _REG.findall(first) if (first.startswith("{") or first.startswith("%")) and \
                not opcode.startswith("cp.async") else []
            parsed = [value(t) for t in operands]          # inputs are read before outputs are written
            for k, reg in enumerate(outputs):
                regs[reg] = Value(("out", index, k))
            probe.instructions.append(Instruction(opcode, parsed, line))
        else:
            written = _REG.findall(operands[0]) if operands else []
            for reg in written:
                regs[reg] = Value(("other", opcode))
    return probe


def compile_probes(compiled, probes: dict[str, str], shown: str, calls: dict[str, str]) -> dict[str, str]:
    """The learner's file with the checker's ``probes`` (extern "C" kernel name -> its source) appended, compiled in
    the compile child for the learner's architecture; each probe's PTX. When they do not compile, each probe is
    compiled alone, and the Failure names the learner's function that the first failing one calls (``calls``:
    probe name -> the functions it calls)."""
    answer = _compile(compiled, "".join(probes.values()), tuple(probes), shown)
    if "ptx" not in answer:
        for name, text in probes.items():
            alone = _compile(compiled, text, (name,), shown)
            if "ptx" not in alone:
                answer = alone
                break
        else:
            name = next(iter(probes))
        log = answer.get("compile_error") or answer.get("refused") or ""
        first = next((line for line in log.splitlines() if "error" in line), log.strip()[:300])
        raise Failure(f"{shown}: the checker calls your {calls[name]} from a small kernel of its own, and that does "
                      f"not compile: {first.strip()}\nKeep the function's name and parameters as the exercise gave "
                      "them, and give each asm operand the register kind and the order its instruction takes.",
                      {"input": calls[name], "expected": "a function the checker can call", "got": first.strip()})
    from .kernel_compile import entry_ptx

    return {name: entry_ptx(answer["ptx"], answer["lowered"].get(name, name)) for name in probes}


def _compile(compiled, probes: str, names: tuple[str, ...], shown: str) -> dict:
    from .kernel_compile import _compiled_in_child

    text = compiled.text + f'\n#line 1 "the checker\'s probe of {shown}"\n' + probes
    limit = host_model._time_limit_s or PROBE_TIMEOUT_S
    with tempfile.TemporaryDirectory(prefix="hgemm-course-probe-", ignore_cleanup_errors=True) as folder:
        path = Path(folder) / Path(compiled.path).name
        path.write_text(text)
        return _compiled_in_child(path, names, compiled.arch, limit, shown)


def qualifiers(opcode: str) -> list[str]:
    """``mma.sync.aligned.m16n8k16`` -> ``["mma", "sync", "aligned", "m16n8k16"]``."""
    return opcode.split(".")
