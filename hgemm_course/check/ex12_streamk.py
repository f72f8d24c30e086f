"""Checker for ex12_streamk: a stream-K CTA's K-iteration range, the partial tiles it fixes up, and
which CTAs compute a given tile.

The reference is :func:`hgemm_course.sim.streamk_ranges` (the even split the chapter's simulator and
rung 12 use: total // ctas iterations per CTA, one more for the first total % ctas, contiguous in CTA
order); the pieces and the owners follow from the ranges (the owner of a partial tile computes its
K-iteration 0). Checked on every CTA and every tile of small launches (partial tiles spread over one to
several CTAs, exact splits, more CTAs than iterations), of rung 11's shapes on the H200's 66 clusters,
and of random launches. A wrong answer names the first wrong CTA (or tile) with expected vs got, works
the split through for it, names the slip when it is a known one, and plays the learner's answers over
the whole launch: iterations computed twice or never, tiles stored before their partials were added,
owners waiting for flags nobody raises.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from functools import lru_cache

from .feedback import Exercise, Failure, Learner, as_int, as_int_pair, explained, format_call, passed_message

FUNCTIONS = ("cta_k_range", "tiles_to_fix_up", "ctas_of_tile")
# (tiles, iters_per_tile, ctas): small launches first, so a first failure reads easily
CASES = [(4, 3, 5),            # 12 iterations: 3, 3, 2, 2, 2; tiles 2 and 3 split
         (5, 4, 3),            # 20 iterations: 7, 7, 6
         (2, 8, 5),            # 16 iterations: tile 0 over three CTAs
         (7, 5, 4), (6, 4, 3),  # ... and an exact split: no partial tiles
         (3, 2, 8),            # 6 iterations on 8 CTAs: two CTAs with nothing to do
         (1, 1, 1), (1, 9, 4), (9, 1, 4),
         (144, 48, 66),        # 3072^3 on rung 11: 144 cluster tiles of 48 iterations
         (78, 48, 66),         # ... the hybrid's stream-K part: 1.18 waves
         (16, 256, 66),        # 1024 x 1024 x 16384: every tile over four or five CTAs
         (64, 32, 66),         # 2048^3: fewer tiles than CTAs
         (128, 128, 66)]       # 4096 x 2048 x 8192
RANDOM_CASES = 15
SHOWN = 8                      # items of a list shown in a message


def _cases() -> list[tuple[int, int, int]]:
    rng = random.Random(12)
    return CASES + [(rng.randint(1, 40), rng.randint(1, 20), rng.randint(1, 40)) for _ in range(RANDOM_CASES)]


# ---------------------------------------------------------------- the reference

@lru_cache(maxsize=64)
def reference_ranges(tiles: int, iters_per_tile: int, ctas: int) -> tuple[tuple[int, int], ...]:
    """Every CTA's [begin, end), from the simulator's even split."""
    from ..sim import streamk_ranges

    return tuple((int(b), int(e)) for b, e in streamk_ranges(tiles, iters_per_tile, ctas))


def cta_k_range(cta: int, tiles: int, iters_per_tile: int, ctas: int) -> tuple[int, int]:
    return reference_ranges(tiles, iters_per_tile, ctas)[cta]


def pieces(begin: int, end: int, iters_per_tile: int) -> list[tuple[int, int, int]]:
    """The range [begin, end) cut at tile boundaries: (tile, k_begin, k_end)."""
    out, it = [], begin
    while it < end:
        tile = it // iters_per_tile
        k_end = min(end - tile * iters_per_tile, iters_per_tile)
        out.append((tile, it - tile * iters_per_tile, k_end))
        it = tile * iters_per_tile + k_end
    return out


def tiles_to_fix_up(cta: int, tiles: int, iters_per_tile: int, ctas: int) -> list[tuple[int, int, int, bool]]:
    return [(t, kb, ke, kb == 0) for t, kb, ke in pieces(*cta_k_range(cta, tiles, iters_per_tile, ctas),
                                                          iters_per_tile) if ke - kb < iters_per_tile]


def ctas_of_tile(tile: int, tiles: int, iters_per_tile: int, ctas: int) -> tuple[int, int]:
    ranges = reference_ranges(tiles, iters_per_tile, ctas)
    holders = [c for c, (b, e) in enumerate(ranges) if b < (tile + 1) * iters_per_tile and e > tile * iters_per_tile]
    return holders[0], holders[-1]


REFERENCE = {"cta_k_range": cta_k_range, "tiles_to_fix_up": tiles_to_fix_up, "ctas_of_tile": ctas_of_tile}


# ---------------------------------------------------------------- reading the learner's answers

def _companion(learner: Learner, name: str) -> Learner:
    """The learner's other function, found next to the first (same file or notebook namespace)."""
    other = learner.companion(name)
    if other is None:
        where = learner.source if learner.source is not None else "your namespace"
        raise Failure(f"{where} defines no function {name}(); ex12 needs cta_k_range(), tiles_to_fix_up() and "
                      "ctas_of_tile(), side by side, with the names the exercise gave.")
    return other


def _answer(fn: str, learner: Learner, args: dict):
    call = format_call(fn, args)
    value = learner(**args)
    if fn == "cta_k_range":
        return as_int_pair(value, call, args, "(begin, end)")
    if fn == "ctas_of_tile":
        return as_int_pair(value, call, args, "(first_cta, last_cta)")
    want = "a list of (tile, k_begin, k_end, is_owner) tuples"
    try:
        items = list(value)
    except TypeError:
        raise Failure(f"{call} returned {value!r} ({type(value).__name__}); it must return {want}.",
                      {"input": args, "expected": want, "got": value}) from None
    if len(items) > args["tiles"]:           # read no further: a CTA cannot list more tiles than there are
        raise Failure(f"{call} returned a list of {len(items)} items, more than the {args['tiles']} tiles of the "
                      "launch; a CTA lists each partial tile it computes part of once, at most two of them (the "
                      "first and the last piece of its range).",
                      {"input": args, "expected": want, "got": f"a list of {len(items)} items"})
    out = []
    for item in items:
        parts = list(item) if isinstance(item, (tuple, list)) else None
        if parts is None or len(parts) != 4 or type(parts[3]).__name__ not in ("bool", "bool_"):
            raise Failure(f"{call} returned {item!r} in its list; each item must be a tuple (tile, k_begin, k_end, "
                          "is_owner) of three ints and a bool.", {"input": args, "expected": want, "got": value})
        out.append((*(as_int(p, call, args, "ints tile, k_begin, k_end") for p in parts[:3]), bool(parts[3])))
    return out


def _all(fn: str, learner: Learner, shape: dict, over: str) -> list | str:
    """The learner's answers for every CTA (or tile) of one launch, or why they could not be had."""
    try:
        return [_answer(fn, learner, {over: i, **shape}) for i in range(shape["ctas" if over == "cta" else "tiles"])]
    except Failure as failure:
        return f"(Your answers over the whole launch could not be had: {failure.message.splitlines()[0]})"


def _short(items: list) -> str:
    return "[" + ", ".join(map(str, items[:SHOWN])) + (f", ... ({len(items)} in all)]" if len(items) > SHOWN else "]")


def _shown(value) -> str:
    """``value`` as the message shows it: a long list cut after :data:`SHOWN` items."""
    return _short(value) if isinstance(value, list) else str(value)


def _span(first: int, last: int) -> str:
    """CTAs ``first`` .. ``last`` as ``_runs`` writes them (``3-5``, ``4``), without listing them: ``last`` may be
    a learner's answer, of any size."""
    return "" if first > last else f"{first}" if first == last else f"{first}-{last}"


def _runs(values: list[int]) -> str:
    """[3, 4, 5, 9] -> '3-5, 9'."""
    runs: list[list[int]] = []
    for v in sorted(values):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:SHOWN])
    return text + (", ..." if len(runs) > SHOWN else "")


# ---------------------------------------------------------------- the checker

def verify(learner: Learner) -> str:
    learners = {"cta_k_range": learner}
    checked = 0
    for fn in FUNCTIONS:
        if fn not in learners:
            learners[fn] = _companion(learner, fn)
        over = "tile" if fn == "ctas_of_tile" else "cta"
        learners[fn].plan([{over: i, "tiles": tiles, "iters_per_tile": iters_per_tile, "ctas": ctas}
                           for tiles, iters_per_tile, ctas in _cases() for i in range(tiles if over == "tile" else ctas)])
        for tiles, iters_per_tile, ctas in _cases():
            shape = {"tiles": tiles, "iters_per_tile": iters_per_tile, "ctas": ctas}
            for i in range(tiles if over == "tile" else ctas):
                args = {over: i, **shape}
                got = _answer(fn, learners[fn], args)
                expected = REFERENCE[fn](**args)
                checked += 1
                if got != expected:
                    raise Failure(f"{format_call(fn, args)}: expected {expected}, got {_shown(got)}.\n"
                                  + explained(lambda: EXPLAIN[fn](learners[fn], args, expected, got)),
                                  {"input": args, "expected": expected, "got": got})
    return passed_message(checked, "every CTA's range is its even share of the iterations in CTA order, every "
                          "partial tile has one owner (the CTA of its K-iteration 0) and its contributors, and "
                          "each tile's first and last CTA follow from inverting the split, on launches from one CTA "
                          "to more CTAs than iterations")


def _split_worked(tiles: int, iters_per_tile: int, ctas: int) -> str:
    total = tiles * iters_per_tile
    share, extra = divmod(total, ctas)
    sizes = [share + (c < extra) for c in range(ctas)]
    return (f"{tiles} tiles x {iters_per_tile} iterations = {total} iterations over {ctas} CTAs: {total} // {ctas} = "
            f"{share} each and the first {total} % {ctas} = {extra} one more, so the CTAs hold {_short(sizes)} "
            "iterations, in CTA order from iteration 0.")


def _explain_range(learner: Learner, args: dict, expected, got) -> str:
    shape = {k: args[k] for k in ("tiles", "iters_per_tile", "ctas")}
    lines = [_split_worked(**shape)]
    answers = _all("cta_k_range", learner, shape, "cta")
    if isinstance(answers, str):
        return "\n".join(lines + [answers])
    total, ipt = shape["tiles"] * shape["iters_per_tile"], shape["iters_per_tile"]
    counts = Counter(i for b, e in answers for i in range(max(b, 0), min(e, total)))
    never = [i for i in range(total) if counts[i] == 0]
    twice = [i for i in range(total) if counts[i] > 1]
    outside = sorted({c for c, (b, e) in enumerate(answers) if b < 0 or e > total or e < b})
    sizes = [e - b for b, e in answers]
    ctas = f"all {shape['ctas']} CTAs" if shape["ctas"] > 1 else "the one CTA"
    setting = f"Summed over {ctas} of this launch, your ranges "
    if outside:
        lines.append(f"CTA(s) {_runs(outside)} get a range outside [0, {total}) or with end < begin: the kernel would "
                     "read A and B past the tiles, or loop on a negative count.")
    if never:
        tile = never[0] // ipt
        lines.append(setting + f"never compute global iteration(s) {_runs(never)} (the first is K-iteration "
                     f"{never[0] % ipt} of tile {tile}): those products are never added, and tile {tile} is stored "
                     "without them, a wrong result.")
    if twice:
        tile = twice[0] // ipt
        lines.append(setting + f"compute global iteration(s) {_runs(twice)} more than once (the first is "
                     f"K-iteration {twice[0] % ipt} of tile {tile}): its products are added twice, a wrong result.")
    if not (never or twice or outside):
        if max(sizes) > max(e - b for b, e in reference_ranges(**shape)):
            lines.append(setting + f"compute every iteration once, so C is right, but CTA {sizes.index(max(sizes))} "
                         f"does {max(sizes)} iterations where an even split gives none more than "
                         f"{-(-total // shape['ctas'])}: the kernel takes that much longer.")
        else:
            lines.append(setting + "compute every iteration once with an even split, but not in the order rung 12 "
                         "uses: the first total % ctas CTAs carry the extra iteration, and the owner's arithmetic "
                         "for which flags to wait on (ctas_of_tile) counts on that.")
    share, extra = divmod(total, shape["ctas"])
    slips = {
        "floor": (lambda c: (c * share, c * share + share),
                  "Your ranges give every CTA total // ctas iterations and stop there: the total % ctas left over "
                  "at the end are nobody's."),
        "last takes the rest": (lambda c: (c * share, total if c == shape["ctas"] - 1 else c * share + share),
                                "Your last CTA takes the whole remainder (total % ctas iterations more than the "
                                "others): spread it, one each, over the first CTAs."),
        "rest to the last CTAs": (lambda c: (c * share + max(0, c - (shape["ctas"] - extra)),
                                             (c + 1) * share + max(0, c + 1 - (shape["ctas"] - extra))),
                                  "Your extra iterations go to the last total % ctas CTAs; the split gives them to "
                                  "the first ones."),
        "no extra in end": (lambda c: (c * share + min(c, extra), c * share + min(c, extra) + share),
                            "Your begin counts the extra iterations of the CTAs before this one, but your end leaves "
                            "out this CTA's own extra one."),
    }
    for rule, hint in slips.values():
        if answers == [rule(c) for c in range(shape["ctas"])]:
            lines.append(hint)
            break
    return "\n".join(lines)


def _explain_fix_up(learner: Learner, args: dict, expected, got) -> str:
    shape = {k: args[k] for k in ("tiles", "iters_per_tile", "ctas")}
    cta, ipt = args["cta"], shape["iters_per_tile"]
    begin, end = cta_k_range(**args)
    cut = pieces(begin, end, ipt)
    described = [f"tile {t} K-iterations [{kb}, {ke})" + (" (whole: straight to C)" if ke - kb == ipt else
                 " (owner: it computes K-iteration 0)" if kb == 0 else " (contributor)") for t, kb, ke in cut]
    lines = [f"CTA {cta}'s range is [{begin}, {end})" + (": " + "; ".join(described) + "." if cut else
                                                         ": empty, nothing to fix up.")]
    if any(g[:3] == (t, t * ipt + kb, t * ipt + ke) for g in got for t, kb, ke in cut if t > 0):
        lines.append("Your k_begin, k_end are global iterations; they are the tile's own K-iterations, "
                     f"0 .. {ipt}.")
    elif any(ke - kb == ipt for t, kb, ke in cut if any(g[0] == t for g in got)):
        lines.append("A tile the CTA computes whole is not listed: it goes straight to C, no workspace, no flag.")
    answers = _all("tiles_to_fix_up", learner, shape, "cta")
    lines.append(answers if isinstance(answers, str) else _fix_up_effects(answers, **shape))
    return "\n".join(lines)


def _fix_up_effects(answers: list, tiles: int, iters_per_tile: int, ctas: int) -> str:
    """What the kernel does with the learner's lists, summed over the launch."""
    listed = defaultdict(list)                   # tile -> [(cta, k_begin, k_end, is_owner)]
    for c, items in enumerate(answers):
        for t, kb, ke, owner in items:
            listed[t].append((c, kb, ke, owner))
    effects, whole = [], []
    for tile in range(tiles):
        first, last = ctas_of_tile(tile, tiles, iters_per_tile, ctas)
        mine = listed.get(tile, [])
        owners = [c for c, *_, owner in mine if owner]
        if first == last:
            if any(not owner for *_, owner in mine):
                effects.append(f"tile {tile} is CTA {first}'s alone, yet goes to the workspace as a contributor's "
                               "partial: nobody stores it to C, so it is never written")
            elif mine:
                whole.append(tile)
            continue
        computing = set(range(first, last + 1))
        silent = sorted(computing - {c for c, *_ in mine})
        if not owners:
            effects.append(f"partial tile {tile} has no owner: its partials wait in the workspace and C's tile is "
                           "never stored")
        elif len(owners) > 1:
            effects.append(f"partial tile {tile} is stored by CTAs {_runs(owners)}, each with only its part of the "
                           "sum: the last store wins, a wrong result")
        elif owners[0] != first:
            effects.append(f"partial tile {tile} is owned by CTA {owners[0]}, which computes the tile's last "
                           f"iterations at the start of its range: it would sit waiting for CTA {first}, which reaches "
                           "the tile only at the end of its own range (C right, the owner stalled for most of a range)")
        if silent:
            effects.append(f"CTA(s) {_runs(silent)} compute part of tile {tile} but do not list it: their partial "
                           "never reaches the workspace and their flag never rises, so the owner waits forever, a hang")
        covered = Counter(k for _, kb, ke, _ in mine for k in range(max(kb, 0), min(ke, iters_per_tile)))
        holes = [k for k in range(iters_per_tile) if covered[k] == 0]
        if not silent and holes:
            effects.append(f"tile {tile}'s K-iterations {_runs(holes)} are in no CTA's piece: the tile is stored "
                           "without them, a wrong result")
        if len(effects) >= 3:
            break
    if whole and len(effects) < 3:
        effects.append(f"tile(s) {_runs(whole)}, each computed whole by one CTA, go through the fix-up as their own "
                       "owner: no flag to wait for, so C is right, but each such list entry is work the kernel does "
                       "for nothing")
    if not effects:
        return ("Summed over the launch, every partial tile still has one owner, the CTA of its K-iteration 0, and "
                "every contributor reports: what differs is what a piece covers or the order of the pieces.")
    return "Summed over the launch, with your lists: " + "; ".join(effects) + "."


def _explain_tile(learner: Learner, args: dict, expected, got) -> str:
    shape = {k: args[k] for k in ("tiles", "iters_per_tile", "ctas")}
    tile, ipt = args["tile"], shape["iters_per_tile"]
    (first, last), (got_first, got_last) = expected, got
    ranges = reference_ranges(**shape)
    first_i, last_i = tile * ipt, (tile + 1) * ipt - 1
    lines = [_split_worked(**shape),
             f"Tile {tile} is global iterations {first_i} .. {last_i}: iteration {first_i} is in CTA {first}'s range "
             f"[{ranges[first][0]}, {ranges[first][1]}), iteration {last_i} in CTA {last}'s "
             f"[{ranges[last][0]}, {ranges[last][1]})."]
    if got_first != first:
        lines.append(f"With CTA {got_first} as the first, the kernel would make it the owner of tile {tile}; the owner "
                     f"is CTA {first}, the one that computes the tile's K-iteration 0.")
    if got_last < last:
        lines.append(f"The owner would add the partials of CTAs up to {got_last} only and store tile {tile} before the "
                     f"partials of CTA(s) {_span(max(got_last + 1, first + 1), last)} were added: a "
                     "wrong result.")
    elif got_last > last:
        beyond = f" (CTA {got_last} is not even in the grid of {shape['ctas']})" if got_last >= shape["ctas"] else ""
        lines.append(f"The owner would wait for the flag of CTA(s) {_span(last + 1, got_last)}{beyond}, "
                     f"which compute none of tile {tile}: nobody raises it for this tile, so the kernel hangs (or "
                     "adds a stale partial from another tile: a wrong result).")
    total = shape["tiles"] * ipt
    share, extra = divmod(total, shape["ctas"])
    if share and extra and got == (first_i // share, min(last_i // share, shape["ctas"] - 1)):
        lines.append(f"Your answer is i // (total // ctas), which holds only when every CTA gets the same count; here "
                     f"the first {total} % {shape['ctas']} = {extra} CTAs hold one iteration more, which shifts "
                     "every boundary after them.")
    return "\n".join(lines)


EXPLAIN = {"cta_k_range": _explain_range, "tiles_to_fix_up": _explain_fix_up, "ctas_of_tile": _explain_tile}


EXERCISE = Exercise(
    name="ex12_streamk",
    function="cta_k_range",
    description="stream-K: a CTA's even share of the K-iterations, the partial tiles it fixes up, and the CTAs "
                "that compute a tile.",
    verify=verify,
)
