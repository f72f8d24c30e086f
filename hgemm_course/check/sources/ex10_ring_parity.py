"""Exercise 10: the phase parity of rung 10's ring waits.

Rung 10 keeps a ring of STAGES shared-memory stages between one producer thread (TMA) and two
consumer warpgroups (wgmma); slice kt of K goes to stage kt % STAGES. Each stage s has two
mbarriers. The hardware facts (PTX ISA, "mbarrier"):

  - a barrier counts its completed phases: 0, 1, 2, ...; full[s] completes a phase each time a
    slice lands in stage s, empty[s] each time all eight consumer warps have arrived on it;
  - mbar_wait_parity(bar, p) returns once the most recent completed phase has parity p: while
    (completed phases) % 2 == p it blocks, otherwise it returns at once. A barrier that has
    completed no phase lets a wait for parity 1 straight through;
  - the parity is all a wait says, so it must name the phase the thread needs, not one before
    or after it.

From hgemm_course/library/kernels/k10_warp_specialized.cu:

    producer (one thread), for kt = 0, 1, ...:
        if (kt >= STAGES) wait on empty[kt % STAGES] for some parity        # empty_wait
        load_tile(kt % STAGES, kt)             # TMA; full[kt % STAGES] completes a phase on landing
    each consumer warpgroup, for kt = 0, 1, ...:
        wait on full[kt % STAGES] for some parity                             # full_wait
        wgmma on stage kt % STAGES; commit; wgmma_wait_group<1>  # slice kt - 1's products are done
        if (kt > 0) lane 0 of each warp arrives on empty[(kt - 1) % STAGES]

The consumers free slice kt - 1, not slice kt, because slice kt's wgmma still reads its stage.

Write both functions, with `stages` for STAGES:

    full_wait(kt, stages)  -> (stage, parity) the consumers wait on before computing slice kt
    empty_wait(kt, stages) -> (stage, parity) the producer waits on before loading slice kt,
                              or None for the first `stages` slices, which find their stage free

Extra question: rung 11 makes the CTA persistent. It computes tile after tile, k_tiles slices
each, and its ring runs on across tiles: the slice counter is never reset. Which (stage, parity)
does a consumer wait for before slice kt of the CTA's tile number tile_index (0, 1, 2, ...)?
Optional: the checker checks it once it no longer raises NotImplementedError, and says so.

Check it:  hgemm-course check ex10_ring_parity
  (checks ./ex10_ring_parity.py, else ./exercises/ex10_ring_parity.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex10_ring_parity --path my_ex10.py
  or in a notebook:  from hgemm_course.check import check; check("ex10", full_wait)
                     (empty_wait and persistent_full_wait next to it)
"""
from __future__ import annotations


def full_wait(kt: int, stages: int) -> tuple[int, int]:
    """(stage, parity) of the full-barrier wait before the consumers compute slice ``kt``."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: which phase of its stage's full barrier does slice kt's landing complete?
    # EXERCISE: raise NotImplementedError("which phase of its stage's full barrier does slice kt's landing complete?")
    use = kt // stages          # slice kt is the stage's use number kt // stages: it completes that phase
    return kt % stages, use % 2
    # END SOLUTION


def empty_wait(kt: int, stages: int) -> tuple[int, int] | None:
    """(stage, parity) of the empty-barrier wait before the producer loads slice ``kt``; None when
    the stage has not been used yet."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: which release must the producer wait for before it may overwrite the stage?
    # EXERCISE: raise NotImplementedError("which release must the producer wait for before it may overwrite the stage?")
    use = kt // stages
    if use == 0:
        return None
    return kt % stages, (use - 1) % 2   # the release of slice kt - stages, the stage's previous use
    # END SOLUTION


def persistent_full_wait(tile_index: int, kt: int, k_tiles: int, stages: int) -> tuple[int, int]:
    """(stage, parity) of the full-barrier wait before a consumer computes slice ``kt`` of its
    ``tile_index``-th tile, ``k_tiles`` slices per tile, when the ring runs on across tiles."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: how many slices has the ring carried before this one?
    # EXERCISE: raise NotImplementedError("how many slices has the ring carried before this one?")
    carried = tile_index * k_tiles + kt     # the ring's slice counter, over all the CTA's tiles
    return carried % stages, carried // stages % 2
    # END SOLUTION
