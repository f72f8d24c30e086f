"""Checker for ex05_swizzle_kernel: rung 05's swizzled cp.async stores and ldmatrix addresses.

Besides compiling and reading the PTX (the addresses must XOR), the checker runs the learner's four
regions on the CPU (:mod:`.host_model`) for every thread of a CTA, with stand-ins for
``cp_async_16_zfill``, ``ldmatrix_x4`` and ``ldmatrix_x4_trans`` that print their shared-memory
address (and, for a copy, which element of A or B it carries). Then, for one stage:

- every 16-byte chunk of A and B is stored once, inside its stage;
- every ldmatrix lane reads the chunk of A or B the mma needs at that k-step, from where a copy
  stored it (a wrong address is a wrong result on the GPU);
- the bank model (:func:`hgemm_course.sim.banks.wavefronts`) costs every warp's copies and ldmatrix
  reads: a conflict is named with its ways;
- the layout is TMA's SWIZZLE_128B (``sim.swizzle``), which rung 07's copy engine writes under the
  same ldmatrix code.

The extra question, ``swizzle_32b``, is compared with ``sim.swizzle(row, chunk, 32)``.
"""
from __future__ import annotations

from collections import defaultdict

from . import host_model
from .feedback import Failure
from .kernel_exercise import Compiled, KernelExercise, PtxRule, display_path

EXTRA_ROWS = 64


def _tiles(compiled: Compiled):
    """Rung 05's tiles as sized for the target the kernel is checked on."""
    from ..library.ladder.r05_swizzle import tiles_for

    return tiles_for(compiled.target)


def _program(compiled: Compiled, shown: str, t) -> str:
    (store_a, first_a), (store_b, first_b), (lanes, first_l), (frags, first_f), (extra, first_e) = compiled.regions()
    return host_model.PRELUDE + f"""
struct half {{ unsigned short bits; }};
#include "swizzle.cuh"
{host_model.region(extra, first_e, shown)}
constexpr int BM = {t.bm}, BN = {t.bn}, BK = {t.bk}, WM = {t.wm}, WN = {t.wn}, STAGES = {t.stages};
constexpr bool WHOLE_TILES = true;
constexpr int THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, FRAG_M = WM / 16, FRAG_N = WN / 8;
constexpr int K_STEPS = BK / 16, COPY_PARTS = K_STEPS - 1, B_PANEL = BK * 128;
constexpr int A_STAGE = BM * BK * 2, B_STAGE = BK * BN * 2;
static half A[BM * BK], B[BK * BN];
static const half* g_base = A;
void cp_async_16_zfill(unsigned dst, const void* src, int bytes) {{
    std::printf("store %u %ld\\n", dst, (long)((const half*)src - g_base));
    event_done();
}}
void ldmatrix_x4(unsigned&, unsigned&, unsigned&, unsigned&, unsigned addr) {{
    std::printf("ldmatrix %u\\n", addr);
    event_done();
}}
void ldmatrix_x4_trans(unsigned&, unsigned&, unsigned&, unsigned&, unsigned addr) {{
    std::printf("ldmatrix_trans %u\\n", addr);
    event_done();
}}
static void copies(int tid) {{
    const int M = BM, N = BN, K = BK, m0 = 0, n0 = 0, k0 = 0;
    const half* a_tile = A;
    const half* b_tile = B;
    const unsigned a_stage = 0, b_stage = 0;
    g_base = A;
    std::printf("copies A %d\\n", tid);
    for (int it = 0; it < BM * BK / 8 / THREADS; ++it) {{
        const int idx = it * THREADS + tid;
        const int row = idx / (BK / 8);
        const int chunk = idx % (BK / 8);
        const bool inside = true;
        const half* src = a_tile + row * K + k0 + chunk * 8;
{host_model.region(store_a, first_a, shown)}
    }}
    g_base = B;
    std::printf("copies B %d\\n", tid);
    for (int it = 0; it < BK * BN / 8 / THREADS; ++it) {{
        const int idx = it * THREADS + tid;
        const int row = idx / (BN / 8);
        const int chunk = idx % (BN / 8);
        const bool inside = true;
        const half* src = b_tile + (k0 + row) * N + chunk * 8;
{host_model.region(store_b, first_b, shown)}
    }}
}}
static void reads(int tid) {{
    const int lane = tid % 32, warp = tid / 32, warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
{host_model.region(lanes, first_l, shown)}
    unsigned a_frag[2][FRAG_M][4], b_frag[2][FRAG_N][2];
    const int buf = 0, stage = 0;
    const unsigned a_stage = 0, b_stage = 0;
    for (int kk = 0; kk < K_STEPS; ++kk) {{
        std::printf("reads %d %d\\n", tid, kk);
{host_model.region(frags, first_f, shown)}
    }}
}}
int main() {{
    for (int tid = 0; tid < THREADS; ++tid) copies(tid);
    for (int tid = 0; tid < THREADS; ++tid) reads(tid);
    for (int row = 0; row < {EXTRA_ROWS}; ++row)
        for (int chunk = 0; chunk < 2; ++chunk) std::printf("extra %d %d %d\\n", row, chunk, swizzle_32b(row, chunk));
    return 0;
}}
"""


def read_trace(lines: list[list[str]]) -> dict:
    """stores[operand][tid]: [(address, element offset)]; reads[(tid, kk)]: [(kind, address)]; extra rows."""
    trace = {"stores": {"A": defaultdict(list), "B": defaultdict(list)}, "reads": defaultdict(list), "extra": []}
    current: list = []
    for words in lines:
        if words[0] == "copies":
            current = trace["stores"][words[1]][int(words[2])]
        elif words[0] == "reads":
            current = trace["reads"][(int(words[1]), int(words[2]))]
        elif words[0] == "store":
            current.append((int(words[1]), int(words[2])))
        elif words[0] in ("ldmatrix", "ldmatrix_trans"):
            current.append((words[0], int(words[1])))
        elif words[0] == "extra":
            trace["extra"].append(tuple(int(w) for w in words[1:]))
    return trace


def _fail(shown: str, message: str, expected, got, where=None) -> Failure:
    return Failure(f"{shown}: {message}", {"input": where or shown, "expected": expected, "got": got})


def check_stores(trace: dict, shown: str, t) -> dict[str, dict[int, tuple[int, int]]]:
    """Where each chunk of A and B is stored; {operand: {address: (row, chunk)}}. A Failure on an
    address outside the stage, off 16 bytes, or stored twice. ``t``: the tiles the regions ran with."""
    layout = {}
    for operand, row_halves, stage_bytes in (("A", t.bk, t.bm * t.bk * 2), ("B", t.bn, t.bk * t.bn * 2)):
        placed: dict[int, tuple[int, int]] = {}
        for tid, stores in sorted(trace["stores"][operand].items()):
            for address, element in stores:
                row, chunk = element // row_halves, element % row_halves // 8
                if address % 16 or not 0 <= address < stage_bytes:
                    raise _fail(shown, f"thread {tid} stores chunk (row {row}, chunk {chunk}) of {operand} at byte "
                                f"{address} of the stage; a 16-byte copy needs a 16-byte aligned address inside the "
                                f"{stage_bytes}-byte stage.", "0 <= address < stage, a multiple of 16", address,
                                {"operand": operand, "row": row, "chunk": chunk})
                if address in placed:
                    raise _fail(shown, f"chunks (row {placed[address][0]}, chunk {placed[address][1]}) and (row {row}, "
                                f"chunk {chunk}) of {operand} are both stored at byte {address}: the second copy "
                                "overwrites the first.", "one chunk per address", address,
                                {"operand": operand, "row": row, "chunk": chunk})
                placed[address] = (row, chunk)
        layout[operand] = placed
    return layout


def check_reads(trace: dict, layout: dict, shown: str, t) -> None:
    """Every ldmatrix lane reads the chunk the mma needs, from where it was stored."""
    warps_n, frag_m, frag_n = t.bn // t.wn, t.wm // 16, t.wn // 8
    threads = (t.bm // t.wm) * warps_n * 32
    for (tid, kk), reads in sorted(trace["reads"].items()):
        lane, warp = tid % 32, tid // 32
        warp_m, warp_n = warp // warps_n, warp % warps_n
        a_reads = [address for kind, address in reads if kind == "ldmatrix"]
        b_reads = [address for kind, address in reads if kind == "ldmatrix_trans"]
        if len(a_reads) != frag_m or len(b_reads) != frag_n // 2:
            raise _fail(shown, f"at k-step {kk} lane {lane} of warp {warp} issues {len(a_reads)} ldmatrix_x4 of A and "
                        f"{len(b_reads)} ldmatrix_x4_trans of B; the warp needs FRAG_M = {frag_m} and "
                        f"FRAG_N / 2 = {frag_n // 2}.", [frag_m, frag_n // 2], [len(a_reads), len(b_reads)])
        wanted = [("A", i, (warp_m * t.wm + 16 * i + lane % 16, 2 * kk + lane // 16), address)
                  for i, address in enumerate(a_reads)]
        wanted += [("B", j, (16 * kk + lane % 16, warp_n * t.wn // 8 + 2 * j + lane // 16), address)
                   for j, address in enumerate(b_reads)]
        for operand, index, need, address in wanted:
            got = layout[operand].get(address)
            if got != need:
                what = "fragment" if operand == "A" else "fragment pair"
                found = (f"byte {address}, where the copies stored (row {got[0]}, chunk {got[1]})" if got else
                         f"byte {address}, where no copy stored anything")
                raise _fail(shown, f"lane {lane} of warp {warp}, k-step {kk}, {operand} {what} {index}: the mma needs "
                            f"(row {need[0]}, chunk {need[1]}) of {operand}'s stage, but ldmatrix reads {found}. The "
                            "reads must find each chunk where the stores put it (a wrong result on the GPU).",
                            list(need), list(got) if got else None,
                            {"warp": warp, "lane": lane, "kk": kk, "operand": operand, "index": index})
    if len(trace["reads"]) != threads * (t.bk // 16):
        raise _fail(shown, "not every thread reached the ldmatrix reads.", threads * (t.bk // 16), len(trace["reads"]))


def check_banks(trace: dict, shown: str, t) -> None:
    """Every warp's copies and ldmatrix reads at their ideal cost."""
    from ..sim.banks import ideal_wavefronts, wavefronts

    threads = (t.bm // t.wm) * (t.bn // t.wn) * 32
    ideal = ideal_wavefronts(32, 16)
    for operand in ("A", "B"):
        stores = trace["stores"][operand]
        for warp in range(threads // 32):
            for step in range(len(stores[warp * 32])):
                addresses = [stores[warp * 32 + lane][step][0] for lane in range(32)]
                cost = wavefronts(addresses, 16)
                if cost > ideal:
                    raise _fail(shown, f"warp {warp}'s copy number {step} of {operand} stores into shared memory in "
                                f"{cost} wavefronts where {ideal} do: a {cost // ideal}-way bank conflict.",
                                ideal, cost, {"operand": operand, "warp": warp, "copy": step})
    for warp in range(threads // 32):
        for kk in range(t.bk // 16):
            per_lane = [trace["reads"][(warp * 32 + lane, kk)] for lane in range(32)]
            for n, (kind, _) in enumerate(per_lane[0]):
                addresses = [reads[n][1] for reads in per_lane]
                cost = wavefronts(addresses, 16)
                if cost > ideal:
                    operand = "A" if kind == "ldmatrix" else "B"
                    raise _fail(shown, f"warp {warp}'s ldmatrix number {n} at k-step {kk} (of {operand}) reads shared "
                                f"memory in {cost} wavefronts where {ideal} do: a {cost // ideal}-way bank conflict. The "
                                "8 rows one phase reads sit in the same banks: the layout is not swizzled.",
                                ideal, cost, {"warp": warp, "kk": kk, "ldmatrix": n})


def check_layout(layout: dict, shown: str, t) -> None:
    """The layout TMA's SWIZZLE_128B writes (rung 07 reuses these reads on what the copy engine stores)."""
    from ..sim.swizzle import swizzle

    b_panel = t.bk * 128
    for operand, placed in layout.items():
        for address, (row, chunk) in sorted(placed.items()):
            panel, in_row = divmod(chunk, 8)
            expected = panel * b_panel + row * 128 + int(swizzle(row, in_row, 128)) * 16
            if address != expected:
                raise _fail(shown, f"(row {row}, chunk {chunk}) of {operand} is stored at byte {address}: conflict-free, "
                            f"but not the layout TMA's SWIZZLE_128B writes (byte {expected}), which rung 07 reads with "
                            "this same ldmatrix code.", expected, address, {"operand": operand, "row": row, "chunk": chunk})


def check_extra(extra: list[tuple[int, int, int]], shown: str) -> None:
    from ..sim.swizzle import swizzle

    for row, chunk, got in extra:
        expected = row * 32 + int(swizzle(row, chunk, 32)) * 16
        if got != expected:
            raise _fail(shown, f"swizzle_32b(row={row}, chunk={chunk}) = {got}, expected {expected}.", expected, got,
                        {"row": row, "chunk": chunk})


def structural(compiled: Compiled) -> str:
    shown = display_path(compiled.path)
    if len(compiled.regions()) != 5:
        return "the host model could not find your five regions; the GPU run decides"
    t = _tiles(compiled)
    try:
        trace = host_model.parsed(read_trace, host_model.run(_program(compiled, shown, t), shown), shown)
    except host_model.ModelUnavailable as exc:
        return f"{exc}; the GPU run decides"
    layout = check_stores(trace, shown, t)
    check_reads(trace, layout, shown, t)
    check_banks(trace, shown, t)
    check_layout(layout, shown, t)
    extra = compiled.extra_question("swizzle_32b", lambda: check_extra(trace["extra"], shown))
    return ("the host model ran your regions for every thread: each ldmatrix lane reads the chunk its mma needs "
            "where a copy stored it, every copy and ldmatrix takes its ideal wavefronts, the layout is TMA's "
            f"SWIZZLE_128B; {extra}")


EXERCISE = KernelExercise(
    name="ex05_swizzle_kernel",
    rung="05",
    description="Swizzle in the kernel: rung 05's swizzled cp.async and ldmatrix addresses (a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("xor", "no shared-memory address is XOR-swizzled, so the 8 rows every ldmatrix phase reads share "
                "their banks: an 8-way conflict."),
        PtxRule("ldmatrix", "no ldmatrix is issued: keep the fragment loads as the exercise gave them."),
        PtxRule("cp.async", "no cp.async copy is issued: keep the stores as the exercise gave them."),
    ),
    structural=structural,
)
