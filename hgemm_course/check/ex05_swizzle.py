"""Checker for ex05_swizzle: the 128-byte XOR swizzle, against ``hgemm_course.sim.swizzle_128b``.

Checked exhaustively over rows 0-255 and the 8 chunks of a row. A wrong map is explained by
what it does to the access that matters: ldmatrix reading one logical chunk from 8
consecutive rows. Physical chunk p of a 128-byte row sits in banks 4p..4p+3, so the rows that
land on the same physical chunk conflict.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from .feedback import Exercise, Learner, as_int, explained, format_call, mismatch, passed_message, with_extra

FUNCTION = "swizzle_128b"
EXTRA = "swizzle_64b"       # the extra question: TMA's SWIZZLE_64B on 64-byte rows
ROWS = 256
CHUNKS = 8  # 16-byte chunks in a 128-byte row
DRAW_ROWS = 16


def _reference(row: int, chunk: int) -> int:
    from ..sim import swizzle_128b
    return int(swizzle_128b(row, chunk))


def _physical(learner: Learner, row: int, chunk: int) -> int:
    args = {"row": row, "chunk": chunk}
    return as_int(learner(**args), format_call(FUNCTION, args), args, "an int (a physical chunk, 0-7)")


def conflict_ways(physical_chunks: list[int]) -> int:
    """How many of the rows share the busiest physical chunk (1 = conflict-free)."""
    return max(Counter(physical_chunks).values())


def verify(learner: Learner) -> str:
    learner.plan([{"row": row, "chunk": chunk} for row in range(ROWS) for chunk in range(CHUNKS)])
    for row in range(ROWS):
        got_row = []
        for chunk in range(CHUNKS):
            args = {"row": row, "chunk": chunk}
            call = format_call(FUNCTION, args)
            got = _physical(learner, row, chunk)
            expected = _reference(row, chunk)
            if not 0 <= got < CHUNKS:
                raise mismatch(call, args, expected, got,
                               f"A 128-byte row has 8 chunks, so a physical chunk is 0-7; {got} would "
                               "write into another row.")
            if got in got_row:
                raise mismatch(call, args, expected, got,
                               f"Chunks {got_row.index(got)} and {chunk} of row {row} both land on physical "
                               f"chunk {got}: the second store overwrites the first. Within a row the map "
                               "must be a permutation of 0-7.")
            got_row.append(got)
            if got != expected:
                raise mismatch(call, args, expected, got, explained(lambda: _explain(learner, row, chunk)))
    passed = passed_message(ROWS * CHUNKS, f"{FUNCTION}: any 8 consecutive rows reading the same logical chunk hit "
                            "8 different physical chunks, so ldmatrix is conflict-free, and the map is TMA's SWIZZLE_128B")
    return with_extra(learner, passed, EXTRA, verify_64b, "TMA's SWIZZLE_64B on 64-byte rows, rows 0-255")


def verify_64b(learner: Learner) -> int:
    """The extra question, exhaustively over rows 0-255, against ``sim.swizzle(row, chunk, 64)``."""
    from ..sim.swizzle import swizzle

    learner.plan([{"row": row, "chunk": chunk} for row in range(ROWS) for chunk in range(4)])
    for row in range(ROWS):
        for chunk in range(4):
            args = {"row": row, "chunk": chunk}
            call = format_call(EXTRA, args)
            got = as_int(learner(**args), call, args, "an int (a physical chunk, 0-3)")
            expected = int(swizzle(row, chunk, 64))
            if got != expected:
                first = row - row % 8
                banks = sorted({(r * 64 + int(swizzle(r, chunk, 64)) * 16) // 4 % 32 // 4 for r in range(first, first + 8)})
                raise mismatch(call, args, expected, got,
                               "Two 64-byte rows share one 128-byte line of banks, so rows r and r + 1 are already "
                               "in different banks; the pattern repeats every 512 bytes, 8 rows. With TMA's map the 8 "
                               f"rows {first}-{first + 7} put logical chunk {chunk} in bank groups {banks} (of 8): "
                               "the reader must use the writer's map.")
    return ROWS * 4


def _explain(learner: Learner, row: int, chunk: int) -> str:
    first = row - row % 8
    physical = [_physical(learner, r, chunk) for r in range(first, first + 8)]
    ways = conflict_ways(physical)
    rows = f"rows {first}-{first + 7}"
    if ways > 1:
        busiest = Counter(physical).most_common(1)[0][0]
        if ways == 8:
            return (f"The 8 {rows} reading logical chunk {chunk} would all hit physical chunk {busiest}, "
                    f"banks {4 * busiest}-{4 * busiest + 3}: an 8-way conflict.")
        sharing = [first + i for i, p in enumerate(physical) if p == busiest]
        return (f"The 8 {rows} reading logical chunk {chunk} land on physical chunks {physical}: "
                f"{ways} of them (rows {', '.join(map(str, sharing))}) hit banks {4 * busiest}-{4 * busiest + 3}, "
                f"a {ways}-way conflict. Any 8 consecutive rows must put one logical chunk on 8 different "
                "physical chunks.")
    return (f"Your map is conflict-free for {rows} reading logical chunk {chunk} (physical chunks "
            f"{physical}), but it is not the 128B swizzle: TMA's SWIZZLE_128B puts that chunk of row {row} on "
            f"physical chunk {_reference(row, chunk)}, yours on {_physical(learner, row, chunk)}, and the kernel's "
            "ldmatrix addresses must read where TMA wrote: the reader must use the writer's map.")


def draw(learner: Learner, path: Path) -> Path:
    """The first 16 rows as stored: cell (row, physical chunk) shows the logical chunk there."""
    from matplotlib.figure import Figure

    mine = [[_physical(learner, r, c) for c in range(CHUNKS)] for r in range(DRAW_ROWS)]
    ref = [[_reference(r, c) for c in range(CHUNKS)] for r in range(DRAW_ROWS)]
    wrong = sum(m != e for mr, er in zip(mine, ref) for m, e in zip(mr, er))
    worst = max(conflict_ways([mine[r][c] for r in range(g, g + 8)])
                for g in range(0, DRAW_ROWS, 8) for c in range(CHUNKS))

    fig = Figure(figsize=(9, 6.5), layout="constrained")
    axes = fig.subplots(1, 2)
    titles = [f"Yours: worst column read is {'conflict-free' if worst == 1 else f'{worst}-way'}",
              "TMA's SWIZZLE_128B: conflict-free"]
    for ax, table, title in zip(axes, (mine, ref), titles):
        _draw_table(ax, table, ref if table is mine else None)
        ax.set_title(title, fontsize=10)
    fig.suptitle(f"128B swizzle, rows 0-{DRAW_ROWS - 1}: your map differs in {wrong} of "
                 f"{DRAW_ROWS * CHUNKS} cells" if wrong else "128B swizzle: your map is the reference")
    fig.savefig(path, dpi=100)
    return path


def _draw_table(ax, table: list[list[int]], reference: list[list[int]] | None) -> None:
    """Colour cell (row, physical chunk) by the logical chunk stored there; red = differs."""
    from matplotlib.patches import Rectangle

    from ..viz.memory import CHUNK_COLOURS
    for r, physical_row in enumerate(table):
        cells: dict[int, list[int]] = {}
        for logical, p in enumerate(physical_row):
            cells.setdefault(p, []).append(logical)
        for p, logicals in cells.items():
            if not 0 <= p < CHUNKS:
                continue
            clash = len(logicals) > 1
            differs = reference is not None and any(reference[r][c] != p for c in logicals)
            ax.add_patch(Rectangle((p, r), 1, 1, facecolor="white" if clash else CHUNK_COLOURS(logicals[0]),
                                       edgecolor="red" if differs or clash else "white", linewidth=2))
            ax.text(p + 0.5, r + 0.5, "/".join(map(str, logicals)), ha="center", va="center", fontsize=8,
                    color="black" if clash else "white")
    ax.set_xlim(0, CHUNKS)
    ax.set_ylim(len(table), 0)
    ax.set_xticks([p + 0.5 for p in range(CHUNKS)], [f"{4 * p}-{4 * p + 3}" for p in range(CHUNKS)],
                  fontsize=7)
    ax.set_yticks([r + 0.5 for r in range(len(table))], range(len(table)), fontsize=7)
    ax.set_xlabel("physical chunk (its banks); cell: logical chunk")
    ax.set_ylabel("row")


EXERCISE = Exercise(
    name="ex05_swizzle",
    function=FUNCTION,
    description="Swizzle: the 128-byte XOR swizzle that makes ldmatrix conflict-free without padding.",
    verify=verify,
    draw=draw,
)
