"""Checker for ex03_cp_async: rung 03's copies, the learner's cp.async, commit_group and wait_group inline-asm
statements and the ring's bookkeeping at the top of the K loop.

The CPU part, after the compile:

1. **The asm, through the compiler.** ``cp_async_16``, ``cp_async_16_zfill``, ``cp_async_commit_group`` and
   ``cp_async_wait_group<N>`` (for N = 0, 1, 2 and 5) are called from small probe kernels (:mod:`.ptx_probe`);
   their PTX shows the instruction each issues and which argument became which operand: a copy's destination
   and source swapped, a cache mode or size other than the kernel's, a zero-fill copy without its src-size
   operand, a wait whose count is not N are each named by what the instruction would do.
2. **The bookkeeping, through a model.** The learner's region runs on the CPU (:mod:`.host_model`) after the
   given prologue for 1, 2, STAGES and STAGES + 3 slices, with stand-ins that print each copy, commit, wait and
   barrier; the ring model (:mod:`.cp_async_ring`) checks that the compute of slice kt reads stage kt % STAGES
   holding slice kt, landed for every thread, that no copy refills a stage a warp may still read, and that no
   wait drains copies of later slices (a wait count too small).
"""
from __future__ import annotations

from . import host_model, ptx_probe
from .feedback import Failure
from .kernel_exercise import Compiled, KernelExercise, PtxRule, display_path

PROBES = {
    "hgemm_probe_copy": r'''
extern "C" __global__ void hgemm_probe_copy(unsigned dst, const void* src) {
    cp_async_16(dst, src);
}
''',
    "hgemm_probe_zfill": r'''
extern "C" __global__ void hgemm_probe_zfill(unsigned dst, const void* src, int bytes) {
    cp_async_16_zfill(dst, src, bytes);
}
''',
    "hgemm_probe_commit": r'''
extern "C" __global__ void hgemm_probe_commit() {
    cp_async_commit_group();
}
''',
    "hgemm_probe_wait": r'''
extern "C" __global__ void hgemm_probe_wait() {
    cp_async_wait_group<0>();
    cp_async_wait_group<1>();
    cp_async_wait_group<2>();
    cp_async_wait_group<5>();
}
''',
}
CALLS = {"hgemm_probe_copy": "cp_async_16", "hgemm_probe_zfill": "cp_async_16_zfill",
         "hgemm_probe_commit": "cp_async_commit_group", "hgemm_probe_wait": "cp_async_wait_group<N>"}
WAITS = (0, 1, 2, 5)
COPY = ("cp", "async", "cg", "shared", "global")


# ------------------------------------------------------------------------------------------- 1. the asm

def check_asm(compiled: Compiled) -> str:
    shown = display_path(compiled.path)
    for line in compiled.kernel_ptx.splitlines():
        words = line.split()
        if words and words[0].startswith("cp.async.c") and len(words) > 2 and "group" not in words[0]:
            dst, src = words[1].strip("[],"), words[2].strip("[],")
            if dst.startswith("%rd") and src.startswith("%r") and not src.startswith("%rd"):
                raise Failure(f"{shown}: in the kernel's PTX your copy's destination is the 64-bit global pointer and "
                              "its source the 32-bit shared address: the first address operand is where the copy "
                              "writes. It would write to global memory at shared-memory offsets.",
                              {"input": line.strip(), "expected": "[shared], [global]", "got": "[global], [shared]"})
    ptx = ptx_probe.compile_probes(compiled, PROBES, shown, CALLS)
    _check_copy(ptx_probe.read(ptx["hgemm_probe_copy"], ("cp.", "ld.", "st.shared")), "cp_async_16", None, shown)
    _check_copy(ptx_probe.read(ptx["hgemm_probe_zfill"], ("cp.", "ld.", "st.shared")), "cp_async_16_zfill", 2, shown)
    commit = ptx_probe.read(ptx["hgemm_probe_commit"], ("cp.", "bar", "membar", "fence")).instructions
    if [i.opcode for i in commit] != ["cp.async.commit_group"]:
        did = ", ".join(i.opcode for i in commit) or "no instruction"
        raise Failure(f"{shown}: your cp_async_commit_group issues {did}; it must close this thread's pending copies "
                      "into a group, one instruction (PTX ISA: cp.async.commit_group).",
                      {"input": "cp_async_commit_group", "expected": "one commit", "got": did})
    waits = ptx_probe.read(ptx["hgemm_probe_wait"], ("cp.", "bar", "membar", "fence")).instructions
    counts = []
    for ins in waits:
        if ins.opcode == "cp.async.wait_group" and len(ins.operands) == 1 and ins.operands[0].what[0] == "const":
            counts.append(ins.operands[0].what[1])
        else:
            counts.append(ins.opcode)
    if counts != list(WAITS):
        if len(counts) == len(WAITS):
            did = ", ".join(f"{c if isinstance(c, str) else f'cp.async.wait_group {c}'} for N = {n}"
                            for c, n in zip(counts, WAITS))
        else:
            did = f"{len(counts)} instructions for the four calls N = {', '.join(map(str, WAITS))}"
        why = (" cp.async.wait_all waits for every group whatever N is: no copy would stay in flight under the "
               "compute." if "cp.async.wait_all" in counts else
               " The count is written into the instruction: it must be the template's N, passed as an immediate."
               if all(isinstance(c, int) for c in counts) else "")
        raise Failure(f"{shown}: your cp_async_wait_group<N> issues {did}.{why}",
                      {"input": "cp_async_wait_group", "expected": f"wait_group N for N = {list(WAITS)}",
                       "got": counts})
    return ("cp_async_16 and cp_async_16_zfill issue a 16-byte cp.async from global to shared memory with their "
            "arguments where they belong, commit and wait<N> the group instructions with N's count")


def _check_copy(probe: ptx_probe.Probe, function: str, size_param: int | None, shown: str) -> None:
    first = 0                                           # the probe's parameters: dst, src, then bytes
    mine = [i for i in probe.instructions if any(isinstance(o, tuple) and o[0] == "addr" and o[1].what[0] == "param"
                                                 and o[1].what[1] in (first, first + 1) for o in i.operands)]
    if not mine:
        raise Failure(f"{shown}: your {function} issues no instruction that uses its addresses: it must issue one "
                      "cp.async (PTX ISA: cp.async).", {"input": function, "expected": "cp.async", "got": None})
    if len(mine) > 1 or not mine[0].opcode.startswith("cp.async"):
        did = ", ".join(i.opcode for i in mine)
        raise Failure(f"{shown}: your {function} issues {did}; the copy is one cp.async, which moves the 16 bytes "
                      "without passing them through a register.", {"input": function, "expected": "one cp.async",
                                                                     "got": did})
    copy = mine[0]
    words = ptx_probe.qualifiers(copy.opcode)
    if tuple(words) != COPY:
        said = []
        if "ca" in words:
            said.append(".ca caches the copy in L1 as well; each tile is read from global memory once per CTA, so "
                        "the kernel's copies bypass L1 (cached in L2 only)")
        if "shared" not in words or "global" not in words or words.index("shared") > words.index("global"):
            said.append("cp.async's state spaces are the destination's, then the source's: shared memory is written, "
                        "global memory read")
        if not said:
            said.append(f"its qualifiers {'.'.join(words[2:])} are not those of a 16-byte copy cached in L2 only")
        raise Failure(f"{shown}: your {function} issues {copy.opcode}: {'; '.join(said)}.",
                      {"input": function, "expected": "the L2-only global-to-shared copy", "got": copy.opcode})
    operands = copy.operands
    names = {first: "smem_addr", first + 1: "gmem_ptr", size_param: "src_bytes"}

    def named(o) -> str:
        if isinstance(o, tuple):
            return f"[{named(o[1])}]" + (f" + {o[2]}" if o[2] else "")
        if o.what[0] == "param":
            return names.get(o.what[1], f"parameter {o.what[1]}")
        return str(o.what[1]) if o.what[0] == "const" else str(o)

    shown_ops = ", ".join(named(o) for o in operands)
    if len(operands) < 3 or not all(isinstance(o, tuple) for o in operands[:2]):
        raise Failure(f"{shown}: your {function} issues cp.async with operands {shown_ops}; it takes the destination "
                      "address, the source address and the copy size (PTX ISA: cp.async).",
                      {"input": function, "expected": "[dst], [src], size", "got": shown_ops})
    dst, src = (o[1].what[1] if o[1].what[0] == "param" else None for o in operands[:2])
    if (dst, src) == (first + 1, first):
        raise Failure(f"{shown}: your {function} copies into [gmem_ptr] from [smem_addr]: the destination comes first. "
                      "It would write shared-memory offsets as if they were global addresses.",
                      {"input": function, "expected": "destination smem_addr", "got": "destination gmem_ptr"})
    if (dst, src) != (first, first + 1) or any(o[2] for o in operands[:2]):
        raise Failure(f"{shown}: your {function} issues cp.async with operands {shown_ops}: the copy must go to "
                      "smem_addr from gmem_ptr as given.", {"input": function, "expected": "[smem_addr], [gmem_ptr]",
                                                           "got": shown_ops})
    size = operands[2]
    if not (size.what[0] == "const" and size.what[1] == 16):
        raise Failure(f"{shown}: your {function} copies {named(size)} bytes; the kernel's chunks are 16 bytes (8 "
                      "halves), and an L2-only copy moves exactly 16.", {"input": function, "expected": 16,
                                                                          "got": named(size)})
    extra = operands[3:]
    if size_param is None and extra:
        raise Failure(f"{shown}: your {function} issues cp.async with a source size ({named(extra[0])}); the plain copy "
                      "reads all 16 bytes.", {"input": function, "expected": "no src-size", "got": named(extra[0])})
    if size_param is not None:
        if not extra:
            raise Failure(f"{shown}: your {function} has no src-size operand, so it always reads 16 bytes: for a "
                          "chunk past M, N or K the kernel passes src_bytes = 0 and the start of A or B as the source, "
                          "and your copy would store those 16 bytes instead of zeros, adding them to C's edge "
                          "tiles.", {"input": function, "expected": "a src-size operand", "got": None})
        if not (extra[0].what[0] == "param" and extra[0].what[1] == size_param) or len(extra) > 1:
            raise Failure(f"{shown}: your {function}'s src-size operand is {named(extra[0])}, not src_bytes: the bytes "
                          "to read are the caller's.", {"input": function, "expected": "src_bytes",
                                                        "got": named(extra[0])})


# ------------------------------------------------------------------------------------------- 2. the bookkeeping

def _program(compiled: Compiled, tiles, shown: str, runs: tuple[int, ...]) -> str:
    text, first = host_model.last_region(compiled, shown, 5)
    return host_model.PRELUDE + f"""
constexpr int BM = {tiles.bm}, BN = {tiles.bn}, BK = {tiles.bk}, WM = {tiles.wm}, WN = {tiles.wn}, STAGES = {tiles.stages};
constexpr int THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, FRAG_M = WM / 16, FRAG_N = WN / 16;
static void __syncthreads() {{ std::printf("sync\\n"); event_done(); }}
static void cp_async_commit_group() {{ std::printf("commit\\n"); event_done(); }}
template <int N> static void cp_async_wait_group() {{ std::printf("wait %d\\n", N); event_done(); }}
static void run(int k_tiles) {{
    std::printf("run %d\\n", k_tiles);
    const int lane = 0, warp = 0, tid = 0, warp_m = 0, warp_n = 0, m0 = 0, n0 = 0, M = BM, N = BN, K = k_tiles * BK;
    (void)lane; (void)warp; (void)tid; (void)warp_m; (void)warp_n; (void)m0; (void)n0; (void)M; (void)N; (void)K;
    auto load_tile = [&](int stage, int kt) {{ std::printf("tile %d %d\\n", stage, kt); event_done(); }};
    for (int s = 0; s < STAGES - 1; ++s) {{
        if (s < k_tiles) load_tile(s, s);
        cp_async_commit_group();
    }}
    for (int kt = 0; kt < k_tiles; ++kt) {{
        std::printf("slice %d\\n", kt);
{host_model.region(text, first, shown)}
        std::printf("compute %d\\n", kt);
    }}
    std::printf("end\\n");
}}
int main() {{
{"".join(f"    run({k});{chr(10)}" for k in runs)}    return 0;
}}
"""


def check_bookkeeping(compiled: Compiled, tiles, shown: str) -> str:
    from .cp_async_ring import Ring

    runs = (1, 2, tiles.stages, tiles.stages + 3)
    try:
        lines = host_model.run(_program(compiled, tiles, shown, runs), shown)
    except host_model.ModelUnavailable as why:
        return f"the ring's bookkeeping was not modelled: {why}; the GPU run decides"
    host_model.parsed(lambda ls: _play(ls, tiles, shown, Ring), lines, shown)
    return (f"the bookkeeping, played for {', '.join(map(str, runs))} slices: each slice is read from its stage "
            "once it has landed for every thread, no stage is refilled while a warp may read it, and each wait "
            f"leaves the later slices in flight ({tiles.stages} stages)")


def _play(lines: list[list[str]], tiles, shown: str, ring_type) -> None:
    ring, kt, computed = None, None, 0
    for words in lines:
        kind = words[0]
        if kind == "run":
            k_tiles, ring, kt, computed = int(words[1]), ring_type(tiles.stages, 1, shown), None, 0
        elif kind == "slice":
            kt = int(words[1])
            ring.at = f"at slice {kt}"
            ring.where = f"with {k_tiles} slice{'' if k_tiles == 1 else 's'}, {ring.at}"
        elif kind == "tile":
            ring.copy(int(words[1]), int(words[2]))
        elif kind == "commit":
            ring.commit()
        elif kind == "wait":
            n = int(words[1])
            landed = ring.wait(n)
            if kt is not None:
                ring.too_deep(landed, kt, n)
        elif kind == "sync":
            ring.sync()
        elif kind == "compute":
            ring.read(kt % tiles.stages, f"slice {kt}'s tiles", slice_=kt)
            computed += 1
        elif kind == "end":
            if computed != k_tiles:
                raise ValueError(kind)
        else:
            raise ValueError(kind)


def structural(compiled: Compiled) -> str:
    from ..library.ladder.r03_wmma import tiles_for

    shown = display_path(compiled.path)
    return check_bookkeeping(compiled, tiles_for(compiled.target), shown)


EXERCISE = KernelExercise(
    name="ex03_cp_async",
    rung="03",
    description="cp.async: write the copy, commit and wait inline asm and rung 03's ring bookkeeping "
                "(a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("cp.async.commit_group", "no copy is ever closed into a group, so no wait can wait for it."),
        PtxRule("cp.async.wait", "nothing waits for the copies: the warps would read stages still being filled."),
    ),
    structural=structural,
    asm=check_asm,
)
