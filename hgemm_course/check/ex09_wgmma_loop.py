"""Checker for ex09_wgmma_loop: rung 09's descriptors and its wgmma k-loop, written by the learner.

Besides compiling and reading the PTX, the checker runs the learner's regions on the CPU
(:mod:`.host_model`): the real descriptor encoder of ``wgmma.cuh``, and stand-ins for
``wgmma_fence``, ``wgmma_m64nNk16``, ``wgmma_commit_group`` and ``wgmma_wait_group`` that print
what they are given. The trace of one k-slice must be rung 09's: a fence before the first
product, every product of every k16 step on the right accumulators with the right descriptors
(decoded field by field on a mismatch, :func:`.ex09_wgmma_desc.explain`), one commit, and a wait
that leaves at most one group running, the one still reading slice kt's stage. The extra
question's SWIZZLE_64B descriptor is checked the same way.
"""
from __future__ import annotations

from . import host_model
from .ex09_wgmma_desc import explain, reference
from .feedback import Failure
from .kernel_exercise import Compiled, KernelExercise, PtxRule, display_path

A_BASE = 1024            # where the model's ring puts stage 0 of A (1024-byte aligned, as in the kernel)
SLICES = 4               # k-slices the model multiplies


def _tiles():
    from ..library.ladder.r09_wgmma import TILES

    return TILES


def _program(compiled: Compiled, shown: str) -> str:
    t = _tiles()
    (descs, first_d), (loop, first_l), (extra, first_e) = compiled.regions()
    b_base = A_BASE + t.stages * t.bm * t.bk * 2
    return host_model.PRELUDE + f"""
namespace real {{
#include "wgmma.cuh"
}}
using real::WgmmaMajor; using real::wgmma_desc_field; using real::wgmma_desc_128b;
using real::WGMMA_DESC_START_SHIFT; using real::WGMMA_DESC_LBO_SHIFT; using real::WGMMA_DESC_SBO_SHIFT;
using real::WGMMA_DESC_BASE_OFFSET_SHIFT; using real::WGMMA_DESC_SWIZZLE_SHIFT; using real::WGMMA_DESC_FIELD_MASK;
using real::WGMMA_SWIZZLE_128B; using real::WGMMA_SWIZZLE_ATOM_BYTES; using real::WGMMA_KMAJOR_LBO_UNUSED;
constexpr int BM = {t.bm}, BN = {t.bn}, BK = {t.bk}, STAGES = {t.stages};
constexpr int FRAG_M = BM / 64, FRAG_N = BN / 8, B_PANEL = BK * 128, THREADS = 128;
static const float* g_acc = nullptr;
void wgmma_fence() {{ std::printf("fence\\n"); event_done(); }}
void wgmma_commit_group() {{ std::printf("commit\\n"); event_done(); }}
template <int N> void wgmma_wait_group() {{ std::printf("wait %d\\n", N); event_done(); }}
template <int N, WgmmaMajor MA, WgmmaMajor MB>
void wgmma_m64nNk16(float (&d)[N / 8][4], unsigned long long da, unsigned long long db, bool scale_d) {{
    std::printf("mma %d %d %d %ld %llu %llu %d\\n", N, (int)MA, (int)MB, (long)(&d[0][0] - g_acc) / (FRAG_N * 4),
                da, db, (int)scale_d);
    event_done();
}}
{host_model.region(extra, first_e, shown)}
int main() {{
    float acc[FRAG_M][FRAG_N][4] = {{}};
    g_acc = &acc[0][0][0];
{host_model.region(descs, first_d, shown)}
    for (int kt = 0; kt < {SLICES}; ++kt) {{
        const unsigned a_stage = {A_BASE} + (kt % STAGES) * BM * BK * 2;
        const unsigned b_stage = {b_base} + (kt % STAGES) * BK * BN * 2;
        std::printf("slice %d %u %u\\n", kt, a_stage, b_stage);
{host_model.region(loop, first_l, shown)}
    }}
    for (int i = 0; i < 2; ++i)
        for (int kk = 0; kk < 2; ++kk)
            std::printf("extra %d %d %llu\\n", i, kk, desc_a_swizzle_64b({A_BASE}, i, kk));
    return 0;
}}
"""


def _a_args(a_stage: int, i: int, kk: int) -> dict:
    from ..library.ladder.r09_wgmma import KMAJOR_LBO_UNUSED, SWIZZLE_ATOM_BYTES

    return {"smem_addr": a_stage + i * 64 * 128 + kk * 32, "leading_byte_offset": KMAJOR_LBO_UNUSED,
            "stride_byte_offset": SWIZZLE_ATOM_BYTES, "swizzle": "128B"}


def _b_args(b_stage: int, kk: int) -> dict:
    from ..library.ladder.r09_wgmma import SWIZZLE_ATOM_BYTES

    return {"smem_addr": b_stage + kk * 16 * 128, "leading_byte_offset": _tiles().bk * 128,
            "stride_byte_offset": SWIZZLE_ATOM_BYTES, "swizzle": "128B"}


def check_trace(lines: list[list[str]], shown: str, compiled: Compiled) -> str:
    """Compare the recorded k-slices with rung 09's; a Failure at the first difference."""
    t = _tiles()
    slices: list[tuple[int, int, int, list]] = []
    extra = []
    for words in lines:
        if words[0] == "slice":
            slices.append((int(words[1]), int(words[2]), int(words[3]), []))
        elif words[0] == "extra":
            extra.append(tuple(int(w) for w in words[1:]))
        else:
            slices[-1][3].append(words)
    waits = set()
    for kt, a_stage, b_stage, events in slices:
        waits.add(_check_slice(kt, a_stage, b_stage, events, t, shown))
    note = "" if waits == {1} else " (wgmma_wait_group<0> leaves nothing in flight: right, but the tensor " \
        "cores idle while the next slice is waited for)"
    checked = compiled.extra_question("desc_a_swizzle_64b, A's SWIZZLE_64B descriptors", lambda: _check_extra(extra, shown))
    return (f"the host model ran your regions for {len(slices)} k-slices: a fence, {t.bk // 16 * t.bm // 64} "
            f"products with the right descriptors, one commit and a wait per slice{note}; {checked}")


def _check_slice(kt: int, a_stage: int, b_stage: int, events: list, t, shown: str) -> int:
    where = f"{shown}: slice kt = {kt}"
    kinds = [e[0] for e in events]
    mmas = [e for e in events if e[0] == "mma"]
    if not mmas:
        raise Failure(f"{where}: your loop issues no wgmma_m64nNk16, so the accumulators stay zero.",
                      {"input": {"kt": kt}, "expected": "wgmma products", "got": kinds})
    first_mma = kinds.index("mma")
    if "fence" not in kinds[:first_mma]:
        raise Failure(f"{where}: the first wgmma_m64nNk16 comes before any wgmma_fence(). wgmma reads the "
                      "accumulator registers asynchronously; without wgmma.fence the warpgroup's earlier writes "
                      "to them (the zeroing, the previous slice's products) are not ordered before that read.",
                      {"input": {"kt": kt}, "expected": "fence before the first product", "got": kinds[:first_mma + 1]})
    last_mma = len(kinds) - 1 - kinds[::-1].index("mma")
    after = kinds[last_mma + 1:]
    if "commit" in kinds[first_mma:last_mma]:
        raise Failure(f"{where}: a wgmma_commit_group() between the slice's products splits it into several "
                      "groups; the release after the region assumes one group per slice.",
                      {"input": {"kt": kt}, "expected": "one commit after the last product", "got": kinds})
    if after[:1] != ["commit"]:
        raise Failure(f"{where}: no wgmma_commit_group() right after the slice's last product. Uncommitted "
                      "products belong to no group, so no wgmma_wait_group can wait for them.",
                      {"input": {"kt": kt}, "expected": "commit", "got": after[:1] or "nothing"})
    wait = [int(e[1]) for e in events[last_mma + 1:] if e[0] == "wait"]
    if not wait:
        raise Failure(f"{where}: no wgmma_wait_group<N>() after the commit. The code after the region frees "
                      f"stage (kt - 1) % STAGES while slice kt - 1's products may still read it.",
                      {"input": {"kt": kt}, "expected": "wgmma_wait_group<1>", "got": "no wait"})
    if wait[0] > 1:
        raise Failure(f"{where}: wgmma_wait_group<{wait[0]}> leaves {wait[0]} groups running, slice kt - 1's among "
                      "them, but the code after the region frees slice kt - 1's stage: the producer can refill "
                      "it while the tensor cores still read it (a wrong result).",
                      {"input": {"kt": kt}, "expected": "wgmma_wait_group<1>", "got": f"wgmma_wait_group<{wait[0]}>"})
    steps, frag_m = t.bk // 16, t.bm // 64
    per_acc: dict[int, list] = {}
    for e in mmas:
        n, major_a, major_b, i, da, db, scale = (int(w) for w in e[1:])
        if (n, major_a, major_b) != (t.bn, 0, 1) or not scale:
            raise Failure(f"{where}: a product is wgmma_m64nNk16<{n}, {'K' if major_a == 0 else 'MN'}, "
                          f"{'K' if major_b == 0 else 'MN'}> with scale_d = {bool(scale)}; rung 09's is <BN = {t.bn}, "
                          "K, MN> (A K-major, B MN-major) with scale_d = true, which adds to the accumulators.",
                          {"input": {"kt": kt}, "expected": [t.bn, "K", "MN", True],
                           "got": [n, major_a, major_b, bool(scale)]})
        per_acc.setdefault(i, []).append((da, db))
    for i in range(frag_m):
        got = per_acc.get(i, [])
        if len(got) != steps:
            raise Failure(f"{where}: acc[{i}] receives {len(got)} products; each of the FRAG_M = {frag_m} products "
                          f"needs one per k16 step, BK / 16 = {steps}.",
                          {"input": {"kt": kt, "i": i}, "expected": steps, "got": len(got)})
        for kk, (da, db) in enumerate(got):
            a_args, b_args = _a_args(a_stage, i, kk), _b_args(b_stage, kk)
            for name, args, value in (("A", a_args, da), ("B", b_args, db)):
                expected = reference(**args)
                if value != expected:
                    raise Failure(f"{where}, product {i}, k16 step {kk}: the descriptor of {name} is {value:#x}, "
                                  f"expected {expected:#x} (stage at {a_stage if name == 'A' else b_stage}).\n"
                                  + explain(args, expected, value),
                                  {"input": {"kt": kt, "i": i, "kk": kk, "operand": name}, "expected": expected,
                                   "got": value})
    return wait[0]


def _check_extra(extra: list[tuple[int, int, int]], shown: str) -> None:
    for i, kk, got in extra:
        args = {"smem_addr": A_BASE + i * 64 * 64 + kk * 32, "leading_byte_offset": 16, "stride_byte_offset": 8 * 64,
                "swizzle": "64B"}
        expected = reference(**args)
        if got != expected:
            raise Failure(f"{shown}: desc_a_swizzle_64b(a_stage={A_BASE}, i={i}, kk={kk}) = {got:#x}, expected "
                          f"{expected:#x}.\n" + explain(args, expected, got),
                          {"input": {"a_stage": A_BASE, "i": i, "kk": kk}, "expected": expected, "got": got})


def structural(compiled: Compiled) -> str:
    shown = display_path(compiled.path)
    if len(compiled.regions()) != 3:
        return "the host model could not find your three regions; the GPU run decides"
    try:
        lines = host_model.run(_program(compiled, shown), shown)
    except host_model.ModelUnavailable as exc:
        return f"{exc}; the GPU run decides"
    return host_model.parsed(lambda ls: check_trace(ls, shown, compiled), lines, shown)


EXERCISE = KernelExercise(
    name="ex09_wgmma_loop",
    rung="09",
    description="wgmma loop: rung 09's descriptors, fence, commit and wait (a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("wgmma.mma_async", "no product is issued, so C stays zero."),
        PtxRule("wgmma.fence", "nothing orders the accumulators' earlier writes before wgmma reads them."),
        PtxRule("wgmma.commit_group", "the products are never committed, so no wait can wait for them."),
        PtxRule("wgmma.wait_group", "nothing waits for the products before their stage is freed."),
    ),
    structural=structural,
)
