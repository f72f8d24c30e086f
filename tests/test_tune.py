"""`hgemm-course tune` (hgemm_course/measurement/tune.py): every tensor-core rung declares its sweep (``TUNABLE`` in its
module) and tune.py names no rung; a sweep is the product of the declared axes; a configuration is built
through the rung's own ``kernel()`` and skipped, before anything compiles, with the sentence of its refusal
(the rung's tile rules and its shared-memory count, ``smem_bytes``, against 227 KiB); the figure of merit
is the geometric mean of % of cuBLAS; the CLI's dry run lists what runs and what is skipped and why on
every rung, tuning needs a GPU, and rung 11's defaults are the best configuration of the recorded tuning
run (results/tune_*.json)."""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import re

import pytest

from hgemm_course.measurement import tune
from hgemm_course.course.cli import main
from hgemm_course.library.device import has_gpu
from hgemm_course.library.ladder import r10_warp_specialized, r11_persistent, registry
from hgemm_course.library.ladder.nvrtc_kernel import MmaTiles
from hgemm_course.library.target import RECORDED
from hgemm_course.library.ladder.r09_wgmma import WgmmaTiles
from hgemm_course.library.ladder.r10_warp_specialized import WarpSpecializedTiles
from hgemm_course.measurement.records import load_runs
from hgemm_course.measurement.tune import TuneConfig

SMEM_PER_CTA_OPTIN = RECORDED.smem_per_block

BUDGET = 232448                     # 227 KiB: the opt-in shared memory of one CTA on sm_90
TENSOR_CORE_RUNGS = [r.id for r in registry().values() if r.backend == "nvrtc"]


def module(rung_id: str):
    rung = registry()[rung_id]
    return importlib.import_module(f"hgemm_course.library.ladder.r{rung.id}_{rung.slug}")


def smem_bytes(rung_id: str, cfg: TuneConfig) -> int:
    """The rung's own shared-memory count for this configuration (rung 11's depends on its consumers)."""
    tiles = tune.kernel_kwargs(rung_id, cfg)["tiles"]
    return module(rung_id).smem_bytes(tiles, *([cfg.consumers] if rung_id == "11" else []))


def refusal(rung_id: str, cfg: TuneConfig) -> str | None:
    """What the rung's kernel() says when handed this configuration's keyword arguments directly."""
    try:
        module(rung_id).kernel(**tune.kernel_kwargs(rung_id, cfg))
    except ValueError as exc:
        return str(exc)
    return None


def record(cfg: TuneConfig, size: int, pct: float) -> dict:
    return {"label": cfg.label, "config": dataclasses.asdict(cfg), "M": size, "N": size, "K": size,
            "pct_cublas": pct}


# ------------------------------------------------------------------ the declarations

def test_every_tensor_core_rung_declares_a_sweep():
    assert SMEM_PER_CTA_OPTIN == BUDGET
    assert TENSOR_CORE_RUNGS == ["03", "04", "05", "06", "07", "09", "10", "11", "12"]
    assert tune.tunable_rungs() == TENSOR_CORE_RUNGS
    for rung_id in TENSOR_CORE_RUNGS:
        declared = tune.space(rung_id)
        assert {"tiles", "stages"} <= set(declared) and all(declared.values())


def test_tune_names_no_rung():
    """The sweeps, the axes a rung has and its defaults come from the rung modules: tune.py holds no rung
    id and imports no rung module."""
    source = inspect.getsource(tune)
    assert not re.findall(r"""["']\d\d[a-z]?["']""", source)
    assert not re.findall(r"\br\d\d_", source)


@pytest.mark.parametrize("rung_id, axes", [
    ("03", {"tiles", "stages"}), ("05", {"tiles", "stages"}), ("06", {"tiles", "stages", "supers"}),
    ("07", {"tiles", "stages", "supers"}), ("10", {"tiles", "stages", "supers"}),
    ("11", {"tiles", "stages", "supers", "clusters", "consumers"}),
])
def test_a_rung_declares_the_axes_its_kernel_takes(rung_id, axes):
    assert set(tune.space(rung_id)) == axes
    takes = set(inspect.signature(module(rung_id).kernel).parameters)
    assert {tune.KEYWORDS[a] for a in axes - {"tiles", "stages"}} <= takes
    assert not {tune.KEYWORDS[a] for a in tune.KEYWORDS.keys() - axes} & takes


# ------------------------------------------------------------------ sweep()

@pytest.mark.parametrize("rung_id", TENSOR_CORE_RUNGS)
def test_sweep_is_the_whole_product_of_its_declared_axes(rung_id):
    """Every combination once, in order: the count is the product of the axes' lengths, labels tell the
    configurations apart, and an axis the rung does not declare stays None."""
    configs = tune.sweep(rung_id)
    declared = tune.space(rung_id)
    assert len(configs) == math.prod(len(values) for values in declared.values())
    assert len(set(configs)) == len({c.label for c in configs}) == len(configs)
    assert {(c.bm, c.bn) for c in configs} == set(declared["tiles"])
    assert {c.stages for c in configs} == set(declared["stages"])
    assert {(c.super_m, c.super_n) for c in configs} == set(declared.get("supers", [(None, None)]))
    assert {c.cluster_m for c in configs} == set(declared.get("clusters", [None]))
    assert {c.consumers for c in configs} == set(declared.get("consumers", [None]))


def test_rung_11_sweep_has_named_configurations():
    configs = tune.sweep("11")
    assert len(configs) == 4 * 3 * 3 * 2 * 2
    assert TuneConfig(128, 256, 4, 16, 2, 2, 2) in configs
    assert TuneConfig(256, 128, 3, 4, 8, 1, 2) in configs
    assert TuneConfig(64, 256, 3, 16, 2, 1, 1) in configs           # seed 001's 1p1c: one consumer warpgroup
    assert TuneConfig(96, 256, 3, 16, 2, 1, 2) not in configs


def test_sweep_honours_explicit_axes():
    configs = tune.sweep("11", tiles=[(128, 128)], stages=[3, 6], supers=[(2, 2)], clusters=[2], consumers=[2])
    assert configs == [TuneConfig(128, 128, 3, 2, 2, 2, 2), TuneConfig(128, 128, 6, 2, 2, 2, 2)]
    # one axis given, the others from the rung's declaration
    only_tiles = tune.sweep("10", tiles=[(256, 128)])
    assert len(only_tiles) == 3 * 2 and {(c.bm, c.bn) for c in only_tiles} == {(256, 128)}
    assert tune.sweep("05", stages=[4]) == [TuneConfig(256, 128, 4), TuneConfig(128, 256, 4), TuneConfig(128, 128, 4)]


@pytest.mark.parametrize("rung_id", ["01", "02"])
def test_sweep_refuses_rungs_without_a_tuning_sweep(rung_id):
    with pytest.raises(ValueError, match=r"declares no TUNABLE\); tunable rungs: 03, 04, 05, 06, 07, 09, 10, 11"):
        tune.sweep(rung_id)
    with pytest.raises(ValueError, match=f"rung {rung_id}"):
        tune.skip_reason(rung_id, TuneConfig(128, 128, 3))


def test_sweep_accepts_the_registry_spellings_of_a_rung():
    assert tune.sweep(11) == tune.sweep("11") == tune.sweep("11_persistent")


@pytest.mark.parametrize("rung_id, axes, message", [
    ("11", {"consumers": [0]}, "consumers=0: tiles, stages, super tiles, clusters and consumers are counts of at least 1"),
    ("06", {"supers": [(0, 2)]}, "super tile 0x2: tiles, stages"),
    ("10", {"consumers": [1]}, "--consumers: rung 10 has no such axis (its kernel() takes no consumers); rungs that "
                               "have one: 11, 12."),
    ("05", {"supers": [(8, 4)]}, "--supers: rung 05 has no such axis (its kernel() takes no super_mn); rungs that "
                                 "have one: 06, 07, 09, 10, 11, 12."),
    ("11", {"clusters": [4]}, "cluster_m=4: the kernel pairs CTAs along M"),
    ("11", {"tiles": [(96, 256)]}, "bm=96: each of the 2 consumer warpgroups"),
    ("09", {"tiles": [(128, 96)]}, "bn=96: one wgmma covers the whole tile width"),
    ("11", {"stages": [2]}, "stages=2: wgmma still reads the previous stage"),
    ("11", {"stages": [15]}, "15 stages of 128x64 + 64x256 halves and the 32768-byte C panel buffers need"),
    ("04", {"stages": [1]}, "stages=1: a pipeline needs at least 2 stages"),
    ("06", {"stages": [8], "tiles": [(256, 128)]}, "8 stages need 393216 bytes of shared memory"),
])
def test_sweep_refuses_a_value_no_configuration_can_use(rung_id, axes, message):
    """A value the rung refuses with every value of the other axes, declared or given, is refused up front
    with the rung's own sentence."""
    with pytest.raises(ValueError) as exc:
        tune.sweep(rung_id, **axes)
    assert message in str(exc.value)


def test_a_value_usable_with_a_declared_value_of_another_axis_is_planned_not_refused():
    """5 stages of 128x256 do not fit rung 11, but 5 stages of its declared 128x128 do: the value stands,
    and the plan skips 128x256 s5 with the budget sentence; on rung 06 the given 128x128 tile takes 5 stages."""
    runnable, skipped = tune.plan("11", tune.sweep("11", tiles=[(128, 256)], stages=[4, 5], consumers=[2]))
    assert {c.stages for c in runnable} == {4} and {c.stages for c, _ in skipped} == {5}
    assert all("need 280576 bytes of shared memory" in reason for _, reason in skipped)
    assert tune.sweep("06", tiles=[(128, 128)], stages=[5], supers=[(8, 4)]) == [TuneConfig(128, 128, 5, 8, 4)]


# ------------------------------------------------------------------ skip_reason() and plan()

@pytest.mark.parametrize("rung_id", TENSOR_CORE_RUNGS)
def test_the_budget_is_the_rungs_own_shared_memory_count(rung_id):
    """Over the default sweep: a configuration whose shared memory by the rung's smem_bytes exceeds 227 KiB
    is skipped, with that byte count in the reason unless a rule kernel() checks first refused it (rung
    09's 128x256 tile: its accumulators); none under it is skipped for shared memory."""
    over = 0
    for cfg in tune.sweep(rung_id):
        need, reason = smem_bytes(rung_id, cfg), tune.skip_reason(rung_id, cfg)
        if need > BUDGET:
            over += 1
            assert reason is not None, cfg.label
            assert f"need {need} bytes of shared memory" in reason or "accumulators" in reason, (cfg.label, reason)
        else:
            assert reason is None or "bytes of shared memory" not in reason, (cfg.label, reason)
    assert over >= 2                     # every default sweep reaches past the budget somewhere


def test_rung_11_budget_counts_the_c_panel_buffers():
    """256x128 with 4 stages: the ring alone (192 KiB) would fit, the 64 KiB of C panels do not; rung 10,
    which writes C from registers, runs the same tile."""
    cfg = TuneConfig(256, 128, 4, 16, 2, 1, 2)
    assert r11_persistent.c_buffer_bytes(tune.kernel_kwargs("11", cfg)["tiles"]) == 65536
    reason = tune.skip_reason("11", cfg)
    assert reason is not None and "the 65536-byte C panel buffers need 264192 bytes" in reason, reason
    assert tune.skip_reason("10", TuneConfig(256, 128, 4, 16, 2)) is None


@pytest.mark.parametrize("rung_id, expected", [
    ("03", {(bm, bn, s) for bm, bn in ((256, 128), (128, 256)) for s in (2, 3, 4)} | {(128, 128, s) for s in (2, 3, 4, 5)}),
    ("05", {(bm, bn, s) for bm, bn in ((256, 128), (128, 256)) for s in (3, 4)} | {(128, 128, s) for s in (3, 4, 5)}),
    ("06", {(bm, bn, s) for bm, bn in ((256, 128), (128, 256)) for s in (3, 4)} | {(128, 128, s) for s in (3, 4, 5)}),
    ("07", {(bm, bn, s) for bm, bn in ((256, 128), (128, 256)) for s in (3, 4)} | {(128, 128, s) for s in (3, 4, 5)}),
    ("09", {(128, 128, s) for s in (3, 4, 5)} | {(64, 256, s) for s in (3, 4, 5)}),
    ("10", {(128, 256, 3), (128, 256, 4), (256, 128, 3), (256, 128, 4)} | {(128, 128, s) for s in (3, 4, 5)}),
])
def test_plan_of_the_default_sweeps(rung_id, expected):
    """Which (tile, stages) of each default sweep can run, worked out by hand (5 stages of a 256-wide tile
    of dense or padded operands overflow 227 KiB; rung 09's 128x256 needs 256 accumulators per thread, over
    its 128); every super tile of those runs, in sweep order."""
    configs = tune.sweep(rung_id)
    runnable, skipped = tune.plan(rung_id, configs)
    assert len(runnable) + len(skipped) == len(configs)
    assert {(c.bm, c.bn, c.stages) for c in runnable} == expected
    assert len(runnable) == len(expected) * len(tune.space(rung_id).get("supers", [None]))
    assert [c for c in configs if c in runnable] == runnable
    if rung_id == "09":
        acc = [r for c, r in skipped if (c.bm, c.bn) == (128, 256)]
        assert len(acc) == 6 and all("256 fp32 accumulators" in r for r in acc)


def test_plan_of_rung_11():
    runnable, skipped = tune.plan("11", tune.sweep("11"))
    expected = ({(128, 256, 3, 2), (128, 256, 4, 2), (256, 128, 3, 2)}
                | {(128, 128, s, w) for s in (3, 4, 5) for w in (1, 2)} | {(64, 256, s, 1) for s in (3, 4, 5)})
    assert {(c.bm, c.bn, c.stages, c.consumers) for c in runnable} == expected
    assert len(runnable) == len(skipped) == 72


@pytest.mark.parametrize("cfg", [
    TuneConfig(128, 256, 4, 1, 1, 2, 2),
    TuneConfig(128, 256, 4, 3, 2, 2, 2),
    TuneConfig(128, 128, 3, 5, 4, 2, 2),
])
def test_rung_11_cluster_needs_a_super_tile_of_whole_clusters(cfg):
    """Within the budget but refused by rung 11's kernel(): an odd number of super-tile rows cannot be
    paired into clusters; the same with cluster_m = 1 runs."""
    assert smem_bytes("11", cfg) <= BUDGET
    reason = tune.skip_reason("11", cfg)
    assert reason is not None and f"the super tile's {cfg.super_m} rows must hold whole clusters" in reason, reason
    assert tune.skip_reason("11", dataclasses.replace(cfg, cluster_m=1)) is None


def test_rung_11_cluster_needs_an_even_number_of_b_panels():
    reason = tune.skip_reason("11", TuneConfig(128, 64, 3, 16, 2, 2, 2))
    assert reason is not None and "B's 1 panels of 64 columns must split evenly" in reason, reason
    assert tune.skip_reason("11", TuneConfig(128, 64, 3, 16, 2, 1, 2)) is None


@pytest.mark.parametrize("rung_id, cfg, message", [
    ("03", TuneConfig(128, 96, 3), "The CTA tile 128x96 must split into whole 64x64 warp tiles"),
    ("04", TuneConfig(128, 128, 1), "stages=1: a pipeline needs at least 2 stages"),
    ("05", TuneConfig(128, 192, 3), "The A tile (128x64 halves = 1024 chunks of 16 bytes) must split evenly over "
                                     "the 192 threads"),
    ("06", TuneConfig(128, 128, 3, 0, 2), "super tile (0, 2): both sides must be at least one tile"),
    ("07", TuneConfig(512, 128, 2, 8, 4), "bm=512: one TMA box of A has bm rows"),
    ("10", TuneConfig(64, 256, 3, 16, 2), "each of the 2 consumer warpgroups"),
    ("11", TuneConfig(64, 256, 3, 16, 2, 1, 2), "each of the 2 consumer warpgroups"),
    ("10", TuneConfig(128, 96, 3, 16, 2), "bn=96: one wgmma covers the whole tile width"),
    ("09", TuneConfig(128, 160, 3, 16, 2), "bn=160: one wgmma covers the whole tile width"),
    ("11", TuneConfig(128, 128, 2, 16, 2, 1, 2), "stages=2: wgmma still reads the previous stage"),
    ("10", TuneConfig(256, 256, 3, 16, 2), "gives each consumer thread 256 fp32 accumulators"),
    ("11", TuneConfig(128, 128, 3, 16, 2, 4, 2), "cluster_m=4: the kernel pairs CTAs along M"),
    ("11", TuneConfig(128, 128, 3, 16, 2, 1, 3), "consumers=3: the kernel has one or two consumer warpgroups"),
])
def test_rules_of_the_rung_within_the_budget(rung_id, cfg, message):
    """A configuration within the budget that the rung's kernel() refuses is skipped with that rule's own
    sentence: exactly what kernel() says when called with the configuration's keyword arguments."""
    reason = tune.skip_reason(rung_id, cfg)
    assert reason is not None and message in reason, reason
    assert "bytes of shared memory" not in reason
    assert reason == refusal(rung_id, cfg)
    assert tune.plan(rung_id, [cfg]) == ([], [(cfg, reason)])


def test_every_runnable_rung_11_configuration_builds_within_the_budget():
    """No compile needed: each configuration plan() lets through really is accepted by r11_persistent.kernel(),
    with its tile, stages, super tile, cluster size, consumers and rung 10's setmaxnreg targets as template
    arguments and the kernel's exact shared memory within 227 KiB."""
    runnable, _ = tune.plan("11", tune.sweep("11"))
    for cfg in runnable:
        k = tune.build("11", cfg)
        assert k.template_args == (cfg.bm, cfg.bn, 64, cfg.stages, cfg.super_m, cfg.super_n, cfg.cluster_m,
                                   cfg.consumers, r10_warp_specialized.PRODUCER_REGS, r10_warp_specialized.CONSUMER_REGS)
        assert k.smem_bytes == smem_bytes("11", cfg) <= BUDGET, cfg.label
        assert k.threads == 128 * (1 + cfg.consumers)


def test_rung_11_default_configuration_compiles_without_spills():
    """The configuration the tuning chose, compiled by NVRTC for sm_90a (works without a GPU)."""
    k = tune.build("11", tune.default_config("11"))
    res = k.compile().resources_of(k.name_expression)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert res.registers == 168


# ------------------------------------------------------------------ kernel_kwargs() and default_config()

def test_kernel_kwargs_keep_the_rungs_other_tile_constants():
    """The tile and stages replace those of the rung's default tiles; bk and the warp tiles stay the rung's."""
    assert tune.kernel_kwargs("03", TuneConfig(128, 128, 3)) == {"tiles": MmaTiles(128, 128, 64, 64, 64, 3)}
    assert tune.kernel_kwargs("06", TuneConfig(128, 256, 4, 1, 64)) == {"tiles": MmaTiles(128, 256, 64, 64, 64, 4),
                                                                        "super_mn": (1, 64)}
    k09 = tune.kernel_kwargs("09", TuneConfig(128, 128, 3, 8, 4))
    assert type(k09["tiles"]) is WgmmaTiles and k09 == {"tiles": WgmmaTiles(128, 128, 64, 3), "super_mn": (8, 4)}
    k10 = tune.kernel_kwargs("10", TuneConfig(128, 128, 3, 8, 4))
    assert type(k10["tiles"]) is WarpSpecializedTiles
    assert k10 == {"tiles": WarpSpecializedTiles(128, 128, 64, 3), "super_mn": (8, 4)}
    assert tune.kernel_kwargs("11", TuneConfig(128, 128, 3, 8, 4, 1, 1)) == {
        "tiles": WarpSpecializedTiles(128, 128, 64, 3), "super_mn": (8, 4), "cluster_m": 1, "consumers": 1}


@pytest.mark.parametrize("rung_id, cfg, message", [
    ("05", TuneConfig(128, 128, 3, 16, 2), "rung 05 has no supers axis (its kernel() takes no super_mn)"),
    ("10", TuneConfig(128, 128, 3, 16, 2, 2), "rung 10 has no clusters axis (its kernel() takes no cluster_m)"),
    ("10", TuneConfig(128, 128, 3, 16, 2, None, 1), "rung 10 has no consumers axis"),
    ("06", TuneConfig(128, 128, 3), "rung 06's kernel() takes super_mn; give the configuration its supers value"),
    ("11", TuneConfig(128, 128, 3, 16, 2), "rung 11's kernel() takes cluster_m"),
])
def test_kernel_kwargs_wants_exactly_the_rungs_axes(rung_id, cfg, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        tune.kernel_kwargs(rung_id, cfg)


@pytest.mark.parametrize("rung_id, expected", [
    ("03", TuneConfig(256, 128, 3)),
    ("05", TuneConfig(256, 128, 4)),
    ("06", TuneConfig(256, 128, 4, 8, 4)),
    ("09", TuneConfig(128, 128, 3, 16, 2)),
    ("10", TuneConfig(128, 256, 4, 16, 2)),
    ("11", TuneConfig(128, 256, 4, 16, 2, 2, 2)),
])
def test_default_config_is_the_rungs_defaults(rung_id, expected):
    assert tune.default_config(rung_id) == expected


@pytest.mark.parametrize("rung_id", TENSOR_CORE_RUNGS)
def test_default_config_builds_the_registered_kernel_and_is_in_the_sweep(rung_id):
    """default_config() reads the defaults of the rung's kernel(): the kernel built from it is the rung's
    registered kernel, and it is a runnable point of the rung's default sweep."""
    cfg = tune.default_config(rung_id)
    assert tune.build(rung_id, cfg).name_expression == module(rung_id).kernel().name_expression
    assert cfg in tune.sweep(rung_id)
    assert tune.skip_reason(rung_id, cfg) is None


def test_labels():
    assert TuneConfig(128, 256, 4, 16, 2, 2, 2).label == "128x256 s4 super 16x2 cluster 2"
    assert TuneConfig(128, 128, 4, 16, 2, 1, 1).label == "128x128 s4 super 16x2 1 consumer"
    assert TuneConfig(256, 128, 3, 8, 4).label == "256x128 s3 super 8x4"
    assert TuneConfig(256, 128, 3).label == "256x128 s3"


# ------------------------------------------------------------------ score(), best(), format_tune_table()

def test_score_is_the_geometric_mean():
    assert tune.score([50.0, 200.0]) == pytest.approx(100.0)
    assert tune.score([81.0]) == pytest.approx(81.0)
    assert tune.score([90.0, 90.0, 90.0]) == pytest.approx(90.0)
    assert tune.score([10.0, 100.0, 1000.0]) == pytest.approx(100.0)
    assert tune.score([150.0, 40.0]) == pytest.approx(math.sqrt(6000.0))
    assert tune.score([150.0, 40.0]) < (150.0 + 40.0) / 2            # not the arithmetic mean


A = TuneConfig(128, 256, 4, 16, 2, 2, 2)
B = TuneConfig(128, 256, 3, 16, 2, 1, 2)
C = TuneConfig(128, 128, 5, 8, 4, 1, 2)
D = TuneConfig(256, 128, 3, 4, 8, 2, 2)


def test_best_takes_the_highest_geometric_mean_of_complete_configurations():
    """A: 80 and 80 (geomean 80); B: 150 and 40 (arithmetic mean 95, geomean 77.5, the best single
    figure); C: 200 at one size only, so not comparable and left out."""
    records = [record(A, 4096, 80.0), record(A, 8192, 80.0),
               record(B, 4096, 150.0), record(B, 8192, 40.0),
               record(C, 4096, 200.0)]
    config, merit = tune.best(records)
    assert config == dataclasses.asdict(A)
    assert merit == pytest.approx(80.0)
    # order of the records does not matter
    assert tune.best(records[::-1]) == (dataclasses.asdict(A), pytest.approx(80.0))
    # with B a little better at 8192 it wins
    records[3] = record(B, 8192, 50.0)
    config, merit = tune.best(records)
    assert config == dataclasses.asdict(B) and merit == pytest.approx(math.sqrt(150.0 * 50.0))


def test_best_with_one_configuration_and_none():
    assert tune.best([]) is None
    single = tune.best([record(D, 2048, 70.0), record(D, 4096, 90.0)])
    assert single == (dataclasses.asdict(D), pytest.approx(math.sqrt(70.0 * 90.0)))
    # nobody was timed at every size: nothing to compare
    assert tune.best([record(A, 4096, 80.0), record(B, 8192, 90.0)]) is None


def test_format_tune_table_best_first_and_dashes_for_missing_sizes():
    records = [record(B, 4096, 150.0), record(B, 8192, 40.0),
               record(A, 4096, 80.0), record(A, 8192, 80.0),
               record(C, 8192, 60.0)]
    lines = tune.format_tune_table(records).splitlines()
    head, rows = lines[0], lines[1:]
    assert head.split() == ["configuration", "4096x4096x4096", "8192x8192x8192", "geomean"]
    assert len(rows) == 3
    assert rows[0].startswith(A.label) and rows[1].startswith(B.label) and rows[2].startswith(C.label)
    assert rows[0].split()[-3:] == ["80.0%", "80.0%", "80.0%"]
    assert rows[1].split()[-3:] == ["150.0%", "40.0%", f"{math.sqrt(6000.0):.1f}%"]
    assert rows[2].split()[-3:] == ["-", "60.0%", "60.0%"]                  # not timed at 4096
    # columns line up with the header
    assert all(len(r) == len(head) for r in rows)


def test_format_tune_table_agrees_with_best_on_the_first_row():
    records = [record(A, 4096, 80.0), record(A, 8192, 80.0), record(C, 4096, 200.0)]
    assert tune.best(records)[0] == dataclasses.asdict(A)
    assert tune.format_tune_table(records).splitlines()[1].startswith(A.label)


# ------------------------------------------------------------------ the CLI

@pytest.mark.parametrize("rung_id", TENSOR_CORE_RUNGS)
def test_cli_dry_run_plans_every_rung_from_its_declaration(rung_id, capsys):
    """`hgemm-course tune RUNG --dry-run`, no GPU needed: a "run" line per runnable configuration of the
    declared sweep on stdout, with the threads and shared memory of the kernel it builds; on stderr a
    "skip" line for each of the others whose reason is the rung's kernel() refusing it, and the count."""
    assert main(["tune", rung_id, "--dry-run"]) == 0
    out, err = capsys.readouterr()
    runnable, skipped = tune.plan(rung_id, tune.sweep(rung_id))
    assert runnable and skipped
    expected_runs = []
    for cfg in runnable:
        k = module(rung_id).kernel(**tune.kernel_kwargs(rung_id, cfg))
        expected_runs.append(f"run  {cfg.label}: {k.threads} threads, {k.smem_bytes} B of shared memory")
    assert out.splitlines() == expected_runs
    skip_lines = [line for line in err.splitlines() if line.startswith("skip ")]
    assert skip_lines == [f"skip {cfg.label}: {refusal(rung_id, cfg)}" for cfg, _ in skipped]
    assert f"rung {rung_id}: {len(runnable)} of {len(runnable) + len(skipped)} configurations can run" in err


def test_cli_dry_run_with_explicit_axes(capsys):
    """--tiles 128x256 --stages 4 5: 1 x 2 x 3 supers x 2 clusters = 12; the 6 with 5 stages are over
    the budget (245760 B of ring + 32768 B of C panels + barriers and alignment)."""
    assert main(["tune", "11", "--tiles", "128x256", "--stages", "4", "5", "--consumers", "2", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    run_lines = out.splitlines()
    assert len(run_lines) == 6
    assert all(line.startswith("run  128x256 s4 super ") and line.endswith(": 384 threads, 231424 B of shared memory")
               for line in run_lines)
    skip_lines = [line for line in err.splitlines() if line.startswith("skip ")]
    assert len(skip_lines) == 6
    assert all(line.startswith("skip 128x256 s5 super ") and "C panel buffers need 280576 bytes" in line
               for line in skip_lines)
    assert "rung 11: 6 of 12 configurations can run" in err


def test_cli_dry_run_supers_and_clusters(capsys):
    assert main(["tune", "11", "--tiles", "128x128", "--stages", "3", "--supers", "16x2", "3x2",
                 "--clusters", "1", "2", "--consumers", "2", "1", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert [line.split(":")[0] for line in out.splitlines()] == [
        "run  128x128 s3 super 16x2", "run  128x128 s3 super 16x2 1 consumer", "run  128x128 s3 super 16x2 cluster 2",
        "run  128x128 s3 super 16x2 cluster 2 1 consumer", "run  128x128 s3 super 3x2",
        "run  128x128 s3 super 3x2 1 consumer"]
    assert "skip 128x128 s3 super 3x2 cluster 2: cluster_m=2: the super tile's 3 rows must hold whole clusters" in err
    assert "rung 11: 6 of 8 configurations can run" in err


def test_cli_dry_run_of_an_mma_sync_rung_with_explicit_axes(capsys):
    assert main(["tune", "05", "--tiles", "256x128", "128x128", "--stages", "4", "5", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["run  256x128 s4: 256 threads, 196608 B of shared memory",
                                "run  128x128 s4: 128 threads, 131072 B of shared memory",
                                "run  128x128 s5: 128 threads, 163840 B of shared memory"]
    assert ("skip 256x128 s5: 5 stages need 245760 bytes of shared memory, over the 232448 bytes a CTA can have "
            "on the sm_90a target (H100, H200); use fewer stages or smaller tiles.") in err.splitlines()


@pytest.mark.parametrize("bad", ["128-256", "128x256x64", "ax4"])
def test_cli_malformed_tiles_is_an_argparse_error(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["tune", "11", "--tiles", bad, "--dry-run"])
    assert exc.value.code == 2
    assert "expected two numbers as AxB" in capsys.readouterr().err


@pytest.mark.parametrize("rung_id", ["01", "02"])
def test_cli_refuses_a_rung_without_a_sweep(rung_id, capsys):
    assert main(["tune", rung_id, "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("hgemm-course tune: ") and "tunable rungs: 03, 04, 05, 06, 07, 09, 10, 11" in err


def test_cli_dry_run_is_the_same_for_every_spelling_of_the_rung(capsys):
    assert main(["tune", "11", "--dry-run"]) == 0
    plain = capsys.readouterr()
    assert main(["tune", "11_persistent", "--dry-run"]) == 0
    spelled = capsys.readouterr()
    assert spelled.out == plain.out
    assert tune.plan("11_persistent", tune.sweep("11")) == tune.plan("11", tune.sweep("11"))


# ------------------------------------------------------------------ without a GPU

@pytest.mark.skipif(has_gpu(), reason="checks the refusal on a machine without a GPU")
def test_run_needs_a_gpu():
    with pytest.raises(RuntimeError, match="Tuning rung 11 needs an NVIDIA GPU"):
        tune.run("11", [256])


@pytest.mark.skipif(has_gpu(), reason="checks the refusal on a machine without a GPU")
def test_cli_tune_without_gpu_fails_and_writes_nothing(tmp_path, capsys):
    assert main(["tune", "05", "--tiles", "256x128", "--stages", "4", "--sizes", "512", "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "hgemm-course tune: Tuning rung 05 needs an NVIDIA GPU" in err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ the recorded tuning of rung 11

def _latest_rung_11_tuning():
    """The tuning run rung 11's geometry cites (later sweeps of a few settings at one size choose nothing)."""
    from hgemm_course.library import geometry

    cited = [geometry.of("11").source]
    runs = [(p, d) for p, d in load_runs(kind="tune") if d["provenance"].get("rung") == "11" and p.name in cited]
    assert runs, "no results/tune_*.json of rung 11 that rung 11's defaults cite"
    return runs[-1]


def _recorded(config: dict) -> TuneConfig:
    """A recorded rung-11 configuration; a record from before the consumers axis ran with rung 10's 2."""
    return TuneConfig(**{"consumers": 2, **config})


def test_recorded_tuning_is_complete_and_has_provenance():
    path, data = _latest_rung_11_tuning()
    prov, records = data["provenance"], data["records"]
    assert path.name.startswith("tune_") and path.suffix == ".json"
    for key in ("gpu", "date", "driver", "packages"):
        assert prov.get(key), key
    assert "H200" in prov["gpu"]
    for key in ("best", "default", "skipped"):
        assert key in prov, key
    assert records
    for r in records:
        for key in ("label", "config", "pct_cublas", "M", "N", "K"):
            assert key in r, (key, r.get("label"))
        assert r["rung"] == "11"
        assert _recorded(r["config"]).label == r["label"]
        assert r["pct_cublas"] > 0
    # each configuration timed once per size
    keys = [(r["label"], r["M"], r["N"], r["K"]) for r in records]
    assert len(keys) == len(set(keys))
    # what the run skipped, today's plan of the default sweep still skips
    skipped_today = {cfg.label for cfg, _ in tune.plan("11", tune.sweep("11"))[1]}
    assert prov["skipped"]
    assert {label for label, _ in prov["skipped"]} <= skipped_today
    assert not {label for label, _ in prov["skipped"]} & {r["label"] for r in records}


def test_recorded_best_is_the_best_of_its_records():
    _, data = _latest_rung_11_tuning()
    chosen = tune.best(data["records"])
    assert chosen is not None
    assert chosen[0] == data["provenance"]["best"]


def test_recorded_configurations_still_pass_the_plan():
    _, data = _latest_rung_11_tuning()
    for cfg in {_recorded(r["config"]) for r in data["records"]}:
        assert tune.skip_reason("11", cfg) is None, cfg.label


def test_rung_11_defaults_are_the_recorded_best():
    """Rung 11's TILES / SUPER / CLUSTER_M / CONSUMERS are the configuration the recorded tuning run found best."""
    _, data = _latest_rung_11_tuning()
    assert data["provenance"]["best"] == tune.best(data["records"])[0]
    assert tune.default_config("11") == _recorded(data["provenance"]["best"])


# ------------------------------------------------------------------ on the GPU

@pytest.mark.gpu
@pytest.mark.parametrize("rung_id, configs", [
    ("11", [tune.default_config("11"), TuneConfig(128, 128, 3, 16, 2, 1, 2)]),
    ("05", [tune.default_config("05"), TuneConfig(128, 128, 3)]),
])
def test_run_times_configurations_against_cublas(rung_id, configs):
    """Two configurations (the rung's defaults and a 128x128 tile) verified on the odd shapes and timed at
    512^3: one record each, % of cuBLAS > 0, no failure, nothing skipped."""
    records, skipped, failures = tune.run(rung_id, [512], configs, repeats=20, progress=False)
    assert skipped == [] and failures == []
    assert [r["config"] for r in records] == [dataclasses.asdict(c) for c in configs]
    assert [r["label"] for r in records] == [c.label for c in configs]
    for r in records:
        assert r["rung"] == rung_id and (r["M"], r["N"], r["K"]) == (512, 512, 512)
        assert r["pct_cublas"] > 0 and r["ms"] > 0
    assert tune.best(records) is not None


def test_recorded_tile_comparison_sets_rungs_side_by_side_at_one_tile(tmp_path):
    from hgemm_course.measurement.records import write_run
    from hgemm_course.measurement.tune import recorded_tile_comparison

    def rec(rung, bm, bn, n, pct, paired=True):
        return {"rung": rung, "M": n, "N": n, "K": n, "pct_cublas": pct, "paired": paired, "label": f"{bm}x{bn} s4",
                "config": {"bm": bm, "bn": bn, "stages": 4}}
    write_run([rec("04", 256, 128, 4096, 40.0), rec("04", 128, 256, 4096, 45.0, paired=False)], kind="tune",
              folder=tmp_path, extra={"date": "2026-12-01T10:00:00+00:00"})
    write_run([rec("04", 256, 128, 4096, 51.4), rec("05", 256, 128, 4096, 56.6), rec("05", 256, 128, 8192, 53.3)],
              kind="tune", folder=tmp_path, extra={"date": "2026-12-01T11:00:00+00:00"})
    lines = recorded_tile_comparison(("4", "05"), ("256x128", "128x256"), folder=tmp_path).splitlines()
    assert lines[0].startswith("RECORDED paired tunes (tune_")
    assert lines[2].split() == ["256x128", "04", "51.4%", "-"]          # the newer run wins; 8192 never timed
    assert lines[3].split() == ["256x128", "05", "56.6%", "53.3%"]
    assert lines[4].split() == ["128x256", "04", "-", "-"]              # only an unpaired record: left out
