"""Checker for ex02_tiling: which vec-wide loads each thread makes to copy a tile together.

Two properties, checked over every thread of a set of tile shapes: the loads cover the tile
exactly once (no element missed, none loaded twice, every vector inside the tile and
aligned to ``vec``), and they are coalesced (at the i-th load, lane l of a warp reads the
vector right after lane l-1's, so a warp reads one contiguous run of the tile).
"""
from __future__ import annotations

from .feedback import Exercise, Failure, Learner, as_int_pair, format_call, passed_message

FUNCTION = "tile_load_coords"
# (threads, tile_rows, tile_cols, vec): the course's A and B tiles, plus odd small ones
# (fewer vectors than threads, more than one pass per thread, vec=1).
SHAPES = [(128, 128, 32, 8), (128, 32, 128, 8), (256, 128, 64, 8), (256, 64, 128, 8),
          (128, 64, 64, 8), (64, 16, 16, 4), (32, 8, 32, 2), (128, 8, 8, 1),
          (256, 16, 32, 8), (96, 24, 48, 8)]


def reference(tid: int, threads: int, tile_rows: int, tile_cols: int, vec: int) -> list[tuple[int, int]]:
    """Vector v = tid, tid + threads, ... of the tile in row-major order."""
    per_row = tile_cols // vec
    return [(v // per_row, (v % per_row) * vec)
            for v in range(tid, tile_rows * per_row, threads)]


def _loads(learner: Learner, args: dict) -> list[tuple[int, int]]:
    call = format_call(FUNCTION, args)
    got = learner(**args)
    if isinstance(got, (str, bytes, dict)) or not hasattr(got, "__iter__"):
        raise Failure(f"{call} returned {got!r} ({type(got).__name__}); it must return a list "
                      "of (row, col) tuples.", {"input": args, "expected": "list of (row, col)", "got": got})
    return [as_int_pair(item, call, args, "(row, col)") for item in got]


def verify(learner: Learner) -> str:
    cases = 0
    for threads, tile_rows, tile_cols, vec in SHAPES:
        shape = {"threads": threads, "tile_rows": tile_rows, "tile_cols": tile_cols, "vec": vec}
        loads = {}
        learner.plan([{"tid": tid, **shape} for tid in range(threads)])
        for tid in range(threads):
            args = {"tid": tid, **shape}
            loads[tid] = _loads(learner, args)
            cases += 1
        _check_cover(loads, shape)
        _check_coalesced(loads, shape)
    return passed_message(cases, "every tile is covered exactly once by coalesced vector loads")


def _fail(tid: int, shape: dict, got, why: str) -> Failure:
    args = {"tid": tid, **shape}
    expected = reference(**args)
    return Failure(f"{format_call(FUNCTION, args)}: expected {expected}, got {got}.\n{why}",
                   {"input": args, "expected": expected, "got": got})


def _check_cover(loads: dict[int, list], shape: dict) -> None:
    rows, cols, vec = shape["tile_rows"], shape["tile_cols"], shape["vec"]
    owner: dict[tuple[int, int], tuple[int, int]] = {}
    for tid, starts in loads.items():
        for i, (row, col) in enumerate(starts):
            if not (0 <= row < rows and 0 <= col and col + vec <= cols):
                raise _fail(tid, shape, starts,
                            f"Load {i} of thread {tid} starts at ({row}, {col}): a {vec}-wide vector there "
                            f"does not fit in the {rows}x{cols} tile.")
            if col % vec:
                raise _fail(tid, shape, starts,
                            f"Load {i} of thread {tid} starts at column {col}, not a multiple of vec={vec}: "
                            f"a {vec * 2}-byte vector load must be {vec * 2}-byte aligned.")
            for c in range(col, col + vec):
                if (row, c) in owner:
                    other, j = owner[(row, c)]
                    raise _fail(tid, shape, starts,
                                f"Element ({row}, {c}) is loaded twice: by load {i} of thread {tid} and "
                                f"load {j} of thread {other}.")
                owner[(row, c)] = (tid, i)
    missed = [(r, c) for r in range(rows) for c in range(cols) if (r, c) not in owner]
    if missed:
        row, col = missed[0]
        tid = _expected_owner(row, col, shape)
        raise _fail(tid, shape, loads[tid],
                    f"Element ({row}, {col}) is never loaded ({len(missed)} of the tile's "
                    f"{rows * cols} elements are missed); thread {tid} should load it.")


def _expected_owner(row: int, col: int, shape: dict) -> int:
    return (row * (shape["tile_cols"] // shape["vec"]) + col // shape["vec"]) % shape["threads"]


def _check_coalesced(loads: dict[int, list], shape: dict) -> None:
    per_row = shape["tile_cols"] // shape["vec"]
    for warp_start in range(0, shape["threads"], 32):
        lanes = range(warp_start, min(warp_start + 32, shape["threads"]))
        for i in range(max(len(loads[t]) for t in lanes)):
            for tid in lanes:
                if tid == warp_start or i >= len(loads[tid]) or i >= len(loads[tid - 1]):
                    continue
                prev = loads[tid - 1][i]
                here = loads[tid][i]
                if here[0] * per_row + here[1] // shape["vec"] != prev[0] * per_row + prev[1] // shape["vec"] + 1:
                    raise _fail(tid, shape, loads[tid],
                                f"The tile is covered exactly once, but not coalesced: at load {i} thread "
                                f"{tid - 1} reads the vector at {prev} and thread {tid} (the next lane) the one "
                                f"at {here}. Neighbouring lanes must read neighbouring vectors along a row, "
                                "so a warp's load is one contiguous run of memory.")


EXERCISE = Exercise(
    name="ex02_tiling",
    function=FUNCTION,
    description="Tiled kernel: the coalesced vector loads each thread makes to copy a tile to shared memory.",
    verify=verify,
)
