"""Checker for ex11_tile_loop: rung 11's persistent tile loops, written by the learner.

Besides compiling and reading the PTX, the checker runs the learner's two loops on the CPU
(:mod:`.host_model`) with the file's own ``tile_of``, for every CTA of several persistent grids
(more and fewer clusters than tiles, grids with partial edge super tiles), printing the cluster
tiles each loop visits. Each CTA's list must be rung 11's (:func:`.ex11_persistent.reference_tiles`
over the grid of cluster tiles): producer and consumers alike, both CTAs of a cluster alike, every
tile once over the whole grid, holes skipped, in launch order. The extra question,
``last_round_busy_ctas``, is evaluated over its domain.
"""
from __future__ import annotations

import re
from . import host_model
from .ex11_persistent import reference_tiles
from .feedback import Failure
from .kernel_exercise import Compiled, KernelExercise, PtxRule, display_path

# (grid_m, grid_n, CTAs): grids of partial edge super tiles, one cluster alone, more clusters than tiles,
# and 8192^3 on the H200
CASES = ((9, 7, 8), (5, 3, 2), (3, 2, 132), (37, 11, 20), (64, 32, 132))
EXTRA_TILES, EXTRA_CTAS = range(1, 161), range(1, 141)
_TILE_OF = re.compile(r"template <int SUPER_M, int SUPER_N>\s*\n__host__ __device__ constexpr int2 tile_of\(.*?\n}\n",
                      re.S)


def _rung():
    from ..library.ladder import r11_persistent as r11

    return r11


def _program(compiled: Compiled, shown: str) -> str:
    r11 = _rung()
    t = r11.TILES
    tile_of = _TILE_OF.search(compiled.text)
    if tile_of is None:
        raise host_model.ModelUnavailable("the host model could not find tile_of in your file")
    (producer, first_p), (consumer, first_c), (extra, first_e) = compiled.regions()
    cases = ", ".join(f"{{{m}, {n}, {c}}}" for m, n, c in CASES)
    walk = """static void walk_{who}(int cta, int ctas, int grid_m, int grid_n) {{
    const Dim blockIdx = {{cta, 0, 0}}, gridDim = {{ctas, 1, 1}};
    const int grid_cm = cdiv(grid_m, CLUSTER_M);
    const int tiles = cdiv(grid_cm, SUPER_CM) * cdiv(grid_n, SUPER_N) * SUPER_CM * SUPER_N;
    const int k_tiles = 4, rank = cta % CLUSTER_M, tid = 0, lane = 0, warp = 0;
    const int cluster = blockIdx.x / CLUSTER_M, clusters = gridDim.x / CLUSTER_M;
    int it = 0;
    std::printf("{who} %d %d %d %d", cta, ctas, grid_m, grid_n);
{region}
        std::printf(" %d,%d", tile.x, tile.y);
        event_done();
    }}
    std::printf("\\n");
}}
"""
    return host_model.PRELUDE + f"""
struct Dim {{ int x, y, z; }};
{tile_of.group(0)}
{host_model.region(extra, first_e, shown)}
constexpr int BM = {t.bm}, BN = {t.bn}, BK = {t.bk}, STAGES = {t.stages}, CONSUMERS = {r11.CONSUMERS};
constexpr int SUPER_M = {r11.SUPER[0]}, SUPER_N = {r11.SUPER[1]}, CLUSTER_M = {r11.CLUSTER_M};
constexpr int SUPER_CM = SUPER_M / CLUSTER_M;
{walk.format(who="producer", region=host_model.region(producer, first_p, shown))}
{walk.format(who="consumer", region=host_model.region(consumer, first_c, shown))}
int main() {{
    const int cases[][3] = {{{cases}}};
    for (const auto& c : cases)
        for (int cta = 0; cta < c[2]; ++cta) {{
            walk_producer(cta, c[2], c[0], c[1]);
            walk_consumer(cta, c[2], c[0], c[1]);
        }}
    for (int tiles = {EXTRA_TILES.start}; tiles < {EXTRA_TILES.stop}; ++tiles)
        for (int ctas = {EXTRA_CTAS.start}; ctas < {EXTRA_CTAS.stop}; ++ctas)
            std::printf("extra %d %d %d\\n", tiles, ctas, last_round_busy_ctas(tiles, ctas));
    return 0;
}}
"""


def _short(tiles: list) -> str:
    shown = ", ".join(f"({m}, {n})" for m, n in tiles[:8])
    return f"[{shown}{', ...' if len(tiles) > 8 else ''}] ({len(tiles)} tiles)"


def check_walks(lines: list[list[str]], shown: str) -> None:
    """Each case's walks against rung 11's; a Failure naming the first cluster and tile that differ."""
    r11 = _rung()
    cm, super_cm, super_n = r11.CLUSTER_M, r11.SUPER[0] // r11.CLUSTER_M, r11.SUPER[1]
    walks: dict[tuple, list] = {}
    for words in lines:
        if words[0] in ("producer", "consumer"):
            key = (words[0], *map(int, words[1:5]))
            walks[key] = [tuple(map(int, w.split(","))) for w in words[5:]]
    for grid_m, grid_n, ctas in CASES:
        grid_cm, clusters = -(-grid_m // cm), ctas // cm
        case = f"a {grid_m} x {grid_n} grid of tiles ({grid_cm} x {grid_n} cluster tiles) on {ctas} CTAs ({clusters} clusters)"
        for cta in range(ctas):
            producer = walks[("producer", cta, ctas, grid_m, grid_n)]
            consumer = walks[("consumer", cta, ctas, grid_m, grid_n)]
            if producer != consumer:
                raise Failure(f"{shown}: on {case}, CTA {cta}'s producer walks {_short(producer)} but its consumers "
                              f"walk {_short(consumer)}. The ring pairs the producer's slices with the consumers' in "
                              "order: they compute the wrong tile's data, or wait for slices never loaded (a hang).",
                              {"input": {"case": case, "cta": cta}, "expected": producer, "got": consumer})
        for cta in range(ctas):
            mine, first = walks[("producer", cta, ctas, grid_m, grid_n)], walks[("producer", cta - cta % cm, ctas, grid_m, grid_n)]
            if mine != first:
                raise Failure(f"{shown}: on {case}, the two CTAs of cluster {cta // cm} walk different tiles: each "
                              "multicasts half of B's panels into both, so both must compute the same cluster tile "
                              "at the same time. Walk by cluster, not by CTA.",
                              {"input": {"case": case, "cluster": cta // cm}, "expected": "the same walk",
                               "got": [first[:4], mine[:4]]})
        owner: dict[tuple, int] = {}
        for cluster in range(clusters):
            walk = walks[("producer", cluster * cm, ctas, grid_m, grid_n)]
            for tile in walk:
                if not (0 <= tile[0] < grid_cm and 0 <= tile[1] < grid_n):
                    raise Failure(f"{shown}: on {case}, cluster {cluster} computes cluster tile {tile}, outside the "
                                  f"{grid_cm} x {grid_n} grid: a position of a partial edge super tile. Its loads "
                                  "arrive as zeros and its stores are clipped, so it only wastes a turn of the ring; "
                                  "skip such positions.", {"input": {"case": case, "cluster": cluster},
                                                          "expected": "tiles inside the grid", "got": tile})
                if tile in owner:
                    who = (f"twice by cluster {cluster}" if owner[tile] == cluster else
                           f"by cluster {owner[tile]} and by cluster {cluster}")
                    raise Failure(f"{shown}: on {case}, cluster tile {tile} is computed {who}. The clusters must "
                                  "share the positions out, each position to one cluster, once.", {"input": {"case": case, "tile": tile},
                                                     "expected": "one cluster", "got": [owner[tile], cluster]})
                owner[tile] = cluster
        missing = [(m, n) for m in range(grid_cm) for n in range(grid_n) if (m, n) not in owner]
        if missing:
            raise Failure(f"{shown}: on {case}, no cluster computes cluster tile {missing[0]} "
                          f"({len(missing)} tiles in all): those tiles of C are never written.",
                          {"input": {"case": case}, "expected": "every tile", "got": f"{len(missing)} missing"})
        for cluster in range(clusters):
            walk = walks[("producer", cluster * cm, ctas, grid_m, grid_n)]
            expected = reference_tiles(cluster, clusters, grid_cm, grid_n, super_cm, super_n)
            if walk != expected:
                raise Failure(f"{shown}: on {case}, cluster {cluster} walks {_short(walk)}; rung 11's walk is "
                              f"{_short(expected)}: every tile once, but not in the order that keeps neighbouring "
                              "clusters on neighbouring tiles (rung 06's launch order, shared out round-robin).",
                              {"input": {"case": case, "cluster": cluster}, "expected": expected[:8], "got": walk[:8]})


def check_extra(lines: list[list[str]], shown: str) -> None:
    for words in lines:
        if words[0] == "extra":
            tiles, ctas, got = map(int, words[1:])
            expected = tiles - (-(-tiles // ctas) - 1) * ctas
            if got != expected:
                raise Failure(f"{shown}: last_round_busy_ctas(tiles={tiles}, ctas={ctas}) = {got}, expected {expected}.",
                              {"input": {"tiles": tiles, "ctas": ctas}, "expected": expected, "got": got})


def structural(compiled: Compiled) -> str:
    shown = display_path(compiled.path)
    if len(compiled.regions()) != 3:
        return "the host model could not find your three regions; the GPU run decides"
    try:
        lines = host_model.run(_program(compiled, shown), shown)
    except host_model.ModelUnavailable as exc:
        return f"{exc}; the GPU run decides"
    host_model.parsed(lambda ls: check_walks(ls, shown), lines, shown)
    extra = compiled.extra_question("last_round_busy_ctas",
                                    lambda: host_model.parsed(lambda ls: check_extra(ls, shown), lines, shown))
    return (f"the host model walked your loops for every CTA of {len(CASES)} persistent grids: producer and "
            f"consumers alike, both CTAs of a cluster alike, every tile once in rung 11's order; {extra}")


EXERCISE = KernelExercise(
    name="ex11_tile_loop",
    rung="11",
    description="Tile loop: rung 11's persistent walk over the output tiles (a .cu kernel exercise).",
    ptx_rules=(
        PtxRule("wgmma.mma_async", "no product is issued: keep the consumers' main loop as the exercise gave it."),
        PtxRule("cp.async.bulk.tensor", "no TMA copy is issued: keep the producer's loads as the exercise gave it."),
    ),
    structural=structural,
)
