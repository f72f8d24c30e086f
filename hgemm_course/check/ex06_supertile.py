"""Checker for ex06_supertile: decoding a launch index into a super-tile (grouped) position,
against ``hgemm_course.sim.cta_order("supertile", ...)``.

Every launch index of a set of grids is checked: square and oblong grids, super tiles that
divide the grid and ones that leave partial super tiles at the bottom and right edges,
plus random grids. A wrong answer comes with the decode worked through for that index.
"""
from __future__ import annotations

import random
from pathlib import Path

from .feedback import (Exercise, Learner, as_int, as_int_pair, explained, format_call, mismatch, passed_message,
                       with_extra)

FUNCTION = "supertile_decode"
EXTRA = "supertile_slot"        # the extra question: the inverse, tile -> launch slot
# (grid_m, grid_n, super_m, super_n)
CASES = [(8, 8, 2, 2), (8, 8, 2, 4), (8, 8, 4, 2), (6, 9, 2, 3), (5, 7, 2, 3), (7, 5, 4, 4),
         (3, 10, 4, 4), (1, 1, 1, 1), (1, 12, 1, 4), (12, 1, 4, 1), (16, 16, 8, 8), (10, 10, 3, 4),
         (4, 6, 1, 6), (6, 4, 6, 1)]
RANDOM_CASES = 16
DRAW_CASE = (10, 12, 4, 4)


def _cases() -> list[tuple[int, int, int, int]]:
    rng = random.Random(6)
    extra = [(rng.randint(1, 40), rng.randint(1, 40), rng.randint(1, 8), rng.randint(1, 8))
             for _ in range(RANDOM_CASES)]
    return CASES + extra


def _reference_order(grid_m: int, grid_n: int, super_m: int, super_n: int) -> list[tuple[int, int]]:
    from ..sim import cta_order
    order = cta_order("supertile", grid_m, grid_n, super_m=super_m, super_n=super_n)
    return [(int(m), int(n)) for m, n in order]


def _decode(learner: Learner, args: dict) -> tuple[int, int]:
    return as_int_pair(learner(**args), format_call(FUNCTION, args), args, "(bid_m, bid_n)")


def verify(learner: Learner) -> str:
    cases = 0
    for grid_m, grid_n, super_m, super_n in _cases():
        shape = {"grid_m": grid_m, "grid_n": grid_n, "super_m": super_m, "super_n": super_n}
        order = _reference_order(**shape)
        learner.plan([{"block_id": block_id, **shape} for block_id in range(len(order))])
        for block_id, expected in enumerate(order):
            args = {"block_id": block_id, **shape}
            got = _decode(learner, args)
            cases += 1
            if got != expected:
                raise mismatch(format_call(FUNCTION, args), args, expected, got,
                               explained(lambda: _explain(learner, args, expected, got)))
    passed = passed_message(cases, f"{FUNCTION}: n runs fastest inside a super tile and super tiles go n-fastest; "
                            "blocks of partial edge super tiles outside the grid exit")
    return with_extra(learner, passed, EXTRA, verify_slot, "each tile's launch slot, the inverse of the decode")


def verify_slot(learner: Learner) -> int:
    """The extra question: every tile of every case back to its launch slot; the cases checked."""
    cases = 0
    for grid_m, grid_n, super_m, super_n in _cases():
        shape = {"grid_m": grid_m, "grid_n": grid_n, "super_m": super_m, "super_n": super_n}
        order = _reference_order(**shape)
        learner.plan([{"bid_m": tile[0], "bid_n": tile[1], **shape} for tile in order if tile[0] >= 0])
        for block_id, tile in enumerate(order):
            if tile[0] < 0:
                continue
            args = {"bid_m": tile[0], "bid_n": tile[1], **shape}
            call = format_call(EXTRA, args)
            got = as_int(learner(**args), call, args, "an int (a launch slot)")
            cases += 1
            if got != block_id:
                size = super_m * super_n
                raise mismatch(call, args, block_id, got,
                               f"Tile {tile} is in super tile (row {tile[0] // super_m}, column {tile[1] // super_n}) "
                               f"of a grid {-(-grid_n // super_n)} super tiles wide, each launching {size} slots, "
                               "holes included, before the next.")
    return cases


def _explain(learner: Learner, args: dict, expected: tuple[int, int], got: tuple[int, int]) -> str:
    grid_m, grid_n, super_m, super_n = (args[k] for k in ("grid_m", "grid_n", "super_m", "super_n"))
    block_id = args["block_id"]
    size = super_m * super_n
    across = -(-grid_n // super_n)  # super tiles per super-tile row
    sb, inner = divmod(block_id, size)
    sb_m, sb_n = divmod(sb, across)
    worked = (f"Block {block_id} is number {inner} (= {block_id} % {size}) of super tile {sb} "
              f"(= {block_id} // {size}); super tile {sb} is at row {sb_m}, column {sb_n} of the "
              f"{-(-grid_m // super_m)} x {across} super tiles; inside it, number {inner} is at "
              f"row {inner // super_n}, column {inner % super_n} (n fastest): "
              f"({sb_m * super_m} + {inner // super_n}, {sb_n * super_n} + {inner % super_n}) = "
              f"({sb_m * super_m + inner // super_n}, {sb_n * super_n + inner % super_n}).")
    if expected == (-1, -1):
        return (f"{worked} That is outside the {grid_m} x {grid_n} grid: the edge super tile is partial, "
                "so return (-1, -1) and the block exits without work.")
    if got == (-1, -1):
        return f"{worked} That is inside the grid; only positions outside it return (-1, -1)."
    hints = []
    if super_m > 1 and super_n > 1:
        first, second = (_decode(learner, {**args, "block_id": i}) for i in (0, 1))
        if second[0] == first[0] + 1 and second[1] == first[1]:
            hints.append("Inside a super tile your block 1 sits below block 0: n must be the fast axis, "
                         "so block 1 sits to its right.")
    if across > 1 and -(-grid_m // super_m) > 1:
        next_tile = _decode(learner, {**args, "block_id": size})
        if next_tile == (super_m, 0):
            hints.append(f"Your super tile 1 starts at ({super_m}, 0), below super tile 0: super tiles "
                         f"also go n-fastest, so super tile 1 starts at (0, {super_n}).")
    return "\n".join([worked] + hints)


def draw(learner: Learner, path: Path) -> Path:
    """Launch index over the grid for the learner's decode next to the reference."""
    import numpy as np
    from matplotlib.figure import Figure

    grid_m, grid_n, super_m, super_n = DRAW_CASE
    shape = {"grid_m": grid_m, "grid_n": grid_n, "super_m": super_m, "super_n": super_n}
    reference = _reference_order(**shape)
    maps = []
    for order in ([_decode(learner, {"block_id": i, **shape}) for i in range(len(reference))], reference):
        launch = np.full((grid_m, grid_n), np.nan)
        for block_id, (m, n) in enumerate(order):
            if 0 <= m < grid_m and 0 <= n < grid_n:
                launch[m, n] = block_id
        maps.append(launch)
    misplaced = int(np.sum(~np.isclose(maps[0], maps[1], equal_nan=True)))

    fig = Figure(figsize=(11, 5), layout="constrained")
    axes = fig.subplots(1, 2)
    titles = [f"Yours: {misplaced} of {grid_m * grid_n} blocks out of place" if misplaced
              else "Yours: identical to the reference",
              f"Reference: {super_m}x{super_n} super tiles, n fastest"]
    for ax, launch, title in zip(axes, maps, titles):
        ax.imshow(launch, cmap="viridis", vmin=0, vmax=len(reference) - 1)
        for m in range(grid_m):
            for n in range(grid_n):
                text = "-" if np.isnan(launch[m, n]) else str(int(launch[m, n]))
                ax.text(n, m, text, ha="center", va="center", fontsize=7, color="white")
        for m in range(0, grid_m + 1, super_m):
            ax.axhline(m - 0.5, color="red", linewidth=1.5)
        for n in range(0, grid_n + 1, super_n):
            ax.axvline(n - 0.5, color="red", linewidth=1.5)
        ax.set_xlabel("bid_n")
        ax.set_ylabel("bid_m")
        ax.set_title(title, fontsize=10)
    fig.suptitle(f"Launch order on a {grid_m} x {grid_n} grid (cell = launch index; '-' = never launched)")
    fig.savefig(path, dpi=100)
    return path


EXERCISE = Exercise(
    name="ex06_supertile",
    function=FUNCTION,
    description="Super tiles: decode a launch index into a CTA position so neighbouring CTAs share L2.",
    verify=verify,
    draw=draw,
)
