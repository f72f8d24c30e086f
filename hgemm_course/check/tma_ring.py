"""A model of rung 07's full/empty mbarrier ring, played under many interleavings of the warps and of the
copy engine (chapter 07 draws its table; ex07's checker plays the waits the learner's regions made).

- an mbarrier counts completed phases; ``mbar_wait_parity(bar, p)`` returns once the most recent phase with
  parity ``p`` has completed, i.e. when ``phases % 2 != p`` (so right after init, waiting for parity 1 returns
  at once);
- ``full[s]`` completes a phase when the bytes of the slice loaded into stage ``s`` land; ``empty[s]`` when
  all warps have arrived after reading stage ``s``;
- a warp that reads a stage before its slice has landed reads stale or half-written data; a copy into a stage
  that a warp is still reading overwrites data under it; a wait that no event will ever complete hangs the
  kernel.

What each warp does at the top of iteration kt is given as data, :data:`Actions`: the waits (on a shared-memory
address, for a parity) and the loads it makes, in order. Everything else is rung 07's: thread 0 loads slices
0..stages-2 before the loop, ``__syncthreads``, then each warp, per iteration kt, makes its actions, reads stage
``kt % stages`` and arrives on its empty barrier.

Addresses are those of a stand-in ring whose members lie 1 MiB apart (ex07's host program lays its ring out so),
so that an index past an array's end still reads as that array: :class:`Layout`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

FULL_BASE = 1 << 20     # smem_u32(&ring.full[0])
EMPTY_BASE = 2 << 20    # smem_u32(&ring.empty[0])
A_BASE = 3 << 20        # smem_u32(&ring.a[0])
B_BASE = 4 << 20        # smem_u32(&ring.b[0])
MEMBER_SPAN = 1 << 20   # the room each member has; mbarriers are 8 bytes each
VALUE_BASES = {"full": 8 << 20, "empty": 9 << 20}   # ring.full[X], ring.empty[X] read as integers, not addresses
POLICIES = ("uniform", "slow copies", "producer ahead", "producer behind")
SCHEDULES_PER_POLICY = 12

Actions = Callable[[int, int], list]
"""``actions(warp, kt)``: what the warp does at the top of iteration kt, in order: ``("wait", address, parity,
line)`` and ``("load", stage, slice, line, thread)`` (``line``: the learner's line, None for the course's own)."""


@dataclass(frozen=True)
class Layout:
    """The stand-in ring's members: (stand-in address, bytes per index). A stage of A or B has its real size."""

    a_stage_bytes: int = 256 * 64 * 2     # rung 07's (BM, BK) halves on the H200
    b_stage_bytes: int = 64 * 128 * 2     # its (BK, BN) halves

    @property
    def members(self) -> dict[str, tuple[int, int]]:
        return {"full": (FULL_BASE, 8), "empty": (EMPTY_BASE, 8), "a": (A_BASE, self.a_stage_bytes),
                "b": (B_BASE, self.b_stage_bytes)}

    def name(self, address: int, stages: int) -> str:
        """``full[s]`` or ``empty[s]`` for a barrier of the ring, else what :meth:`describe` says."""
        for member, base in (("full", FULL_BASE), ("empty", EMPTY_BASE)):
            offset = address - base
            if 0 <= offset < 8 * stages and offset % 8 == 0:
                return f"{member}[{offset // 8}]"
        return self.describe(address, stages)

    def describe(self, address: int, stages: int) -> str:
        """What a stand-in address is, in the kernel's names."""
        for member, base in VALUE_BASES.items():
            if 0 <= address - base < MEMBER_SPAN:
                index = (address - base) // 8
                return (f"ring.{member}[{index}], the barrier's 64-bit state and not its address "
                        f"(that is smem_u32(&ring.{member}[{index}]))")
        member, (base, step) = min(self.members.items(), key=lambda item: abs(address - item[1][0]))
        if abs(address - base) >= MEMBER_SPAN // 2:
            return f"the number {address}, not an address in the ring"
        index, rest = divmod(address - base, step)
        where = f"&ring.{member}[{index}]" + (f" + {rest} bytes" if rest else "")
        if member not in VALUE_BASES:
            return f"smem_u32({where}), in the {member.upper()} tiles"
        if not 0 <= index < stages:
            return f"smem_u32({where}), past the {stages} barriers of ring.{member}"
        return f"smem_u32({where})"


def reference_actions(stages: int, k_tiles: int) -> Actions:
    """Rung 07's own top of the loop: thread 0 waits for the stage of slice ``next`` to be free (from the second
    round on) and loads it; every warp waits for the phase of ``full[kt % stages]`` in which slice kt lands."""
    def actions(warp: int, kt: int) -> list:
        out, following = [], kt + stages - 1
        if warp == 0 and following < k_tiles:
            if following >= stages:
                out.append(("wait", EMPTY_BASE + 8 * (following % stages), (following // stages - 1) % 2, None))
            out.append(("load", following % stages, following, None, 0))
        out.append(("wait", FULL_BASE + 8 * (kt % stages), (kt // stages) % 2, None))
        return out
    return actions


class RingError(Exception):
    def __init__(self, kind: str, message: str, events: list):
        super().__init__(message)
        self.kind = kind          # "stale read", "overwrite", "hang", "bad barrier", "bad load"
        self.message = message
        self.events = events


@dataclass
class _Warp:
    index: int
    program: object           # generator of actions
    pending: tuple | None = None
    kt: int = -1
    done: bool = False
    passed: tuple | None = None   # the last wait it passed: (barrier name, index, parity, line)


def _line(line) -> str:
    """`` (line 126)`` for a learner's line, nothing for the course's own action."""
    return f" (line {line})" if line is not None else ""


def simulate_ring(actions: Actions | None = None, *, stages: int = 4, k_tiles: int = 14, warps: int = 8,
                  policy: str = "uniform", seed: int = 0, layout: Layout = Layout()) -> list[dict]:
    """Play the main loop of rung 07 with ``actions`` (the reference's when None) at its top, under one
    interleaving. Returns the events in order; raises :class:`RingError` at the first stale read, overwrite,
    hang, wait on a non-barrier or load out of the ring.

    A warp stands for the thread that makes its actions (lane 0, or the warp's loading thread), so warp 0 is
    also the producer.
    """
    actions = reference_actions(stages, k_tiles) if actions is None else actions
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
                    yield ("load", s, s, None, 0)
        yield ("sync",)
        for kt in range(k_tiles):
            yield ("kt", kt)
            yield from actions(w, kt)
            yield ("read", kt % stages, kt)
            yield ("arrive", kt % stages)

    def barrier(address, line):
        for base, name, phases in ((FULL_BASE, "full", full_phases), (EMPTY_BASE, "empty", empty_phases)):
            offset = address - base
            if 0 <= offset < 8 * stages and offset % 8 == 0:
                return name, offset // 8, phases
        fail("bad barrier", f"line {line} waits on {layout.describe(address, stages)}: no barrier of the ring. "
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
                    blocked.append(f"warp {a.index} at kt={a.kt}{_line(a.pending[3])} waits on {name}[{index}] for "
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
            _load(action, agent, stages, k_tiles, readers, in_flight, fail)
            in_flight.append((action[1], action[2]))
            content[action[1]] = None
            log(f"thread {action[4]}", agent.kt if agent.kt >= 0 else None, "load_tile", action[1],
                f"slice {action[2]} -> stage {action[1]} (expect_tx on full[{action[1]}])")
        elif action[0] == "wait":
            name, index, phases = barrier(action[1], action[3])
            agent.passed = (name, index, action[2], action[3])
            log(who, agent.kt, f"passes {name}[{index}]", index, f"parity {action[2]}: {phases[index]} phase(s) "
                f"completed")
        elif action[0] == "read":
            stage, kt = action[1], action[2]
            if content[stage] != kt:
                state = ("a copy into it is still in flight" if content[stage] is None
                         else f"it holds slice {content[stage]}")
                if agent.passed is None:
                    let = "no wait held the warp back"
                else:
                    name, index, parity, line = agent.passed
                    let = f"its wait on {name}[{index}] for parity {parity}{_line(line)} let the warp through too early"
                fail("stale read", f"warp {agent.index} computes slice {kt} from stage {stage}, but {state}: "
                     f"{let} (after full[{stage}] completed {full_phases[stage]} phase(s)). The result would be "
                     "wrong.")
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


def _load(action: tuple, agent: _Warp, stages: int, k_tiles: int, readers: list, in_flight: list, fail) -> None:
    """A load the ring cannot take is a RingError: a stage out of the ring, a slice past K, a stage still read
    or still being filled."""
    _, stage, slice_, line, thread = action
    at = f"thread {thread} (kt={agent.kt}" + (f", line {line})" if line is not None else ")") if agent.kt >= 0 \
        else f"thread {thread}"
    if not 0 <= stage < stages:
        fail("bad load", f"{at}: load_tile into stage {stage}; the ring has stages 0..{stages - 1}.")
    if not 0 <= slice_ < k_tiles:
        fail("bad load", f"{at} loads slice {slice_}, but K has {k_tiles} slices (0..{k_tiles - 1}): no warp "
             "waits for that copy, so it may still be writing shared memory when the CTA exits. Load only while "
             "next < k_tiles.")
    if readers[stage]:
        w, s = next(iter(readers[stage].items()))
        fail("overwrite", f"{at} starts loading slice {slice_} into stage {stage} while warp {w} is still "
             f"reading slice {s} there: the copy overwrites data under it. Wait on empty[{stage}] for the phase "
             "in which every warp left the stage.")
    if any(st == stage for st, _ in in_flight):
        fail("overwrite", f"{at} loads slice {slice_} into stage {stage} while the previous copy into it is still "
             "in flight.")


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


def play_all(actions: Actions | None = None, *, stages: int, warps: int, k_tiles: int | None = None,
             layout: Layout = Layout()) -> int:
    """Every policy, ``SCHEDULES_PER_POLICY`` seeds each; the number of interleavings played.
    Raises :class:`RingError` at the first problem."""
    k_tiles = 3 * stages + 2 if k_tiles is None else k_tiles
    played = 0
    for policy in POLICIES:
        for seed in range(SCHEDULES_PER_POLICY):
            simulate_ring(actions, stages=stages, k_tiles=k_tiles, warps=warps, policy=policy, seed=seed,
                          layout=layout)
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
