"""Checker for ex07_mbarrier: the full/empty mbarrier ring of rung 07.

The CPU part, after the compile, runs the learner's two regions (the top of the main loop: thread 0's wait on
the empty barrier and refill, every thread's wait on the full barrier) on the CPU (:mod:`.host_model`), for
every thread of the CTA and every iteration kt, with rung 07's stage count and the others its tuning may choose.
Stand-ins record each ``mbar_wait_parity(bar, parity)`` and ``load_tile(stage, slice)`` with the learner's line;
``smem_u32`` gives the address of a stand-in ring (:class:`~.tma_ring.Layout`), so a barrier reads as the kernel
names it however the region spells it (``&ring.full[X]``, ``ring.full + X``, an offset of 8 bytes a barrier, a
reference or a declaration holding one), and what a wait got instead when it is no barrier is named too (a stage
of ``ring.a``, the contents ``ring.full[X]`` instead of its address, an index past the ring).

The program only produces that record; here, where no learner code runs, the checker reads it (at most
:data:`MAX_CALLS` calls a thread and iteration, within the host model's bounds on events and output) and judges:

- one thread loads the slices, and every thread of a warp waits as the warp's others do before it reads;
- the ring model (:mod:`.tma_ring`) plays the waits and loads through many interleavings of the warps and of the
  copy engine; the first stale read, overwrite, hang, wait on no barrier or load out of the ring it meets is the
  verdict, with the interleaving that led to it.

The model takes the rest of the loop to be rung 07's (each warp's fence.proxy.async and arrive on ``ring.empty``
after its reads); the PTX rules check that those instructions are there. The GPU part runs the kernel for real in
a child process (:mod:`.gpu_verdict`).
"""
from __future__ import annotations

from collections import defaultdict

from . import host_model
from .feedback import Failure
from .kernel_exercise import Compiled, KernelExercise, PtxRule, display_path
from .tma_ring import (A_BASE, B_BASE, EMPTY_BASE, FULL_BASE, MEMBER_SPAN, VALUE_BASES, Layout, RingError,
                       format_events, play_all)

MAX_CALLS = 8                  # waits and loads a thread makes in one iteration's regions: rung 07's make at most 3
OTHER_STAGES = (2, 3, 4, 5)    # played after the rung's own stage count: what `hgemm-course tune 07` may choose


def _rung_tiles(compiled: Compiled):
    """Rung 07's tiles and super tile as sized for the target the kernel is checked on."""
    from ..library.ladder.r07_tma import SUPER, tiles_for

    return tiles_for(compiled.target), SUPER


def stage_counts(own: int) -> tuple[int, ...]:
    return (own, *(s for s in OTHER_STAGES if s != own))


def _program(compiled: Compiled, shown: str, tiles, super_mn, stages: tuple[int, ...]) -> str:
    (refill, first_r), (wait, first_w) = host_model.all_regions(compiled, shown, 2)
    runs = "".join(f"    run<{s}>();\n" for s in stages)
    return host_model.PRELUDE + f"""#include <cstddef>
using half = unsigned short;
struct Dim3 {{ unsigned x, y, z; }};
static Dim3 threadIdx, blockIdx, blockDim;
constexpr int BM = {tiles.bm}, BN = {tiles.bn}, BK = {tiles.bk}, WM = {tiles.wm}, WN = {tiles.wn};
constexpr int SUPER_M = {super_mn[0]}, SUPER_N = {super_mn[1]};
constexpr int THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, FRAG_M = WM / 16, FRAG_N = WN / 8;
constexpr int B_PANEL = BK * 128;
// The kernel's TmaRing with its members {MEMBER_SPAN} bytes apart: an index past an array's end still reads as it.
template <int STAGES> struct Ring {{
    unsigned char lead[{FULL_BASE}];
    unsigned long long full[STAGES];
    unsigned char after_full[{EMPTY_BASE - FULL_BASE} - 8 * STAGES];
    unsigned long long empty[STAGES];
    unsigned char after_empty[{A_BASE - EMPTY_BASE} - 8 * STAGES];
    half a[STAGES][BM * BK];
    unsigned char after_a[{B_BASE - A_BASE} - STAGES * BM * BK * 2];
    half b[STAGES][BK * BN];
}};
static const void* g_ring = nullptr;
static unsigned smem_u32(const void* p) {{ return (unsigned)((const char*)p - (const char*)g_ring); }}
static void wait_at(unsigned bar, unsigned parity, int line) {{
    std::printf("wait %u %u %d\\n", bar, parity, line); event_done(); }}
static void load_at(int stage, int slice, int line) {{ std::printf("load %d %d %d\\n", stage, slice, line); event_done(); }}
#define mbar_wait_parity(bar, parity) wait_at((bar), (parity), __LINE__)
#define load_tile(stage, slice) load_at((stage), (slice), __LINE__)
template <int STAGES> static void run() {{
    static_assert(offsetof(Ring<STAGES>, empty) == {EMPTY_BASE} && offsetof(Ring<STAGES>, b) == {B_BASE}, "layout");
    static Ring<STAGES> ring;
    g_ring = &ring;
    for (int s = 0; s < STAGES; ++s) {{
        ring.full[s] = {VALUE_BASES["full"]}ull + 8 * s;    // a barrier's state, read as a number
        ring.empty[s] = {VALUE_BASES["empty"]}ull + 8 * s;
    }}
    const int k_tiles = 3 * STAGES + 2, M = BM, N = BN, K = k_tiles * BK;
    std::printf("run %d %d %d\\n", STAGES, THREADS / 32, k_tiles);
    for (int t = 0; t < THREADS; ++t) {{
        threadIdx = Dim3{{unsigned(t), 0, 0}}; blockIdx = Dim3{{0, 0, 0}}; blockDim = Dim3{{THREADS, 1, 1}};
        const int tid = t, lane = tid % 32, warp = tid / 32, warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
        const int grid_m = 1, grid_n = 1, bid_m = 0, bid_n = 0, m0 = 0, n0 = 0;
        (void)M; (void)N; (void)K; (void)lane; (void)warp_m; (void)warp_n; (void)grid_m; (void)grid_n;
        (void)bid_m; (void)bid_n; (void)m0; (void)n0;
        for (int kt = 0; kt < k_tiles; ++kt) {{
            const int next = kt + STAGES - 1;
            std::printf("at %d %d 0\\n", tid, kt); event_done();
{host_model.region(refill, first_r, shown)}
            __syncwarp();
            std::printf("at %d %d 1\\n", tid, kt); event_done();
{host_model.region(wait, first_w, shown)}
        }}
    }}
}}
int main() {{
{runs}    return 0;
}}
"""


def read_trace(lines: list[list[str]], shown: str) -> dict[int, dict]:
    """The record by stage count: ``{stages: {"warps", "k_tiles", "calls": {(tid, kt, region): [action]}}}``, each
    action as :data:`.tma_ring.Actions` has it; a Failure for a thread that runs an iteration twice (the region
    changes ``kt``) or makes more than :data:`MAX_CALLS` calls in one."""
    runs: dict[int, dict] = {}
    calls, tid, made = None, None, 0
    for words in lines:
        kind = words[0]
        if kind == "run":
            stages, warps, k_tiles = (int(w) for w in words[1:4])
            calls = {}
            runs[stages] = {"warps": warps, "k_tiles": k_tiles, "calls": calls}
        elif kind == "at":
            tid, kt, region = (int(w) for w in words[1:4])
            if (tid, kt, region) in calls:
                raise Failure(f"{shown}: thread {tid} runs iteration kt={kt} of the main loop twice: does your region "
                              "assign kt? The loop's counter is the loop's own.",
                              {"input": shown, "expected": "one pass per iteration", "got": f"kt={kt} twice"})
            if region == 0:
                made = 0
            calls[(tid, kt, region)] = []
        elif kind in ("wait", "load"):
            made += 1
            if made > MAX_CALLS:
                raise Failure(f"{shown}: thread {tid} makes more than {MAX_CALLS} calls of mbar_wait_parity and "
                              f"load_tile in iteration kt={kt}; the top of rung 07's loop makes at most three (thread "
                              "0's wait and load, every thread's wait).",
                              {"input": shown, "expected": f"at most {MAX_CALLS} calls", "got": f"over {MAX_CALLS}"})
            a, b, line = (int(w) for w in words[1:4])
            calls[(tid, kt, region)].append(("wait", a, b & 1, line) if kind == "wait" else ("load", a, b, line, tid))
        else:
            raise ValueError(kind)
    return runs


def _wait_text(waits: list[tuple], layout: Layout, stages: int) -> str:
    if not waits:
        return "makes no wait"
    return "waits " + ", then ".join(f"on {layout.name(address, stages)} for parity {parity}"
                                     for _, address, parity, _ in waits)


def warp_actions(run: dict, stages: int, layout: Layout, shown: str):
    """What each warp does at the top of each iteration (:data:`.tma_ring.Actions`), read from the record of every
    thread: the warp's loading thread stands for it where it has one, else its lane 0. A Failure when more than one
    thread loads, or when a thread of a warp waits for slice kt otherwise than the thread that stands for it."""
    calls, warps, k_tiles = run["calls"], run["warps"], run["k_tiles"]
    loads = defaultdict(list)
    for (tid, kt, _), made in calls.items():
        if any(a[0] == "load" for a in made):
            loads[tid].append(kt)
    if len(loads) > 1:
        (a, kts_a), (b, kts_b) = sorted(loads.items())[:2]
        raise Failure(f"{shown}: threads {a} and {b} both call load_tile (thread {a} at kt={kts_a[0]}, thread {b} at "
                      f"kt={kts_b[0]}; {stages} stages). Rung 07 has one thread ask for every slice: each load_tile "
                      "arrives once on full[s] and expects one slice's bytes, and full[s] is set up for one arrival a "
                      "phase (mbar_init(full, 1)), so with two loading threads its phases no longer follow the slices.",
                      {"input": shown, "expected": "one loading thread", "got": sorted(loads)[:4]})
    loader = next(iter(loads), None)
    stands = [loader if loader is not None and loader // 32 == w else 32 * w for w in range(warps)]
    for w in range(warps):
        for kt in range(k_tiles):
            theirs = [a for a in calls.get((stands[w], kt, 1), []) if a[0] == "wait"]
            for tid in range(32 * w, 32 * w + 32):
                if (tid, kt, 1) not in calls:
                    raise Failure(f"{shown}: thread {tid} never reaches the wait for slice {kt} ({stages} stages): "
                                  "does your region assign kt, or leave the loop?",
                                  {"input": shown, "expected": f"iteration {kt}", "got": "skipped"})
                mine = [a for a in calls[(tid, kt, 1)] if a[0] == "wait"]
                if [a[1:3] for a in mine] != [a[1:3] for a in theirs]:
                    raise Failure(
                        f"{shown}: at kt={kt} ({stages} stages) thread {tid} (lane {tid % 32} of warp {w}) "
                        f"{_wait_text(mine, layout, stages)}, where thread {stands[w]} of the same warp "
                        f"{_wait_text(theirs, layout, stages)}. Every thread reads the stage (ldmatrix takes a row "
                        "address from each lane), so every thread waits for slice kt to land: the same wait.",
                        {"input": {"thread": tid, "kt": kt}, "expected": [a[1:3] for a in theirs],
                         "got": [a[1:3] for a in mine]})

    def actions(warp: int, kt: int) -> list:
        return calls.get((stands[warp], kt, 0), []) + calls.get((stands[warp], kt, 1), [])
    return actions


def structural(compiled: Compiled) -> str:
    shown = display_path(compiled.path)
    tiles, super_mn = _rung_tiles(compiled)
    stages = stage_counts(tiles.stages)
    layout = Layout(tiles.bm * tiles.bk * 2, tiles.bk * tiles.bn * 2)
    try:
        lines = host_model.run(_program(compiled, shown, tiles, super_mn, stages), shown)
    except host_model.ModelUnavailable as exc:
        return f"{exc}; the GPU run decides whether the waits are right"
    runs = host_model.parsed(lambda ls: read_trace(ls, shown), lines, shown)
    if sorted(runs) != sorted(stages):
        raise Failure(f"{shown}: the host model of your regions stopped before it had run them with "
                      f"{', '.join(map(str, stages))} stages: does your region return from the kernel?",
                      {"input": shown, "expected": list(stages), "got": sorted(runs)})
    played = 0
    for count in stages:
        run = runs[count]
        actions = warp_actions(run, count, layout, shown)
        try:
            played += play_all(actions, stages=count, warps=run["warps"], k_tiles=run["k_tiles"], layout=layout)
        except RingError as exc:
            article = "an" if exc.kind[0] in "aeiou" else "a"
            raise Failure(f"{shown}: the ring model finds {article} {exc.kind}. {exc.message}\n"
                          f"The last events before it ({count} stages, {run['warps']} warps):\n"
                          + format_events(exc.events, last=8),
                          {"input": shown, "expected": "no stale read, overwrite or hang", "got": exc.kind}) from None
    warps = runs[stages[0]]["warps"]
    return (f"the host model ran your regions for every thread and iteration, and the ring model played their waits "
            f"through {played} interleavings of {warps} warps and the copy engine ({', '.join(map(str, stages))} "
            f"stages, 3 x stages + 2 slices): one loading thread, every thread waiting for its slice, no stale read, "
            "overwrite or hang")


EXERCISE = KernelExercise(
    name="ex07_mbarrier",
    rung="07",
    description="mbarrier ring: the phase parity of rung 07's full/empty waits (a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("mbarrier.try_wait.parity", "no thread ever waits on a barrier, so the warps compute on stages "
                "before their bytes land."),
        PtxRule("cp.async.bulk.tensor", "no TMA copy is issued."),
        PtxRule("mbarrier.arrive.shared", "no warp arrives on ring.empty after reading a stage, so thread 0's "
                "wait for the stage to be free never returns: the kernel hangs in the second round of the ring. "
                "Keep the arrive at the end of the main loop as the exercise gave it."),
        PtxRule("fence.proxy.async", "nothing orders the warps' ldmatrix reads of a stage before the TMA's next "
                "writes into it (the copy engine is another proxy), so a copy can land under a warp still reading. "
                "Keep fence_proxy_async_shared_cta() before the arrive on ring.empty as the exercise gave it."),
    ),
    structural=structural,
)
