"""Rung 11 (persistent grid, TMA-store epilogue) compiles for sm_90a (NVRTC and nvcc) without spills,
contains the instructions it teaches (TMA both ways, stmatrix, named barriers), sizes its grid by
the GPU, walks the tiles in rung 06's order (its C++ decode run on the host against sim.raster),
refuses what it cannot do, and differs from rung 10 by its idea."""
from __future__ import annotations

import difflib
import re
import shutil
import subprocess

import pytest

from hgemm_course.check.generate import without_markers
from hgemm_course.library.ladder import get, r10_warp_specialized, r11_persistent, registry
from hgemm_course.library.ladder.nvrtc_kernel import cdiv
from hgemm_course.library.target import RECORDED
from hgemm_course.library.ladder.r10_warp_specialized import WarpSpecializedTiles
from hgemm_course.library.paths import KERNELS_DIR, PTX_SNIPPETS_DIR
from hgemm_course.sim.raster import cta_order

SMEM_PER_CTA_OPTIN = RECORDED.smem_per_block

VARIANTS = [r11_persistent.TILES, WarpSpecializedTiles(256, 128, 64, 3), WarpSpecializedTiles(128, 128, 64, 4)]
CASES = [(t, c) for t in VARIANTS for c in (1, 2)]


@pytest.fixture(scope="module", params=CASES, ids=lambda tc: f"{tc[0].bm}x{tc[0].bn}s{tc[0].stages}c{tc[1]}")
def compiled(request):
    tiles, cluster_m = request.param
    k = r11_persistent.kernel(tiles, cluster_m=cluster_m)
    return k, k.compile()


def c_panel_bytes(t: WarpSpecializedTiles) -> int:
    """Two (bm / 2, 64) fp16 panel buffers per consumer (one when bn = 64), written independently of the kernel."""
    return 2 * min(2, t.bn // 64) * (t.bm // 2) * 64 * 2


def test_rung_11_is_registered():
    rung = registry()["11"]
    assert rung.backend == "nvrtc" and rung.kernel_path.is_file() and rung.arch == "sm_90a"
    assert rung.name_expressions == (r11_persistent.kernel().name_expression,)
    assert rung.extra["smem_bytes"] == r11_persistent.kernel().smem_bytes
    assert r11_persistent.kernel().threads == 384


def test_shared_memory_is_the_ring_plus_the_c_buffer(compiled):
    k, _ = compiled
    t = next(v for v in VARIANTS if k.template_args[:4] == v.template_args)
    dense = t.stages * (t.bm * t.bk + t.bk * t.bn) * 2 + c_panel_bytes(t)
    assert k.smem_bytes == -(-(1024 + dense + 16 * t.stages) // 1024) * 1024 <= SMEM_PER_CTA_OPTIN


def test_no_spills(compiled):
    k, mod = compiled
    res = mod.resources_of(k.name_expression)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert res.smem_static == 0
    assert res.registers == 168


def test_setmaxnreg_honoured_and_wgmma_asynchronous(compiled):
    _, mod = compiled
    assert "C7508" not in mod.log and "setmaxnreg" not in mod.log, mod.log
    assert "serialized" not in mod.log, mod.log


def test_ptx_contains_what_the_rung_teaches(compiled):
    k, mod = compiled
    bn = k.template_args[1]
    for text in (f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.f16.f16",
                 f"setmaxnreg.dec.sync.aligned.u32 {r10_warp_specialized.PRODUCER_REGS}",
                 f"setmaxnreg.inc.sync.aligned.u32 {r10_warp_specialized.CONSUMER_REGS}",
                 "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx",
                 "cp.async.bulk.tensor.2d.shared::cluster.global",        # the loads: global -> shared
                 "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",  # the stores: shared -> global
                 "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read 0",
                 "stmatrix.sync.aligned.m8n8.x4.shared.b16", "fence.proxy.async.shared::cta"):
        assert text in mod.ptx, f"no {text} in the PTX of {k.name_expression}"
    for text in ("ldmatrix", "mma.sync", "cp.async.cg", "st.global"):
        assert text not in mod.ptx, f"{text} should be gone from the PTX of {k.name_expression}"
    clustered = ("multicast::cluster", "mbarrier.arrive.shared::cluster.b64", "mapa.shared::cluster",
                 "%cluster_ctarank", "barrier.cluster.arrive", "barrier.cluster.wait")
    for text in clustered:
        assert (text in mod.ptx) == (k.template_args[6] == 2), f"{text} in the PTX of {k.name_expression}"
    if k.template_args[6] == 2:                           # B's panels: half of them per CTA, multicast to both
        loads = [line for line in mod.ptx.splitlines() if "cp.async.bulk.tensor.2d.shared::cluster.global" in line]
        assert any("multicast::cluster" in line for line in loads)
        assert not any("multicast::cluster" in line for line in loads if "%rs" not in line.split("]")[-1])


def test_stores_one_box_per_64_column_panel(compiled):
    """bn / 64 TMA stores of (bm / 2, 64) per consumer, one per panel, each after its panel's stmatrix.x4 (4 per
    product and panel). The epilogue is inlined at least twice: the panels stored under the next tile's slices,
    and all of them after the CTA's last tile (the compiler may copy a panel's branch once more)."""
    k, mod = compiled
    stores = [line for line in mod.ptx.splitlines() if "global.shared::cta.bulk_group" in line]
    stmatrix = [line for line in mod.ptx.splitlines() if "stmatrix.sync" in line]
    bm, bn = k.template_args[:2]
    assert len(stores) >= 2 * (bn // 64)
    assert len(stmatrix) == len(stores) * (bm // 128) * 4          # FRAG_M products x 4 pieces per panel


@pytest.mark.parametrize("cluster_m", [1, 2])
def test_only_named_barriers_inside_the_persistent_loop(cluster_m):
    """One CTA-wide barrier after the mbarriers are set up (bar.sync 0, or for a cluster the cluster
    barrier, which also closes the kernel); the consumers meet among themselves with named barriers,
    two per 64-column panel of the epilogue (which is inlined at least twice: under the next tile's slices and
    after the last tile), never with the producer."""
    ptx = r11_persistent.kernel(cluster_m=cluster_m).compile().ptx
    barriers = [b.strip() for b in re.findall(r"\bbar(?:rier)?\.sync\s+([^;]+);", ptx)]
    assert barriers.count("0") == (1 if cluster_m == 1 else 0), barriers
    named = [b for b in barriers if b != "0"]
    stores = [line for line in ptx.splitlines() if "global.shared::cta.bulk_group" in line]
    assert len(named) == 2 * len(stores) >= 2 * 2 * r11_persistent.TILES.bn // 64, barriers
    assert ptx.count("barrier.cluster.wait") == (0 if cluster_m == 1 else 2)


# ------------------------------------------------------------------ the persistent grid

@pytest.mark.parametrize("cluster_m", [1, 2])
@pytest.mark.parametrize("shape, sms, expected", [
    ((8192, 8192), 132, 132),        # 64 x 32 tiles: one CTA per SM, each walks 15 or 16 tiles
    ((4096, 4096), 132, 132),        # 32 x 16 = 512 tiles
    ((2048, 2048), 132, 128),        # 16 x 8 tiles: 4 super tiles of 16 x 2, one tile per CTA
    ((1000, 1000), 132, 64),         # 8 x 4 tiles: 2 super tiles of 16 x 2 positions, half past the edge
    ((8192, 128), 132, 128),         # 64 x 1 tiles: 4 super tiles, half of each past the edge
    ((128, 256), 132, 32),           # one tile, one super tile of 32 positions
    ((8192, 8192), 114, 114),        # an H100 PCIe
])
def test_grid_is_the_launch_positions_capped_at_ctas_that_fit(shape, sms, expected, cluster_m):
    """With clusters of 2 the positions are pairs of tile rows (super tiles of 8 x 2 pairs), so the counts
    in CTAs come out the same here; the grid is whole clusters."""
    M, N = shape
    positions = r11_persistent.launch_positions(M, N, cluster_m=cluster_m)
    grid = r11_persistent.persistent_grid(M, N, sms, cluster_m=cluster_m)
    assert grid == (min(positions, sms * r11_persistent.CTAS_PER_SM),) == (expected,)
    assert grid[0] % cluster_m == 0


@pytest.mark.parametrize("resident, max_ctas, expected", [(131, None, 130), (132, 3, 2), (132, 1, 2), (7, None, 6)])
def test_cluster_grid_is_whole_clusters(resident, max_ctas, expected):
    """An odd count of resident CTAs or of asked-for CTAs rounds down to whole clusters (at least one)."""
    assert r11_persistent.persistent_grid(8192, 8192, resident, max_ctas=max_ctas, cluster_m=2) == (expected,)


def test_one_cta_per_sm_by_registers_and_shared_memory():
    t = r11_persistent.TILES
    assert r11_persistent.CTAS_PER_SM == 1
    assert 2 * (r11_persistent.THREADS * 168) > 65536                      # registers: a second CTA does not fit
    assert 2 * r11_persistent.smem_bytes(t) > 228 * 1024                    # nor does its shared memory


@pytest.mark.parametrize("shape", [(8192, 8192), (1000, 1000), (257, 136), (4096, 2048), (8192, 128), (128, 256),
                                   (384, 512)])
@pytest.mark.parametrize("sms", [132, 7])
@pytest.mark.parametrize("cluster_m", [1, 2])
def test_every_tile_once_and_in_launch_order(shape, sms, cluster_m):
    """The CTAs' tile lists together are every tile once. Without clusters CTA b's i-th tile is launch
    position b + i * grid of rung 06's order; with clusters of 2, CTA b takes row b % 2 of the cluster
    tile at position b // 2 + i * grid / 2 of that order over the grid of (256, 256) cluster tiles
    (a row past the grid, when grid_m is odd, is computed on zeros and stored nowhere)."""
    M, N = shape
    (grid,) = r11_persistent.persistent_grid(M, N, sms, cluster_m=cluster_m)
    per_cta = [r11_persistent.cta_tiles(b, grid, M, N, cluster_m=cluster_m) for b in range(grid)]
    flat = [tile for tiles in per_cta for tile in tiles]
    grid_m, grid_n = cdiv(M, 128), cdiv(N, 256)
    assert sorted(flat) == [(m, n) for m in range(grid_m) for n in range(grid_n)]
    order = cta_order("supertile", cdiv(grid_m, cluster_m), grid_n, super_m=16 // cluster_m, super_n=2)
    clusters = grid // cluster_m
    for b in (0, 1, grid - 1):
        expected = [(int(order[t][0]) * cluster_m + b % cluster_m, int(order[t][1]))
                    for t in range(b // cluster_m, len(order), clusters) if order[t][0] >= 0]
        assert per_cta[b] == [tile for tile in expected if tile[0] < grid_m]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_kernel_tile_of_matches_the_raster_simulator(tmp_path):
    """The kernel's own tile_of (__host__ __device__), compiled into a host program and run here, decodes
    every launch position as sim.raster's supertile order does, holes (-1, -1 there) included."""
    cases = [(64, 32, 16, 2), (8, 4, 16, 2), (3, 1, 16, 2), (13, 7, 8, 4), (5, 9, 1, 1), (64, 1, 16, 2)]
    program = tmp_path / "tile_of.cu"
    body = "\n".join(
        f"    for (int t = 0; t < {cdiv(gm, sm) * cdiv(gn, sn) * sm * sn}; ++t) {{\n"
        f"        const int2 b = tile_of<{sm}, {sn}>(t, {gm}, {gn});\n"
        f"        std::printf(\"{i} %d %d\\n\", b.x < {gm} && b.y < {gn} ? b.x : -1, b.x < {gm} && b.y < {gn} ? b.y : -1);\n"
        f"    }}" for i, (gm, gn, sm, sn) in enumerate(cases))
    program.write_text(f'#include <cstdio>\n#include "k11_persistent.cu"\nint main() {{\n{body}\n    return 0;\n}}\n')
    exe = tmp_path / "tile_of"
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", f"-I{PTX_SNIPPETS_DIR}", f"-I{KERNELS_DIR}",
           str(program), "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True).stdout.split("\n")
    rows = [tuple(map(int, line.split())) for line in out if line]
    for i, (gm, gn, sm, sn) in enumerate(cases):
        got = [(m, n) for case, m, n in rows if case == i]
        assert got == [tuple(map(int, p)) for p in cta_order("supertile", gm, gn, super_m=sm, super_n=sn)], cases[i]


# ------------------------------------------------------------------ refusals

@pytest.mark.parametrize("tiles, match", [
    (WarpSpecializedTiles(128, 256, 64, 5), "and the 32768-byte C panel buffers need"),
    (WarpSpecializedTiles(256, 128, 64, 4), "and the 65536-byte C panel buffers need"),
    (WarpSpecializedTiles(256, 256, 64, 3), "over the 232448 bytes"),
    (WarpSpecializedTiles(64, 256, 64, 3), "bm=64: each of the 2 consumer warpgroups"),
    (WarpSpecializedTiles(128, 256, 64, 2), "at least 3 stages"),
    (WarpSpecializedTiles(128, 256, 32, 3), "bk must be 64"),
])
def test_refuses_tiles_it_cannot_do(tiles, match):
    with pytest.raises(ValueError, match=match):
        r11_persistent.kernel(tiles)


@pytest.mark.parametrize("kwargs, match", [
    ({"cluster_m": 3}, "cluster_m=3: the kernel pairs CTAs along M"),
    ({"cluster_m": 2, "super_mn": (1, 1)}, "super tile's 1 rows must hold whole clusters"),
    ({"cluster_m": 2, "tiles": WarpSpecializedTiles(128, 64, 64, 4)}, "B's 1 panels of 64 columns"),
])
def test_refuses_clusters_it_cannot_do(kwargs, match):
    with pytest.raises(ValueError, match=match):
        r11_persistent.kernel(**kwargs)


def test_refuses_sizes_with_the_fix():
    with pytest.raises(ValueError, match="N=129 is not a multiple of 8"):
        get("11").check_shape(257, 129, 64)
    with pytest.raises(ValueError, match="K=1001 is not a multiple of 8"):
        get("11").check_shape(256, 256, 1001)


# ------------------------------------------------------------------ nvcc, standalone

@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_compiles_standalone_with_nvcc(tmp_path):
    k = r11_persistent.kernel()
    wrapper = tmp_path / "instantiate_k11.cu"
    wrapper.write_text(f'#include "{k.source}"\n'
                       f"template __global__ void {k.name_expression}(const half*, const half*, half*, int, int, int, "
                       "const __grid_constant__ TensorMap, const __grid_constant__ TensorMap, "
                       "const __grid_constant__ TensorMap);\n")
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", f"-I{PTX_SNIPPETS_DIR}",
           f"-I{KERNELS_DIR}", "-Xptxas", "-v", "-c", str(wrapper), "-o", str(tmp_path / "k11.o")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in done.stderr
    assert "Used 168 registers" in done.stderr and "C7508" not in done.stderr


# ------------------------------------------------------------------ a rung is a diff

def body(path) -> list[str]:
    text = without_markers(path.read_text())         # the exercises' region markers are no rung's idea
    text = text[text.index("#include"):]
    return text.replace(path.stem, "KERNEL").splitlines()


def test_10_to_11_keeps_the_loads_descriptors_and_main_loop():
    """The diff is the tile loop, the ring counter that runs on across tiles, and the epilogue."""
    old, new = body(KERNELS_DIR / r10_warp_specialized.SOURCE), body(KERNELS_DIR / r11_persistent.SOURCE)
    changed = [line for line in difflib.unified_diff(old, new, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    # the consumer loop moves one level in; clusters; the C panel buffers in the shared-memory struct;
    # the epilogue deferred under the next tile's first slice
    assert 0 < len(changed) <= 250, "\n".join(changed)

    def block(lines, start, end):
        i = next(n for n, line in enumerate(lines) if start in line)
        j = next(n for n, line in enumerate(lines[i:], i) if end in line)
        return [line.strip() for line in lines[i:j]]
    for start, end in (("constexpr int THREADS", "constexpr int B_PANEL"), ("auto desc_a", "    };"),
                       ("auto desc_b", "    };"), ("mbar_init(smem_u32(&ring.full", "mbar_init(smem_u32(&ring.empty")):
        assert block(old, start, end) == block(new, start, end), start
    decode_10 = [line.split("//")[0].strip().removeprefix("const int ") for line in old
                 if line.strip().startswith(("const int sb", "const int in_sb"))]
    decode_11 = [line.split("//")[0].strip().removeprefix("const int ") for line in new
                 if line.strip().startswith(("const int sb", "const int in_sb"))]
    assert [d.replace("blockIdx.x", "t") for d in decode_10] == decode_11


# ------------------------------------------------------------------ snippets

def test_store_and_cluster_snippets_compile_to_their_instructions():
    """Every new snippet compiles for sm_90a and emits its one instruction (the cluster ones on their own,
    not only inside rung 11)."""
    from hgemm_course.library.build import compile_cuda

    src = ('#include "cluster.cuh"\n#include "fence.cuh"\n#include "mbarrier.cuh"\n#include "stmatrix.cuh"\n'
           '#include "tma.cuh"\n'
           'extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const __grid_constant__ TensorMap map, unsigned* out) {\n'
           '    __shared__ __align__(1024) unsigned char buf[2048];\n'
           '    __shared__ unsigned long long bar;\n'
           '    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(buf));\n'
           '    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));\n'
           '    stmatrix_x4(s + threadIdx.x * 16, 1, 2, 3, 4);\n'
           '    stmatrix_x4_trans(s + threadIdx.x * 16, 5, 6, 7, 8);\n'
           '    fence_proxy_async_shared_cta();\n'
           '    named_barrier_sync(1, 32);\n'
           '    if (threadIdx.x == 0) {\n'
           '        tma_store_2d(&map, s, 64, 8);\n'
           '        tma_store_commit();\n'
           '        tma_store_wait_read<0>();\n'
           '        tma_load_2d_multicast(s, &map, 0, 0, b, 0x3);\n'
           '        mbar_arrive_cluster(b, cluster_ctarank() ^ 1);\n'
           '        out[0] = cluster_map_shared(s, 1);\n'
           '    }\n'
           '    cluster_arrive();\n'
           '    cluster_wait();\n}\n')
    ptx = compile_cuda(src).ptx
    for text in ("stmatrix.sync.aligned.m8n8.x4.shared.b16", "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                 "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.commit_group",
                 "cp.async.bulk.wait_group.read 0", "fence.proxy.async.shared::cta", "bar.sync",
                 ".multicast::cluster", "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64",
                 "%cluster_ctarank", "barrier.cluster.arrive.release.aligned", "barrier.cluster.wait.acquire.aligned"):
        assert text in ptx, f"no {text} in the snippets' PTX"


# ------------------------------------------------------------------ the ring across tiles, modelled

def run_ring(stages: int, tiles: int, k_tiles: int, seed: int, warps: int = 8, reset_per_tile: bool = False) -> int:
    """The kernel's full/empty protocol with its own index arithmetic, every consumer warp an actor of its
    own, TMA completing loads in any order, actors stepped in a random order. Raises on a deadlock, on a
    load into a stage some warp still reads, or on a warp reading the wrong slice; returns the steps.
    ``reset_per_tile`` restarts the slice counter at each tile: the bug this rung invites."""
    import random

    rng = random.Random(seed)
    full_phase, empty_phase, empty_count = [0] * stages, [0] * stages, [0] * stages
    data = [None] * stages                   # the slice each stage holds once its load has landed
    owner = [None] * stages                  # the slice last loaded into each stage
    released = {}                            # slice -> consumer warps done with it
    in_flight = []                           # (stage, slice) loads issued, not landed

    def done(phase, parity):                 # mbarrier.try_wait.parity: the phase of that parity completed
        return phase % 2 != parity

    def arrive_empty(stage, slice_):
        released[slice_] = released.get(slice_, 0) + 1
        empty_count[stage] += 1
        if empty_count[stage] == warps:      # mbar_init(empty_bar, (THREADS - 128) / 32)
            empty_count[stage] = 0
            empty_phase[stage] += 1

    def producer():
        it = g = 0                           # it: the kernel's counter; g: which slice this really is
        for _ in range(tiles):
            it = 0 if reset_per_tile else it
            for _kt in range(k_tiles):
                while it >= stages and not done(empty_phase[it % stages], (it // stages - 1) % 2):
                    yield False
                s = it % stages
                assert owner[s] is None or released.get(owner[s], 0) == warps, f"slice {g} overwrites a stage in use"
                owner[s] = g
                in_flight.append((s, g))
                it, g = it + 1, g + 1
                yield True

    def consumer_warp(w):
        it = g = 0
        for _ in range(tiles):
            it = 0 if reset_per_tile else it
            for kt in range(k_tiles):
                while not done(full_phase[it % stages], (it // stages) % 2):
                    yield False
                assert data[it % stages] == g, f"warp {w} reads slice {data[it % stages]} for slice {g}"
                if kt > 0:
                    arrive_empty((it - 1) % stages, g - 1)
                it, g = it + 1, g + 1
                yield True
            arrive_empty((it - 1) % stages, g - 1)
            yield True

    def tma():
        while True:
            if in_flight:
                stage, slice_ = in_flight.pop(rng.randrange(len(in_flight)))
                data[stage] = slice_
                full_phase[stage] += 1
                yield True
            else:
                yield False

    actors = [producer()] + [consumer_warp(w) for w in range(warps)]
    engine, steps, live = tma(), 0, list(actors)
    while live:
        progressed = False
        for actor in rng.sample(live, len(live)) + [engine]:
            try:
                progressed |= next(actor)
            except StopIteration:
                live.remove(actor)
                progressed = True
            steps += 1
        assert progressed or in_flight, f"deadlock after {steps} steps"
    assert all(released.get(s, 0) == warps for s in range(tiles * k_tiles))
    return steps


@pytest.mark.parametrize("stages", [3, 4])
@pytest.mark.parametrize("tiles, k_tiles", [(1, 1), (5, 1), (4, 2), (3, 5), (6, 7)])
def test_ring_runs_on_across_tiles_without_deadlock_or_overwrite(stages, tiles, k_tiles):
    """With the k-slice counter running on from tile to tile and the last slice of each tile freed after
    wgmma_wait_group<0>, no interleaving deadlocks, overwrites a stage in use or reads a stale one."""
    for seed in range(20):
        run_ring(stages, tiles, k_tiles, seed)


@pytest.mark.parametrize("stages, tiles, k_tiles", [(3, 2, 2), (4, 3, 5), (3, 4, 1)])
def test_ring_model_catches_a_counter_reset_per_tile(stages, tiles, k_tiles):
    """Restarting the counter at each tile leaves the barriers' phases out of step with the parities
    waited for: some interleaving reads a stale stage, overwrites one in use, or deadlocks."""
    caught = 0
    for seed in range(20):
        try:
            run_ring(stages, tiles, k_tiles, seed, reset_per_tile=True)
        except AssertionError:
            caught += 1
    assert caught > 0


def test_ring_model_uses_the_kernels_index_arithmetic():
    text = (KERNELS_DIR / r11_persistent.SOURCE).read_text()
    for line in ("if (it >= STAGES) mbar_wait_parity(smem_u32(&ring.empty[it % STAGES]), (it / STAGES - 1) % 2);",
                 "mbar_wait_parity(smem_u32(&ring.full[it % STAGES]), (it / STAGES) % 2);",
                 "if (kt > 0) release_stage((it - 1) % STAGES);", "release_stage((it - 1) % STAGES);",
                 "if (lane == 0) mbar_arrive(smem_u32(&ring.empty[stage]));",
                 "if (lane < CLUSTER_M) mbar_arrive_cluster(smem_u32(&ring.empty[stage]), lane);",
                 "for (int kt = 0; kt < k_tiles; ++kt, ++it) {",
                 "mbar_init(smem_u32(&ring.empty[s]), CLUSTER_M * (THREADS - 128) / 32);"):
        assert line in text, line


# ------------------------------------------------------------------ one consumer warpgroup (seed 001's 1p1c)

@pytest.mark.parametrize("tiles", [WarpSpecializedTiles(64, 256, 64, 4), WarpSpecializedTiles(128, 128, 64, 5)],
                         ids=lambda t: f"{t.bm}x{t.bn}s{t.stages}")
@pytest.mark.parametrize("cluster_m", [1, 2])
def test_one_consumer_compiles_without_spills_and_within_setmaxnreg(tiles, cluster_m):
    """256 threads (a producer and one consumer warpgroup that owns the whole tile); ptxas may give each
    thread up to 255 registers at launch, but setmaxnreg.inc to 232 must not be a decrease, so the count at
    entry stays at or under 232; no spills; the C panels are (bm, 64) and the C map's boxes bm rows."""
    k = r11_persistent.kernel(tiles, cluster_m=cluster_m, consumers=1)
    assert k.threads == 256 and k.template_args[7] == 1
    mod = k.compile()
    res = mod.resources_of(k.name_expression)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert res.registers <= r10_warp_specialized.CONSUMER_REGS, res
    assert "C7508" not in mod.log and "setmaxnreg" not in mod.log, mod.log
    for text in (f"setmaxnreg.dec.sync.aligned.u32 {r10_warp_specialized.PRODUCER_REGS}",
                 f"setmaxnreg.inc.sync.aligned.u32 {r10_warp_specialized.CONSUMER_REGS}",
                 f"wgmma.mma_async.sync.aligned.m64n{tiles.bn}k16.f32.f16.f16"):
        assert text in mod.ptx, text
    assert r11_persistent.c_buffer_bytes(tiles, 1) == min(2, tiles.bn // 64) * tiles.bm * 64 * 2
    stmatrix = [line for line in mod.ptx.splitlines() if "stmatrix.sync" in line]
    stores = [line for line in mod.ptx.splitlines() if "global.shared::cta.bulk_group" in line]
    assert len(stmatrix) == len(stores) * (tiles.bm // 64) * 4 >= 2 * (tiles.bm // 64) * (tiles.bn // 16)


@pytest.mark.parametrize("kwargs, match", [
    ({"consumers": 1}, "256 fp32 accumulators"),                      # 128x256 on one warpgroup
    ({"consumers": 3}, "consumers=3: the kernel has one or two consumer warpgroups"),
    ({"consumers": 2, "tiles": WarpSpecializedTiles(64, 256, 64, 4)}, "each of the 2 consumer warpgroups"),
])
def test_refuses_consumer_counts_it_cannot_do(kwargs, match):
    with pytest.raises(ValueError, match=match):
        r11_persistent.kernel(**kwargs)


@pytest.mark.parametrize("rung", ["11", "12"])
def test_the_last_tiles_c_is_stored_while_the_next_slices_wgmma_run(rung):
    """Between a slice's wgmma.commit_group and the wait for it, the main loop stores C panels of the tile
    before: every panel's stmatrix and TMA store sits there (under the next tile's first slices), not after
    a wait that would leave the tensor cores idle."""
    from hgemm_course.library.ladder import r12_streamk

    k = (r11_persistent if rung == "11" else r12_streamk).kernel()
    ops = [line.strip().split()[0] for line in k.compile().ptx.splitlines()
           if line.strip().startswith(("wgmma.commit_group", "wgmma.wait_group", "stmatrix",
                                       "cp.async.bulk.tensor.2d.global.shared::cta"))]
    commit = ops.index("wgmma.commit_group.sync.aligned;")
    wait = next(i for i in range(commit, len(ops)) if ops[i].startswith("wgmma.wait_group"))
    under = ops[commit + 1:wait]
    bm, bn = k.template_args[:2]
    assert sum(op.startswith("cp.async.bulk.tensor") for op in under) == bn // 64, ops
    assert sum(op.startswith("stmatrix") for op in under) == (bm // 128) * (bn // 16), ops
