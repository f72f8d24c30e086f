"""Checker for ex04_mma_sync: the PTX of rung 04, the learner's ldmatrix and mma.sync inline-asm statements and
the double-buffered k-step that calls them.

The CPU part, after the compile:

1. **The asm, through the compiler.** ``ldmatrix_x4``, ``ldmatrix_x4_trans`` and ``mma_m16n8k16`` are called from
   small probe kernels (:mod:`.ptx_probe`) whose PTX shows which instruction each function issues and which of its
   arguments became which operand. Each is played through the course's emulator of ldmatrix and mma.sync
   (:mod:`hgemm_course.sim.fragments`) with the kernel's own lane addresses, on tiles whose every element is
   distinct: a wrong register order, a missing or extra ``.trans``, swapped operands or accumulators that are not
   read back are named by the lane, the register and the element of A, B or D they spoil.
2. **The k-step, through a model.** The learner's region runs on the CPU (:mod:`.host_model`) inside the given
   prologue and loops for 1, 2 and STAGES + 2 slices, with stand-ins that print each copy, commit, wait, barrier,
   fragment load and mma; the ring model (:mod:`.cp_async_ring`) checks that every fragment load reads a slice
   that has landed for every thread and that no copy refills a stage a warp may still read, the fragment buffers
   are followed through, every acc[i][j] must get each k-step's product of a_frag[i] and b_frag[j] exactly once,
   and each k-step's fragments must be loaded before the previous k-step's mma start (the double buffer).
3. **The counts.** The PTX issues as many ldmatrix, ldmatrix.trans and mma.sync as the rung's own kernel.
"""
from __future__ import annotations

from collections import Counter

from . import host_model, ptx_probe
from .feedback import Failure
from .kernel_compile import count, entry_ptx, opcode_counts
from .kernel_exercise import Compiled, KernelExercise, PtxRule, display_path

LDMATRIX_QUALIFIERS = ("ldmatrix", "sync", "aligned", "m8n8", "x4", "shared", "b16")
MMA_QUALIFIERS = ("mma", "sync", "aligned", "m16n8k16", "row", "col", "f32", "f16", "f16", "f32")
MMA_FIELDS = ("", "", "", "shape", "A layout", "B layout", "D type", "A type", "B type", "C type")

PROBES = {
    "hgemm_probe_ldmatrix": r'''
extern "C" __global__ void hgemm_probe_ldmatrix(unsigned a_addr, unsigned b_addr, unsigned* out) {
    unsigned r[8];
    ldmatrix_x4(r[0], r[1], r[2], r[3], a_addr);
    ldmatrix_x4_trans(r[4], r[5], r[6], r[7], b_addr);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = r[i];
}
''',
    "hgemm_probe_mma": r'''
extern "C" __global__ void hgemm_probe_mma(unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                           unsigned b1, float c0, float c1, float c2, float c3, float* out) {
    const unsigned a[4] = {a0, a1, a2, a3};
    const unsigned b[2] = {b0, b1};
    float d[4] = {c0, c1, c2, c3};
    mma_m16n8k16(d, a, b);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = d[i];
}
''',
}
CALLS = {"hgemm_probe_ldmatrix": "ldmatrix_x4 and ldmatrix_x4_trans", "hgemm_probe_mma": "mma_m16n8k16"}
MMA_ARGS = ("a[0]", "a[1]", "a[2]", "a[3]", "b[0]", "b[1]", "d[0]", "d[1]", "d[2]", "d[3]")


# ------------------------------------------------------------------------------------------- 1. the asm

def check_asm(compiled: Compiled) -> str:
    shown = display_path(compiled.path)
    ptx = ptx_probe.compile_probes(compiled, PROBES, shown, CALLS)
    _check_ldmatrix(ptx_probe.read(ptx["hgemm_probe_ldmatrix"], ("ldmatrix", "ld.", "mma")), shown)
    _check_mma(ptx_probe.read(ptx["hgemm_probe_mma"], ("mma", "wmma")), shown)
    return ("ldmatrix_x4 and ldmatrix_x4_trans give every lane the A and B fragment registers mma.sync reads, and "
            "mma_m16n8k16 adds A @ B to d (emulated for all 32 lanes)")


def _check_ldmatrix(probe: ptx_probe.Probe, shown: str) -> None:
    loads = probe.of("ldmatrix")
    for function, param, trans in (("ldmatrix_x4", 0, False), ("ldmatrix_x4_trans", 1, True)):
        mine = [(n, i) for n, i in enumerate(probe.instructions)
                if i.opcode.startswith("ldmatrix") and _address_param(i) == param]
        if not mine:
            others = [i for i in probe.instructions if _address_param(i) == param]
            if loads and not others:
                raise Failure(f"{shown}: the ldmatrix in your {function} does not read the address smem_addr: its "
                              "address operand is bound to something else (which operand is %n?).",
                              {"input": function, "expected": "[smem_addr]", "got": "another address"})
            did = f"issues {others[0].opcode}" if others else "issues no ldmatrix instruction"
            raise Failure(f"{shown}: your {function} {did}: the fragments must come from ldmatrix, one instruction "
                          "for the warp's four 8x8 matrices.", {"input": function, "expected": "ldmatrix",
                                                                "got": others[0].opcode if others else None})
        if len(mine) > 1:
            raise Failure(f"{shown}: your {function} issues {len(mine)} ldmatrix instructions; one loads all four "
                          "matrices.", {"input": function, "expected": 1, "got": len(mine)})
        index, load = mine[0]
        words = ptx_probe.qualifiers(load.opcode)
        want = [*LDMATRIX_QUALIFIERS[:5], *(["trans"] if trans else []), *LDMATRIX_QUALIFIERS[5:]]
        missing, extra = [w for w in want if w not in words], [w for w in words if w not in want]
        if "trans" in missing or "trans" in extra:
            missing, extra = [w for w in missing if w != "trans"], [w for w in extra if w != "trans"]
            mine_trans = not trans
        else:
            mine_trans = trans
        if missing or extra:
            raise Failure(f"{shown}: your {function} issues {load.opcode}. {_ldmatrix_words(missing, extra)}",
                          {"input": function, "expected": "ldmatrix of four b16 8x8 matrices from shared memory",
                           "got": load.opcode})
        order = [_slot(probe.stores.get(4 * param + j), index) for j in range(4)]
        if order != [0, 1, 2, 3] or mine_trans != trans:
            raise Failure(_explain_ldmatrix(function, trans, mine_trans, order, shown),
                          {"input": function, "expected": "the fragment registers mma.sync reads",
                           "got": {"trans": mine_trans, "registers": order}})


def _address_param(instruction: ptx_probe.Instruction) -> int | None:
    for operand in instruction.operands:
        if isinstance(operand, tuple) and operand[0] == "addr" and operand[1].what[0] == "param":
            return operand[1].what[1]
    return None


def _slot(value, index: int) -> int | None:
    """Which output of instruction ``index`` a stored value is, or None."""
    if value is not None and value.what[0] == "out" and value.what[1] == index:
        return value.what[2]
    return None


def _ldmatrix_words(missing: list[str], extra: list[str]) -> str:
    said = []
    for word in extra:
        if word in ("x1", "x2"):
            said.append(f".{word} loads {word[1]} matrices, so registers {word[1]}-3 stay unwritten: the A fragment "
                        "is four 8x8 matrices, and so is a pair of B fragments.")
        elif word in ("b8", "m16n16", "m8n16"):
            said.append(f".{word} is a shape or type for 8-bit elements; the tiles here hold 16-bit halves.")
        else:
            said.append(f".{word} is not something these loads need.")
    for word in missing:
        if word == "shared":
            said.append("Without a state space the address is generic, but smem_addr is a 32-bit offset in the "
                        "shared window (smem_u32), not a generic pointer: the load reads elsewhere, or faults.")
        elif word == "x4":
            said.append("It does not say how many matrices it loads; the fragments here need four.")
        elif word not in ("x1", "x2"):
            said.append(f"It lacks .{word}, which this load needs (PTX ISA, ldmatrix's syntax).")
    return " ".join(said)


def _pair(value: tuple, name: str, first: str, second: str) -> str:
    """``A[0, 8:10]`` or ``B[k 0-1, n 3]`` for two elements (v0, v1) of a 16-wide tile."""
    (r0, c0), (r1, c1) = divmod(int(value[0]), 16), divmod(int(value[1]), 16)
    if r0 == r1 and c1 == c0 + 1:
        return f"{name}[{first}{r0}, {second}{c0}-{c1}]"
    if c0 == c1 and r1 == r0 + 1:
        return f"{name}[{first}{r0}-{r1}, {second}{c0}]"
    return f"{name}[{first}{r0}, {second}{c0}] and {name}[{first}{r1}, {second}{c1}]"


def _explain_ldmatrix(function: str, trans: bool, mine_trans: bool, order: list, shown: str) -> str:
    import numpy as np

    from ..sim import a_regs_from_matrix, b_regs_from_matrix, ldmatrix, mma_m16n8k16

    tile = np.arange(256, dtype=np.float16).reshape(16, 16)        # element (r, c) holds 16 r + c
    addrs = [(lane % 16) * 32 + (lane // 16) * 16 for lane in range(32)]
    hardware = ldmatrix(tile, addrs, 4, trans=mine_trans)            # (32 lanes, 4 registers, 2 halves)
    got = np.stack([hardware[:, s] if s is not None else np.full((32, 2), np.nan, np.float16) for s in order], 1)
    if trans:
        wanted = np.concatenate([b_regs_from_matrix(tile[:, :8]), b_regs_from_matrix(tile[:, 8:])], 1)
        name, first, second, reg_names = "B", "k ", "n ", ("b0 of n-tile 0", "b1 of n-tile 0", "b0 of n-tile 1",
                                                            "b1 of n-tile 1")
    else:
        wanted = a_regs_from_matrix(tile)
        name, first, second, reg_names = "A", "", "", ("a0, a1", "a2, a3", "a4, a5", "a6, a7")
    what = []
    if mine_trans != trans:
        what.append(f"your {function} issues ldmatrix {'with' if mine_trans else 'without'} .trans")
    moved = [(j, s) for j, s in enumerate(order) if s != j]
    if moved:
        what.append(f"{'it' if what else f'your {function}'} hands the instruction's registers to r0-r3 in the order "
                    + ", ".join("nothing" if s is None else f"register {s}" for s in order))
    lines = [f"{shown}: " + "; ".join(what) + "."]
    for lane in range(32):
        for j in range(4):
            if not np.array_equal(got[lane, j], wanted[lane, j]):
                held = "nothing ldmatrix wrote" if np.isnan(got[lane, j].astype(float)).any() else \
                    _pair(got[lane, j], name, first, second)
                lines.append(f"In the kernel, lane {lane}'s r{j} would hold {held}, where mma.sync reads "
                             f"{_pair(wanted[lane, j], name, first, second)} there ({reg_names[j]} of the "
                             f"fragment, PTX ISA: \"Matrix Fragments for mma.m16n8k16\").")
                break
        else:
            continue
        break
    regs = np.nan_to_num(got.astype(np.float32)).astype(np.float16)
    if trans:
        a = a_regs_from_matrix(np.eye(16, dtype=np.float16))
        d = np.concatenate([mma_m16n8k16(a, regs[:, 2 * t:2 * t + 2], np.zeros((32, 4), np.float32))
                            for t in range(2)], 1)
        right = np.concatenate([mma_m16n8k16(a, wanted[:, 2 * t:2 * t + 2], np.zeros((32, 4), np.float32))
                                for t in range(2)], 1)
    else:
        b = b_regs_from_matrix((np.arange(128).reshape(16, 8) % 5 - 2).astype(np.float16))
        d = mma_m16n8k16(regs, b, np.zeros((32, 4), np.float32))
        right = mma_m16n8k16(wanted, b, np.zeros((32, 4), np.float32))
    bad = int((d != right).sum())
    total = d.size
    lines.append(f"Through the emulator, the mma.sync fed by these registers gets {bad} of its {total} results wrong.")
    return "\n".join(lines)


def _check_mma(probe: ptx_probe.Probe, shown: str) -> None:
    mmas = probe.of("mma") + probe.of("wmma")
    if len(mmas) != 1:
        raise Failure(f"{shown}: your mma_m16n8k16 issues {len(mmas)} mma instructions; one m16n8k16 mma computes "
                      "the warp's 16x8 product.", {"input": "mma_m16n8k16", "expected": 1, "got": len(mmas)})
    mma = mmas[0]
    words = ptx_probe.qualifiers(mma.opcode)
    if tuple(words) != MMA_QUALIFIERS:
        said = []
        if len(words) == len(MMA_QUALIFIERS):
            for k, (w, want) in enumerate(zip(words, MMA_QUALIFIERS)):
                if w != want:
                    field = MMA_FIELDS[k] or f".{w}"
                    said.append(f"its {field} is .{w}" + (": the accumulators d are 4 fp32 registers of the "
                                                          "kernel's acc" if k in (6, 9) else ""))
        text = "; ".join(said) if said else "its qualifiers are not those of the warp-wide f16 x f16 + f32 m16n8k16 mma"
        raise Failure(f"{shown}: your mma_m16n8k16 issues {mma.opcode}: {text}.",
                      {"input": "mma_m16n8k16", "expected": "the m16n8k16 f16/f32 mma", "got": mma.opcode})
    if len(mma.operands) != 4 or not all(isinstance(o, list) for o in mma.operands):
        raise Failure(f"{shown}: your mma's operands are not four register lists {{...}} (D, A, B, C).",
                      {"input": "mma_m16n8k16", "expected": "D, A, B, C", "got": mma.line})
    _, a_ops, b_ops, c_ops = mma.operands
    a_got, b_got, c_got = ([_arg(v) for v in ops] for ops in (a_ops, b_ops, c_ops))
    d_got = [_slot(probe.stores.get(i), 0) for i in range(4)]
    if a_got == list(range(4)) and b_got == [4, 5] and c_got == list(range(6, 10)) and d_got == [0, 1, 2, 3]:
        return
    raise Failure(_explain_mma(a_got, b_got, c_got, d_got, shown),
                  {"input": "mma_m16n8k16", "expected": "D = d, A = a, B = b, C = d",
                   "got": {"A": _names(a_got), "B": _names(b_got), "C": _names(c_got), "d": d_got}})


def _arg(value) -> int | None:
    return value.what[1] if value.what[0] == "param" else None


def _names(args: list) -> list[str]:
    return ["nothing d held" if a is None else MMA_ARGS[a] for a in args]


def _explain_mma(a_got, b_got, c_got, d_got, shown: str) -> str:
    import numpy as np

    from ..sim import a_regs_from_matrix, b_regs_from_matrix, c_matrix_from_regs, c_regs_from_matrix, mma_m16n8k16

    rng = np.random.default_rng(0)
    a_m = rng.integers(-2, 3, (16, 16)).astype(np.float16)
    b_m = rng.integers(-2, 3, (16, 8)).astype(np.float16)
    c_m = rng.integers(-4, 5, (16, 8)).astype(np.float32)
    a, b, c = a_regs_from_matrix(a_m), b_regs_from_matrix(b_m), c_regs_from_matrix(c_m)
    halves = [a[:, k] for k in range(4)] + [b[:, k] for k in range(2)]

    def halves_of(arg):
        return halves[arg] if arg is not None and arg < 6 else np.zeros((32, 2), np.float16)

    what = []
    if a_got != list(range(4)):
        what.append(f"its A operand gets {', '.join(_names(a_got))}")
    if b_got != [4, 5]:
        what.append(f"its B operand gets {', '.join(_names(b_got))}")
    if c_got != list(range(6, 10)):
        what.append(f"its C operand (what it adds to) gets {', '.join(_names(c_got))}"
                    + (": an output-only constraint (\"=\") is not read in, so the old d never reaches the "
                       "instruction and every k-step would overwrite the sum" if None in c_got else ""))
    if d_got != [0, 1, 2, 3]:
        what.append("d[0]-d[3] receive " + ", ".join("nothing the mma wrote" if s is None else f"its D register {s}"
                                                     for s in d_got))
    a_in = np.stack([halves_of(x) for x in a_got], 1)
    b_in = np.stack([halves_of(x) for x in b_got], 1)
    c_in = np.stack([c[:, x - 6] if x is not None and x >= 6 else np.zeros(32, np.float32) for x in c_got], 1)
    try:
        hardware = mma_m16n8k16(a_in, b_in, c_in)
        d = np.stack([hardware[:, s] if s is not None else c[:, k] for k, s in enumerate(d_got)], 1)
        bad = c_matrix_from_regs(d) != a_m.astype(np.float32) @ b_m.astype(np.float32) + c_m
        result = (f"Through the emulator, on random A, B and C, D comes out wrong in {int(bad.sum())} of its 128 "
                  f"elements (rows {', '.join(str(r) for r in np.flatnonzero(bad.any(1))[:8])}"
                  f"{', ...' if bad.any(1).sum() > 8 else ''}).")
    except ValueError:
        result = ""
    return (f"{shown}: the mma your mma_m16n8k16 issues is the right instruction, but {'; '.join(what)}.\n"
            "mma.sync's operands are D, A, B, C in that order (PTX ISA, \"mma\"), each a {...} list of registers "
            "in fragment order." + (f"\n{result}" if result else ""))


# ------------------------------------------------------------------------------------------- 2. the k-step

def _program(compiled: Compiled, tiles, shown: str, runs: tuple[int, ...]) -> str:
    text, first = host_model.last_region(compiled, shown, 4)
    return host_model.PRELUDE + f"""#include <cstdint>
constexpr int BM = {tiles.bm}, BN = {tiles.bn}, BK = {tiles.bk}, WM = {tiles.wm}, WN = {tiles.wn}, STAGES = {tiles.stages};
constexpr int THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, FRAG_M = WM / 16, FRAG_N = WN / 8;
constexpr int K_STEPS = BK / 16, COPY_PARTS = K_STEPS - 1;
static float acc[FRAG_M][FRAG_N][4];
static unsigned a_frag[2][FRAG_M][4];
static unsigned b_frag[2][FRAG_N][2];
static void __syncthreads() {{ std::printf("sync\\n"); event_done(); }}
static void cp_async_commit_group() {{ std::printf("commit\\n"); event_done(); }}
template <int N> static void cp_async_wait_group() {{ std::printf("wait %d\\n", N); event_done(); }}
static long offset(const void* p, const void* base) {{
    return ((long)reinterpret_cast<uintptr_t>(p) - (long)reinterpret_cast<uintptr_t>(base)) / 4;
}}
static void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {{
    std::printf("mma %ld %ld %ld\\n", offset(d, acc), offset(a, a_frag), offset(b, b_frag)); event_done();
}}
static void run(int k_tiles) {{
    std::printf("run %d\\n", k_tiles);
    const int lane = 0, warp = 0, tid = 0, warp_m = 0, warp_n = 0, m0 = 0, n0 = 0, M = BM, N = BN, K = k_tiles * BK;
    (void)lane; (void)warp; (void)tid; (void)warp_m; (void)warp_n; (void)m0; (void)n0; (void)M; (void)N; (void)K;
    auto load_tile = [&](int stage, int kt, int part) {{ std::printf("tile %d %d %d\\n", stage, kt, part); event_done(); }};
    auto load_fragments = [&](int buf, int stage, int kk) {{ std::printf("frag %d %d %d\\n", buf, stage, kk); event_done(); }};
    for (int s = 0; s < STAGES - 1; ++s) {{
        if (s < k_tiles) {{
            for (int part = 0; part < COPY_PARTS; ++part) load_tile(s, s, part);
        }}
        cp_async_commit_group();
    }}
    cp_async_wait_group<STAGES - 2>();
    __syncthreads();
    load_fragments(0, 0, 0);
    for (int kt = 0; kt < k_tiles; ++kt) {{
        const int next = kt + STAGES - 1;
        for (int kk = 0; kk < K_STEPS; ++kk) {{
            std::printf("step %d %d\\n", kt, kk);
{host_model.region(text, first, shown)}
        }}
    }}
    std::printf("end\\n");
}}
int main() {{
{"".join(f"    run({k});{chr(10)}" for k in runs)}    return 0;
}}
"""


def check_loop(compiled: Compiled, tiles, shown: str) -> str:
    from .cp_async_ring import Ring

    runs = (1, 2, tiles.stages + 2)
    try:
        lines = host_model.run(_program(compiled, tiles, shown, runs), shown)
    except host_model.ModelUnavailable as why:
        return f"the k-step was not modelled: {why}; the GPU run decides"
    host_model.parsed(lambda ls: _play(ls, tiles, shown, Ring), lines, shown)
    return (f"the k-step, played for {', '.join(map(str, runs))} slices: every fragment load reads a slice that has "
            "landed for every thread, no copy refills a stage a warp may still read, each acc[i][j] gets every "
            "k-step's product once, and each k-step's fragments load while the previous k-step's mma run")


def _play(lines: list[list[str]], tiles, shown: str, ring_type) -> None:
    frag_m, frag_n, steps = tiles.wm // 16, tiles.wn // 8, tiles.bk // 16
    ring = None
    for words in lines:
        kind = words[0]
        if kind == "run":
            k_tiles = int(words[1])
            ring = ring_type(tiles.stages, steps - 1, shown)
            buffers: dict[int, tuple | None] = {0: None, 1: None}
            loaded_at: dict[int, int] = {}
            first_mma: dict[int, int] = {}
            sums: dict[tuple, Counter] = {(i, j): Counter() for i in range(frag_m) for j in range(frag_n)}
            step, t = None, 0
            continue
        t += 1
        if kind == "step":
            step = (int(words[1]), int(words[2]))
            ring.at = f"at slice {step[0]}, k-step {step[1]}"
            ring.where = f"with {k_tiles} slice{'' if k_tiles == 1 else 's'}, {ring.at}"
        elif kind == "tile":
            ring.copy(int(words[1]), int(words[2]), int(words[3]))
        elif kind == "commit":
            ring.commit()
        elif kind == "wait":
            ring.wait(int(words[1]))
        elif kind == "sync":
            ring.sync()
        elif kind == "frag":
            buf, stage, kk = (int(w) for w in words[1:4])
            if buf not in (0, 1):
                raise Failure(f"{shown}: {ring.where}, load_fragments fills buffer {buf}; there are buffers 0 and 1.",
                              {"input": ring.where, "expected": "buffer 0 or 1", "got": buf})
            held = ring.read(stage, f"k-step {kk}'s fragments")
            buffers[buf] = (held, kk)
            loaded_at[buf] = t
        elif kind == "mma":
            d, a, b = (int(w) for w in words[1:4])
            ij = divmod(d // 4, frag_n) if d % 4 == 0 and 0 <= d < frag_m * frag_n * 4 else None
            ai = divmod(a // 4, frag_m) if a % 4 == 0 and 0 <= a < 2 * frag_m * 4 else None
            bj = divmod(b // 2, frag_n) if b % 2 == 0 and 0 <= b < 2 * frag_n * 2 else None
            if ij is None or ai is None or bj is None:
                bad = "d is not one of acc[i][j]" if ij is None else "a is not one of a_frag[buf][i]" \
                    if ai is None else "b is not one of b_frag[buf][j]"
                raise Failure(f"{shown}: {ring.where}, an mma_m16n8k16 is called where {bad}.",
                              {"input": ring.where, "expected": "acc[i][j], a_frag[buf][i], b_frag[buf][j]", "got": bad})
            g = step[0] * steps + step[1]
            first_mma.setdefault(g, t)
            for buf in (ai[0], bj[0]):
                if buffers[buf] is None:
                    raise Failure(f"{shown}: {ring.where}, an mma reads fragment buffer {buf}, which no load_fragments "
                                  "has filled.", {"input": ring.where, "expected": "a loaded buffer", "got": buf})
                if g > 0 and g - 1 in first_mma and loaded_at[buf] > first_mma[g - 1]:
                    raise Failure(f"{shown}: {ring.where}, the mma read fragments that were loaded after the previous "
                                  "k-step's mma had started: the loads of a k-step must go out while the k-step before "
                                  "it computes, into the other buffer, so that the mma never wait for shared memory "
                                  "(the fragment double buffer this rung is about).",
                                  {"input": ring.where, "expected": "fragments loaded one k-step ahead",
                                   "got": "loaded just before use"})
            sums[ij][((buffers[ai[0]], "A", ai[1]), (buffers[bj[0]], "B", bj[1]))] += 1
        elif kind == "end":
            for (i, j), got in sums.items():
                expected = Counter({(((s, kk), "A", i), ((s, kk), "B", j)): 1
                                    for s in range(k_tiles) for kk in range(steps)})
                if got != expected:
                    raise Failure(_explain_sums(i, j, expected, got, k_tiles, shown),
                                  {"input": {"slices": k_tiles, "acc": [i, j]}, "expected": "each k-step once",
                                   "got": sorted(map(str, (got - expected)))[:3]})
        else:
            raise ValueError(kind)


def _product(p: tuple) -> str:
    (a_held, _, i), (b_held, _, j) = p
    return (f"a_frag[{i}] of slice {a_held[0]}, k-step {a_held[1]} times b_frag[{j}] of slice {b_held[0]}, "
            f"k-step {b_held[1]}")


def _explain_sums(i: int, j: int, expected: Counter, got: Counter, k_tiles: int, shown: str) -> str:
    lines = [f"{shown}: with {k_tiles} slice{'' if k_tiles == 1 else 's'}, acc[{i}][{j}] does not end up as the sum over every k-step of "
             f"a_frag[{i}] times b_frag[{j}]."]
    missing, extra = expected - got, got - expected
    if missing:
        lines.append(f"Missing: {_product(sorted(missing)[0])} ({sum(missing.values())} products missing).")
    if extra:
        p = sorted(extra, key=str)[0]
        times = f" ({extra[p]} times too many)" if p in expected else ""
        lines.append(f"Instead it gets: {_product(p)}{times}.")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- 3. the counts

def _reference(compiled: Compiled) -> Counter:
    from ..library.build import compile_cuda
    from ..library.ladder import get

    module = compile_cuda(get("04").source, name_expressions=compiled.name_expressions, arch=compiled.arch)
    return opcode_counts(entry_ptx(module.ptx, module.lowered[compiled.name_expressions[0]]))


def structural(compiled: Compiled) -> str:
    from ..library.ladder.r04_mma_sync import tiles_for

    shown = display_path(compiled.path)
    tiles = tiles_for(compiled.target)
    notes = [check_loop(compiled, tiles, shown)]
    reference = _reference(compiled)
    for op, what in (("ldmatrix.sync.aligned.m8n8.x4.shared", "ldmatrix_x4 (A)"),
                     ("ldmatrix.sync.aligned.m8n8.x4.trans", "ldmatrix_x4_trans (B)"),
                     ("mma.sync.aligned.m16n8k16", "mma")):
        want, got = count(reference, op), count(compiled.opcodes, op)
        if got != want:
            raise Failure(f"{shown}: the kernel's PTX has {got} x {what}, the rung's kernel {want}: "
                          + ("fewer means a loop that is not unrolled (#pragma unroll) or fragments not loaded; "
                             if got < want else "more means fragments loaded or multiplied more than once; ")
                          + "the k-loop is unrolled, so every fragment load and mma of a slice is one instruction.",
                          {"input": op, "expected": want, "got": got})
    notes.append(f"per slice as many ldmatrix, ldmatrix.trans and mma.sync as the rung's kernel "
                 f"({count(reference, 'mma.sync')} mma.sync in its PTX)")
    return "\n- ".join(notes)


EXERCISE = KernelExercise(
    name="ex04_mma_sync",
    rung="04",
    description="mma.sync: write the ldmatrix and mma.sync inline asm and rung 04's double-buffered k-step "
                "(a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("ldmatrix", "no fragment is loaded from shared memory: ldmatrix_x4 and ldmatrix_x4_trans issue "
                            "nothing, or nothing calls them."),
        PtxRule("mma.sync", "the tensor cores multiply nothing: mma_m16n8k16 issues nothing, or nothing calls it, so "
                            "C stays zero."),
    ),
    structural=structural,
    asm=check_asm,
)
