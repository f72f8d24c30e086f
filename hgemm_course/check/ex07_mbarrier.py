"""Checker for ex07_mbarrier: the full/empty mbarrier ring of rung 07.

The CPU part reads the learner's region (the top of the main loop: thread 0's wait on the
empty barrier and refill, every thread's wait on the full barrier). A barrier is named as the
kernel names it, ``smem_u32(&ring.full[X])`` or ``smem_u32(&ring.empty[X])`` with ``X`` an
integer expression such as ``kt % STAGES``; the reader also follows ``smem_u32(ring.full + X)``,
``smem_u32(&ring.full[0]) + 8 * X`` and a declaration holding such an address, and names what a
wait got instead when it is no barrier (a stage of ``ring.a``, the contents ``ring.full[X]``
instead of its address, an index past the ring). It plays the region through a model of the
ring, under many interleavings of the warps and of the copy engine:

- an mbarrier counts completed phases; ``mbar_wait_parity(bar, p)`` returns once the
  most recent phase with parity ``p`` has completed, i.e. when ``phases % 2 != p`` (so
  right after init, waiting for parity 1 returns at once);
- ``full[s]`` completes a phase when the bytes of the slice loaded into stage ``s`` land;
  ``empty[s]`` when all warps have arrived after reading stage ``s``;
- a warp that reads a stage before its slice has landed reads stale or half-written data;
  a copy into a stage that a warp is still reading overwrites data under it; a wait that no
  event will ever complete hangs the kernel.

The first of these the model meets is the verdict, with the interleaving that led to it. The
model takes the rest of the loop to be rung 07's (each warp's fence.proxy.async and arrive on
``ring.empty`` after its reads); the PTX rules check that those instructions are there. The GPU
part runs the kernel for real in a child process (see :mod:`.kernel_exercise`).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from functools import lru_cache

from .feedback import Failure
from .kernel_exercise import Compiled, KernelExercise, PtxRule, Unsupported, display_path, evaluate

# Stand-in shared-memory addresses of the members of the kernel's TmaRing in the model, far enough
# apart that an index past an array's end still reads as that array; mbarriers are 8 bytes each.
FULL_BASE = 1 << 20     # smem_u32(&ring.full[0])
EMPTY_BASE = 2 << 20    # smem_u32(&ring.empty[0])
RING_MEMBERS = {"full": (FULL_BASE, 8), "empty": (EMPTY_BASE, 8),   # member: (stand-in address, bytes per index)
                "a": (3 << 20, 1 << 15), "b": (4 << 20, 1 << 15)}   # a stage of A or B: a stand-in size
VALUE_BASES = {"full": 8 << 20, "empty": 9 << 20}   # ring.full[X], ring.empty[X] read as integers, not addresses
POLICIES = ("uniform", "slow copies", "producer ahead", "producer behind")
SCHEDULES_PER_POLICY = 12


# ---------------------------------------------------------------- the learner's region as a program

@dataclass
class Call:
    name: str                 # "mbar_wait_parity" or "load_tile"
    args: list[str]
    line: int


@dataclass
class If:
    cond: str
    then: list
    orelse: list = field(default_factory=list)


@dataclass
class Decl:
    name: str
    expr: str


_CALLS = ("mbar_wait_parity", "load_tile")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


class _Parser:
    def __init__(self, text: str, first_line: int):
        self.s = _strip_comments(text)
        self.i = 0
        self.first_line = first_line

    def line(self) -> int:
        return self.first_line + self.s.count("\n", 0, self.i)

    def ws(self):
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self, word: str) -> bool:
        self.ws()
        if not self.s.startswith(word, self.i):
            return False
        end = self.i + len(word)
        return not (word[-1].isalnum() and end < len(self.s) and (self.s[end].isalnum() or self.s[end] == "_"))

    def take(self, word: str):
        if not self.peek(word):
            raise Unsupported(f"expected {word!r} at line {self.line()}")
        self.i += len(word)

    def balanced(self, open_: str, close: str) -> str:
        self.take(open_)
        depth, start = 1, self.i
        while self.i < len(self.s):
            c = self.s[self.i]
            depth += (c == open_) - (c == close)
            self.i += 1
            if depth == 0:
                return self.s[start:self.i - 1]
        raise Unsupported(f"unbalanced {open_}{close}")

    def block(self) -> list:
        out = []
        while True:
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] == "}":
                return out
            out.append(self.statement())

    def statement(self):
        self.ws()
        if self.peek("{"):
            self.i += 1
            body = self.block()
            self.take("}")
            return If("1", body)
        if self.peek("if"):
            self.take("if")
            cond = self.balanced("(", ")")
            then = [self.statement()]
            orelse = []
            if self.peek("else"):
                self.take("else")
                orelse = [self.statement()]
            return If(cond, then, orelse)
        m = re.compile(r"(?:const\s+)?(?:int|unsigned|bool|uint32_t)\s+([A-Za-z_]\w*)\s*=\s*([^;]*);").match(self.s, self.i)
        if m:
            self.i = m.end()
            return Decl(m.group(1), m.group(2))
        m = re.compile(r"__syncwarp\s*\(\s*\)\s*;").match(self.s, self.i)
        if m:                                 # orders the lanes of a warp; nothing in the ring model
            self.i = m.end()
            return If("1", [])
        m = re.compile(r"([A-Za-z_]\w*)\s*\(").match(self.s, self.i)
        if m and m.group(1) in _CALLS:
            line = self.line()
            self.i = m.end() - 1
            inner = self.balanced("(", ")")
            self.take(";")
            return Call(m.group(1), _split_args(inner), line)
        snippet = self.s[self.i:self.i + 60].split("\n")[0]
        raise Unsupported(f"the model reads only if, declarations, mbar_wait_parity and load_tile; "
                          f"line {self.line()} has {snippet!r}")


def _split_args(text: str) -> list[str]:
    args, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            args.append(text[start:i])
            start = i + 1
    args.append(text[start:])
    return [a.strip() for a in args]


def parse_region(text: str, first_line: int = 1) -> list:
    parser = _Parser(text, first_line)
    program = parser.block()
    parser.ws()
    if parser.i < len(parser.s):
        raise Unsupported(f"unexpected '}}' at line {parser.line()}")
    return program


@dataclass(frozen=True)
class _Pointer:
    """A pointer into the ring: a stand-in byte address and the size of what it points to (so
    ``ring.full + 1`` is 8 bytes on, as in C). Only ``smem_u32`` turns it into an address."""

    address: int
    step: int

    def __add__(self, other):
        if isinstance(other, _Pointer):
            raise Unsupported("adds two pointers")
        return _Pointer(self.address + self.step * int(other), self.step)

    __radd__ = __add__

    def __sub__(self, other):
        return self + -int(other)

    def __int__(self):
        raise Unsupported("a pointer into the ring where the kernel takes an address (smem_u32 of it)")


def _smem_u32(pointer) -> int:
    if not isinstance(pointer, _Pointer):
        raise Unsupported("smem_u32 of something that is not in the ring")
    return pointer.address


def _element(member: str, step: int):
    """``&ring.member[X]`` (step: the element's size) or ``ring.a[X]`` decayed (step: one half)."""
    base, size = RING_MEMBERS[member]
    return lambda index: _Pointer(base + size * int(index), step)


def _contents(member: str):
    """``ring.full[X]`` without ``&``: the barrier's 64-bit state read as an integer."""
    return lambda index: VALUE_BASES[member] + 8 * int(index)


# What the rewritten expressions (see _ring_expression) call, given to every evaluation.
RING_NAMES: dict = {"smem_u32": _smem_u32}
for _member, (_base, _size) in RING_MEMBERS.items():
    RING_NAMES[f"ring_{_member}"] = _Pointer(_base, _size)             # ring.member, an array decayed
    RING_NAMES[f"ring_{_member}_at"] = _element(_member, _size)        # &ring.member[X]
    RING_NAMES[f"ring_{_member}_item"] = (_contents(_member) if _member in VALUE_BASES   # ring.member[X]
                                          else _element(_member, 2))

_RING_MEMBER = re.compile(r"\bring\s*\.\s*([A-Za-z_]\w*)")
_UNARY_AMPERSAND = re.compile(r"&\s*$")
_OPERAND_END = re.compile(r"[\w)\]]\s*$")


@lru_cache(maxsize=256)
def _ring_expression(text: str) -> str:
    """``text`` with the kernel's ring members in calls the C-expression evaluator reads:
    ``&ring.full[X]`` -> ``ring_full_at(X)``, ``ring.full[X]`` -> ``ring_full_item(X)`` (the barrier's
    contents; for ``ring.a`` and ``ring.b`` the stage as a pointer), ``ring.full`` -> ``ring_full``."""
    out, pos = "", 0
    for m in _RING_MEMBER.finditer(text):
        if m.start() < pos:                   # inside an index already rewritten
            continue
        member = m.group(1)
        if member not in RING_MEMBERS:
            raise Unsupported(f"the ring has a, b, full and empty; {text.strip()!r} names ring.{member}")
        out += text[pos:m.start()]
        amp = _UNARY_AMPERSAND.search(out)
        address_of = amp is not None and not _OPERAND_END.search(out[:amp.start()])
        if address_of:
            out = out[:amp.start()]
        pos = m.end()
        bracket = re.compile(r"\s*\[").match(text, pos)
        if bracket is None:
            if address_of:
                raise Unsupported(f"&ring.{member} without an index in {text.strip()!r}")
            out += f"ring_{member}"
            continue
        depth, i = 1, bracket.end()           # the index: up to the matching ]
        while i < len(text) and depth:
            depth += (text[i] == "[") - (text[i] == "]")
            i += 1
        if depth:
            raise Unsupported(f"unbalanced [] in {text.strip()!r}")
        index = _ring_expression(text[bracket.end():i - 1])
        out += f"ring_{member}_{'at' if address_of else 'item'}({index})"
        pos = i
    return out + text[pos:]


def _evaluate(expression: str, env: dict) -> int:
    """A C integer expression of the region, ring members and smem_u32 included, with the names in ``env``."""
    return evaluate(_ring_expression(expression), {**RING_NAMES, **env})


def _run(program: list, env: dict):
    """Execute the region for one warp: yields ("wait", bar address, parity, line) and
    ("load", stage, slice, line)."""
    for stmt in program:
        if isinstance(stmt, Decl):
            env[stmt.name] = _evaluate(stmt.expr, env)
        elif isinstance(stmt, If):
            yield from _run(stmt.then if _evaluate(stmt.cond, env) else stmt.orelse, env)
        elif stmt.name == "mbar_wait_parity":
            if len(stmt.args) != 2:
                raise Unsupported(f"mbar_wait_parity takes (barrier, parity); line {stmt.line} passes {len(stmt.args)}")
            yield ("wait", _evaluate(stmt.args[0], env), _evaluate(stmt.args[1], env) & 1, stmt.line)
        else:
            if len(stmt.args) != 2:
                raise Unsupported(f"load_tile takes (stage, slice); line {stmt.line} passes {len(stmt.args)}")
            yield ("load", _evaluate(stmt.args[0], env), _evaluate(stmt.args[1], env), stmt.line)


REFERENCE_REGION = """
if (tid == 0 && next < k_tiles) {
    if (next >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[next % STAGES]), (next / STAGES - 1) % 2);
    load_tile(next % STAGES, next);
}
__syncwarp();
mbar_wait_parity(smem_u32(&ring.full[kt % STAGES]), (kt / STAGES) % 2);
"""


# ---------------------------------------------------------------- the ring model

def describe_address(address: int, stages: int) -> str:
    """What a stand-in address of the model is, in the kernel's names."""
    for member, base in VALUE_BASES.items():
        if 0 <= address - base < 1 << 20:
            index = (address - base) // 8
            return (f"ring.{member}[{index}], the barrier's 64-bit state and not its address "
                    f"(that is smem_u32(&ring.{member}[{index}]))")
    member, (base, step) = min(RING_MEMBERS.items(), key=lambda item: abs(address - item[1][0]))
    if abs(address - base) >= 1 << 19:
        return f"the number {address}, not an address in the ring"
    index, rest = divmod(address - base, step)
    where = f"&ring.{member}[{index}]" + (f" + {rest} bytes" if rest else "")
    if member not in VALUE_BASES:
        return f"smem_u32({where}), in the {member.upper()} tiles"
    if not 0 <= index < stages:
        return f"smem_u32({where}), past the {stages} barriers of ring.{member}"
    return f"smem_u32({where})"


class RingError(Exception):
    def __init__(self, kind: str, message: str, events: list):
        super().__init__(message)
        self.kind = kind          # "stale read", "overwrite", "hang", "bad barrier"
        self.message = message
        self.events = events


@dataclass
class _Warp:
    index: int
    program: object           # generator of actions
    pending: tuple | None = None
    kt: int = -1
    done: bool = False


def simulate_ring(program: list | None = None, *, stages: int = 4, k_tiles: int = 14, warps: int = 8,
                  policy: str = "uniform", seed: int = 0) -> list[dict]:
    """Play the main loop of rung 07 with ``program`` (the region; the reference when None) as
    its top, under one interleaving. Returns the events in order; raises :class:`RingError` at
    the first stale read, overwrite, hang or wait on a non-barrier.

    Everything outside the region is rung 07's: thread 0 loads slices 0..stages-2 before the
    loop, ``__syncthreads``, then each warp, per iteration kt, runs the region, reads stage
    ``kt % stages`` and arrives on its empty barrier. A warp stands for its lane 0 (thread
    ``32 * warp``), so warp 0 is also the producer.
    """
    program = parse_region(REFERENCE_REGION) if program is None else program
    rng = random.Random(seed)
    full_phases = [0] * stages
    empty_phases = [0] * stages
    empty_arrivals = [0] * stages
    content = [None] * stages            # slice landed in each stage
    in_flight: list[tuple[int, int]] = []   # (stage, slice) copies not landed yet
    readers: list[dict] = [dict() for _ in range(stages)]   # stage -> {warp: slice}
    events: list[dict] = []

    def log(actor, kt, action, stage, detail):
        events.append({"step": len(events), "actor": actor, "kt": kt, "action": action, "stage": stage,
                       "detail": detail, "full_phases": list(full_phases), "empty_phases": list(empty_phases)})

    def fail(kind, message):
        raise RingError(kind, message, events)

    def warp_program(w):
        if w == 0:
            for s in range(stages - 1):
                if s < k_tiles:
                    yield ("load", s, s, None)
        yield ("sync",)
        for kt in range(k_tiles):
            env = {"kt": kt, "next": kt + stages - 1, "STAGES": stages, "k_tiles": k_tiles, "tid": 32 * w,
                   "lane": 0, "warp": w, "THREADS": 32 * warps}
            yield ("kt", kt)
            yield from _run(program, env)
            yield ("read", kt % stages, kt)
            yield ("arrive", kt % stages)

    def barrier(address, line):
        for base, name, phases in ((FULL_BASE, "full", full_phases), (EMPTY_BASE, "empty", empty_phases)):
            offset = address - base
            if 0 <= offset < 8 * stages and offset % 8 == 0:
                return name, offset // 8, phases
        fail("bad barrier", f"line {line} waits on {describe_address(address, stages)}: no barrier of the ring. "
             f"The full barriers are smem_u32(&ring.full[s]) and the empty ones smem_u32(&ring.empty[s]), "
             f"s = 0..{stages - 1}.")

    agents = [_Warp(w, warp_program(w)) for w in range(warps)]
    at_sync = set()

    def advance(agent):
        try:
            agent.pending = next(agent.program)
        except StopIteration:
            agent.done, agent.pending = True, None
        while agent.pending is not None and agent.pending[0] == "kt":
            agent.kt = agent.pending[1]
            advance(agent)

    for agent in agents:
        advance(agent)

    def can_run(agent):
        action = agent.pending
        if agent.done:
            return False
        if action[0] == "held":
            return False
        if action[0] == "wait":
            _, index, phases = barrier(action[1], action[3])
            return phases[index] % 2 != action[2]
        return True

    while True:
        runnable = [a for a in agents if can_run(a)]
        if all(a.done for a in agents):
            return events
        if not runnable and not in_flight:
            blocked = []
            for a in agents:
                if a.done:
                    continue
                if a.pending[0] == "wait":
                    name, index, phases = barrier(a.pending[1], a.pending[3])
                    blocked.append(f"warp {a.index} at kt={a.kt} (line {a.pending[3]}) waits on {name}[{index}] for "
                                   f"parity {a.pending[2]}; it has completed {phases[index]} phase(s), so its last "
                                   f"completed phase has parity {(phases[index] - 1) % 2 if phases[index] else 1}")
            fail("hang", "The kernel hangs: no copy is in flight and every warp waits for a phase that nothing "
                 "will complete.\n  " + "\n  ".join(blocked[:3]))
        choices = [("warp", a) for a in runnable] + [("copy", c) for c in in_flight]
        choice = _choose(choices, policy, rng)
        if choice[0] == "copy":
            stage, slice_ = choice[1]
            in_flight.remove(choice[1])
            content[stage] = slice_
            full_phases[stage] += 1
            log("TMA", None, "lands", stage, f"slice {slice_} in stage {stage}: full[{stage}] completes phase "
                f"{full_phases[stage] - 1}")
            continue
        agent = choice[1]
        action = agent.pending
        who = f"warp {agent.index}"
        if action[0] == "sync":                # __syncthreads: held until every warp is there
            at_sync.add(agent.index)
            agent.pending = ("held",)
            if len(at_sync) == warps:
                for a in agents:
                    advance(a)
            continue
        if action[0] == "load":
            stage, slice_, line = action[1], action[2], action[3]
            if not 0 <= stage < stages:
                fail("bad barrier", f"line {line}: load_tile into stage {stage}; the ring has stages 0..{stages - 1}.")
            if readers[stage]:
                w, s = next(iter(readers[stage].items()))
                fail("overwrite", f"thread 0 (kt={agent.kt}, line {line}) starts loading slice {slice_} into stage "
                     f"{stage} while warp {w} is still reading slice {s} there: the copy overwrites data under it. "
                     f"Wait on empty[{stage}] for the phase in which every warp left the stage.")
            if any(st == stage for st, _ in in_flight):
                fail("overwrite", f"thread 0 (kt={agent.kt}, line {line}) loads slice {slice_} into stage {stage} while "
                     "the previous copy into it is still in flight.")
            in_flight.append((stage, slice_))
            content[stage] = None
            log("thread 0", agent.kt if agent.kt >= 0 else None, "load_tile", stage,
                f"slice {slice_} -> stage {stage} (expect_tx on full[{stage}])")
        elif action[0] == "wait":
            name, index, phases = barrier(action[1], action[3])
            log(who, agent.kt, f"passes {name}[{index}]", index, f"parity {action[2]}: {phases[index]} phase(s) "
                f"completed")
        elif action[0] == "read":
            stage, kt = action[1], action[2]
            if content[stage] != kt:
                state = ("a copy into it is still in flight" if content[stage] is None
                         else f"it holds slice {content[stage]}")
                fail("stale read", f"warp {agent.index} computes slice {kt} from stage {stage}, but {state}: "
                     f"the wait before it let the warp through too early (after full[{stage}] completed "
                     f"{full_phases[stage]} phase(s)). The result would be wrong.")
            readers[stage][agent.index] = kt
            log(who, kt, "reads", stage, f"slice {kt} (ldmatrix + mma)")
        elif action[0] == "arrive":
            stage = action[1]
            readers[stage].pop(agent.index, None)
            empty_arrivals[stage] += 1
            detail = f"{empty_arrivals[stage]} of {warps} arrivals"
            if empty_arrivals[stage] == warps:
                empty_arrivals[stage] = 0
                empty_phases[stage] += 1
                detail += f": empty[{stage}] completes phase {empty_phases[stage] - 1}"
            log(who, agent.kt, "arrives", stage, detail)
        advance(agent)


def _choose(choices, policy, rng):
    warps = [c for c in choices if c[0] == "warp"]
    if policy == "slow copies" and warps and rng.random() < 0.9:
        return rng.choice(warps)
    if policy in ("producer ahead", "producer behind") and warps:
        producer = [c for c in warps if c[1].index == 0]
        others = [c for c in warps if c[1].index != 0]
        first, second = (producer, others) if policy == "producer ahead" else (others, producer)
        if first and rng.random() < 0.8:
            return rng.choice(first)
        if second and rng.random() < 0.8:
            return rng.choice(second)
    return rng.choice(choices)


def play_all(program: list, *, stages: int, warps: int, k_tiles: int | None = None) -> int:
    """Every policy, ``SCHEDULES_PER_POLICY`` seeds each; the number of interleavings played.
    Raises :class:`RingError` at the first problem."""
    k_tiles = 3 * stages + 2 if k_tiles is None else k_tiles
    played = 0
    for policy in POLICIES:
        for seed in range(SCHEDULES_PER_POLICY):
            simulate_ring(program, stages=stages, k_tiles=k_tiles, warps=warps, policy=policy, seed=seed)
            played += 1
    return played


def format_events(events: list[dict], last: int | None = None, *, widths: tuple[int, int, int] = (9, 15, 52)) -> str:
    """The events as a table: step, who, kt, what, detail, and the phases each barrier has completed.
    ``widths`` are the least widths of the who, action and detail columns; a wider entry widens its
    column (chapter 10's ring shares this table)."""
    rows = events[-last:] if last else events
    who = max([widths[0]] + [len(e["actor"]) for e in rows])
    action = max([widths[1]] + [len(e["action"]) for e in rows])
    detail = max([widths[2]] + [len(e["detail"]) for e in rows])
    lines = [f"{'step':>4}  {'who':<{who}} {'kt':>3}  {'action':<{action}} {'detail':<{detail}} full / empty phases"]
    for e in rows:
        kt = "" if e["kt"] is None else str(e["kt"])
        lines.append(f"{e['step']:>4}  {e['actor']:<{who}} {kt:>3}  {e['action']:<{action}} {e['detail']:<{detail}} "
                     f"{e['full_phases']} / {e['empty_phases']}")
    return "\n".join(lines)


# ---------------------------------------------------------------- the checker

def _ring_shape(compiled: Compiled) -> tuple[int, int]:
    """The stages and warps of rung 07's ring as sized for the target the kernel is checked on."""
    from ..library.ladder.r07_tma import tiles_for

    tiles = tiles_for(compiled.target)
    return tiles.stages, tiles.warps


def structural(compiled: Compiled) -> str:
    shown = display_path(compiled.path)
    try:
        program = [stmt for region, first in compiled.regions() for stmt in parse_region(region, first)]
    except Unsupported as exc:
        return (f"the ring model could not read your region ({exc}); the GPU run decides whether the "
                "waits are right")
    stages, warps = _ring_shape(compiled)
    try:
        played = play_all(program, stages=stages, warps=warps)
    except Unsupported as exc:
        return f"the ring model could not evaluate your region ({exc}); the GPU run decides"
    except RingError as exc:
        article = "an" if exc.kind[0] in "aeiou" else "a"
        raise Failure(f"{shown}: the ring model finds {article} {exc.kind}. {exc.message}\n"
                      f"The last events before it ({stages} stages, {warps} warps):\n"
                      + format_events(exc.events, last=8),
                      {"input": shown, "expected": "no stale read, overwrite or hang", "got": exc.kind}) from None
    return (f"the ring model played your waits through {played} interleavings of {warps} warps and the copy "
            f"engine ({stages} stages, {3 * stages + 2} slices): no stale read, overwrite or hang")


EXERCISE = KernelExercise(
    name="ex07_mbarrier",
    rung="07",
    description="mbarrier ring: the phase parity of rung 07's full/empty waits (a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("mbarrier.try_wait.parity", "no thread ever waits on a barrier, so the warps compute on stages "
                "before their bytes land."),
        PtxRule("cp.async.bulk.tensor", "no TMA copy is issued."),
        PtxRule("mbarrier.arrive.shared", "no warp arrives on ring.empty after reading a stage, so thread 0's "
                "wait for the stage to be free never returns: the kernel hangs in the second round of the ring. "
                "Keep the arrive at the end of the main loop as the exercise gave it."),
        PtxRule("fence.proxy.async", "nothing orders the warps' ldmatrix reads of a stage before the TMA's next "
                "writes into it (the copy engine is another proxy), so a copy can land under a warp still reading. "
                "Keep fence_proxy_async_shared_cta() before the arrive on ring.empty as the exercise gave it."),
    ),
    structural=structural,
)
