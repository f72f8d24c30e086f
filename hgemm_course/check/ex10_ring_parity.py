"""Checker for ex10_ring_parity: the stage and the phase parity of rung 10's two ring waits.

Rung 10 (``kernels/k10_warp_specialized.cu``) runs its STAGES-deep ring with one producer thread and
two consumer warpgroups:

- the producer, for every slice kt: ``if (kt >= STAGES) mbar_wait_parity(empty[kt % STAGES], ...)``,
  then ``load_tile(kt % STAGES, kt)`` (TMA; ``full[kt % STAGES]`` completes a phase when it lands);
- each consumer, for every slice kt: ``mbar_wait_parity(full[kt % STAGES], ...)``, the wgmma products
  of slice kt on that stage, ``wgmma_wait_group<1>`` (slice kt - 1's products are done), then lane 0
  of each of its four warps arrives on ``empty[(kt - 1) % STAGES]``: slice kt - 1 is freed one slice
  late, and ``empty[s]`` completes a phase once all eight consumer warps have arrived.

The reference is :func:`ring_slot`: slice kt is use number ``kt // stages`` of stage ``kt % stages``,
so its landing completes phase ``kt // stages`` of the stage's full barrier, and its release the same
phase of the stage's empty barrier. A wait for parity p returns once the most recent completed phase
has parity p (``mbar_wait_parity`` passes when ``phases % 2 != p``; a barrier that has completed no
phase passes a wait for parity 1 at once).

Checked exhaustively for kt < 64 and stages 2..8 (rung 10's own stage count first). On a wrong
answer the ring is played with the learner's function (and rung 10's own other wait) by
:func:`play_ring`, a small model of the producer, the two consumers and the copy engine under many
interleavings, and the verdict says what the kernel would do: compute a slice before TMA has landed
it, overwrite a stage that wgmma still reads (both: a wrong result), or hang.
"""
from __future__ import annotations

import random
from collections import Counter
from typing import Callable

from . import tma_ring
from .feedback import Exercise, Failure, Learner, as_int_pair, format_call, passed_message, with_extra

FUNCTIONS = ("full_wait", "empty_wait")
EXTRA = "persistent_full_wait"  # the extra question: the ring running on across a persistent CTA's tiles

K_SLICES = 64
STAGE_COUNTS = range(2, 9)
CONSUMERS = 2                   # consumer warpgroups (rung 10's CONSUMERS)
WARPS_PER_CONSUMER = 4          # each arrives once per warp on the empty barrier
POLICIES = ("slow copies", "producer ahead", "consumers ahead", "fast copies", "uniform")
SEEDS_PER_POLICY = 4
WaitFn = Callable[[int, int], "tuple[int, int] | None"]


# ---------------------------------------------------------------- the reference

def ring_slot(kt: int, stages: int) -> tuple[int, int]:
    """(stage, use) of slice ``kt``: it lives in stage ``kt % stages`` on that stage's use number
    ``kt // stages``, so its landing completes phase ``use`` of ``full[stage]`` and its release
    phase ``use`` of ``empty[stage]``."""
    return kt % stages, kt // stages


def full_wait(kt: int, stages: int) -> tuple[int, int]:
    """Rung 10's consumer wait before slice kt: phase ``use`` of ``full[stage]``."""
    stage, use = ring_slot(kt, stages)
    return stage, use % 2


def empty_wait(kt: int, stages: int) -> tuple[int, int] | None:
    """Rung 10's producer wait before loading slice kt: the release of slice kt - stages, the
    stage's previous occupant (phase ``use - 1`` of ``empty[stage]``); none on a stage's first use."""
    stage, use = ring_slot(kt, stages)
    return None if use == 0 else (stage, (use - 1) % 2)


REFERENCE = {"full_wait": full_wait, "empty_wait": empty_wait}


# ---------------------------------------------------------------- the ring model

class RingError(Exception):
    """What the kernel would do wrong: ``kind`` is "stale read", "overwrite", "hang" or "bad barrier"."""

    def __init__(self, kind: str, message: str, events: list[dict]):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.events = events


def play_ring(full_wait_fn: WaitFn = full_wait, empty_wait_fn: WaitFn = empty_wait, *, stages: int = 4,
              k_tiles: int = 10, consumers: int = CONSUMERS, policy: str = "uniform", seed: int = 0) -> list[dict]:
    """Play rung 10's main loops with these two waits under one interleaving; the events in order
    (dicts: step, actor, kt, action, detail, the phases completed so far, and the stage, phase, parity,
    barrier or retired slice where the action has one).

    The producer waits ``empty_wait_fn(kt, stages)`` (if not None) and loads slice kt into stage
    ``kt % stages``; each consumer waits ``full_wait_fn(kt, stages)``, issues slice kt's wgmma on
    stage ``kt % stages`` (which reads the stage until it retires), retires slice kt - 1 and arrives
    on ``empty[(kt - 1) % stages]`` for its warps; the copy engine lands each load some time later.
    Barrier ``full[s]`` for ``stages <= s < 2 * stages`` is ``empty[s - stages]``, as in the kernel's
    shared memory. Raises :class:`RingError` at the first stale read, overwrite, hang or wait on no barrier.
    """
    rng = random.Random(seed)
    phases = {"full": [0] * stages, "empty": [0] * stages}
    arrivals = [0] * stages
    content: list[int | None] = [None] * stages       # the slice that has landed in each stage
    issued: list[set] = [set() for _ in range(stages)]   # consumers that have computed the stage's slice
    readers: list[dict] = [dict() for _ in range(stages)]  # consumer -> slice its wgmma still reads
    in_flight: list[tuple[int, int]] = []              # (stage, slice) copies not landed yet
    passed: dict[str, tuple[str, int, int]] = {}       # each thread's last passed wait: (barrier, index, parity)
    events: list[dict] = []

    def log(actor, kt, action, detail, **data):
        events.append({"step": len(events), "actor": actor, "kt": kt, "action": action, "detail": detail,
                       "full_phases": list(phases["full"]), "empty_phases": list(phases["empty"]), **data})

    def fail(kind, message):
        raise RingError(kind, message, events)

    def barrier(kind: str, stage: int, who: str) -> tuple[str, int]:
        if 0 <= stage < stages:
            return kind, stage
        if kind == "full" and stages <= stage < 2 * stages:
            return "empty", stage - stages      # full_bar + 8 * stage lands on an empty barrier
        fail("bad barrier", f"{who} waits on {kind}[{stage}], but the ring has {kind}[0..{stages - 1}]: "
             f"{kind}_bar + {8 * stage} is shared memory that holds no barrier, and try_wait on it is undefined "
             "(a wrong result or a hang). The stage of slice kt is kt % stages.")

    def producer():
        for kt in range(k_tiles):
            wait = empty_wait_fn(kt, stages)
            if wait is not None:
                yield ("wait", kt, *barrier("empty", wait[0], f"the producer (before slice {kt})"), wait[1])
            yield ("load", kt, kt % stages)

    def consumer(c):
        for kt in range(k_tiles):
            stage, parity = full_wait_fn(kt, stages)
            yield ("wait", kt, *barrier("full", stage, f"consumer {c} (slice {kt})"), parity)
            yield ("issue", kt, kt % stages)
            if kt > 0:
                yield ("retire", kt, kt - 1)
        if k_tiles:
            yield ("retire", k_tiles, k_tiles - 1)

    agents = {"producer": producer(), **{f"consumer {c}": consumer(c) for c in range(consumers)}}
    pending = {name: next(gen, None) for name, gen in agents.items()}

    def ready(action) -> bool:
        if action[0] != "wait":
            return True
        _, _, kind, index, parity = action
        return phases[kind][index] % 2 != parity

    def blocked_line(name, action) -> str:
        _, kt, kind, index, parity = action
        n = phases[kind][index]
        state = f"has completed {n} phase(s), the last of parity {(n - 1) % 2}" if n else "has completed no phase"
        return f"{name} (slice {kt}) waits on {kind}[{index}] for parity {parity}; {kind}[{index}] {state}"

    while True:
        live = {n: a for n, a in pending.items() if a is not None}
        if not live:
            return events
        runnable = [n for n, a in live.items() if ready(a)]
        if not runnable and not in_flight:
            fail("hang", "The kernel hangs: no copy is in flight and every thread waits for a phase that nothing "
                 "will complete.\n  " + "\n  ".join(blocked_line(n, a) for n, a in live.items()))
        pick = _choose(runnable, in_flight, policy, rng)
        if isinstance(pick, tuple):                      # the copy engine lands a copy
            stage, slice_ = pick
            in_flight.remove(pick)
            content[stage] = slice_
            issued[stage] = set()
            phases["full"][stage] += 1
            log("TMA", slice_, "lands", f"slice {slice_} in stage {stage}: full[{stage}] completes phase "
                f"{phases['full'][stage] - 1}", stage=stage, phase=phases["full"][stage] - 1)
            continue
        name, action = pick, live[pick]
        kind, kt = action[0], action[1]
        if kind == "wait":
            _, _, bar, index, parity = action
            passed[name] = (bar, index, parity)
            log(name, kt, f"passes {bar}[{index}]", f"parity {parity}: {phases[bar][index]} phase(s) completed",
                barrier=bar, stage=index, parity=parity)
        elif kind == "load":
            stage = action[2]
            if any(st == stage for st, _ in in_flight):
                fail("overwrite", f"the producer loads slice {kt} into stage {stage} while the copy of slice "
                     f"{next(s for st, s in in_flight if st == stage)} into it is still in flight: the two copies "
                     "land on top of each other. The result is wrong.")
            if readers[stage]:
                c, s = next(iter(readers[stage].items()))
                fail("overwrite", f"the producer loads slice {kt} into stage {stage} while {c}'s wgmma still reads "
                     f"slice {s} there: TMA overwrites the operands under the tensor cores. The result is wrong.")
            if content[stage] is not None and len(issued[stage]) < consumers:
                missing = [f"consumer {c}" for c in range(consumers) if f"consumer {c}" not in issued[stage]]
                fail("overwrite", f"the producer loads slice {kt} into stage {stage} before {' and '.join(missing)} "
                     f"has computed slice {content[stage]} from it: that slice is lost. The result is wrong.")
            in_flight.append((stage, kt))
            content[stage] = None
            log(name, kt, "load_tile", f"slice {kt} -> stage {stage} (TMA in flight)", stage=stage)
        elif kind == "issue":
            stage = action[2]
            if content[stage] != kt:
                bar, index, parity = passed[name]
                state = ("its copy is still in flight" if content[stage] is None and (stage, kt) in in_flight
                         else "a copy into it is still in flight" if content[stage] is None
                         else f"it holds slice {content[stage]}")
                fail("stale read", f"{name} computes slice {kt} from stage {stage}, but {state}: its wait on "
                     f"{bar}[{index}] for parity {parity} let it through before the slice landed. wgmma reads operands TMA has not landed: "
                     "the result is wrong.")
            readers[stage][name] = kt
            issued[stage].add(name)
            log(name, kt, "wgmma", f"slice {kt} on stage {stage} (in flight)", stage=stage)
        else:                                            # retire: wgmma_wait_group, then arrive on empty
            slice_ = action[2]
            stage = slice_ % stages
            readers[stage].pop(name, None)
            completed = None
            if kt < k_tiles:
                arrivals[stage] += WARPS_PER_CONSUMER
                detail = f"slice {slice_} retired; {arrivals[stage]} of {WARPS_PER_CONSUMER * consumers} arrivals " \
                         f"on empty[{stage}]"
                if arrivals[stage] == WARPS_PER_CONSUMER * consumers:
                    arrivals[stage] = 0
                    phases["empty"][stage] += 1
                    completed = phases["empty"][stage] - 1
                    detail += f": phase {completed} completes"
                log(name, kt, "arrive", detail, stage=stage, retired=slice_, phase=completed)
            else:
                log(name, None, "wait_group<0>", f"slice {slice_} retired", stage=stage, retired=slice_)
        pending[name] = next(agents[name], None)


def _choose(runnable: list[str], in_flight: list, policy: str, rng: random.Random):
    copies = list(in_flight)
    producer = [n for n in runnable if n == "producer"]
    consumers = [n for n in runnable if n != "producer"]
    if policy == "slow copies" and runnable and rng.random() < 0.9:
        return rng.choice(runnable)
    if policy == "fast copies" and copies:
        return rng.choice(copies)
    if policy in ("producer ahead", "consumers ahead"):
        first, second = (producer, consumers) if policy == "producer ahead" else (consumers, producer)
        for group in (first, second):
            if group and rng.random() < 0.8:
                return rng.choice(group)
    return rng.choice(runnable + copies)


def play_all(full_wait_fn: WaitFn = full_wait, empty_wait_fn: WaitFn = empty_wait, *, stages: int,
             k_tiles: int | None = None) -> dict:
    """Every policy, ``SEEDS_PER_POLICY`` seeds each: ``{'played': interleavings, 'problems': Counter of
    the kinds met, 'first': {kind: the first RingError of that kind}}``."""
    k_tiles = 3 * stages + 2 if k_tiles is None else k_tiles
    problems, first, played = Counter(), {}, 0
    for policy in POLICIES:
        for seed in range(SEEDS_PER_POLICY):
            played += 1
            try:
                play_ring(full_wait_fn, empty_wait_fn, stages=stages, k_tiles=k_tiles, policy=policy, seed=seed)
            except RingError as exc:
                problems[exc.kind] += 1
                first.setdefault(exc.kind, exc)
    return {"played": played, "problems": problems, "first": first}


def format_events(events: list[dict], last: int | None = None) -> str:
    """Chapter 07's event table, with columns wide enough for the two consumers' names and waits."""
    return tma_ring.format_events(events, last, widths=(10, 16, 56))


# ---------------------------------------------------------------- the checker

def _stage_counts() -> list[int]:
    from ..library.ladder.r10_warp_specialized import TILES

    return [TILES.stages] + [s for s in STAGE_COUNTS if s != TILES.stages]


def _companion(learner: Learner, name: str) -> Learner:
    """The learner's other function, found next to the first (same file or notebook namespace)."""
    other = learner.companion(name)
    if other is None:
        where = learner.source if learner.source is not None else "your namespace"
        raise Failure(f"{where} defines no function {name}(); ex10 needs both full_wait() and empty_wait(), "
                      "side by side, with the names the exercise gave.")
    return other


def _answer(fn: str, learner: Learner, kt: int, stages: int):
    args = {"kt": kt, "stages": stages}
    call = format_call(fn, args)
    value = learner(**args)
    if fn == "empty_wait" and value is None:
        return None, call, args
    what = "(stage, parity)" + (", or None" if fn == "empty_wait" else "")
    stage, parity = as_int_pair(value, call, args, what)
    if parity not in (0, 1):
        raise Failure(f"{call} returned parity {parity}; mbar_wait_parity takes 0 or 1 (the parity of a phase "
                      "number: phase % 2).", {"input": args, "expected": REFERENCE[fn](kt, stages),
                                              "got": (stage, parity)})
    return (stage, parity), call, args


def verify(learner: Learner) -> str:
    learners = {"full_wait": learner, "empty_wait": None}
    checked = 0
    for fn in FUNCTIONS:
        if learners[fn] is None:
            learners[fn] = _companion(learner, fn)
        learners[fn].plan([{"kt": kt, "stages": stages} for stages in _stage_counts() for kt in range(K_SLICES)])
        for stages in _stage_counts():
            for kt in range(K_SLICES):
                got, call, args = _answer(fn, learners[fn], kt, stages)
                expected = REFERENCE[fn](kt, stages)
                checked += 1
                if got != expected:
                    raise Failure(f"{call}: expected {expected}, got {got}.\n" + explain(fn, learners[fn], kt, stages,
                                                                                        expected, got),
                                  {"input": args, "expected": expected, "got": got})
    passed = passed_message(checked, f"both waits of rung 10's ring for every slice kt < {K_SLICES} and "
                            f"{STAGE_COUNTS.start}-{STAGE_COUNTS.stop - 1} stages: the consumers wait for the phase "
                            "in which their slice lands, the producer for the one in which the stage's previous "
                            "slice was freed")
    return with_extra(learner, passed, EXTRA, verify_persistent, "the full waits of a ring that runs on across a "
                      "persistent CTA's tiles")


def verify_persistent(learner: Learner) -> int:
    """The extra question over 6 tiles of 1, 3, 4 or 7 slices and 2-6 stages; the cases checked."""
    checked = 0
    for stages in range(2, 7):
        for k_tiles in (1, 3, 4, 7):
            for tile_index in range(6):
                for kt in range(k_tiles):
                    args = {"tile_index": tile_index, "kt": kt, "k_tiles": k_tiles, "stages": stages}
                    call = format_call(EXTRA, args)
                    got = as_int_pair(learner(**args), call, args, "(stage, parity)")
                    expected = full_wait(tile_index * k_tiles + kt, stages)
                    checked += 1
                    if got != expected:
                        restarted = full_wait(kt, stages)
                        why = (" That is the wait of a ring restarted at every tile; rung 11's is not: the producer "
                               "already filled stages with the next tile's first slices, and the barriers have "
                               "completed the phases of all the tiles before." if got == restarted else "")
                        raise Failure(f"{call}: expected {expected}, got {got}.{why}",
                                      {"input": args, "expected": expected, "got": got})
    return checked


def explain(fn: str, learner: Learner, kt: int, stages: int, expected, got) -> str:
    """Why the expected wait is right, and what rung 10 would do with the learner's one."""
    stage, use = ring_slot(kt, stages)
    if fn == "full_wait":
        why = (f"Slice {kt} is use {use} of stage {stage} ({kt} % {stages}, {kt} // {stages}); its landing completes "
               f"phase {use} of full[{stage}], whose parity is {use % 2}.")
    elif use == 0:
        why = (f"Slice {kt} is the first use of stage {stage}: the stage is free and rung 10 does not wait "
               "(`if (kt >= STAGES)`), so return None.")
    else:
        why = (f"Slice {kt} reuses stage {stage}, whose previous slice {kt - stages} is use {use - 1}; the consumers "
               f"free it (after wgmma_wait_group<1> at their slice {kt - stages + 1}) and so complete phase "
               f"{use - 1} of empty[{stage}], whose parity is {(use - 1) % 2}.")
    verdict = _consequence(fn, learner, kt, stages)
    return why + "\n" + verdict


def _consequence(fn: str, learner: Learner, kt: int, stages: int) -> str:
    def mine(k, s):
        value, _, _ = _answer(fn, learner, k, s)
        return value

    waits = {"full_wait": full_wait, "empty_wait": empty_wait, fn: mine}
    k_tiles = max(3 * stages + 2, kt + 2)
    try:
        found = play_all(waits["full_wait"], waits["empty_wait"], stages=stages, k_tiles=k_tiles)
    except Failure as failure:              # the learner's function fails on another input the model needs
        return f"(The ring model could not play your waits: {failure.message.splitlines()[0]})"
    setting = (f"rung 10's ring with your {fn} and its own {'empty' if fn == 'full_wait' else 'full'} wait, "
               f"{stages} stages, {k_tiles} slices, 1 producer and {CONSUMERS} consumer warpgroups")
    if not found["problems"]:
        harmless = fn == "empty_wait" and kt < stages and mine(kt, stages) is not None \
            and mine(kt, stages)[1] == 1
        note = (" A wait for parity 1 on a barrier that has completed no phase returns at once, so this one "
                "costs nothing (CUTLASS's pipelines start their producer this way); rung 10 skips it instead."
                if harmless else "")
        return (f"In {found['played']} interleavings of {setting}, the model met no wrong result and no hang.{note} "
                "The exercise asks for rung 10's own waits.")
    counts = "; ".join(f"{kind} in {n} ({EFFECT[kind]})" for kind, n in found["problems"].most_common())
    worst = found["first"][found["problems"].most_common(1)[0][0]]
    shown = f"\nThe last events before it:\n{format_events(worst.events, last=8)}" if worst.events else ""
    return (f"What the kernel does with it ({setting}), in {found['played']} interleavings: {counts}.\n"
            f"{worst.message[0].upper()}{worst.message[1:]}{shown}")


EFFECT = {"stale read": "a wait that lets the consumers through before TMA has landed their slice: wrong result",
          "overwrite": "a wait that lets the producer refill a stage the consumers still need: wrong result",
          "hang": "a wait for a phase that never completes: the kernel never returns",
          "bad barrier": "a wait on shared memory that is no barrier of the ring"}


EXERCISE = Exercise(
    name="ex10_ring_parity",
    function="full_wait",
    description="ring parity: the stage and phase parity of rung 10's full (consumer) and empty (producer) waits.",
    verify=verify,
)
