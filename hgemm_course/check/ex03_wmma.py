"""Checker for ex03_wmma: the wmma load and multiply calls of rung 03's main loop.

The CPU part compares the learner's PTX with the rung's own kernel, compiled the same way (the same
instantiation, sized for the target checked on, and architecture):
per k-slice a warp must issue FRAG_M * BK / 16 ``wmma.load.a``, FRAG_N * BK / 16
``wmma.load.b`` and FRAG_M * FRAG_N * BK / 16 ``wmma.mma.sync`` (the kk, i and j loops are
unrolled, so the counts are the instructions in the PTX), reading shared memory with the
padded leading dimensions A_LD and B_LD.

Then it runs the learner's region on the CPU (:mod:`.host_model`) for two warps of a CTA and every
k-step of a slice, with stand-ins for ``wmma::fragment``, ``load_matrix_sync``, ``mma_sync`` and
``fill_fragment`` that print what they are given. A 16x16 fragment is defined by where it is loaded
from (the tile, the element offset, the leading dimension, the layout), and ``mma_sync(d, a, b, c)``
makes d the sum of c and the product a @ b: played through, each ``acc[i][j]`` must end up as what it
held plus, for every k-step kk, A rows ``warp_m * WM + 16 i ..`` (k ``16 kk ..``) times B columns
``warp_n * WN + 16 j ..`` (k rows ``16 kk ..``). A wrong pairing (``b_frag[i]`` for ``b_frag[j]``), a
wrong offset or a product twice fails here, on a laptop, naming the accumulator and the products.
"""
from __future__ import annotations

import re
from collections import Counter

from . import host_model
from .feedback import Failure
from .kernel_compile import count, entry_ptx, opcode_counts
from .kernel_exercise import Compiled, KernelExercise, PtxRule, display_path

_MOV_IMM = re.compile(r"mov\.[us]32\s+(%r\d+),\s*(\d+);")
_LOAD = re.compile(r"(wmma\.load\.[ab])\.sync\S*\s+\{[^}]*\},\s*\[[^\]]*\],\s*(%r\d+|\d+);")


def load_strides(ptx: str) -> dict[str, Counter]:
    """The leading dimensions (elements) the ``wmma.load.a`` / ``.b`` instructions use, where the
    PTX gives them as a constant (directly or through one ``mov``)."""
    constants = {reg: int(value) for reg, value in _MOV_IMM.findall(ptx)}
    out: dict[str, Counter] = {"wmma.load.a": Counter(), "wmma.load.b": Counter()}
    for op, stride in _LOAD.findall(ptx):
        value = int(stride) if stride.isdigit() else constants.get(stride)
        out[op][value] += 1
    return out


def _reference(compiled: Compiled) -> tuple[Counter, dict[str, Counter]]:
    """The rung's own kernel compiled as the learner's was: its opcode counts and load strides."""
    from ..library.build import compile_cuda
    from ..library.ladder import get

    module = compile_cuda(get("03").source, name_expressions=compiled.name_expressions, arch=compiled.arch)
    ptx = entry_ptx(module.ptx, module.lowered[compiled.name_expressions[0]])
    return opcode_counts(ptx), load_strides(ptx)


def structural(compiled: Compiled) -> str:
    from ..library.ladder.r03_wmma import PAD, tiles_for

    tiles = tiles_for(compiled.target)
    shown = display_path(compiled.path)
    ref_ops, ref_strides = _reference(compiled)
    frag_m, frag_n, steps = tiles.wm // 16, tiles.wn // 16, tiles.bk // 16
    expected = {"wmma.load.a": (ref_ops, f"FRAG_M x BK/16 = {frag_m} x {steps}: one A fragment per 16 rows of the "
                                         "warp tile per k-step"),
                "wmma.load.b": (ref_ops, f"FRAG_N x BK/16 = {frag_n} x {steps}: one B fragment per 16 columns of the "
                                         "warp tile per k-step"),
                "wmma.mma.sync": (ref_ops, f"FRAG_M x FRAG_N x BK/16 = {frag_m} x {frag_n} x {steps}: every "
                                           "(i, j) pair at every k-step")}
    for op, (ops, why) in expected.items():
        want, got = count(ops, op), count(compiled.opcodes, op)
        if got != want:
            raise Failure(f"{shown}: the main loop issues {got} x {op}, the rung's kernel {want} ({why}). "
                          + ("Fewer means some fragments or products are missing; " if got < want else
                             "More means fragments are loaded or multiplied more than once; ")
                          + "write the loops over i < FRAG_M and j < FRAG_N inside the kk loop, with #pragma unroll.",
                          {"input": op, "expected": want, "got": got})
    mine = load_strides(compiled.kernel_ptx)
    lds = {"wmma.load.a": ("A_LD", tiles.bk + PAD, "BK", tiles.bk), "wmma.load.b": ("B_LD", tiles.bn + PAD, "BN", tiles.bn)}
    for op, (name, value, unpadded, width) in lds.items():
        used = {s for s in mine[op] if s is not None}
        if used and used != {value} and set(ref_strides[op]) == {value}:
            extra = (f" {width} is {unpadded}, the unpadded width: the rows in shared memory are padded by {PAD} "
                     "halves, so every fragment row after the first would come from the wrong place."
                     if width in used else "")
            raise Failure(f"{shown}: {op} reads with leading dimension {sorted(used)}; the shared rows are {name} = "
                          f"{value} halves apart.{extra}", {"input": op, "expected": value, "got": sorted(used)})
    return (f"per k-slice: {count(compiled.opcodes, 'wmma.load.a')} A loads, {count(compiled.opcodes, 'wmma.load.b')} "
            f"B loads, {count(compiled.opcodes, 'wmma.mma.sync')} mma.sync, as in the rung's kernel; leading "
            f"dimensions {tiles.bk + PAD} and {tiles.bn + PAD} (padded); {fragment_model(compiled, tiles, shown)}")


# ------------------------------------------------------------------ the region on the CPU: the fragment model

def _program(compiled: Compiled, tiles, shown: str, warps: list[int]) -> str:
    from ..library.ladder.r03_wmma import PAD

    ((region, first),) = compiled.regions()
    return host_model.PRELUDE + f"""#include <cstdint>
using half = float;
constexpr int BM = {tiles.bm}, BN = {tiles.bn}, BK = {tiles.bk}, WM = {tiles.wm}, WN = {tiles.wn}, STAGES = {tiles.stages};
constexpr int THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, FRAG_M = WM / 16, FRAG_N = WN / 16;
constexpr int A_LD = BK + {PAD}, B_LD = BN + {PAD};
static half g_a[2 * BM * A_LD], g_b[2 * BK * B_LD];   // one stage of A and of B, with room past its end
static void where(const void* p) {{
    const char* c = static_cast<const char*>(p);
    const char* a = reinterpret_cast<const char*>(g_a);
    const char* b = reinterpret_cast<const char*>(g_b);
    if (c >= a && c < a + sizeof(g_a)) std::printf("A %ld", (long)((c - a) / (long)sizeof(half)));
    else if (c >= b && c < b + sizeof(g_b)) std::printf("B %ld", (long)((c - b) / (long)sizeof(half)));
    else std::printf("? 0");
}}
static long id(const void* p) {{ return (long)reinterpret_cast<uintptr_t>(p); }}
namespace nvcuda {{ namespace wmma {{
struct matrix_a {{}}; struct matrix_b {{}}; struct accumulator {{}}; struct row_major {{}}; struct col_major {{}};
enum layout_t {{ mem_row_major, mem_col_major }};
template <typename Use> constexpr const char* use_name() {{ return "c"; }}
template <> constexpr const char* use_name<matrix_a>() {{ return "a"; }}
template <> constexpr const char* use_name<matrix_b>() {{ return "b"; }}
template <typename L> constexpr int is_row() {{ return 1; }}
template <> constexpr int is_row<col_major>() {{ return 0; }}
template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {{ float x[8]; }};
template <typename Use, int M, int N, int K, typename T, typename L>
void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const half* p, unsigned ld) {{
    std::printf("load %s %ld %d %d %d ", use_name<Use>(), id(&f), M, N, K); where(p);
    std::printf(" %u %d\\n", ld, is_row<L>()); event_done();
}}
template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ld, layout_t) {{
    std::printf("loadc %ld\\n", id(&f)); event_done();
}}
template <int M, int N, int K, typename T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ld, layout_t) {{
    std::printf("store %ld\\n", id(&f)); event_done();
}}
template <int M, int N, int K, typename T, typename V>
void fill_fragment(fragment<accumulator, M, N, K, T>& f, V) {{ std::printf("fill %ld\\n", id(&f)); event_done(); }}
template <typename Fa, typename Fb, int M, int N, int K, typename T>
void mma_sync(fragment<accumulator, M, N, K, T>& d, const Fa& a, const Fb& b, const fragment<accumulator, M, N, K, T>& c) {{
    std::printf("mma %ld %ld %ld %ld\\n", id(&d), id(&a), id(&b), id(&c)); event_done();
}}
}} }}
using namespace nvcuda;
int main() {{
    const int warps[] = {{{", ".join(map(str, warps))}}};
    for (int warp : warps) {{
        const int tid = warp * 32, lane = 0, warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
        const int kt = 0, k_tiles = 1;
        (void)tid; (void)lane; (void)kt; (void)k_tiles;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FRAG_M][FRAG_N];
        std::printf("warp %d %d %d\\n", warp, warp_m, warp_n);
        for (int i = 0; i < FRAG_M; ++i)
            for (int j = 0; j < FRAG_N; ++j) std::printf("acc %d %d %ld\\n", i, j, id(&acc[i][j]));
        const half* a_tile = g_a;
        const half* b_tile = g_b;
        for (int kk = 0; kk < BK / 16; ++kk) {{
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a_frag[FRAG_M];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b_frag[FRAG_N];
            std::printf("step %d\\n", kk);
            for (int i = 0; i < FRAG_M; ++i) std::printf("frag a_frag[%d] %ld\\n", i, id(&a_frag[i]));
            for (int j = 0; j < FRAG_N; ++j) std::printf("frag b_frag[%d] %ld\\n", j, id(&b_frag[j]));
{host_model.region(region, first, shown)}
        }}
    }}
    return 0;
}}
"""


def _warps(tiles) -> list[int]:
    """Two warps whose warp_m and warp_n differ (the last row's first warp, the first row's last), so that a
    region that drops or swaps warp_m or warp_n loads some other warp's fragments."""
    warps_m, warps_n = tiles.bm // tiles.wm, tiles.bn // tiles.wn
    return sorted({(warps_m - 1) * warps_n, warps_n - 1})


def fragment_model(compiled: Compiled, tiles, shown: str) -> str:
    """Play the learner's region through the fragment model; a Failure at the first accumulator that ends
    up with other products than the kernel's, else the note for the pass."""
    from ..library.ladder.r03_wmma import PAD

    if len(compiled.regions()) != 1:
        return "the host model could not find your region; the GPU run decides"
    warps = _warps(tiles)
    try:
        lines = host_model.run(_program(compiled, tiles, shown, warps), shown)
    except host_model.ModelUnavailable as exc:
        return f"{exc}; the GPU run decides"
    a_ld, b_ld = tiles.bk + PAD, tiles.bn + PAD

    def play(lines: list[list[str]]) -> None:
        for warp, events in _by_warp(lines).items():
            _check_warp(warp, events, tiles, a_ld, b_ld, shown)
    host_model.parsed(play, lines, shown)     # a line the region printed of its own is a one-line FAIL
    return (f"the fragment model ran your region for warps {' and '.join(map(str, warps))} and every k-step: "
            "every acc[i][j] adds a_frag[i] @ b_frag[j], loaded from its rows and columns, once per k-step")


def _by_warp(lines: list[list[str]]) -> dict[tuple[int, int, int], list[list[str]]]:
    out: dict[tuple[int, int, int], list[list[str]]] = {}
    current: list[list[str]] = []
    for words in lines:
        if words and words[0] == "warp":
            current = out.setdefault(tuple(int(w) for w in words[1:4]), [])
        elif words:
            current.append(words)
    return out


def _check_warp(warp: tuple[int, int, int], events: list[list[str]], tiles, a_ld: int, b_ld: int, shown: str) -> None:
    number, warp_m, warp_n = warp
    names: dict[int, str] = {}
    accs: dict[tuple[int, int], int] = {}
    sums: dict[int, Counter] = {}      # accumulator address -> the products (and the starting value) it holds
    loaded: dict[int, tuple] = {}      # fragment address -> (use, tile, offset, ld, row major) of its last load
    kk = 0
    where = f"{shown}: warp {number} (warp_m = {warp_m}, warp_n = {warp_n})"
    for words in events:
        kind = words[0]
        if kind == "acc":
            i, j, address = int(words[1]), int(words[2]), int(words[3])
            accs[(i, j)] = address
            names[address] = f"acc[{i}][{j}]"
            sums[address] = Counter({("start", i, j): 1})
        elif kind == "step":
            kk = int(words[1])
        elif kind == "frag":
            names[int(words[2])] = words[1]
            loaded.pop(int(words[2]), None)   # a fragment declared afresh at every k-step holds nothing yet
        elif kind == "load":
            use, address, shape = words[1], int(words[2]), tuple(int(w) for w in words[3:6])
            loaded[address] = (use, words[6], int(words[7]), int(words[8]), int(words[9]), shape)
        elif kind == "fill":
            sums[int(words[1])] = Counter()
        elif kind in ("loadc", "store"):
            raise Failure(f"{where}, k-step {kk}: your region {'loads' if kind == 'loadc' else 'stores'} an "
                          "accumulator fragment; the main loop only loads A and B fragments and multiplies them "
                          "into acc (the epilogue stores acc).", {"input": {"warp": number, "kk": kk},
                                                                  "expected": "loads of A and B, mma_sync", "got": kind})
        elif kind == "mma":
            d, a, b, c = (int(w) for w in words[1:5])
            for address, what in ((a, "matrix_a"), (b, "matrix_b")):
                if address not in loaded:
                    raise Failure(f"{where}, k-step {kk}: mma_sync multiplies {names.get(address, 'a fragment')} "
                                  "before it is loaded at this k-step: load_matrix_sync every fragment first.",
                                  {"input": {"warp": number, "kk": kk}, "expected": f"a loaded {what}", "got": "unloaded"})
            if c not in sums:
                raise Failure(f"{where}, k-step {kk}: mma_sync adds to {names.get(c, 'a fragment')}, which is not "
                              "one of the warp's accumulators acc[i][j].",
                              {"input": {"warp": number, "kk": kk}, "expected": "acc[i][j]", "got": names.get(c)})
            sums[d] = sums[c] + Counter({(loaded[a], loaded[b]): 1})
    for (i, j), address in sorted(accs.items()):
        expected = Counter({("start", i, j): 1})
        for k in range(tiles.bk // 16):
            expected[(_a(warp_m, i, k, tiles, a_ld), _b(warp_n, j, k, tiles, b_ld))] += 1
        got = sums.get(address, Counter())
        if got != expected:
            raise Failure(_explain(where, i, j, expected, got, warp, tiles, a_ld, b_ld),
                          {"input": {"warp": number, "acc": [i, j]},
                           "expected": [_product(p, a_ld, b_ld) for p in sorted(expected - got, key=str)][:4],
                           "got": [_product(p, a_ld, b_ld) for p in sorted(got - expected, key=str)][:4]})


def _a(warp_m: int, i: int, kk: int, tiles, a_ld: int) -> tuple:
    return ("a", "A", (warp_m * tiles.wm + 16 * i) * a_ld + 16 * kk, a_ld, 1, (16, 16, 16))


def _b(warp_n: int, j: int, kk: int, tiles, b_ld: int) -> tuple:
    return ("b", "B", 16 * kk * b_ld + warp_n * tiles.wn + 16 * j, b_ld, 1, (16, 16, 16))


def _fragment(f: tuple, a_ld: int, b_ld: int) -> str:
    """``A rows 64-79, k 16-31`` for a fragment loaded from where the kernel's loads read."""
    use, tile, offset, ld, row_major, shape = f
    kind = {"a": "matrix_a", "b": "matrix_b"}.get(use, "accumulator")
    if shape != (16, 16, 16) or not row_major:
        return f"a {kind} fragment {shape[0]}x{shape[1]}x{shape[2]}{'' if row_major else ', col_major'} from {tile} {offset}"
    if tile == "?":
        return f"a {kind} fragment from outside the stage's A and B tiles"
    lead = {"A": a_ld, "B": b_ld}[tile]
    if ld != lead:
        return f"{tile} from element {offset} with leading dimension {ld} (its rows are {lead} apart)"
    row, col = divmod(offset, ld)
    if tile == "A":
        return f"A rows {row}-{row + 15}, k {col}-{col + 15}" + ("" if use == "a" else " (in a matrix_b fragment)")
    return f"B k {row}-{row + 15}, columns {col}-{col + 15}" + ("" if use == "b" else " (in a matrix_a fragment)")


def _product(p: tuple, a_ld: int, b_ld: int) -> str:
    if p[0] == "start":
        return f"what acc[{p[1]}][{p[2]}] held before the slice"
    return f"{_fragment(p[0], a_ld, b_ld)} times {_fragment(p[1], a_ld, b_ld)}"


def _named(p: tuple, warp_m: int, warp_n: int, tiles, a_ld: int, b_ld: int) -> str:
    """`` (a_frag[0] @ b_frag[1] at k-step 2)``: the kernel's names for the fragments of product ``p``, where
    they are fragments of this warp."""
    if p[0] == "start":
        return ""
    names = []
    for f, frags, make, frag in ((p[0], tiles.wm // 16, lambda n, k: _a(warp_m, n, k, tiles, a_ld), "a_frag"),
                                  (p[1], tiles.wn // 16, lambda n, k: _b(warp_n, n, k, tiles, b_ld), "b_frag")):
        found = [(n, k) for n in range(frags) for k in range(tiles.bk // 16) if make(n, k) == f]
        names.append(f"{frag}[{found[0][0]}] of k-step {found[0][1]}" if found else None)
    return f" ({names[0]} @ {names[1]})" if all(names) else ""


def _explain(where: str, i: int, j: int, expected: Counter, got: Counter, warp: tuple, tiles, a_ld: int,
             b_ld: int) -> str:
    _, warp_m, warp_n = warp
    missing, extra = expected - got, got - expected
    lines = [f"{where}: after the k-slice acc[{i}][{j}] does not hold what the kernel's does."]
    if ("start", i, j) in missing:
        lines.append(f"It lost what it held before the slice (a fill_fragment, or an mma_sync whose c is not "
                     f"acc[{i}][{j}]): the sum over K must go on from slice to slice.")
    for p in sorted(missing, key=str):
        if p[0] != "start":
            lines.append(f"Missing: {_product(p, a_ld, b_ld)}{_named(p, warp_m, warp_n, tiles, a_ld, b_ld)}.")
            break
    for p in sorted(extra, key=str):
        times = f" ({extra[p]} times too many)" if p in expected else ""
        lines.append(f"Instead it gets: {_product(p, a_ld, b_ld)}{_named(p, warp_m, warp_n, tiles, a_ld, b_ld)}{times}.")
        break
    lines.append("acc[i][j] is C's rows warp_m * WM + 16 i .. and columns warp_n * WN + 16 j ..: at every k-step it "
                 "adds a_frag[i] (those rows of A) times b_frag[j] (those columns of B).")
    return "\n".join(lines)


EXERCISE = KernelExercise(
    name="ex03_wmma",
    rung="03",
    description="wmma: load a warp's A and B fragments and multiply them in rung 03's main loop (a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("wmma.mma.sync", "the main loop multiplies nothing on the tensor cores, so C stays zero."),
        PtxRule("wmma.load.a", "no A fragment is loaded from shared memory."),
        PtxRule("wmma.load.b", "no B fragment is loaded from shared memory."),
    ),
    structural=structural,
)
