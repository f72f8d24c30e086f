"""Checker for ex10_producer: rung 10's producer branch, the consumers' setmaxnreg and their release.

Besides compiling and reading the PTX, the checker runs the learner's three regions on the CPU
(:mod:`.host_model`) for every thread that executes them, with stand-ins that print each
``warpgroup_reg_dealloc`` / ``_alloc``, ``mbar_wait_parity``, ``load_tile``, ``wgmma_wait_group``
and ``mbar_arrive``, for rings of 3, 4 and 5 stages. Then:

- setmaxnreg: every thread of the producer warpgroup gives back to PRODUCER_REGS, every consumer
  thread takes CONSUMER_REGS (the instruction is warpgroup-wide: a thread that skips it is a bug);
- the producer: exactly one thread loads every slice kt into stage kt % STAGES, in order; its waits
  are compared with :func:`.ex10_ring_parity.empty_wait`, and a wrong one is played through that
  exercise's ring model, which says what the kernel would do (a hang, an overwrite);
- the release: one arrival per consumer warp per slice on the empty barrier, never on a stage that a
  group the wait leaves running still reads, every slice the producer needs released exactly once.

The extra question, ``released_stage``, is evaluated over its whole small domain.
"""
from __future__ import annotations

from collections import defaultdict

from . import host_model
from .ex10_ring_parity import empty_wait, format_events, play_all
from .feedback import Failure
from .kernel_exercise import Compiled, KernelExercise, PtxRule, display_path

STAGE_COUNTS = (4, 3, 5)                 # rung 10's own first
CONSUMER_WARPS = 8                       # two consumer warpgroups
EXTRA_KT, EXTRA_STAGES, EXTRA_IN_FLIGHT = range(24), range(2, 8), range(4)


def _rung():
    from ..library.ladder import r10_warp_specialized as r10

    return r10


def _program(compiled: Compiled, shown: str) -> str:
    r10 = _rung()
    t = r10.TILES
    (producer, first_p), (alloc, first_a), (release, first_r), (extra, first_e) = compiled.regions()
    runs = "".join(f"    run<{s}>();\n" for s in STAGE_COUNTS)
    return host_model.PRELUDE + f"""
{host_model.region(extra, first_e, shown)}
constexpr int BM = {t.bm}, BN = {t.bn}, BK = {t.bk}, CONSUMERS = {r10.CONSUMERS}, THREADS = {r10.THREADS};
constexpr int PRODUCER_REGS = {r10.PRODUCER_REGS}, CONSUMER_REGS = {r10.CONSUMER_REGS};
constexpr int FRAG_M = BM / 64 / CONSUMERS, FRAG_N = BN / 8, B_PANEL = BK * 128;
template <int N> void warpgroup_reg_dealloc() {{ std::printf("dealloc %d\\n", N); event_done(); }}
template <int N> void warpgroup_reg_alloc() {{ std::printf("alloc %d\\n", N); event_done(); }}
template <int N> void wgmma_wait_group() {{ std::printf("wait_group %d\\n", N); event_done(); }}
static const void* g_ring = nullptr;
unsigned smem_u32(const void* p) {{ return (unsigned)((const char*)p - (const char*)g_ring); }}
void mbar_wait_parity(unsigned bar, unsigned parity) {{ std::printf("wait %u %u\\n", bar, parity); event_done(); }}
void mbar_arrive(unsigned bar) {{ std::printf("arrive %u\\n", bar); event_done(); }}
template <int STAGES> struct Ring {{ unsigned long long full[STAGES]; unsigned long long empty[STAGES]; }};

template <int STAGES> void producer(int tid, int k_tiles) {{
    Ring<STAGES> ring; g_ring = &ring;
    const int lane = tid % 32, warp = tid % 128 / 32, warpgroup = tid / 128;
    auto load_tile = [&](int stage, int kt) {{ std::printf("load %d %d\\n", stage, kt); event_done(); }};
    std::printf("producer %d %d\\n", STAGES, tid);
{host_model.region(producer, first_p, shown)}
}}
template <int STAGES> void consumer(int tid) {{
    const int lane = tid % 32, warp = tid % 128 / 32, warpgroup = tid / 128;
    std::printf("consumer %d %d\\n", STAGES, tid);
{host_model.region(alloc, first_a, shown)}
}}
template <int STAGES> void release(int tid, int kt, int k_tiles) {{
    Ring<STAGES> ring; g_ring = &ring;
    const int lane = tid % 32, warp = tid % 128 / 32, warpgroup = tid / 128, consumer = warpgroup - 1;
    std::printf("release %d %d %d\\n", STAGES, tid, kt);
{host_model.region(release, first_r, shown)}
}}
template <int STAGES> void run() {{
    const int k_tiles = 3 * STAGES + 2;
    for (int tid = 0; tid < 128; ++tid) producer<STAGES>(tid, k_tiles);
    for (int tid = 128; tid < THREADS; ++tid) consumer<STAGES>(tid);
    for (int kt = 0; kt < k_tiles; ++kt)
        for (int tid = 128; tid < THREADS; ++tid) release<STAGES>(tid, kt, k_tiles);
}}
int main() {{
{runs}    for (int kt = {EXTRA_KT.start}; kt < {EXTRA_KT.stop}; ++kt)
        for (int s = {EXTRA_STAGES.start}; s < {EXTRA_STAGES.stop}; ++s)
            for (int f = {EXTRA_IN_FLIGHT.start}; f < {EXTRA_IN_FLIGHT.stop}; ++f)
                std::printf("extra %d %d %d %d\\n", kt, s, f, released_stage(kt, s, f));
    return 0;
}}
"""


def _barrier(address: int, stages: int) -> str:
    index = address // 8
    if address % 8 == 0 and index < stages:
        return f"full[{index}]"
    if address % 8 == 0 and index < 2 * stages:
        return f"empty[{index - stages}]"
    return f"shared-memory address {address}, no barrier of the ring"


def read_trace(lines: list[list[str]]) -> dict:
    """The recorded events by role: producer[stages][tid], consumer[stages][tid], release[stages][(tid, kt)]
    as lists of word lists; extra as (kt, stages, in_flight, answer)."""
    trace = {"producer": defaultdict(dict), "consumer": defaultdict(dict), "release": defaultdict(dict), "extra": []}
    events: list = []
    for words in lines:
        if words[0] in ("producer", "consumer", "release"):
            key = int(words[2]) if words[0] != "release" else (int(words[2]), int(words[3]))
            events = trace[words[0]][int(words[1])].setdefault(key, [])
        elif words[0] == "extra":
            trace["extra"].append(tuple(int(w) for w in words[1:]))
        else:
            events.append(words)
    return trace


def _fail(shown: str, message: str, expected, got) -> Failure:
    return Failure(f"{shown}: {message}", {"input": shown, "expected": expected, "got": got})


def check_setmaxnreg(trace: dict, shown: str) -> None:
    r10 = _rung()
    for role, op, want, tids in (("producer", "dealloc", r10.PRODUCER_REGS, range(128)),
                                 ("consumer", "alloc", r10.CONSUMER_REGS, range(128, r10.THREADS))):
        kind = "warpgroup_reg_dealloc" if op == "dealloc" else "warpgroup_reg_alloc"
        for tid in tids:
            calls = [int(e[1]) for e in trace[role][STAGE_COUNTS[0]].get(tid, []) if e[0] == op]
            if len(calls) != 1:
                raise _fail(shown, f"thread {tid} of the {role} warpgroup calls {kind} {len(calls)} times. setmaxnreg is "
                            ".sync.aligned: all 128 threads of the warpgroup execute it once, together (a call "
                            "inside `if (tid == 0)` leaves the other 127 threads out).", 1, len(calls))
            if calls[0] != want:
                name = "PRODUCER_REGS" if op == "dealloc" else "CONSUMER_REGS"
                raise _fail(shown, f"the {role} warpgroup sets {calls[0]} registers per thread; rung 10 gives it "
                            f"{name} = {want}: the producer keeps what one TMA-issuing thread needs and the "
                            "consumers take the rest for their accumulators.", want, calls[0])


def check_producer(trace: dict, stages: int, shown: str) -> None:
    k_tiles = 3 * stages + 2
    threads = trace["producer"][stages]
    loaders = [tid for tid, events in threads.items() if any(e[0] == "load" for e in events)]
    if not loaders:
        raise _fail(shown, "no producer thread calls load_tile, so no slice ever lands and the consumers wait on "
                    "full[0] forever: the kernel hangs.", "one loading thread", "none")
    if len(loaders) > 1:
        raise _fail(shown, f"threads {loaders[0]} and {loaders[1]} of the producer both load: every slice is asked for "
                    f"{len(loaders)} times, and each arrive_expect_tx on full[s] expects one slice's bytes.",
                    "one loading thread", loaders[:4])
    mine: dict[int, tuple[int, int] | None] = {}
    waits: list[tuple[str, int]] = []
    loads = 0
    for event in threads[loaders[0]]:
        if event[0] == "wait":
            waits.append((_barrier(int(event[1]), stages), int(event[2])))
        elif event[0] == "load":
            stage, kt = int(event[1]), int(event[2])
            if kt != loads or stage != kt % stages:
                raise _fail(shown, f"with {stages} stages the producer's load number {loads} is load_tile({stage}, "
                            f"{kt}); slice kt goes to stage kt % STAGES, in order: load_tile({loads % stages}, "
                            f"{loads}).", [loads % stages, loads], [stage, kt])
            if len(waits) > 1 or any(not b.startswith("empty[") for b, _ in waits):
                raise _fail(shown, f"before loading slice {kt} ({stages} stages) the producer waits on "
                            + ", ".join(f"{b} for parity {p}" for b, p in waits)
                            + ". It needs one wait, on its stage's empty barrier (full[s] completes only when "
                            "this thread's own load lands).", f"empty[{stage}]", waits)
            mine[kt] = (int(waits[0][0][6:-1]), waits[0][1]) if waits else None
            waits = []
            loads += 1
    if loads != k_tiles:
        raise _fail(shown, f"with {stages} stages and {k_tiles} slices the producer loads {loads} slices: the consumers "
                    f"wait for slice {loads} forever and the kernel hangs.", k_tiles, loads)
    for kt in range(k_tiles):
        expected = empty_wait(kt, stages)
        if mine[kt] != expected:
            found = play_all(empty_wait_fn=lambda k, s: mine[k], stages=stages, k_tiles=k_tiles)
            what = "the ring model met no wrong result and no hang, but the wait is not rung 10's"
            if found["problems"]:
                kind = found["problems"].most_common(1)[0][0]
                worst = found["first"][kind]
                what = (f"in {found['played']} interleavings the ring model finds "
                        + ", ".join(f"{k} {n} times" for k, n in found["problems"].items())
                        + f"; {worst.message}\n" + format_events(worst.events, last=6))
            got = "no wait" if mine[kt] is None else f"a wait on empty[{mine[kt][0]}] for parity {mine[kt][1]}"
            want = "no wait" if expected is None else f"empty[{expected[0]}] for parity {expected[1]}"
            raise _fail(shown, f"before loading slice {kt} ({stages} stages) the producer makes {got}; rung 10 "
                        f"makes {want}: {what}", expected, mine[kt])


def check_release(trace: dict, stages: int, shown: str) -> None:
    k_tiles = 3 * stages + 2
    released: dict[int, list[int]] = defaultdict(list)     # warp -> slices released, in order
    for kt in range(k_tiles):
        per_warp: dict[int, list[str]] = defaultdict(list)
        in_flight = None
        for tid in range(128, 128 + 32 * CONSUMER_WARPS):
            events = trace["release"][stages][(tid, kt)]
            waits = [int(e[1]) for e in events if e[0] == "wait_group"]
            if not waits:
                raise _fail(shown, "the release makes no wgmma_wait_group: nothing tells the warp which products are "
                            "done, so any stage it frees may still be read.", "wgmma_wait_group<1>", "none")
            in_flight = waits[0]
            per_warp[tid // 32] += [_barrier(int(e[1]), stages) for e in events if e[0] == "arrive"]
        for warp in range(128 // 32, 128 // 32 + CONSUMER_WARPS):
            bars = per_warp[warp]
            if len(bars) > 1:
                raise _fail(shown, f"at slice {kt} ({stages} stages) consumer warp {warp - 4} arrives {len(bars)} times. "
                            f"empty[s] expects one arrival per consumer warp ({CONSUMER_WARPS}); more complete its phase "
                            "before the other warps are done, and the producer overwrites a stage still being read.",
                            1, len(bars))
            for bar in bars:
                if not bar.startswith("empty["):
                    raise _fail(shown, f"at slice {kt} the consumers arrive on {bar}; a stage is freed on its "
                                "empty barrier.", "empty[s]", bar)
                stage = int(bar[6:-1])
                lag = (kt - stage) % stages
                if lag < in_flight:
                    raise _fail(shown, f"at slice {kt} ({stages} stages) the consumers free stage {stage}, which holds "
                                f"slice {kt - lag}; wgmma_wait_group<{in_flight}> leaves that slice's products "
                                "running, reading the stage, and the producer may refill it under them (a wrong "
                                "result).", f"a stage at least {in_flight} slices back", stage)
                released[warp].append(kt - lag)
    needed = list(range(k_tiles - stages))                   # the producer waits for these releases
    for warp, slices in sorted(released.items()) or [(4, [])]:
        if slices[:len(needed)] != needed:
            missing = next((s for s, r in zip(needed, slices + [None] * len(needed)) if s != r), None)
            raise _fail(shown, f"with {stages} stages consumer warp {warp - 4} releases slices {slices[:8]}...; the "
                        f"producer needs slice {missing} released exactly once, in order, before it refills stage "
                        f"{missing % stages}: it waits forever (a hang) or refills too early.", needed[:8], slices[:8])


def check_extra(extra: list[tuple[int, int, int, int]], shown: str) -> None:
    for kt, stages, in_flight, got in extra:
        expected = (kt - in_flight) % stages if kt >= in_flight else -1
        if got != expected:
            raise _fail(shown, f"released_stage(kt={kt}, stages={stages}, in_flight={in_flight}) = {got}, expected "
                        f"{expected}.", expected, got)


def structural(compiled: Compiled) -> str:
    shown = display_path(compiled.path)
    if len(compiled.regions()) != 4:
        return "the host model could not find your four regions; the GPU run decides"
    try:
        trace = host_model.parsed(read_trace, host_model.run(_program(compiled, shown), shown), shown)
    except host_model.ModelUnavailable as exc:
        return f"{exc}; the GPU run decides"
    check_setmaxnreg(trace, shown)
    for stages in STAGE_COUNTS:
        check_producer(trace, stages, shown)
        check_release(trace, stages, shown)
    extra = compiled.extra_question("released_stage", lambda: check_extra(trace["extra"], shown))
    return (f"the host model ran your regions with {', '.join(map(str, STAGE_COUNTS))} stages: setmaxnreg in every "
            "thread, one producer thread loading every slice after rung 10's empty waits, one release per consumer "
            f"warp per slice on a stage no running group reads; {extra}")


EXERCISE = KernelExercise(
    name="ex10_producer",
    rung="10",
    description="Producer: rung 10's producer branch, setmaxnreg and the consumers' release (a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("setmaxnreg.dec", "the producer warpgroup never gives registers back, so the consumers cannot take "
                "more than the launch gave them."),
        PtxRule("cp.async.bulk.tensor", "no TMA load is issued: the consumers wait for slices that never come."),
        PtxRule("setmaxnreg.inc", "the consumer warpgroups never take the registers the producer gave back."),
        PtxRule("mbarrier.arrive", "no consumer warp frees a stage, so the producer waits forever for an empty one."),
    ),
    structural=structural,
)
