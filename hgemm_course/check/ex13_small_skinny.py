"""Checker for ex13_small_skinny: an fp16 GEMM's arithmetic intensity and memory-roof time, and the pieces per
tile of split-K.

The references are the course's own (:func:`hgemm_course.course.small_skinny.arithmetic_intensity` and
:func:`~hgemm_course.course.small_skinny.memory_roof_us`, through :func:`hgemm_course.measurement.roofline.gemm_floor`, and
:func:`~hgemm_course.course.small_skinny.split_pieces`, the count the plan's split-K model uses). Checked on every shape
of the course's small-and-skinny sweep, on odd shapes (one-element products, dimensions off every tile, primes)
and on random ones; the pieces also on the tiles rungs 11 and 12 take and on GPUs of other SM counts. Floats are
compared to a relative 1e-9. A wrong answer names the first wrong call with expected vs got, works the count
through for it and names the slip when it is a known one.
"""
from __future__ import annotations

import math
import random

from ..course.small_skinny import arithmetic_intensity, memory_roof_us, split_pieces
from .feedback import Exercise, Failure, Learner, as_int, format_call, passed_message

FUNCTIONS = ("arithmetic_intensity", "memory_roof_us", "split_pieces")
REL_TOL = 1e-9
# (M, N, K): the sweep's kinds, then odd shapes: one element, dimensions off every tile, primes, K of one
SHAPES = [(16, 4096, 4096), (128, 8192, 28672), (256, 256, 65536), (4096, 4096, 128), (1000, 1000, 1000),
          (96, 5000, 3000), (8192, 8192, 8192), (1, 1, 1), (257, 136, 72), (7, 13, 100003), (65, 63, 1),
          (1, 100000, 1), (3000, 5000, 7000)]
BANDWIDTHS = (4264.3, 4800.0, 3350.0, 1.0, 960.5)          # GB/s: the H200's copy and datasheet, an H100, odd ones
TILES = ((64, 64), (64, 128), (64, 256), (128, 128), (128, 256), (128, 64), (256, 128), (48, 80))
SMS = (132, 114, 84, 1, 7)                                  # H200, H100 PCIe, RTX 5080, and odd counts
RANDOM_CASES = 300


def _shapes() -> list[tuple[int, int, int]]:
    from ..course.small_skinny import sweep_shapes

    rng = random.Random(13)
    extra = [(rng.randint(1, 5000), rng.randint(1, 5000), rng.randint(1, 70000)) for _ in range(RANDOM_CASES)]
    return list(dict.fromkeys(SHAPES + sweep_shapes() + extra))


def _cases(fn: str) -> list[dict]:
    shapes = _shapes()
    if fn == "arithmetic_intensity":
        return [{"M": M, "N": N, "K": K} for M, N, K in shapes]
    if fn == "memory_roof_us":
        return [{"M": M, "N": N, "K": K, "bandwidth_gbs": BANDWIDTHS[i % len(BANDWIDTHS)]}
                for i, (M, N, K) in enumerate(shapes)]
    return [{"M": M, "N": N, "bm": bm, "bn": bn, "sms": sms}
            for i, (M, N, _) in enumerate(shapes) for bm, bn in TILES[i % 3::3] for sms in SMS[: 1 + i % len(SMS)]]


REFERENCE = {"arithmetic_intensity": arithmetic_intensity, "memory_roof_us": memory_roof_us,
             "split_pieces": split_pieces}


# ---------------------------------------------------------------- reading the learner's answers

def _number(value, call: str, args: dict) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Failure(f"{call} returned {value!r} ({type(value).__name__}); it must return a finite number (a float).",
                      {"input": args, "expected": "a float", "got": value})
    return float(value)


def _companion(learner: Learner, name: str) -> Learner:
    other = learner.companion(name)
    if other is None:
        where = learner.source if learner.source is not None else "your namespace"
        raise Failure(f"{where} defines no function {name}(); ex13 needs arithmetic_intensity(), memory_roof_us() "
                      "and split_pieces(), side by side, with the names the exercise gave.")
    return other


# ---------------------------------------------------------------- worked counts and known slips

def _bytes(M: int, N: int, K: int) -> int:
    return 2 * (M * K + K * N + M * N)


def _explain_intensity(args: dict, got: float) -> str:
    M, N, K = args["M"], args["N"], args["K"]
    flops, moved = 2 * M * N * K, _bytes(M, N, K)
    lines = [f"FLOPs: 2 x {M} x {N} x {K} = {flops:,}; bytes: 2 x ({M}x{K} + {K}x{N} + {M}x{N}) = {moved:,}; "
             f"intensity {flops:,} / {moved:,} = {flops / moved:.6g} FLOP/B."]
    slips = [(flops / (2 * (M * K + K * N)), "Your bytes leave out C: the product writes M x N outputs, 2 bytes each."),
             (M * N * K / moved, "Your FLOPs count one per term; each term is a multiply and an add, two FLOPs."),
             (flops / (moved / 2), "Your bytes count one per element; fp16 is 2 bytes."),
             (flops / (2 * moved), "Your bytes count 4 per element; A, B and C are fp16, 2 bytes each."),
             (moved / flops, "Your ratio is upside down: FLOPs over bytes.")]
    lines += [hint for value, hint in slips if math.isclose(got, value, rel_tol=1e-6)][:1]
    return "\n".join(lines)


def _explain_roof(args: dict, got: float) -> str:
    M, N, K, bw = args["M"], args["N"], args["K"], args["bandwidth_gbs"]
    moved = _bytes(M, N, K)
    seconds = moved / (bw * 1e9)
    lines = [f"Bytes: 2 x ({M}x{K} + {K}x{N} + {M}x{N}) = {moved:,}; at {bw} GB/s = {bw * 1e9:.6g} B/s that is "
             f"{seconds:.6g} s = {seconds * 1e6:.6g} us."]
    slips = [(seconds * 1e3, "That is milliseconds; the function returns microseconds (1 ms = 1000 us)."),
             (seconds, "That is seconds; the function returns microseconds (1 s = 10^6 us)."),
             (moved / (bw * 2**30) * 1e6, "Your GB is 2^30 bytes; bandwidths are quoted in 10^9 bytes per second."),
             (2 * (M * K + K * N) / (bw * 1e9) * 1e6, "Your bytes leave out C: the product writes M x N outputs, 2 "
                                                       "bytes each."),
             (seconds * 1e6 / 2, "Your bytes count one per element; fp16 is 2 bytes.")]
    lines += [hint for value, hint in slips if math.isclose(got, value, rel_tol=1e-6)][:1]
    return "\n".join(lines)


def _explain_pieces(args: dict, got: int) -> str:
    M, N, bm, bn, sms = args["M"], args["N"], args["bm"], args["bn"], args["sms"]
    rows, cols = -(-M // bm), -(-N // bn)
    tiles = rows * cols
    lines = [f"Tiles: ceil({M} / {bm}) x ceil({N} / {bn}) = {rows} x {cols} = {tiles}; pieces: ceil({sms} / {tiles}) "
             f"= {-(-sms // tiles)}" + (", each tile whole: the tiles alone fill the SMs." if tiles >= sms else ".")]
    floor_tiles = max(1, (M // bm) * (N // bn))       # rounded down (and kept from 0, as a guarded slip keeps it)
    slips = [(-(-sms // floor_tiles), "Your tiles round down: a part tile at the edge of C is a tile "
                                                      "too (ceil, not //), or its rows of C are never computed."),
             (sms // tiles, f"Your pieces round down: {tiles} tiles of {sms // tiles} pieces leave "
                            f"{sms - tiles * (sms // tiles)} SMs idle; round up so the pieces reach {sms}."),
             (-(-tiles // sms), "That is waves of whole tiles (tiles / sms); the pieces go the other way: sms / tiles."),
             (tiles, "That is the number of tiles, not the pieces of each.")]
    lines += [hint for value, hint in slips if value == got][:1]
    return "\n".join(lines)


EXPLAIN = {"arithmetic_intensity": _explain_intensity, "memory_roof_us": _explain_roof, "split_pieces": _explain_pieces}


# ---------------------------------------------------------------- the checker

def verify(learner: Learner) -> str:
    learners = {"arithmetic_intensity": learner}
    checked = 0
    for fn in FUNCTIONS:
        if fn not in learners:
            learners[fn] = _companion(learner, fn)
        cases = _cases(fn)
        learners[fn].plan(cases)
        for args in cases:
            call = format_call(fn, args)
            value = learners[fn](**args)
            expected = REFERENCE[fn](**args)
            checked += 1
            if fn == "split_pieces":
                got = as_int(value, call, args, "an int (pieces per tile)")
                right = got == expected
            else:
                got = _number(value, call, args)
                right = math.isclose(got, expected, rel_tol=REL_TOL)
            if not right:
                shown = expected if fn == "split_pieces" else f"{expected:.9g}"
                raise Failure(f"{call}: expected {shown}, got {got if fn == 'split_pieces' else f'{got:.9g}'}.\n"
                              + EXPLAIN[fn](args, got), {"input": args, "expected": expected, "got": got})
    return passed_message(checked, "the intensity (2MNK FLOPs over 2(MK + KN + MN) bytes) and the memory-roof time "
                          "in microseconds at 10^9-byte GB/s agree to a relative 1e-9, and the pieces per tile "
                          "exactly, on the sweep's shapes, one-element, prime and random shapes, several tiles and SM "
                          "counts")


EXERCISE = Exercise(
    name="ex13_small_skinny",
    function="arithmetic_intensity",
    description="Small and skinny: an fp16 GEMM's arithmetic intensity and memory-roof time, and split-K's pieces "
                "per tile.",
    verify=verify,
)
