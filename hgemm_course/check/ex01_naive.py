"""Checker for ex01_naive: which element of C a thread of the naive kernel computes.

The reference is one line of index math, so it lives here. Besides right-or-wrong the
checker counts the 32-byte sectors one warp touches per k-step (:func:`warp_sectors`),
which is what makes one mapping fast and its transpose slow.
"""
from __future__ import annotations

from .feedback import Exercise, Failure, Learner, as_int_pair, explained, format_call, mismatch, passed_message

FUNCTION = "naive_thread_output"
# (block_dim, grid_dim) pairs, each as (x, y): square, wide, tall and 1-D blocks; a square
# grid first, where a transposed mapping still covers C and is caught by its sectors.
GEOMETRIES = [((32, 32), (2, 2)), ((32, 32), (2, 3)), ((16, 16), (3, 2)), ((32, 8), (2, 2)),
              ((8, 32), (2, 2)), ((64, 4), (2, 3)), ((128, 1), (2, 2))]
SECTOR_BYTES = 32
FP16_BYTES = 2


def reference(block_idx: tuple[int, int], block_dim: tuple[int, int],
              thread_idx: tuple[int, int]) -> tuple[int, int]:
    """x is the fast axis: threadIdx.x walks along a row of C (columns), y walks down rows."""
    return (block_idx[1] * block_dim[1] + thread_idx[1],
            block_idx[0] * block_dim[0] + thread_idx[0])


def warp_sectors(mapping, block_dim: tuple[int, int] = (32, 32), *, n: int = 4096,
                 k: int = 0) -> dict[str, int]:
    """32-byte sectors touched by warp 0 of block (0, 0) at k-step ``k`` of an fp16 GEMM
    with row-major A (n x n), B (n x n) and C (n x n): ``{"A": .., "B": .., "C": ..}``.

    ``mapping`` is a function like :func:`reference`. The coalesced mapping needs 1 sector of
    A (one row, broadcast), 2 of B (32 consecutive halves = 64 bytes) and 2 of C.
    """
    bdx, bdy = block_dim
    lanes = [(t % bdx, t // bdx) for t in range(32) if t // bdx < bdy]
    outputs = [mapping(block_idx=(0, 0), block_dim=block_dim, thread_idx=lane) for lane in lanes]
    sectors = {"A": set(), "B": set(), "C": set()}
    for row, col in outputs:
        sectors["A"].add((row * n + k) * FP16_BYTES // SECTOR_BYTES)
        sectors["B"].add((k * n + col) * FP16_BYTES // SECTOR_BYTES)
        sectors["C"].add((row * n + col) * FP16_BYTES // SECTOR_BYTES)
    return {name: len(found) for name, found in sectors.items()}


def _sector_note(sectors: dict[str, int]) -> str:
    def count(n: int) -> str:
        return f"{n} sector" + "s" * (n != 1)
    return (f"per k-step one warp reads {count(sectors['A'])} of A and {count(sectors['B'])} of B, "
            f"and its stores to C touch {count(sectors['C'])}")


def verify(learner: Learner) -> str:
    cases = 0
    for block_dim, grid in GEOMETRIES:
        rows, cols = grid[1] * block_dim[1], grid[0] * block_dim[0]
        owner: dict[tuple[int, int], dict] = {}
        first_wrong = None
        learner.plan([{"block_idx": (bx, by), "block_dim": block_dim, "thread_idx": (tx, ty)}
                      for by in range(grid[1]) for bx in range(grid[0])
                      for ty in range(block_dim[1]) for tx in range(block_dim[0])])
        for by in range(grid[1]):
            for bx in range(grid[0]):
                for ty in range(block_dim[1]):
                    for tx in range(block_dim[0]):
                        args = {"block_idx": (bx, by), "block_dim": block_dim, "thread_idx": (tx, ty)}
                        call = format_call(FUNCTION, args)
                        got = as_int_pair(learner(**args), call, args, "(row, col)")
                        cases += 1
                        if not (0 <= got[0] < rows and 0 <= got[1] < cols):
                            raise mismatch(call, args, reference(**args), got,
                                           f"({got[0]}, {got[1]}) is outside C: the grid of "
                                           f"{grid[0]}x{grid[1]} blocks of {block_dim[0]}x"
                                           f"{block_dim[1]} threads covers {rows} rows x {cols} columns.")
                        if got in owner:
                            raise mismatch(call, args, reference(**args), got,
                                           f"{format_call(FUNCTION, owner[got])} also returned {got}: two "
                                           "threads compute the same element, so another element is never written.")
                        owner[got] = args
                        if first_wrong is None and got != reference(**args):
                            first_wrong = (call, args, got)
        if first_wrong is not None:
            call, args, got = first_wrong
            raise mismatch(call, args, reference(**args), got, explained(lambda: _explain(learner)))
    sectors = warp_sectors(reference)
    return passed_message(cases, "every thread computes one element of C and x runs along a row",
                          "Coalesced: " + _sector_note(sectors) + ".")


def _explain(learner: Learner) -> str:
    """Why the learner's mapping, though it covers C exactly once, is not the right one."""
    try:
        sectors = warp_sectors(learner)
    except (Failure, TypeError, ValueError):
        sectors = None
    good = warp_sectors(reference)
    text = "Every element of C is computed exactly once, but threadIdx.x must pick the column " \
           "(x is the fast axis: lanes 0-31 of a warp have consecutive threadIdx.x)."
    if sectors is not None and sectors != good:
        text += (f"\nWith your mapping {_sector_note(sectors)}; the coalesced mapping needs "
                 f"{good['A']}, {good['B']} and {good['C']}.")
    return text


EXERCISE = Exercise(
    name="ex01_naive",
    function=FUNCTION,
    description="Naive kernel: which (row, col) of C a thread computes, with coalesced accesses.",
    verify=verify,
)
