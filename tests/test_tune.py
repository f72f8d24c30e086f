"""`hgemm-course tune` (hgemm_course/tune.py): the sweeps of the Hopper rungs 09-11 are the product of
their axes, every configuration is checked against seed 001's shared-memory arithmetic (ring plus, on
rung 11, the C panel buffers, against 227 KiB) and the rung's own rules before anything compiles, the
figure of merit is the geometric mean of % of cuBLAS, the CLI's dry run lists what runs and what is
skipped and why, tuning needs a GPU, and rung 11's defaults are the best configuration of the recorded
tuning run (results/tune_*.json)."""
from __future__ import annotations

import dataclasses
import math

import pytest

from hgemm_course import tune
from hgemm_course.cli import main
from hgemm_course.device import has_gpu
from hgemm_course.ladder import r09_wgmma, r10_warp_specialized, r11_persistent
from hgemm_course.ladder.nvrtc_kernel import SMEM_PER_CTA_OPTIN
from hgemm_course.ladder.r09_wgmma import WgmmaTiles
from hgemm_course.ladder.r10_warp_specialized import WarpSpecializedTiles
from hgemm_course.results import load_runs
from hgemm_course.tune import TuneConfig

BUDGET = 232448                     # 227 KiB: the opt-in shared memory of one CTA on sm_90
MODULES = {"09": r09_wgmma, "10": r10_warp_specialized, "11": r11_persistent}


def ring(cfg: TuneConfig) -> int:
    """Seed 001's arithmetic, written out again here: stages x (BM + BN) x BK x 2 bytes, BK = 64."""
    return cfg.stages * (cfg.bm + cfg.bn) * 64 * 2


def c_panels(rung_id: str, cfg: TuneConfig) -> int:
    """Rung 11's epilogue buffers: consumers x min(2, BN / 64) panels of (BM / consumers) x 64 halves."""
    return cfg.consumers * min(2, cfg.bn // 64) * (cfg.bm // cfg.consumers) * 64 * 2 if rung_id == "11" else 0


def record(cfg: TuneConfig, size: int, pct: float) -> dict:
    return {"label": cfg.label, "config": dataclasses.asdict(cfg), "M": size, "N": size, "K": size,
            "pct_cublas": pct}


def test_constants_match_the_seed():
    assert SMEM_PER_CTA_OPTIN == BUDGET and tune.BK == 64
    assert tune.TUNABLE == ("09", "10", "11")


# ------------------------------------------------------------------ sweep()

@pytest.mark.parametrize("rung_id, count", [("09", 3 * 3 * 2), ("10", 3 * 3 * 2), ("11", 4 * 3 * 3 * 2 * 2)])
def test_sweep_is_the_whole_product_of_its_axes(rung_id, count):
    """Every (tile, stages, super tile, cluster, consumers) combination once: the count is the product
    of the axes' lengths, and named corners of the space are in it."""
    configs = tune.sweep(rung_id)
    space = tune.SPACES[rung_id]
    axes = ("tiles", "stages", "supers", "clusters", "consumers")
    assert len(configs) == count == math.prod(len(space[a]) for a in axes)
    assert len(set(configs)) == len(configs)
    assert len({c.label for c in configs}) == len(configs)          # labels tell configurations apart
    for (bm, bn) in space["tiles"]:
        for s in space["stages"]:
            for sm, sn in space["supers"]:
                for cl in space["clusters"]:
                    for w in space["consumers"]:
                        assert TuneConfig(bm, bn, s, sm, sn, cl, w) in configs


def test_rung_11_sweep_has_named_configurations():
    configs = tune.sweep("11")
    assert TuneConfig(128, 256, 4, 16, 2, 2) in configs
    assert TuneConfig(256, 128, 3, 4, 8, 1) in configs
    assert TuneConfig(128, 128, 5, 8, 4, 2) in configs
    assert TuneConfig(64, 256, 3, 16, 2, 1, 1) in configs           # seed 001's 1p1c: one consumer warpgroup
    assert TuneConfig(96, 256, 3, 16, 2, 1) not in configs
    assert {c.cluster_m for c in configs} == {1, 2}
    assert {c.consumers for c in configs} == {1, 2}
    assert {c.stages for c in configs} == {3, 4, 5}


@pytest.mark.parametrize("rung_id", ["09", "10"])
def test_rungs_09_and_10_sweep_without_clusters(rung_id):
    assert {c.cluster_m for c in tune.sweep(rung_id)} == {1}
    assert {c.consumers for c in tune.sweep(rung_id)} == {2}         # their warpgroups are fixed


def test_sweep_honours_explicit_axes():
    configs = tune.sweep("11", tiles=[(128, 128)], stages=[3, 6], supers=[(2, 2)], clusters=[2], consumers=[2])
    assert configs == [TuneConfig(128, 128, 3, 2, 2, 2), TuneConfig(128, 128, 6, 2, 2, 2)]
    # one axis given, the others from the rung's default space
    only_tiles = tune.sweep("10", tiles=[(256, 128)])
    assert len(only_tiles) == 3 * 2 and {(c.bm, c.bn) for c in only_tiles} == {(256, 128)}
    assert {c.stages for c in only_tiles} == {3, 4, 5}


@pytest.mark.parametrize("rung_id", ["03", "07", "01"])
def test_sweep_refuses_rungs_without_a_tuning_sweep(rung_id):
    with pytest.raises(ValueError, match=r"tunable rungs: 09, 10, 11"):
        tune.sweep(rung_id)
    with pytest.raises(ValueError, match=f"rung {rung_id}"):
        tune.skip_reason(rung_id, TuneConfig(128, 128, 3, 16, 2))


def test_sweep_accepts_the_registry_spellings_of_a_rung():
    assert tune.sweep(11) == tune.sweep("11") == tune.sweep("11_persistent")


# ------------------------------------------------------------------ skip_reason() and plan()

@pytest.mark.parametrize("rung_id", ["09", "10", "11"])
def test_budget_skips_exactly_what_the_seed_arithmetic_puts_over_227_kib(rung_id):
    """Over the default sweep: a configuration is refused for shared memory, with its ring's byte count
    (and rung 11's C buffer) in the reason, exactly when ring + C > 232448; none under it is."""
    over = 0
    for cfg in tune.sweep(rung_id):
        r, c = ring(cfg), c_panels(rung_id, cfg)
        assert cfg.ring_bytes() == r and tune.c_buffer_bytes(rung_id, cfg) == c
        reason = tune.skip_reason(rung_id, cfg)
        if r + c > BUDGET:
            over += 1
            assert reason is not None, cfg.label
            assert reason.startswith("shared memory:") and "227 KiB" in reason, reason
            assert f"= {r} B ring" in reason and f"= {r + c} B > {BUDGET} B" in reason, reason
            assert (f"+ {c} B C buffer" in reason) if c else ("C buffer" not in reason), reason
        else:
            assert reason is None or ("227 KiB" not in reason and "shared memory:" not in reason), (cfg.label, reason)
    # the sweeps do reach past the budget: 5 stages of 128x256 everywhere, 256x128 from 4 stages on rung 11
    assert over == {"09": 2, "10": 4, "11": 36}[rung_id]


def test_rung_11_budget_counts_the_c_panel_buffers():
    """256x128 with 4 stages: the ring alone (192 KiB) would fit, the 64 KiB of C panels do not;
    rung 10, which writes C from registers, runs the same tile."""
    cfg = TuneConfig(256, 128, 4, 16, 2, 1)
    assert ring(cfg) == 196608 <= BUDGET < ring(cfg) + c_panels("11", cfg) == 262144
    reason = tune.skip_reason("11", cfg)
    assert reason is not None and "+ 65536 B C buffer = 262144 B" in reason and "227 KiB" in reason
    assert tune.skip_reason("10", cfg) is None
    assert tune.c_buffer_bytes("11", TuneConfig(128, 256, 4, 16, 2, 2)) == 32768
    assert tune.c_buffer_bytes("11", TuneConfig(128, 64, 4, 16, 2, 1)) == 2 * 1 * 64 * 64 * 2   # bn = 64: one panel
    assert tune.c_buffer_bytes("10", cfg) == tune.c_buffer_bytes("09", cfg) == 0


@pytest.mark.parametrize("rung_id, expected", [
    ("09", {(128, 128, s, 2) for s in (3, 4, 5)} | {(64, 256, s, 2) for s in (3, 4, 5)}),
    ("10", {(128, 256, 3, 2), (128, 256, 4, 2), (256, 128, 3, 2), (256, 128, 4, 2)}
     | {(128, 128, s, 2) for s in (3, 4, 5)}),
    ("11", {(128, 256, 3, 2), (128, 256, 4, 2), (256, 128, 3, 2)} | {(128, 128, s, w) for s in (3, 4, 5) for w in (1, 2)}
     | {(64, 256, s, 1) for s in (3, 4, 5)}),
])
def test_plan_of_the_default_sweeps(rung_id, expected):
    """Which (tile, stages, consumers) of each default sweep can run, worked out by hand (rung 09's
    128x256 needs 256 accumulators per thread, over its 128, as does one consumer with 128x256 or
    256x128; two consumers cannot split 64 rows); every super tile and cluster of those runs."""
    configs = tune.sweep(rung_id)
    runnable, skipped = tune.plan(rung_id, configs)
    assert len(runnable) + len(skipped) == len(configs)
    assert {(c.bm, c.bn, c.stages, c.consumers) for c in runnable} == expected
    space = tune.SPACES[rung_id]
    assert len(runnable) == len(expected) * len(space["supers"]) * len(space["clusters"])
    assert all(reason for _, reason in skipped)
    assert [c for c in configs if c in runnable] == runnable                  # sweep order kept
    if rung_id == "09":
        acc = [r for c, r in skipped if (c.bm, c.bn) == (128, 256) and c.stages < 5]
        assert len(acc) == 4 and all("256 fp32 accumulators" in r for r in acc)


@pytest.mark.parametrize("cfg", [
    TuneConfig(128, 256, 4, 1, 1, 2),
    TuneConfig(128, 256, 4, 3, 2, 2),
    TuneConfig(128, 128, 3, 5, 4, 2),
])
def test_rung_11_cluster_needs_a_super_tile_of_whole_clusters(cfg):
    """Within the budget but refused by rung 11's kernel(): an odd number of super-tile rows cannot be
    paired into clusters; the same with cluster_m = 1 runs."""
    assert ring(cfg) + c_panels("11", cfg) <= BUDGET
    reason = tune.skip_reason("11", cfg)
    assert reason is not None and "227 KiB" not in reason
    assert f"the super tile's {cfg.super_m} rows must hold whole clusters" in reason, reason
    assert tune.skip_reason("11", dataclasses.replace(cfg, cluster_m=1)) is None


def test_rung_11_cluster_needs_an_even_number_of_b_panels():
    reason = tune.skip_reason("11", TuneConfig(128, 64, 3, 16, 2, 2))
    assert reason is not None and "B's 1 panels of 64 columns must split evenly" in reason, reason
    assert tune.skip_reason("11", TuneConfig(128, 64, 3, 16, 2, 1)) is None


@pytest.mark.parametrize("rung_id, cfg, message", [
    ("10", TuneConfig(64, 256, 3, 16, 2), "each of the 2 consumer warpgroups"),
    ("11", TuneConfig(64, 256, 3, 16, 2), "each of the 2 consumer warpgroups"),
    ("10", TuneConfig(128, 96, 3, 16, 2), "bn=96: one wgmma covers the whole tile width"),
    ("09", TuneConfig(128, 192, 3, 16, 2), "bn=192: one wgmma covers the whole tile width"),
    ("11", TuneConfig(128, 128, 2, 16, 2), "stages=2: wgmma still reads the previous stage"),
    ("10", TuneConfig(256, 256, 3, 16, 2), "gives each consumer thread 256 fp32 accumulators"),
    ("11", TuneConfig(128, 128, 3, 0, 2), "super tile (0, 2): both sides must be at least one tile"),
    ("11", TuneConfig(128, 128, 3, 16, 2, 4), "cluster_m=4: the kernel pairs CTAs along M"),
    ("10", TuneConfig(128, 128, 3, 16, 2, 2), "rung 10 has no clusters"),
    ("09", TuneConfig(128, 128, 3, 16, 2, 2), "rung 09 has no clusters"),
])
def test_rules_of_the_rung_within_the_budget(rung_id, cfg, message):
    """A configuration that fits the seed's budget but that the rung's kernel() refuses is skipped with
    that rule's own sentence (not the budget's)."""
    assert ring(cfg) + c_panels(rung_id, cfg) <= BUDGET
    reason = tune.skip_reason(rung_id, cfg)
    assert reason is not None and message in reason, reason
    assert "227 KiB" not in reason
    _, skipped = tune.plan(rung_id, [cfg])
    assert skipped == [(cfg, reason)]


@pytest.mark.parametrize("rung_id", ["09", "10", "11"])
def test_seed_arithmetic_agrees_with_the_kernels_exact_count(rung_id):
    """Beyond the default sweep (every tile of 64-multiples, 3 to 8 stages): whatever passes the seed's
    budget also passes the kernel's exact shared-memory count (1024 bytes of alignment slack, the
    mbarriers, rounding to 1 KiB), so no configuration is refused by the kernel's own budget sentence;
    those that plan() lets through build with at most 232448 bytes."""
    module = MODULES[rung_id]
    let_through = 0
    for bm in (64, 128, 192, 256):
        for bn in (64, 128, 256):
            for stages in range(3, 9):
                cfg = TuneConfig(bm, bn, stages, 16, 2)
                reason = tune.skip_reason(rung_id, cfg)
                if ring(cfg) + c_panels(rung_id, cfg) > BUDGET:
                    assert reason is not None and "227 KiB" in reason
                    continue
                assert reason is None or "bytes of shared memory" not in reason, (cfg.label, reason)
                if reason is None:
                    let_through += 1
                    assert module.kernel(**tune.kernel_kwargs(rung_id, cfg)).smem_bytes <= BUDGET, cfg.label
    assert let_through >= 8


def test_every_runnable_rung_11_configuration_builds_within_the_budget():
    """No compile needed: each configuration plan() lets through really is accepted by
    r11_persistent.kernel(), with its tile, stages, super tile, cluster size, consumers and rung 10's setmaxnreg
    targets as template arguments and the kernel's exact shared memory (alignment slack and mbarriers included)
    within 227 KiB."""
    runnable, _ = tune.plan("11", tune.sweep("11"))
    assert len(runnable) == 72
    for cfg in runnable:
        kwargs = tune.kernel_kwargs("11", cfg)
        k = r11_persistent.kernel(**kwargs)
        assert k.template_args == (cfg.bm, cfg.bn, 64, cfg.stages, cfg.super_m, cfg.super_n, cfg.cluster_m,
                                   cfg.consumers, r10_warp_specialized.PRODUCER_REGS, r10_warp_specialized.CONSUMER_REGS)
        assert k.smem_bytes == r11_persistent.smem_bytes(kwargs["tiles"], cfg.consumers) <= BUDGET, cfg.label
        assert k.smem_bytes >= ring(cfg) + c_panels("11", cfg)
        assert k.threads == 128 * (1 + cfg.consumers)


def test_rung_11_default_configuration_compiles_without_spills():
    """The configuration the tuning chose, compiled by NVRTC for sm_90a (works without a GPU)."""
    k = r11_persistent.kernel(**tune.kernel_kwargs("11", tune.default_config("11")))
    res = k.compile().resources_of(k.name_expression)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert res.registers == 168


# ------------------------------------------------------------------ kernel_kwargs() and default_config()

def test_kernel_kwargs_per_rung():
    cfg = TuneConfig(128, 128, 3, 8, 4, 1)
    k09 = tune.kernel_kwargs("09", cfg)
    assert type(k09["tiles"]) is WgmmaTiles and k09["tiles"] == WgmmaTiles(128, 128, 64, 3)
    assert k09 == {"tiles": WgmmaTiles(128, 128, 64, 3), "super_mn": (8, 4)}
    k10 = tune.kernel_kwargs("10", cfg)
    assert type(k10["tiles"]) is WarpSpecializedTiles
    assert k10 == {"tiles": WarpSpecializedTiles(128, 128, 64, 3), "super_mn": (8, 4)}
    k11 = tune.kernel_kwargs("11", dataclasses.replace(cfg, cluster_m=2))
    assert type(k11["tiles"]) is WarpSpecializedTiles
    assert k11 == {"tiles": WarpSpecializedTiles(128, 128, 64, 3), "super_mn": (8, 4), "cluster_m": 2, "consumers": 2}
    assert tune.kernel_kwargs("11", cfg)["cluster_m"] == 1          # passed even when 1 (the kernel defaults to 2)
    assert tune.kernel_kwargs("11", dataclasses.replace(cfg, consumers=1))["consumers"] == 1
    with pytest.raises(ValueError, match="only rung 11 takes consumers"):
        tune.kernel_kwargs("10", dataclasses.replace(cfg, consumers=1))


@pytest.mark.parametrize("rung_id", ["09", "10"])
def test_kernel_kwargs_refuses_clusters_outside_rung_11(rung_id):
    with pytest.raises(ValueError, match=f"rung {rung_id} has no clusters"):
        tune.kernel_kwargs(rung_id, TuneConfig(128, 128, 3, 16, 2, 2))


@pytest.mark.parametrize("rung_id, expected", [
    ("09", TuneConfig(128, 128, 3, 16, 2, 1)),
    ("10", TuneConfig(128, 256, 4, 16, 2, 1)),
    ("11", TuneConfig(128, 256, 4, 16, 2, 2)),
])
def test_default_config_is_the_rungs_defaults(rung_id, expected):
    """default_config() reads the module's TILES, SUPER (and CLUSTER_M): the kernel built from it is the
    rung's registered kernel, and it is a runnable point of the rung's default sweep."""
    module = MODULES[rung_id]
    cfg = tune.default_config(rung_id)
    assert cfg == expected
    assert (cfg.bm, cfg.bn, cfg.stages) == (module.TILES.bm, module.TILES.bn, module.TILES.stages)
    assert (cfg.super_m, cfg.super_n) == module.SUPER
    assert cfg.cluster_m == getattr(module, "CLUSTER_M", 1)
    assert module.kernel(**tune.kernel_kwargs(rung_id, cfg)).name_expression == module.kernel().name_expression
    assert module.RUNG.name_expressions == (module.kernel().name_expression,)
    assert cfg in tune.sweep(rung_id)
    assert tune.skip_reason(rung_id, cfg) is None


def test_labels():
    assert TuneConfig(128, 256, 4, 16, 2, 2).label == "128x256 s4 super 16x2 cluster 2"
    assert TuneConfig(256, 128, 3, 8, 4).label == "256x128 s3 super 8x4"


# ------------------------------------------------------------------ score(), best(), format_tune_table()

def test_score_is_the_geometric_mean():
    assert tune.score([50.0, 200.0]) == pytest.approx(100.0)
    assert tune.score([81.0]) == pytest.approx(81.0)
    assert tune.score([90.0, 90.0, 90.0]) == pytest.approx(90.0)
    assert tune.score([10.0, 100.0, 1000.0]) == pytest.approx(100.0)
    assert tune.score([150.0, 40.0]) == pytest.approx(math.sqrt(6000.0))
    assert tune.score([150.0, 40.0]) < (150.0 + 40.0) / 2            # not the arithmetic mean


A = TuneConfig(128, 256, 4, 16, 2, 2)
B = TuneConfig(128, 256, 3, 16, 2, 1)
C = TuneConfig(128, 128, 5, 8, 4, 1)
D = TuneConfig(256, 128, 3, 4, 8, 2)


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

def test_cli_dry_run_lists_runnable_and_skipped(capsys):
    """`hgemm-course tune 11 --dry-run`: a "run" line per runnable configuration on stdout, with its
    shared memory by the seed's arithmetic; a "skip" line with the reason for each of the others and
    the count on stderr; nothing launched, exit 0."""
    assert main(["tune", "11", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    runnable, skipped = tune.plan("11", tune.sweep("11"))
    run_lines = [l for l in out.splitlines() if l.startswith("run  ")]
    assert len(run_lines) == len(runnable) == 72 and len(out.splitlines()) == 72
    for cfg, line in zip(runnable, run_lines):
        assert line == (f"run  {cfg.label}: {ring(cfg) + c_panels('11', cfg)} B "
                        "of shared memory by the seed's arithmetic")
    skip_lines = [l for l in err.splitlines() if l.startswith("skip ")]
    assert skip_lines == [f"skip {cfg.label}: {reason}" for cfg, reason in skipped]
    assert len(skip_lines) == 72
    assert sum("227 KiB" in l for l in skip_lines) == 36                    # the rest: accumulators, m64 splits
    assert all("227 KiB" in l or "fp32 accumulators" in l or "whole m64 products" in l for l in skip_lines)
    assert "rung 11: 72 of 144 configurations can run" in err.splitlines()


def test_cli_dry_run_with_explicit_axes(capsys):
    """--tiles 128x256 --stages 4 5: 1 x 2 x 3 supers x 2 clusters = 12; the 6 with 5 stages are over
    the budget (245760 B ring + 32768 B C)."""
    assert main(["tune", "11", "--tiles", "128x256", "--stages", "4", "5", "--consumers", "2", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    run_lines = out.splitlines()
    assert len(run_lines) == 6
    assert all(l.startswith("run  128x256 s4 super ") and l.endswith(f": {196608 + 32768} B of shared memory "
                                                                      "by the seed's arithmetic") for l in run_lines)
    skip_lines = [l for l in err.splitlines() if l.startswith("skip ")]
    assert len(skip_lines) == 6
    assert all(l.startswith("skip 128x256 s5 super ") and "245760 B ring + 32768 B C buffer" in l
               for l in skip_lines)
    assert "rung 11: 6 of 12 configurations can run" in err


def test_cli_dry_run_supers_and_clusters(capsys):
    assert main(["tune", "11", "--tiles", "128x128", "--stages", "3", "--supers", "16x2", "3x2",
                 "--clusters", "1", "2", "--consumers", "2", "1", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert [l.split(":")[0] for l in out.splitlines()] == [
        "run  128x128 s3 super 16x2", "run  128x128 s3 super 16x2 1 consumer", "run  128x128 s3 super 16x2 cluster 2",
        "run  128x128 s3 super 16x2 cluster 2 1 consumer", "run  128x128 s3 super 3x2",
        "run  128x128 s3 super 3x2 1 consumer"]
    assert "skip 128x128 s3 super 3x2 cluster 2: cluster_m=2: the super tile's 3 rows must hold whole clusters" in err
    assert "rung 11: 6 of 8 configurations can run" in err


@pytest.mark.parametrize("bad", ["128-256", "128x256x64", "ax4"])
def test_cli_malformed_tiles_is_an_argparse_error(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["tune", "11", "--tiles", bad, "--dry-run"])
    assert exc.value.code == 2
    assert "expected two numbers as AxB" in capsys.readouterr().err


@pytest.mark.parametrize("rung_id", ["07", "03"])
def test_cli_refuses_a_rung_without_a_sweep(rung_id, capsys):
    assert main(["tune", rung_id, "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("hgemm-course tune: ") and "tunable rungs: 09, 10, 11" in err


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
    assert main(["tune", "11", "--tiles", "128x256", "--stages", "4", "--supers", "16x2", "--clusters", "2",
                 "--sizes", "512", "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "hgemm-course tune: Tuning rung 11 needs an NVIDIA GPU" in err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ the recorded tuning of rung 11

def _latest_rung_11_tuning():
    runs = [(p, d) for p, d in load_runs(kind="tune") if d["provenance"].get("rung") == "11"]
    assert runs, "no results/tune_*.json of rung 11: rung 11's defaults cite one"
    return runs[-1]


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
        assert TuneConfig(**r["config"]).label == r["label"]
        assert r["pct_cublas"] > 0
    # each configuration timed once per size
    keys = [(r["label"], r["M"], r["N"], r["K"]) for r in records]
    assert len(keys) == len(set(keys))
    # what the run skipped, today's plan of the default sweep still skips, for the same reason
    skipped_today = {cfg.label: reason for cfg, reason in tune.plan("11", tune.sweep("11"))[1]}
    assert prov["skipped"]
    for label, reason in prov["skipped"]:
        assert skipped_today.get(label) == reason, label
    assert not {label for label, _ in prov["skipped"]} & {r["label"] for r in records}


def test_recorded_best_is_the_best_of_its_records():
    _, data = _latest_rung_11_tuning()
    chosen = tune.best(data["records"])
    assert chosen is not None
    assert chosen[0] == data["provenance"]["best"]


def test_recorded_configurations_still_pass_the_plan():
    _, data = _latest_rung_11_tuning()
    for cfg in {TuneConfig(**r["config"]) for r in data["records"]}:
        assert tune.skip_reason("11", cfg) is None, cfg.label


def test_rung_11_defaults_are_the_recorded_best():
    """Rung 11's TILES / SUPER / CLUSTER_M / CONSUMERS are the configuration the recorded tuning run found
    best (a record from before the consumers axis existed ran with 2)."""
    _, data = _latest_rung_11_tuning()
    assert data["provenance"]["best"] == tune.best(data["records"])[0]
    assert tune.default_config("11") == TuneConfig(**data["provenance"]["best"])


# ------------------------------------------------------------------ on the GPU

@pytest.mark.gpu
def test_run_times_configurations_against_cublas():
    """Two configurations of rung 11 (its defaults, and 128x128 with 3 stages, no clusters) verified on
    the odd shapes and timed at 512^3: one record each, % of cuBLAS > 0, no failure, nothing skipped."""
    configs = [tune.default_config("11"), TuneConfig(128, 128, 3, 16, 2, 1)]
    records, skipped, failures = tune.run("11", [512], configs, repeats=20, progress=False)
    assert skipped == [] and failures == []
    assert len(records) == len(configs)
    assert [r["config"] for r in records] == [dataclasses.asdict(c) for c in configs]
    assert [r["label"] for r in records] == [c.label for c in configs]
    for r in records:
        assert r["rung"] == "11" and (r["M"], r["N"], r["K"]) == (512, 512, 512)
        assert r["pct_cublas"] > 0 and r["ms"] > 0
    assert tune.best(records) is not None
