"""A model of a cp.async ring as one thread sees it (every thread of the CTA runs the same bookkeeping, on its
own chunks): the copies it issues into each stage, the groups it commits them in, the waits, the barriers, and
the reads of each stage. Played with the events a kernel exercise's region printed on the CPU (:mod:`.host_model`),
it names the first read of a stage whose slice has not landed for every thread, and the first refill of a stage
that a warp may still be reading. PTX ISA: "cp.async.commit_group" (a group holds the copies issued since the
last commit), "cp.async.wait_group N" (waits until at most N of the thread's committed groups are pending; copies
not yet committed are not waited for).
"""
from __future__ import annotations

from dataclasses import dataclass

from .feedback import Failure


@dataclass
class Copy:
    slice: int
    stage: int
    part: int
    issued: int                   # the event it was issued at
    group: int | None = None      # the group it was committed in
    landed: int | None = None     # the event of the wait that saw it land


class Ring:
    """``copy``, ``commit``, ``wait``, ``sync`` and ``read`` in program order; ``where`` is a phrase naming the
    place in the loop (``at slice 2, k-step 3``) the next event comes from."""

    def __init__(self, stages: int, parts: int, shown: str):
        self.stages, self.parts, self.shown = stages, parts, shown
        self.t = 0
        self.copies: list[Copy] = []
        self.pending: list[Copy] = []
        self.groups: list[list[Copy]] = []
        self.held: dict[int, dict[int, Copy]] = {s: {} for s in range(stages)}
        self.syncs: list[int] = []
        self.last_read: dict[int, tuple[int, str]] = {}
        self.where = "in the prologue"   # the place the next event comes from, in full
        self.at = "in the prologue"      # the same, short: "at slice 2, k-step 3"

    def _fail(self, text: str, got) -> None:
        raise Failure(f"{self.shown}: {text}", {"input": self.where, "expected": "the ring's order", "got": got})

    def _synced_since(self, t: int) -> bool:
        return any(s > t for s in self.syncs)

    def copy(self, stage: int, slice_: int, part: int = 0) -> None:
        self.t += 1
        if not 0 <= stage < self.stages:
            self._fail(f"{self.where}, load_tile copies slice {slice_} into stage {stage}; the ring has stages "
                       f"0-{self.stages - 1}.", stage)
        read = self.last_read.get(stage)
        if read is not None and not self._synced_since(read[0]):
            self._fail(f"{self.where}, slice {slice_} is copied into stage {stage} while a warp may still be reading "
                       f"it: stage {stage} was last read {read[1]}, and no __syncthreads came between that read and "
                       "this copy, so a fast warp's copy overwrites what a slower warp has yet to read.",
                       "a refill before the barrier")
        c = Copy(slice_, stage, part, self.t)
        self.copies.append(c)
        self.pending.append(c)
        self.held[stage][part] = c

    def commit(self) -> None:
        self.t += 1
        for c in self.pending:
            c.group = len(self.groups)
        self.groups.append(self.pending)
        self.pending = []

    def wait(self, n: int) -> list[Copy]:
        """``cp.async.wait_group n``; the copies that landed with it."""
        self.t += 1
        landed = []
        for group in self.groups[:max(len(self.groups) - n, 0)]:
            for c in group:
                if c.landed is None:
                    c.landed = self.t
                    landed.append(c)
        return landed

    def too_deep(self, landed: list[Copy], needed: int, n: int) -> None:
        """A wait (``cp.async.wait_group n``) that made copies of slices past ``needed`` land: it drains the ring."""
        later = sorted({c.slice for c in landed if c.slice > needed})
        if later:
            self._fail(f"{self.where}, the wait (cp.async.wait_group {n}) waits for slice {needed} and also for slice"
                       f"{'s' if len(later) > 1 else ''} {', '.join(map(str, later))}: it leaves {n} groups in flight, "
                       f"so the copies of later slices no longer run under the compute. A wait should ask for the "
                       "slice about to be read and no more.", f"wait_group {n}")

    def sync(self) -> None:
        self.t += 1
        self.syncs.append(self.t)

    def read(self, stage: int, what: str, slice_: int | None = None) -> int:
        """A read of ``stage`` (``what``: ``"k-step 2's fragments"``); the slice it holds, which must be ``slice_``
        where given, whole, landed and visible to every thread."""
        self.t += 1
        if not 0 <= stage < self.stages:
            self._fail(f"{self.where}, {what} are read from stage {stage}; the ring has stages 0-{self.stages - 1}.",
                       stage)
        parts = [self.held[stage].get(p) for p in range(self.parts)]
        if any(c is None for c in parts):
            self._fail(f"{self.where}, {what} are read from stage {stage}, into which no slice has been copied.",
                       "an empty stage")
        slices = {c.slice for c in parts}
        if len(slices) > 1:
            self._fail(f"{self.where}, {what} are read from stage {stage}, which holds pieces of slices "
                       f"{sorted(slices)}: the copies of one slice went into its stage only in part.", sorted(slices))
        held = parts[0].slice
        if slice_ is not None and held != slice_:
            self._fail(f"{self.where}, the compute of slice {slice_} reads stage {stage}, which holds slice {held}.",
                       held)
        groups = len(self.groups)
        for c in parts:
            piece = f" (piece {c.part})" if self.parts > 1 else ""
            if c.group is None:
                self._fail(f"{self.where}, {what} are read from stage {stage}, but this thread's copies of slice "
                           f"{held}{piece} were never committed into a group: cp.async.wait_group waits for "
                           "committed groups only, so they may still be in flight.", "uncommitted copies")
            if c.landed is None:
                in_flight = groups - c.group
                self._fail(f"{self.where}, {what} are read from stage {stage} while this thread's copies of slice "
                           f"{held}{piece} may still be in flight: {groups} groups are committed, the copies are in "
                           f"group {c.group} (counting from 0), so they land only once at most {in_flight - 1} "
                           f"groups are left in flight, and no wait since has asked for that.",
                           f"a wait that leaves group {c.group} in flight")
            if not self._synced_since(c.landed):
                self._fail(f"{self.where}, {what} are read from stage {stage} after this thread waited for its own "
                           f"copies of slice {held}, but with no __syncthreads since: a wait covers only the thread's "
                           "own copies, and the warp reads chunks other threads copied.", "no barrier after the wait")
        self.last_read[stage] = (self.t, self.at)
        return held
