"""Checker for ex04_ldmatrix: the row each lane hands ldmatrix.x4 for an m16n8k16 A fragment,
against ``hgemm_course.sim.fragments.ldmatrix_x4_src_row_reference``.

All 32 lanes are checked. A wrong answer is run through the CPU emulator of ldmatrix and
mma.sync (``hgemm_course.sim.fragments``) on a tile whose every element is distinct, so the
feedback says which register of which lane ends up holding the wrong part of A, and how
much of the mma's result that spoils.
"""
from __future__ import annotations

from .feedback import Exercise, Failure, Learner, as_int_pair, format_call, mismatch, passed_message, with_extra

FUNCTION = "ldmatrix_x4_src_row"
EXTRA = "ldmatrix_x2_b_src_row"     # the extra question: B's fragment through ldmatrix.x2
LANES = 32
ROWS, CHUNKS = 16, 2  # a 16 x 16 fp16 tile: 16 rows of two 16-byte chunks
ROW_BYTES = 32


def _expected(lane: int) -> tuple[int, int]:
    from ..sim import ldmatrix_x4_src_row_reference
    return tuple(int(v) for v in ldmatrix_x4_src_row_reference(lane))


def verify(learner: Learner) -> str:
    rows = []
    for lane in range(LANES):
        args = {"lane": lane}
        call = format_call(FUNCTION, args)
        got = as_int_pair(learner(**args), call, args, "(row, chunk)")
        if not (0 <= got[0] < ROWS and 0 <= got[1] < CHUNKS):
            raise mismatch(call, args, _expected(lane), got,
                           "The A tile is 16 rows of 2 chunks: row must be 0-15 and chunk 0 (k 0-7) or 1 (k 8-15).")
        rows.append(got)
    for lane, got in enumerate(rows):
        if got != _expected(lane):
            args = {"lane": lane}
            raise mismatch(format_call(FUNCTION, args), args, _expected(lane), got, _explain(lane, rows))
    passed = passed_message(LANES, f"{FUNCTION}: ldmatrix.x4 fills registers 0-3 of every lane with a0..a7 of the "
                            "m16n8k16 A fragment, so mma.sync reads A right")
    return with_extra(learner, passed, EXTRA, verify_b, "ldmatrix.x2 fills b0, b1 from the transposed B tile, so "
                      "mma.sync computes A @ B")


def verify_b(learner: Learner) -> int:
    """The extra question: ldmatrix.x2 of the transposed (8 rows n, 16 k) B tile into b0, b1."""
    for lane in range(LANES):
        args = {"lane": lane}
        call = format_call(EXTRA, args)
        expected = (lane % 8, lane // 8 % 2)
        got = as_int_pair(learner(**args), call, args, "(row, chunk)")
        if not (0 <= got[0] < 8 and 0 <= got[1] < CHUNKS):
            raise mismatch(call, args, expected, got, "The transposed B tile is 8 rows n of 2 chunks: row must be "
                           "0-7 and chunk 0 (k 0-7) or 1 (k 8-15); even lanes 16-31, whose addresses .x2 ignores, "
                           "must give a valid one.")
        if lane < 16 and got != expected:
            j = lane // 8
            raise mismatch(call, args, expected, got,
                           f"Lane {lane} supplies row {lane % 8} of matrix {j}, which lands in register {j}: b{j}. "
                           f"b{j} holds B[k = {8 * j} + 2 (l % 4) .. +1][n = l // 4], which is row n = l // 4, "
                           f"elements 2 (l % 4) .. +1 of the chunk of k {8 * j}-{8 * j + 7}: matrix {j} must be "
                           f"rows n 0-7 of chunk {j}.")
    return LANES


def _emulate(rows: list[tuple[int, int]]):
    """Load a tile whose element (r, k) holds 16 r + k through ldmatrix.x4 with the lanes'
    addresses, then multiply; returns (registers, wanted registers, mma result, A @ B)."""
    import numpy as np

    from ..sim import a_regs_from_matrix, b_regs_from_matrix, c_matrix_from_regs, ldmatrix, mma_m16n8k16

    tile = np.arange(ROWS * 16, dtype=np.float16).reshape(ROWS, 16)  # (16, 16), all exact in fp16
    addrs = [row * ROW_BYTES + chunk * 16 for row, chunk in rows]
    regs = ldmatrix(tile, addrs, 4)                               # (32 lanes, 4 regs, 2 halfs)
    wanted = a_regs_from_matrix(tile)                             # (32 lanes, 4 regs, 2 halfs)
    b = (np.arange(16 * 8).reshape(16, 8) % 7 - 3).astype(np.float16)  # (16, 8) = (K, N)
    c = np.zeros((LANES, 4), np.float32)                          # (32 lanes, 4 accumulators)
    d = c_matrix_from_regs(mma_m16n8k16(regs, b_regs_from_matrix(b), c))  # (16, 8)
    return regs, wanted, d, tile.astype(np.float32) @ b.astype(np.float32)


def _explain(lane: int, rows: list[tuple[int, int]]) -> str:
    matrix, row_in = divmod(lane, 8)
    first_row = 8 * (matrix % 2)
    text = (f"Lane {lane} supplies row {row_in} of matrix {matrix}, and matrix {matrix} is rows "
            f"{first_row}-{first_row + 7}, k {8 * (matrix // 2)}-{8 * (matrix // 2) + 7} (chunk {matrix // 2}).")
    import numpy as np

    try:
        regs, wanted, d, right = _emulate(rows)
    except (Failure, ValueError):
        return text
    for lane_now in range(LANES):
        for reg in range(4):
            if (regs[lane_now, reg] != wanted[lane_now, reg]).any():
                held = divmod(int(regs[lane_now, reg, 0]), 16)
                want = divmod(int(wanted[lane_now, reg, 0]), 16)
                bad = d != right
                text += (f"\nThrough the emulator: lane {lane_now}'s register {reg} (a{2 * reg}, a{2 * reg + 1}) "
                         f"would hold A[{held[0]}, {held[1]}:{held[1] + 2}] where mma.sync needs "
                         f"A[{want[0]}, {want[1]}:{want[1] + 2}]; the m16n8k16 result would then be wrong in "
                         f"{int(bad.sum())} of its 128 elements (rows {_spans(np.flatnonzero(bad.any(1)))}).")
                return text
    return text


def _spans(rows) -> str:
    """``0-3, 8-11`` for the rows 0, 1, 2, 3, 8, 9, 10, 11."""
    spans: list[list[int]] = []
    for row in map(int, rows):
        if spans and row == spans[-1][1] + 1:
            spans[-1][1] = row
        else:
            spans.append([row, row])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


EXERCISE = Exercise(
    name="ex04_ldmatrix",
    function=FUNCTION,
    description="ldmatrix: the row address each lane gives ldmatrix.x4 for an mma.sync A fragment.",
    verify=verify,
)
