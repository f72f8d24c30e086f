"""Shared-memory banks: what one warp-wide request costs, in wavefronts.

The model (the one Nsight Compute's shared-memory counters follow):

- Shared memory is 32 banks of 4-byte words; word ``w`` lives in bank ``w % 32``.
- A warp's request is served in *phases*: all 32 lanes at once for 4-byte accesses,
  16 lanes at a time for 8-byte accesses, 8 lanes at a time for 16-byte accesses
  (``ld.shared.v4``, ``st.shared.v4``, ``cp.async`` 16-byte stores, and ``ldmatrix``,
  whose 8 row addresses per matrix are one 16-byte access each).
- A phase costs as many wavefronts as the most *distinct* words any one bank must
  deliver; lanes reading the same word share it (broadcast).
- The ideal is one wavefront per phase, so
  ``bank conflicts = wavefronts - ideal wavefronts``, which is how ncu's
  ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared`` counts them.

Not modelled: the hardware merging phases whose lanes read the same 16 bytes,
and requests of fewer than 4 bytes.

``cp.async`` 16-byte stores (SASS LDGSTS) follow a rule of their own (:func:`ldgsts_wavefronts`):
each 8-lane phase is taken one 128-byte global line at a time; a line whose lanes all write one
128-byte shared segment costs 1 wavefront, however its chunks are permuted there; a line spread over
several segments costs one per segment and, where its shared and global addresses differ modulo 32
bytes, one per segment and half-sector (global address bit 4).

Against the H200 (ncu at 2048^3 with the rungs' own tiles, results/model_banks_nvidia-h200_*.json):
ldmatrix wavefronts and conflicts agree exactly for rungs 03-07, and the LDGSTS rule for the aligned
rows of rungs 05/06. It disagrees on the padded rows of rungs 03/04: 4,128,768 wavefronts against
ncu's 3,702,784: on misaligned rows the hardware's count depends on more than the addresses (the
instruction form, it seems). How the rule was measured and what is still open: research/banks_model_log.md.
"""
from __future__ import annotations

import numpy as np
from .cache import cached_njit

from .swizzle import TileLayout

NUM_BANKS = 32
BANK_BYTES = 4
WARP_SIZE = 32
PHASE_LANES = {4: 32, 8: 16, 16: 8}


@cached_njit()
def _wavefronts_per_request(byte_addrs, access_bytes, phase_lanes, num_banks, bank_bytes):
    # byte_addrs: (requests, lanes) int64
    requests, lanes = byte_addrs.shape
    words_per_access = access_bytes // bank_bytes
    out = np.zeros(requests, np.int64)
    words = np.empty(phase_lanes * words_per_access, np.int64)
    per_bank = np.zeros(num_banks, np.int64)
    for q in range(requests):
        for start in range(0, lanes, phase_lanes):
            count = 0
            for lane in range(start, min(start + phase_lanes, lanes)):
                first_word = byte_addrs[q, lane] // bank_bytes
                for w in range(words_per_access):
                    words[count] = first_word + w
                    count += 1
            distinct = np.unique(words[:count])
            per_bank[:] = 0
            for word in distinct:
                per_bank[word % num_banks] += 1
            out[q] += per_bank.max()
    return out


def _as_requests(byte_addrs, access_bytes):
    if access_bytes not in PHASE_LANES:
        raise ValueError(f"access_bytes={access_bytes} is not a shared-memory access width: use 4, 8 or 16")
    addrs = np.atleast_2d(np.asarray(byte_addrs, dtype=np.int64))
    if addrs.shape[1] > WARP_SIZE or addrs.shape[1] == 0:
        raise ValueError(f"a warp request has 1 to 32 lane addresses, got {addrs.shape[1]}")
    misaligned = np.flatnonzero(addrs % access_bytes)
    if misaligned.size:
        lane = misaligned[0] % addrs.shape[1]
        raise ValueError(f"lane {lane} address {addrs.flat[misaligned[0]]} is not {access_bytes}-byte aligned; "
                         f"a {access_bytes}-byte access needs an address that is a multiple of {access_bytes}")
    return addrs


def wavefronts(byte_addrs, access_bytes, *, num_banks=NUM_BANKS, bank_bytes=BANK_BYTES) -> int:
    """Wavefronts one warp-wide request costs: one byte address per lane (up to 32), ``access_bytes`` 4, 8 or 16."""
    addrs = _as_requests(byte_addrs, access_bytes)
    return int(_wavefronts_per_request(addrs, access_bytes, PHASE_LANES[access_bytes], num_banks, bank_bytes)[0])


def ideal_wavefronts(lanes, access_bytes) -> int:
    """Wavefronts a conflict-free request of ``lanes`` lanes costs: one per phase."""
    if access_bytes not in PHASE_LANES:
        raise ValueError(f"access_bytes={access_bytes} is not a shared-memory access width: use 4, 8 or 16")
    return -(-lanes // PHASE_LANES[access_bytes])


def request_cost(byte_addrs, access_bytes, *, num_banks=NUM_BANKS, bank_bytes=BANK_BYTES) -> dict:
    """Wavefronts, ideal wavefronts and bank conflicts of a batch of requests, shape (requests, lanes) or (lanes,).

    Returns totals over the batch: ``{'requests', 'wavefronts', 'ideal_wavefronts', 'bank_conflicts'}``.
    """
    addrs = _as_requests(byte_addrs, access_bytes)
    per_request = _wavefronts_per_request(addrs, access_bytes, PHASE_LANES[access_bytes], num_banks, bank_bytes)
    ideal = ideal_wavefronts(addrs.shape[1], access_bytes) * addrs.shape[0]
    total = int(per_request.sum())
    return {"requests": addrs.shape[0], "wavefronts": total, "ideal_wavefronts": ideal,
            "bank_conflicts": total - ideal}


def lane_banks(byte_addrs, *, num_banks=NUM_BANKS, bank_bytes=BANK_BYTES):
    """Bank of the first word each lane touches: ``(addr // 4) % 32``."""
    return (np.asarray(byte_addrs, dtype=np.int64) // bank_bytes) % num_banks


@cached_njit()
def _ldgsts_per_request(shared, global_):
    requests, lanes = shared.shape
    out = np.zeros(requests, np.int64)
    line = np.empty(8, np.int64)
    half = np.empty(8, np.int64)
    seg = np.empty(8, np.int64)
    skew = np.empty(8, np.int64)
    for q in range(requests):
        for start in range(0, lanes, 8):
            n = 0
            for lane in range(start, min(start + 8, lanes)):
                if shared[q, lane] < 0 or global_[q, lane] < 0:
                    continue
                line[n] = global_[q, lane] // 128
                half[n] = (global_[q, lane] // 16) % 2
                seg[n] = shared[q, lane] // 128
                skew[n] = (shared[q, lane] - global_[q, lane]) % 32
                n += 1
            for i in range(n):
                first = True                      # lane i is the first of its global line
                for j in range(i):
                    if line[j] == line[i]:
                        first = False
                        break
                if not first:
                    continue
                one_segment = True
                split = False
                for j in range(n):
                    if line[j] == line[i]:
                        one_segment = one_segment and seg[j] == seg[i]
                        split = split or skew[j] != 0
                if one_segment:
                    out[q] += 1
                    continue
                # distinct (segment[, half]) pairs among the line's lanes
                for j in range(n):
                    if line[j] != line[i]:
                        continue
                    new = True
                    for k in range(j):
                        if line[k] == line[i] and seg[k] == seg[j] and (not split or half[k] == half[j]):
                            new = False
                            break
                    if new:
                        out[q] += 1
    return out


def ldgsts_wavefronts(shared_addrs, global_addrs) -> int:
    """Shared-memory wavefronts (for conflict-free stores; see :func:`ldgsts_cost`) of one warp's 16-byte ``cp.async`` (LDGSTS), measured on the H200.

    ``shared_addrs`` and ``global_addrs``: one byte address per lane (negative = idle lane).
    Per 8-lane phase and 128-byte global line: 1 wavefront if the line's lanes write one 128-byte
    shared segment; else one per segment, or, where shared and global addresses differ modulo
    32, one per (segment, global address bit 4). See the module docstring.
    """
    return int(ldgsts_cost(shared_addrs, global_addrs)["wavefronts"])


def ldgsts_cost(shared_addrs, global_addrs, *, num_banks=NUM_BANKS, bank_bytes=BANK_BYTES) -> dict:
    """Totals over a batch of LDGSTS requests, shape (requests, lanes) or (lanes,) for both arrays:
    ``{'requests', 'wavefronts', 'ideal_wavefronts', 'bank_conflicts'}``. Bank conflicts follow the
    bank model (ncu counts the extra wavefronts of a split line as no conflict, and so does this);
    wavefronts per request are the larger of the LDGSTS rule and the bank model (every measured
    store was conflict-free, where the rule is never below the bank model; a store with bank
    conflicts was not measured)."""
    shared = np.atleast_2d(np.asarray(shared_addrs, dtype=np.int64))
    global_ = np.atleast_2d(np.asarray(global_addrs, dtype=np.int64))
    if shared.shape != global_.shape:
        raise ValueError(f"shared addresses {shared.shape} and global addresses {global_.shape} differ in shape")
    active = (shared >= 0) & (global_ >= 0)
    if ((shared % 16)[active]).any() or ((global_ % 16)[active]).any():
        raise ValueError("a 16-byte cp.async needs 16-byte aligned shared and global addresses")
    rule = _ldgsts_per_request(shared, global_)
    ideal = sum(ideal_wavefronts(int(a.sum()), 16) for a in active if a.any())
    wavefronts = conflicts = 0
    for q, (row, a) in enumerate(zip(shared, active)):
        lanes = row[a]
        if lanes.size:
            bank = int(_wavefronts_per_request(lanes[None, :], 16, PHASE_LANES[16], num_banks, bank_bytes)[0])
            conflicts += bank - ideal_wavefronts(lanes.size, 16)
            wavefronts += max(int(rule[q]), bank)     # all measured stores were conflict-free: rule >= bank
    return {"requests": int(active.any(axis=1).sum()), "wavefronts": wavefronts, "ideal_wavefronts": ideal,
            "bank_conflicts": conflicts}


# ----------------------------------------------------------------------------- lane address generators

def ldmatrix_positions(num_matrices=4, *, row0=0, col_byte0=0):
    """Logical (rows, col_bytes) each lane supplies to ``ldmatrix.x{num_matrices}``, for a 16x16 fp16 fragment.

    Lane ``l`` supplies row ``l % 16`` and chunk ``l // 16``: matrices 0-3 are
    (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15),
    the m16n8k16 A operand (and, with ``.trans`` on a K x N tile, two n8 B operands).
    ``.x1`` uses lanes 0-7, ``.x2`` lanes 0-15.
    """
    if num_matrices not in (1, 2, 4):
        raise ValueError(f"ldmatrix loads 1, 2 or 4 matrices, not {num_matrices}")
    lane = np.arange(8 * num_matrices)
    return row0 + lane % 16, col_byte0 + 16 * (lane // 16)


def ldmatrix_addrs(layout: TileLayout, num_matrices=4, *, row0=0, col_byte0=0):
    """Byte addresses the lanes of one ``ldmatrix.x{num_matrices}`` supply (see :func:`ldmatrix_positions`)."""
    return layout.offset(*ldmatrix_positions(num_matrices, row0=row0, col_byte0=col_byte0))


def store16_positions(warp, iteration=0, *, threads=128, row_bytes=128):
    """Logical (rows, col_bytes) of one warp's 16-byte stores when ``threads`` threads copy a tile chunk by chunk.

    Thread ``t`` of copy iteration ``i`` moves chunk ``i * threads + t`` in row-major order,
    the coalesced global -> shared copy of ``cp.async.cg.shared.global [..], [..], 16``.
    """
    chunk = iteration * threads + warp * WARP_SIZE + np.arange(WARP_SIZE)
    chunks_per_row = row_bytes // 16
    return chunk // chunks_per_row, 16 * (chunk % chunks_per_row)


def store16_addrs(layout: TileLayout, warp, iteration=0, *, threads=128):
    """Byte addresses of one warp's 16-byte stores (see :func:`store16_positions`)."""
    return layout.offset(*store16_positions(warp, iteration, threads=threads, row_bytes=layout.row_bytes))


def store16_global_addrs(row_pitch_bytes, warp, iteration=0, *, threads=128, row_bytes=128, base=0):
    """Global byte addresses of the same copy (see :func:`store16_positions`): tile rows ``row_pitch_bytes`` apart
    in global memory (``2 * K`` for an A tile, ``2 * N`` for a B tile of a row-major fp16 GEMM)."""
    rows, cols = store16_positions(warp, iteration, threads=threads, row_bytes=row_bytes)
    return base + rows * row_pitch_bytes + cols


def load4_positions(pattern="column", *, row0=0, col_byte0=0):
    """Logical (rows, col_bytes) of a warp's 4-byte loads: ``"column"`` lane l reads row ``row0 + l``
    (a warp walking down a column, the classic conflict), ``"row"`` lane l reads word l of row ``row0``."""
    lane = np.arange(WARP_SIZE)
    if pattern == "column":
        return row0 + lane, np.full(WARP_SIZE, col_byte0)
    if pattern == "row":
        return np.full(WARP_SIZE, row0), col_byte0 + 4 * lane
    raise ValueError(f"pattern={pattern!r} is not 'column' or 'row'")


def load4_addrs(layout: TileLayout, pattern="column", *, row0=0, col_byte0=0):
    """Byte addresses of a warp's 4-byte loads (see :func:`load4_positions`)."""
    return layout.offset(*load4_positions(pattern, row0=row0, col_byte0=col_byte0))


# ----------------------------------------------------------------------------- a whole main loop

def operand_layouts(BM, BN, BK, *, layout="swizzle128", pad_halfs=8):
    """The shared-memory layouts of the A tile (BM x BK halfs) and B tile (BK x BN halfs) of rungs 03-07.

    ``"padded"``: rows of BK+pad (A) and BN+pad (B) halfs (rungs 03/04);
    ``"swizzle128"``: 128-byte XOR-swizzled rows of 64 halfs, wider tiles as 64-half panels (rungs 05+).
    """
    pad_bytes = 2 * pad_halfs
    a = TileLayout(layout, row_bytes=2 * BK, pad_bytes=pad_bytes, tile_rows=BM)
    b = TileLayout(layout, row_bytes=2 * BN, pad_bytes=pad_bytes, tile_rows=BK)
    return a, b


def main_loop_bank_conflicts(BM=128, BN=128, BK=64, warps_m=2, warps_n=2, *, layout="swizzle128", pad_halfs=8,
                             M=8192, N=8192, K=8192) -> dict:
    """Shared-memory wavefronts and bank conflicts of the main loop of a tensor-core GEMM (rungs 03-07).

    Per k-step each CTA (``warps_m x warps_n`` warps, warp tile ``BM/warps_m x BN/warps_n``):

    - stores its A tile (BM x BK) and B tile (BK x BN) with 16-byte ``cp.async``, chunk per thread,
      from row-major A (rows ``2K`` bytes apart) and B (``2N``), costed by :func:`ldgsts_cost`;
    - per 16-wide k slice, each warp loads its A fragments with ``ldmatrix.x4`` (one per 16 rows)
      and its B fragments with ``ldmatrix.x4.trans`` (one per 16 columns).

    Rung 03's ``wmma::load_matrix_sync`` is counted as the same ``ldmatrix`` requests (check the
    SASS for LDSM before comparing); TMA (rung 07) writes shared memory without LSU requests,
    so for it only the ``ldmatrix`` rows apply. The epilogue is not counted.

    Returns ``{'per_cta_k_step': {operation: cost}, 'per_kernel': {operation: cost}, 'ctas', 'k_steps'}``
    with ``cost = {'requests', 'wavefronts', 'ideal_wavefronts', 'bank_conflicts'}`` and an ``'all'`` total.
    """
    warps = warps_m * warps_n
    threads = WARP_SIZE * warps
    WM, WN = BM // warps_m, BN // warps_n
    if BM % warps_m or BN % warps_n or WM % 16 or WN % 16:
        raise ValueError(f"warp tile {BM}/{warps_m} x {BN}/{warps_n} must be whole multiples of 16 for "
                         "ldmatrix.x4 fragments; change warps_m/warps_n or the tile")
    if BK % 16:
        raise ValueError(f"BK={BK} is not a multiple of 16, the k of mma.m16n8k16")
    a_layout, b_layout = operand_layouts(BM, BN, BK, layout=layout, pad_halfs=pad_halfs)
    requests, stores = {}, {}
    for name, tile, rows, pitch in (("A cp.async 16B", a_layout, BM, 2 * K), ("B cp.async 16B", b_layout, BK, 2 * N)):
        chunks = rows * tile.row_bytes // 16
        if chunks % threads:
            raise ValueError(f"{name}: {chunks} chunks do not split evenly over {threads} threads; "
                             "change the tile or the warp count")
        steps = [(w, i) for i in range(chunks // threads) for w in range(warps)]
        stores[name] = (np.stack([store16_addrs(tile, w, i, threads=threads) for w, i in steps]),
                        np.stack([store16_global_addrs(pitch, w, i, threads=threads, row_bytes=tile.row_bytes)
                                  for w, i in steps]))
    a_loads, b_loads = [], []
    for wm in range(warps_m):
        for wn in range(warps_n):
            for ks in range(BK // 16):
                a_loads += [ldmatrix_addrs(a_layout, 4, row0=wm * WM + mi * 16, col_byte0=ks * 32)
                            for mi in range(WM // 16)]
                b_loads += [ldmatrix_addrs(b_layout, 4, row0=ks * 16, col_byte0=2 * (wn * WN + ni * 16))
                            for ni in range(WN // 16)]
    requests["A ldmatrix.x4"] = (np.stack(a_loads), 16)
    requests["B ldmatrix.x4.trans"] = (np.stack(b_loads), 16)

    per_step = {name: ldgsts_cost(shared, global_) for name, (shared, global_) in stores.items()}
    per_step.update({name: request_cost(addrs, width) for name, (addrs, width) in requests.items()})
    per_step["all"] = {key: sum(cost[key] for cost in per_step.values())
                       for key in ("requests", "wavefronts", "ideal_wavefronts", "bank_conflicts")}
    ctas = -(-M // BM) * -(-N // BN)
    k_steps = -(-K // BK)
    per_kernel = {name: {key: value * ctas * k_steps for key, value in cost.items()}
                  for name, cost in per_step.items()}
    return {"per_cta_k_step": per_step, "per_kernel": per_kernel, "ctas": ctas, "k_steps": k_steps}
