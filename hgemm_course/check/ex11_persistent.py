"""Checker for ex11_persistent: the tiles one CTA of rung 11's persistent grid computes, in order.

Rung 11 (``kernels/k11_persistent.cu``) launches ``num_ctas`` CTAs and has each walk the launch
positions ``t = blockIdx.x, + gridDim.x, ...`` of rung 06's super-tile order, holes of the partial
edge super tiles included, skipping a hole when it meets one (``continue``). The reference is built
from :func:`hgemm_course.sim.cta_order` ("supertile", the one source of the order, holes as
(-1, -1)): CTA ``cta`` computes ``order[cta::num_ctas]`` without the holes.

Checked exhaustively: every CTA of grids from one CTA up to more CTAs than launch positions, on tile
grids whose super tiles divide them and on ones with partial edge super tiles (rung 11's own 8192^3,
4096^3, 2048^3 and 1000^3 grids among them), plus random grids. A wrong answer names the first wrong
CTA and iteration with expected vs got, works the decode of that launch position through, names the
slip when it is a known one, and sums the learner's lists over all CTAs of that launch: which tiles
would be computed twice, never, or outside C.
"""
from __future__ import annotations

import random
from collections import Counter
from functools import lru_cache

from .feedback import Exercise, Failure, Learner, as_int, as_int_pair, format_call, passed_message, with_extra

FUNCTION = "persistent_tiles"
EXTRA = "busiest_cta_tiles"     # the extra question: the CTA that sets the kernel's time
# (grid_m, grid_n, super_m, super_n): small grids with holes first, so a first failure reads easily
CASES = [(5, 3, 2, 2), (3, 5, 2, 2), (4, 4, 2, 2), (1, 1, 1, 1), (6, 9, 2, 3), (7, 5, 4, 4), (3, 10, 4, 4),
         (12, 1, 4, 1), (1, 12, 1, 4), (13, 7, 8, 4), (5, 9, 1, 1), (10, 10, 3, 4),
         (8, 4, 16, 2),        # rung 11 at 1000^3: 8 x 4 tiles of 128 x 256, half of the 64 positions are holes
         (16, 8, 16, 2),       # 2048^3: 128 positions, no holes
         (32, 16, 16, 2),      # 4096^3
         (64, 32, 16, 2),      # 8192^3
         (64, 1, 16, 2)]       # 8192 x 128
RANDOM_CASES = 10
SHOWN = 12                     # tiles of a list shown in a message


def _cases() -> list[tuple[int, int, int, int]]:
    rng = random.Random(11)
    return CASES + [(rng.randint(1, 24), rng.randint(1, 24), rng.randint(1, 8), rng.randint(1, 8))
                    for _ in range(RANDOM_CASES)]


def _cta_counts(positions: int) -> list[int]:
    """Grid sizes to try: from one CTA (it walks every position) to more CTAs than positions."""
    from ..sim.l2 import H200_SMS

    return sorted({n for n in (1, 2, 3, 7, H200_SMS, positions // 2, positions - 1, positions, positions + 1,
                               positions + 5) if n >= 1})


# ---------------------------------------------------------------- the reference

@lru_cache(maxsize=64)
def launch_order(grid_m: int, grid_n: int, super_m: int, super_n: int) -> tuple[tuple[int, int], ...]:
    """Rung 06's launch positions in order: (bid_m, bid_n), or (-1, -1) for a hole (sim.cta_order)."""
    from ..sim import cta_order

    order = cta_order("supertile", grid_m, grid_n, super_m=super_m, super_n=super_n)
    return tuple((int(m), int(n)) for m, n in order)


def reference_tiles(cta: int, num_ctas: int, grid_m: int, grid_n: int, super_m: int,
                    super_n: int) -> list[tuple[int, int]]:
    """Rung 11's walk: positions cta, cta + num_ctas, ... of the launch order, holes skipped."""
    return [tile for tile in launch_order(grid_m, grid_n, super_m, super_n)[cta::num_ctas] if tile[0] >= 0]


# ---------------------------------------------------------------- the checker

def _answer(learner: Learner, args: dict) -> list[tuple[int, int]]:
    call = format_call(FUNCTION, args)
    value = learner(**args)
    try:
        items = list(value)
    except TypeError:
        raise Failure(f"{call} returned {value!r} ({type(value).__name__}); it must return a list of "
                      "(bid_m, bid_n) tuples, the tiles in the order the CTA computes them.",
                      {"input": args, "expected": "a list of (bid_m, bid_n)", "got": value}) from None
    return [as_int_pair(item, call, args, "(bid_m, bid_n) for each tile") for item in items]


def verify(learner: Learner) -> str:
    cases = 0
    for grid_m, grid_n, super_m, super_n in _cases():
        shape = {"grid_m": grid_m, "grid_n": grid_n, "super_m": super_m, "super_n": super_n}
        positions = len(launch_order(grid_m, grid_n, super_m, super_n))
        counts = _cta_counts(positions)
        learner.plan([{"cta": cta, "num_ctas": num_ctas, **shape} for num_ctas in counts for cta in range(num_ctas)])
        for num_ctas in counts:
            for cta in range(num_ctas):
                args = {"cta": cta, "num_ctas": num_ctas, **shape}
                got = _answer(learner, args)
                expected = reference_tiles(**args)
                cases += 1
                if got != expected:
                    first = next((i for i, (e, g) in enumerate(zip(expected, got)) if e != g),
                                 min(len(expected), len(got)))
                    e = expected[first] if first < len(expected) else "no more tiles"
                    g = got[first] if first < len(got) else "no more tiles"
                    raise Failure(
                        f"{format_call(FUNCTION, args)}: iteration {first}: expected {e}, got {g}.\n"
                        + explain(learner, args, expected, got, first),
                        {"input": args, "iteration": first, "expected": expected, "got": got})
    passed = passed_message(cases, f"{FUNCTION}: each CTA walks launch positions cta, cta + num_ctas, ... of the "
                            "super-tile order and skips the holes of partial edge super tiles, as rung 11's loop does, "
                            "on grids from 1 CTA to more CTAs than positions")
    return with_extra(learner, passed, EXTRA, verify_busiest, "the tiles of the busiest CTA")


def verify_busiest(learner: Learner) -> int:
    """The extra question on every case and grid size; the cases checked."""
    checked = 0
    for grid_m, grid_n, super_m, super_n in _cases():
        shape = {"grid_m": grid_m, "grid_n": grid_n, "super_m": super_m, "super_n": super_n}
        for num_ctas in _cta_counts(len(launch_order(grid_m, grid_n, super_m, super_n))):
            args = {"num_ctas": num_ctas, **shape}
            call = format_call(EXTRA, args)
            counts = [len(reference_tiles(cta, **args)) for cta in range(num_ctas)]
            got = as_int(learner(**args), call, args, "an int (a number of tiles)")
            checked += 1
            if got != max(counts):
                busiest = counts.index(max(counts))
                raise Failure(f"{call}: expected {max(counts)}, got {got}. CTA {busiest} computes {max(counts)} tiles "
                              f"and CTA 0 {counts[0]}: the holes fall unevenly on the CTAs.",
                              {"input": args, "expected": max(counts), "got": got})
    return checked


def _short(tiles: list) -> str:
    return "[" + ", ".join(map(str, tiles[:SHOWN])) + (f", ... ({len(tiles)} in all)]" if len(tiles) > SHOWN else "]")


def _decode_worked(t: int, grid_m: int, grid_n: int, super_m: int, super_n: int) -> str:
    size = super_m * super_n
    across = -(-grid_n // super_n)
    sb, inner = divmod(t, size)
    sb_m, sb_n = divmod(sb, across)
    m, n = sb_m * super_m + inner // super_n, sb_n * super_n + inner % super_n
    where = "inside the grid" if m < grid_m and n < grid_n else f"outside the {grid_m} x {grid_n} grid: a hole"
    return (f"number {inner} of super tile {sb} (row {sb_m}, column {sb_n} of the "
            f"{-(-grid_m // super_m)} x {across} super tiles), at row {inner // super_n}, column {inner % super_n} "
            f"inside it (n fastest): ({m}, {n}), {where}")


def _alternatives(cta: int, num_ctas: int, grid_m: int, grid_n: int, super_m: int, super_n: int) -> dict:
    """The lists the known slips give, each with what to say when the learner's list is one of them."""
    order = launch_order(grid_m, grid_n, super_m, super_n)
    positions, valid = len(order), [tile for tile in order if tile[0] >= 0]
    across, down, size = -(-grid_n // super_n), -(-grid_m // super_m), super_m * super_n

    def decoded(decode):
        walk = (decode(*divmod(t, size)) for t in range(cta, positions, num_ctas))
        return [(m, n) for m, n in walk if m < grid_m and n < grid_n]

    return {
        "t += 1": ([tile for tile in order[cta:] if tile[0] >= 0],
                   ("Your CTA walks positions cta, cta + 1, cta + 2, ...: that is t += 1. The kernel strides by the "
                   "grid, t += gridDim.x (num_ctas), so that the CTAs share the positions out instead of each "
                   "repeating most of the others' tiles.")),
        "compacted": (valid[cta::num_ctas],
                      ("You stride over the tiles with the holes taken out. Rung 11 strides over the launch positions, "
                      "holes included, and skips a hole when it meets one (`continue`): CTA b's i-th position is "
                      "b + i * gridDim.x whatever came before it.")),
        "one tile": (reference_tiles(cta, num_ctas, grid_m, grid_n, super_m, super_n)[:1],
                     ("Your CTA stops after its first tile. A persistent CTA loops, t += gridDim.x, until it passes "
                     "the last launch position.")),
        "m fastest inside": (decoded(lambda sb, inner: ((sb // across) * super_m + inner % super_m,
                                                        (sb % across) * super_n + inner // super_m)),
                             ("Inside a super tile your walk goes down first (m fastest); rung 06's decode, which "
                             "rung 11 keeps as tile_of, puts n fastest: position 1 of a super tile sits to the right "
                             "of position 0.")),
        "m fastest super tiles": (decoded(lambda sb, inner: ((sb % down) * super_m + inner // super_n,
                                                             (sb // down) * super_n + inner % super_n)),
                                  ("Your super tiles go down first (m fastest); in rung 06's order they go n-fastest, "
                                  f"so super tile 1 starts at (0, {super_n}).")),
    }


def explain(learner: Learner, args: dict, expected: list, got: list, first: int) -> str:
    """The two lists, the decode of the first wrong position worked through, the slip if it is a known
    one, and what the learner's walk does to C over the whole launch."""
    shape = {k: args[k] for k in ("grid_m", "grid_n", "super_m", "super_n")}
    cta, num_ctas = args["cta"], args["num_ctas"]
    order = launch_order(**shape)
    walk = list(range(cta, len(order), num_ctas))
    lines = [f"Expected: {_short(expected)}", f"Got:      {_short(got)}",
             (f"CTA {cta} of {num_ctas} visits launch positions {_short(walk)} of the {len(order)} "
             f"(t = {cta}, {cta} + {num_ctas}, ...; the {shape['grid_m']} x {shape['grid_n']} tile grid rounded up "
             f"to whole {shape['super_m']} x {shape['super_n']} super tiles).")]
    kept = [t for t in walk if order[t][0] >= 0]
    if first < len(kept):
        holes = [t for t in walk if t < kept[first] and order[t][0] < 0]
        skipped = f" (after skipping the hole(s) at {_short(holes)})" if holes else ""
        lines.append(f"Its iteration {first} is launch position {kept[first]}{skipped}: "
                     f"{_decode_worked(kept[first], **shape)}.")
    elif first < len(got):
        lines.append(f"It has no tile {first}: its positions after the last one expected are holes or past the end "
                     f"({len(order)} positions).")
    if any(not (0 <= m < shape["grid_m"] and 0 <= n < shape["grid_n"]) for m, n in got):
        lines.append("Your list has tiles outside the grid: holes of a partial edge super tile. The kernel skips them "
                     "(`if (tile.x >= grid_m || tile.y >= grid_n) continue;`).")
    else:
        for alternative, hint in _alternatives(cta, num_ctas, **shape).values():
            if got == alternative and got != expected:
                lines.append(hint)
                break
    lines.append(coverage(learner, num_ctas, **shape))
    return "\n".join(lines)


def coverage(learner: Learner, num_ctas: int, grid_m: int, grid_n: int, super_m: int, super_n: int) -> str:
    """What all ``num_ctas`` CTAs of the learner's walk compute together: tiles twice, never, outside C."""
    shape = {"grid_m": grid_m, "grid_n": grid_n, "super_m": super_m, "super_n": super_n}
    counts: Counter = Counter()
    try:
        for cta in range(num_ctas):
            counts.update(_answer(learner, {"cta": cta, "num_ctas": num_ctas, **shape}))
    except Failure as failure:
        return f"(Your lists over all {num_ctas} CTAs could not be summed: {failure.message.splitlines()[0]})"
    inside = [(m, n) for m in range(grid_m) for n in range(grid_n)]
    twice = [tile for tile in inside if counts[tile] > 1]
    never = [tile for tile in inside if counts[tile] == 0]
    outside = sorted(tile for tile in counts if tile not in set(inside))
    ctas = "the one CTA" if num_ctas == 1 else f"all {num_ctas} CTAs"
    setting = f"Summed over {ctas} of this launch ({grid_m} x {grid_n} = {len(inside)} tiles), your walk "
    if not (twice or never or outside):
        return (setting + "computes every tile once: C would be right, but not in rung 11's order, the super-tile "
                "order that keeps the A and B panels of the tiles in flight together in L2.")
    effects = []
    if never:
        effects.append(f"never computes {len(never)} tile(s), e.g. {_short(never)}: those parts of C are never "
                       "written, a wrong result")
    if twice:
        effects.append(f"computes {len(twice)} tile(s) more than once ({sum(counts[t] for t in twice)} times in "
                       f"all), e.g. {_short(twice)}: the same values stored again, wasted time")
    if outside:
        effects.append(f"computes {len(outside)} position(s) outside C, e.g. {_short(outside)}: in the kernel a main "
                       "loop of zero-filled loads whose TMA store is clipped away, wasted time")
    return setting + "; ".join(effects) + "."


EXERCISE = Exercise(
    name="ex11_persistent",
    function=FUNCTION,
    description="persistent grid: the tiles one CTA of rung 11's persistent grid computes, in order.",
    verify=verify,
)
