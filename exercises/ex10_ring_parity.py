"""Exercise 10: the phase parity of rung 10's ring waits.

Rung 10 keeps a ring of STAGES shared-memory stages between one producer thread (TMA) and two
consumer warpgroups (wgmma). Each stage s has two mbarriers: full[s] completes a phase each time a
slice lands in the stage, empty[s] each time the consumers are done with the slice in it. A barrier
counts its completed phases, and `mbar_wait_parity(bar, p)` returns once the most recent completed
phase has parity p: while phases % 2 == p it blocks, otherwise it returns at once (so a barrier
that has completed no phase lets a wait for parity 1 straight through). The parity is all a wait
says, so it must name the phase the thread needs, not one before or after it.

From hgemm_course/kernels/k10_warp_specialized.cu:

    producer (one thread), for kt = 0, 1, ...:
        if (kt >= STAGES) mbar_wait_parity(empty_bar + (kt % STAGES) * 8, ...);   # empty_wait
        load_tile(kt % STAGES, kt);                  # TMA; full[kt % STAGES] completes a phase on landing
    each consumer warpgroup, for kt = 0, 1, ...:
        mbar_wait_parity(full_bar + (kt % STAGES) * 8, ...);                     # full_wait
        wgmma on stage kt % STAGES; commit; wgmma_wait_group<1>  # slice kt - 1's products are done
        if (kt > 0) lane 0 of each warp: mbar_arrive(empty_bar + ((kt - 1) % STAGES) * 8)

The consumers free slice kt - 1, not slice kt, because slice kt's wgmma still reads its stage. That
changes *when* a stage is freed (one slice later), not which phase the producer waits for: before
loading slice kt into its stage, the producer still waits for the release of the slice that used
the stage before, kt - STAGES.

Write both functions, with `stages` for STAGES:

    full_wait(kt, stages)  -> (stage, parity) the consumers wait on before computing slice kt
    empty_wait(kt, stages) -> (stage, parity) the producer waits on before loading slice kt,
                              or None for the first `stages` slices, which find their stage free

Check it:  hgemm-course check ex10_ring_parity
  (checks ./ex10_ring_parity.py, else ./exercises/ex10_ring_parity.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex10_ring_parity --path my_ex10.py
  or in a notebook:  from hgemm_course.check import check; check("ex10", full_wait)  (empty_wait next to it)
"""
from __future__ import annotations


def full_wait(kt: int, stages: int) -> tuple[int, int]:
    """(stage, parity) of the full-barrier wait before the consumers compute slice ``kt``."""
    # BEGIN SOLUTION
    # TODO: slice kt lives in stage kt % stages; which phase of full[stage] does its landing complete?
    raise NotImplementedError("stage kt % stages; slice kt completes phase kt // stages of full[stage]: its parity")
    # END SOLUTION


def empty_wait(kt: int, stages: int) -> tuple[int, int] | None:
    """(stage, parity) of the empty-barrier wait before the producer loads slice ``kt``; None when
    the stage has not been used yet."""
    # BEGIN SOLUTION
    # TODO: None on the stage's first use; else the phase in which slice kt - stages was freed.
    raise NotImplementedError("None for kt < stages; else the phase of empty[stage] that freed slice kt - stages")
    # END SOLUTION
