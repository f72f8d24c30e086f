"""Tuning sweeps of the Hopper rungs (09 wgmma, 10 warp specialization, 11 persistent): ``hgemm-course tune RUNG``.

A sweep walks the product of tile shapes, ring stages, super-tile orders and (rung 11) cluster sizes and
consumer warpgroups (seed 001's 1p1c against 1p2c). A value of an axis that no configuration can use
(a 96-row tile, 2 stages, 3 consumers) is refused before anything is planned.
Before anything is compiled or launched, each configuration is checked against the shared-memory
budget with seed 001's arithmetic, stages x (BM + BN) x BK x 2 bytes of ring (plus rung 11's
C panel buffers) against the 227 KiB a CTA may have on sm_90, and against the rung's own
rules (its ``kernel()`` refuses what the kernel cannot do); a configuration that fails is skipped with
that reason. The rest are verified (random inputs, NaN-poisoned C, FP32 reference; odd shapes that
exercise the M, N and K tails, then each timed size) and timed against cuBLAS in the same process by
:func:`hgemm_course.harness.bench`. Every configuration's median lands in one JSON file under
results/ (kind ``tune``), and the configuration with the best geometric mean of % of cuBLAS over the
sizes is named: the rung's defaults are chosen from these records (see the rung modules' comments).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from functools import partial

from .ladder import get
from .ladder.nvrtc_kernel import SMEM_PER_CTA_OPTIN
from .ladder.r09_wgmma import WGMMA_N

TUNABLE = ("09", "10", "11")
BK = 64                                      # every Hopper rung: one 128-byte swizzle row of A per stage row
# Odd shapes verified before a configuration is timed: M and N tails, K not a multiple of BK, thin.
VERIFY_SHAPES = ((257, 136, 72), (1000, 1000, 1032), (512, 1024, 4104))


@dataclass(frozen=True)
class TuneConfig:
    """One point of a sweep: a (bm, bn) tile, ``stages`` ring buffers of BK = 64, rung 06's super tile
    (super_m x super_n tiles, n fastest) and, for rung 11, CTAs per cluster along M and consumer warpgroups."""

    bm: int
    bn: int
    stages: int
    super_m: int
    super_n: int
    cluster_m: int = 1
    consumers: int = 2

    @property
    def label(self) -> str:
        cluster = f" cluster {self.cluster_m}" if self.cluster_m > 1 else ""
        consumers = " 1 consumer" if self.consumers == 1 else ""
        return f"{self.bm}x{self.bn} s{self.stages} super {self.super_m}x{self.super_n}{cluster}{consumers}"

    def ring_bytes(self) -> int:
        """Seed 001's budget arithmetic: stages x (BM + BN) x BK x 2 bytes of fp16 operands."""
        return self.stages * (self.bm + self.bn) * BK * 2


def c_buffer_bytes(rung_id: str, cfg: TuneConfig) -> int:
    """Rung 11 stores C through fp16 panel buffers in shared memory (two (bm / 2, 64) panels per consumer);
    rungs 09 and 10 write C from registers."""
    if get(rung_id).id != "11":
        return 0
    from .ladder.r11_persistent import c_buffer_bytes as panels

    return panels(kernel_kwargs(rung_id, cfg)["tiles"], cfg.consumers)


def kernel_kwargs(rung_id: str, cfg: TuneConfig) -> dict:
    """The rung's ``kernel()`` / ``launch()`` keyword arguments for this configuration."""
    rung_id = get(rung_id).id
    if rung_id == "09":
        from .ladder.r09_wgmma import WgmmaTiles as Tiles
    else:
        from .ladder.r10_warp_specialized import WarpSpecializedTiles as Tiles
    kwargs = {"tiles": Tiles(cfg.bm, cfg.bn, BK, cfg.stages), "super_mn": (cfg.super_m, cfg.super_n)}
    if rung_id == "11":
        kwargs["cluster_m"] = cfg.cluster_m
        kwargs["consumers"] = cfg.consumers
    elif cfg.cluster_m != 1:
        raise ValueError(f"rung {rung_id} has no clusters; only rung 11 takes cluster_m.")
    elif cfg.consumers != 2:
        raise ValueError(f"rung {rung_id}'s warpgroups are fixed; only rung 11 takes consumers (1 or 2).")
    return kwargs


def _module(rung_id: str):
    import importlib

    rung = get(rung_id)
    if rung.id not in TUNABLE:
        raise ValueError(f"rung {rung.id} ({rung.slug}) has no tuning sweep; tunable rungs: {', '.join(TUNABLE)}.")
    return importlib.import_module(f"hgemm_course.ladder.r{rung.id}_{rung.slug}")


def skip_reason(rung_id: str, cfg: TuneConfig) -> str | None:
    """Why ``cfg`` cannot run (None when it can): the shared-memory budget first, in the seed's
    arithmetic, then the rung's own refusals (its ``kernel()``), all without compiling anything."""
    module = _module(rung_id)
    ring, c_buf = cfg.ring_bytes(), c_buffer_bytes(rung_id, cfg)
    if ring + c_buf > SMEM_PER_CTA_OPTIN:
        c_text = f" + {c_buf} B C buffer" if c_buf else ""
        return (f"shared memory: {cfg.stages} x ({cfg.bm} + {cfg.bn}) x {BK} x 2 = {ring} B ring{c_text} "
                f"= {ring + c_buf} B > {SMEM_PER_CTA_OPTIN} B (227 KiB per CTA on sm_90)")
    try:
        module.kernel(**kernel_kwargs(rung_id, cfg))
    except ValueError as exc:
        return str(exc)
    return None


# The default sweeps: what seed 001 and the Hopper worklogs tune (tile width, stages, raster order, clusters).
SPACES = {
    "09": {"tiles": ((128, 128), (128, 256), (64, 256)), "stages": (3, 4, 5), "supers": ((16, 2), (8, 4)),
           "clusters": (1,), "consumers": (2,)},
    "10": {"tiles": ((128, 256), (256, 128), (128, 128)), "stages": (3, 4, 5), "supers": ((16, 2), (8, 4)),
           "clusters": (1,), "consumers": (2,)},
    "11": {"tiles": ((128, 256), (256, 128), (128, 128), (64, 256)), "stages": (3, 4, 5),
           "supers": ((16, 2), (8, 4), (4, 8)), "clusters": (1, 2), "consumers": (2, 1)},
}


def check_axes(rung_id: str, *, tiles=None, stages=None, supers=None, clusters=None, consumers=None) -> None:
    """Refuse, naming the fix, an axis value that no configuration of the rung can use; combinations
    of usable values that the rung cannot run are left to :func:`plan`, which skips them with a reason.
    Clusters and consumers take the values of the rung's space (rung 11's kernel: 1 or 2 of each)."""
    rung_id = get(rung_id).id
    smallest_stage = (64 + 64) * BK * 2                      # one ring stage of the smallest tile, 64x64
    max_stages = SMEM_PER_CTA_OPTIN // smallest_stage
    for bm, bn in tiles or ():
        if bm < 64 or bm > 256 or bm % 64:
            raise ValueError(f"tile {bm}x{bn}: BM must be 64, 128, 192 or 256 (whole m64 wgmma products, at most "
                             "256 rows per TMA box).")
        if bn not in WGMMA_N:
            raise ValueError(f"tile {bm}x{bn}: BN must be one of {', '.join(map(str, WGMMA_N))} (one wgmma covers "
                             "the tile's width).")
    for s in stages or ():
        if not 3 <= s <= max_stages:
            raise ValueError(f"stages={s}: use 3 to {max_stages}; wgmma still reads one stage while the next is loaded, "
                             f"and {max_stages} stages of the smallest tile (64x64) fill the {SMEM_PER_CTA_OPTIN} B of a CTA.")
    for sm, sn in supers or ():
        if sm < 1 or sn < 1:
            raise ValueError(f"super tile {sm}x{sn}: both sides count output tiles; use at least 1x1.")
    for axis, values in (("clusters", clusters), ("consumers", consumers)):
        allowed = sorted(SPACES[rung_id][axis])
        for value in values or ():
            if value not in allowed:
                raise ValueError(f"{axis}={value}: rung {rung_id} runs with {' or '.join(map(str, allowed))} only.")


def sweep(rung_id: str, *, tiles=None, stages=None, supers=None, clusters=None, consumers=None) -> list[TuneConfig]:
    """The product of the sweep's axes (the rung's default space where an axis is not given), each
    given value first checked by :func:`check_axes`."""
    rung_id = get(rung_id).id
    _module(rung_id)
    check_axes(rung_id, tiles=tiles, stages=stages, supers=supers, clusters=clusters, consumers=consumers)
    space = SPACES[rung_id]
    axes = (tiles or space["tiles"], stages or space["stages"], supers or space["supers"],
            clusters or space["clusters"], consumers or space["consumers"])
    return [TuneConfig(bm, bn, s, sm, sn, c, w) for (bm, bn), s, (sm, sn), c, w in itertools.product(*axes)]


def plan(rung_id: str, configs) -> tuple[list[TuneConfig], list[tuple[TuneConfig, str]]]:
    """Split configurations into those that can run and those skipped, each with its reason."""
    runnable, skipped = [], []
    for cfg in configs:
        reason = skip_reason(rung_id, cfg)
        (skipped.append((cfg, reason)) if reason else runnable.append(cfg))
    return runnable, skipped


def variant(rung_id: str, cfg: TuneConfig):
    """The rung with this configuration's launch: a Rung the harness verifies and times like any other."""
    module = _module(rung_id)
    return dataclasses.replace(get(rung_id), launch=partial(module.launch, **kernel_kwargs(rung_id, cfg)),
                               extra={"config": dataclasses.asdict(cfg), "label": cfg.label})


def default_config(rung_id: str) -> TuneConfig:
    """The rung's current defaults as a configuration of its sweep."""
    module = _module(rung_id)
    t = module.TILES
    consumers = module.CONSUMERS if get(rung_id).id == "11" else 2   # the axis only rung 11 has
    return TuneConfig(t.bm, t.bn, t.stages, *module.SUPER, getattr(module, "CLUSTER_M", 1), consumers)


def score(pcts: list[float]) -> float:
    """Geometric mean of % of cuBLAS over the sizes: one configuration's figure of merit."""
    return math.exp(sum(math.log(p) for p in pcts) / len(pcts))


def best(records: list[dict]) -> tuple[dict, float] | None:
    """The configuration (its ``config`` dict) with the highest :func:`score` over the sizes it was
    timed at, among those timed at every size any configuration was timed at."""
    by_config: dict[str, list[dict]] = {}
    for r in records:
        by_config.setdefault(r["label"], []).append(r)
    sizes = {(r["M"], r["N"], r["K"]) for r in records}
    complete = {k: rs for k, rs in by_config.items() if {(r["M"], r["N"], r["K"]) for r in rs} == sizes}
    if not complete:
        return None
    label = max(complete, key=lambda k: score([r["pct_cublas"] for r in complete[k]]))
    return complete[label][0]["config"], score([r["pct_cublas"] for r in complete[label]])


def run(rung_id: str, sizes, configs=None, *, repeats: int = 30, progress: bool = True):
    """Verify and time every runnable configuration at ``sizes`` against cuBLAS (one process, one GPU).
    Returns (records, skipped, failures): records as dicts with ``label`` and ``config`` added."""
    from tqdm.auto import tqdm

    from . import device, harness

    device.require_gpu(f"Tuning rung {rung_id}")
    rung_id = get(rung_id).id
    runnable, skipped = plan(rung_id, configs if configs is not None else sweep(rung_id))
    records, failures = [], []
    for cfg in tqdm(runnable, desc=f"tune {rung_id}", unit="config", disable=not progress):
        rung = variant(rung_id, cfg)
        checks = [harness.verify(rung, *shape) for shape in VERIFY_SHAPES]
        bad = [c for c in checks if not c.passed]
        if bad:
            failures.extend((cfg, c) for c in bad)
            continue
        failed: list = []
        for rec in harness.bench([rung], sizes, repeats=repeats, progress=False, failures=failed):
            records.append({**rec.as_dict(), "label": cfg.label, "config": dataclasses.asdict(cfg)})
        failures.extend((cfg, c) for c in failed)
    return records, skipped, failures


def format_tune_table(records: list[dict]) -> str:
    """One row per configuration, % of cuBLAS per size, best first."""
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in records})
    by_label: dict[str, dict] = {}
    for r in records:
        by_label.setdefault(r["label"], {})[(r["M"], r["N"], r["K"])] = r["pct_cublas"]
    width = max([36] + [len(label) + 2 for label in by_label])
    head = f"{'configuration':<{width}}" + "".join(f"{f'{m}x{n}x{k}':>16}" for m, n, k in sizes) + f"{'geomean':>10}"
    rows = []
    for label, pcts in by_label.items():
        cells = "".join(f"{pcts[s]:>15.1f}%" if s in pcts else f"{'-':>16}" for s in sizes)
        merit = score(list(pcts.values()))
        # configurations timed at every size first (those best() compares), then the rest
        rows.append((len(pcts) == len(sizes), merit, f"{label:<{width}}{cells}{merit:>9.1f}%"))
    return "\n".join([head] + [row for *_, row in sorted(rows, reverse=True)])
