"""Tuning sweeps of the tensor-core rungs: ``hgemm-course tune RUNG``.

A rung module declares what can be tuned on it as ``TUNABLE`` (a :class:`~hgemm_course.library.ladder.nvrtc_kernel.Tunable`):
the tile shapes and ring stages of its default sweep and, where its kernel takes them, super tiles, cluster
sizes and consumer warpgroups. A sweep is the product of those axes (or of the values given instead). Each
configuration becomes keyword arguments of the rung's own ``kernel()`` and ``launch()``, and whatever
``kernel()`` refuses (warp tiles that do not split the tile, more shared memory than a CTA may have on the
target, a super tile that does not hold whole clusters) is skipped with the rung's own sentence,
before anything is compiled. The rest are verified (random inputs, NaN-poisoned C, FP32 reference; odd
shapes that exercise the M, N and K tails, then each timed size) and timed in the same process by
:func:`hgemm_course.measurement.bench.bench` against the vendor baseline of each size: the faster of cuBLAS (cupy.matmul)
and, where PyTorch is installed, cuBLASLt (torch.matmul), chosen once per size before the sweep
(:func:`hgemm_course.measurement.vendors.pick_vendors`), so every configuration at a size is timed against the same one.
Every configuration's median lands in one JSON file under results/ (kind ``tune``), each record naming its
baseline (``vendor``), and the configuration with the best geometric mean of % of the baseline over the sizes
is named: the rungs' defaults are chosen from these records (see the rung modules' comments).
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import itertools
import math
from dataclasses import dataclass
from functools import partial

from ..library.ladder import get, registry
from ..library.target import current
from .text_table import Column, cell, text_table

# Odd shapes verified before a configuration is timed: M and N tails, K not a multiple of 64, thin.
VERIFY_SHAPES = ((257, 136, 72), (1000, 1000, 1032), (512, 1024, 4104))
# The axes a rung may declare besides tiles and stages, and the keyword of its kernel() each one sets.
KEYWORDS = {"supers": "super_mn", "clusters": "cluster_m", "consumers": "consumers"}


@dataclass(frozen=True)
class TuneConfig:
    """One point of a sweep: a (bm, bn) tile with ``stages`` ring buffers and, where the rung has these axes,
    rung 06's super tile (super_m x super_n tiles, n fastest), CTAs per cluster along M and consumer
    warpgroups; None where it has not."""

    bm: int
    bn: int
    stages: int
    super_m: int | None = None
    super_n: int | None = None
    cluster_m: int | None = None
    consumers: int | None = None

    @property
    def label(self) -> str:
        supers = f" super {self.super_m}x{self.super_n}" if self.super_m is not None else ""
        cluster = f" cluster {self.cluster_m}" if (self.cluster_m or 1) > 1 else ""
        consumers = " 1 consumer" if self.consumers == 1 else ""
        return f"{self.bm}x{self.bn} s{self.stages}{supers}{cluster}{consumers}"


def _rung_module(rung_id: str):
    rung = get(rung_id)
    return importlib.import_module(rung.launch.__module__)


def tunable_rungs() -> list[str]:
    """The rungs whose module declares a ``TUNABLE``, in ladder order."""
    return [rung_id for rung_id in registry() if hasattr(_rung_module(rung_id), "TUNABLE")]


def _module(rung_id: str):
    module = _rung_module(rung_id)
    if not hasattr(module, "TUNABLE"):
        rung = get(rung_id)
        raise ValueError(f"rung {rung.id} ({rung.slug}) has no tuning sweep (its module declares no TUNABLE); "
                         f"tunable rungs: {', '.join(tunable_rungs())}.")
    return module


def space(rung_id: str) -> dict[str, tuple]:
    """The rung's declared axes, each with the values of its default sweep; the axes it lacks left out."""
    tunable = _module(rung_id).TUNABLE
    return {f.name: getattr(tunable, f.name) for f in dataclasses.fields(tunable) if getattr(tunable, f.name)}


def _defaults(module) -> dict:
    """The rung's defaults: its ``kernel()``'s keyword defaults (TILES, SUPER, ...), with the tiles sized for the
    current target where the rung sizes them (``tiles_for``)."""
    out = {name: p.default for name, p in inspect.signature(module.kernel).parameters.items()}
    if out.get("tiles") is None and hasattr(module, "tiles_for"):
        out["tiles"] = module.tiles_for(current())
    return out


def _config(point: dict) -> TuneConfig:
    """A configuration from one value per declared axis."""
    (bm, bn), (super_m, super_n) = point["tiles"], point.get("supers", (None, None))
    return TuneConfig(bm, bn, point["stages"], super_m, super_n, point.get("clusters"), point.get("consumers"))


def _product(axes: dict) -> list[TuneConfig]:
    """Every combination of the axes' values, the last axis fastest."""
    return [_config(dict(zip(axes, values))) for values in itertools.product(*axes.values())]


def kernel_kwargs(rung_id: str, cfg: TuneConfig) -> dict:
    """The rung's ``kernel()`` / ``launch()`` keyword arguments for this configuration: its default tiles
    (bk, warp tiles) with this (bm, bn) and stages, and one keyword per further axis the rung declares."""
    rung_id = get(rung_id).id
    module, axes = _module(rung_id), space(rung_id)
    kwargs = {"tiles": dataclasses.replace(_defaults(module)["tiles"], bm=cfg.bm, bn=cfg.bn, stages=cfg.stages)}
    values = {"supers": None if cfg.super_m is None else (cfg.super_m, cfg.super_n),
              "clusters": cfg.cluster_m, "consumers": cfg.consumers}
    for axis, value in values.items():
        if axis in axes and value is None:
            raise ValueError(f"{cfg.label}: rung {rung_id}'s kernel() takes {KEYWORDS[axis]}; give the "
                             f"configuration its {axis} value.")
        if axis not in axes and value is not None:
            raise ValueError(f"{cfg.label}: rung {rung_id} has no {axis} axis (its kernel() takes no {KEYWORDS[axis]}).")
        if axis in axes:
            kwargs[KEYWORDS[axis]] = value
    return kwargs


def build(rung_id: str, cfg: TuneConfig):
    """The rung's kernel for this configuration (a TemplateKernel; nothing is compiled)."""
    return _module(rung_id).kernel(**kernel_kwargs(rung_id, cfg))


def skip_reason(rung_id: str, cfg: TuneConfig) -> str | None:
    """Why ``cfg`` cannot run (None when it can): the rung's own refusal, without compiling anything."""
    kernel, kwargs = _module(rung_id).kernel, kernel_kwargs(rung_id, cfg)
    try:
        kernel(**kwargs)
    except ValueError as exc:
        return str(exc)
    return None


def _value_text(axis: str, value) -> str:
    if isinstance(value, tuple):
        return f"{'tile' if axis == 'tiles' else 'super tile'} {value[0]}x{value[1]}"
    return f"{axis}={value}"


def check_axes(rung_id: str, given: dict) -> None:
    """Refuse, naming the fix, a given axis value that no configuration can use: a count below 1, an axis the
    rung's TUNABLE does not declare, or a value its ``kernel()`` refuses with every value of the other axes,
    declared or given (its refusal quoted). Combinations of usable values that the rung cannot run are left
    to :func:`plan`, which skips them with a reason."""
    rung_id = get(rung_id).id
    axes = space(rung_id)
    for axis, values in given.items():
        if values and axis not in axes:
            having = [r for r in tunable_rungs() if axis in space(r)]
            raise ValueError(f"--{axis}: rung {rung_id} has no such axis (its kernel() takes no {KEYWORDS[axis]}); "
                             f"rungs that have one: {', '.join(having)}.")
        for value in values or ():
            if min(value if isinstance(value, tuple) else (value,)) < 1:
                raise ValueError(f"{_value_text(axis, value)}: tiles, stages, super tiles, clusters and consumers "
                                 "are counts of at least 1.")
    wider = {axis: (*values, *(given.get(axis) or ())) for axis, values in axes.items()}
    for axis, values in given.items():
        for value in values or ():
            trial = _product({**wider, axis: (value,)})
            reasons = [skip_reason(rung_id, cfg) for cfg in trial]
            if all(reasons):
                raise ValueError(f"{_value_text(axis, value)}: rung {rung_id}'s kernel() refuses every configuration "
                                 f"with it, e.g. {trial[0].label}: {reasons[0]}")


def sweep(rung_id: str, *, tiles=None, stages=None, supers=None, clusters=None, consumers=None) -> list[TuneConfig]:
    """The product of the rung's axes: the values given, each first checked by :func:`check_axes`, and the
    rung's TUNABLE for the axes not given."""
    given = {"tiles": tiles, "stages": stages, "supers": supers, "clusters": clusters, "consumers": consumers}
    check_axes(rung_id, given)
    return _product({**space(rung_id), **{axis: tuple(values) for axis, values in given.items() if values}})


def plan(rung_id: str, configs) -> tuple[list[TuneConfig], list[tuple[TuneConfig, str]]]:
    """Split configurations into those that can run and those skipped, each with its reason."""
    runnable, skipped = [], []
    for cfg in configs:
        reason = skip_reason(rung_id, cfg)
        (skipped.append((cfg, reason)) if reason else runnable.append(cfg))
    return runnable, skipped


def variant(rung_id: str, cfg: TuneConfig):
    """The rung with this configuration's launch: a Rung that bench verifies and times like any other."""
    module = _module(rung_id)
    return dataclasses.replace(get(rung_id), launch=partial(module.launch, **kernel_kwargs(rung_id, cfg)),
                               extra={"config": dataclasses.asdict(cfg), "label": cfg.label})


def default_config(rung_id: str) -> TuneConfig:
    """The rung's current defaults (its ``kernel()``'s default arguments) as a configuration of its sweep."""
    defaults = _defaults(_module(rung_id))
    tiles = defaults["tiles"]
    return _config({"tiles": (tiles.bm, tiles.bn), "stages": tiles.stages,
                    **{axis: defaults[KEYWORDS[axis]] for axis in space(rung_id) if axis in KEYWORDS}})


def score(pcts: list[float]) -> float:
    """Geometric mean of % of the vendor baseline over the sizes: one configuration's figure of merit."""
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
    """Verify and time every runnable configuration at ``sizes`` against the faster vendor baseline at each size,
    chosen once before the sweep (:func:`hgemm_course.measurement.vendors.pick_vendors`; one process, one GPU). Returns
    (records, skipped, failures): records as dicts with ``label`` and ``config`` added, each naming its ``vendor``."""
    from tqdm import tqdm

    from . import bench, vendors, verification
    from ..library import device

    device.require_gpu(f"Tuning rung {rung_id}")
    rung_id = get(rung_id).id
    runnable, skipped = plan(rung_id, configs if configs is not None else sweep(rung_id))
    records, failures = [], []
    baselines = vendors.pick_vendors(sizes, repeats=repeats) if runnable else {}
    for cfg in tqdm(runnable, desc=f"tune {rung_id}", unit="config", disable=not progress):
        rung = variant(rung_id, cfg)
        checks = [verification.verify(rung, *shape) for shape in VERIFY_SHAPES]
        bad = [c for c in checks if not c.passed]
        if bad:
            failures.extend((cfg, c) for c in bad)
            continue
        failed: list = []
        for rec in bench.bench([rung], sizes, repeats=repeats, progress=False, failures=failed,
                                  baselines=baselines):
            records.append({**rec.as_dict(), "label": cfg.label, "config": dataclasses.asdict(cfg)})
        failures.extend((cfg, c) for c in failed)
    return records, skipped, failures


def format_tune_table(records: list[dict]) -> str:
    """One row per configuration, % of the vendor baseline per size (:func:`hgemm_course.measurement.vendors.baseline_note`
    names it), best first."""
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in records})
    by_label: dict[str, dict] = {}
    for r in records:
        by_label.setdefault(r["label"], {})[(r["M"], r["N"], r["K"])] = r["pct_cublas"]
    width = max([36] + [len(label) + 2 for label in by_label])
    columns = ([Column("configuration", width, "<")] + [Column(f"{m}x{n}x{k}", 16) for m, n, k in sizes]
               + [Column("geomean", 10)])
    rows = []
    for label, pcts in by_label.items():
        merit = score(list(pcts.values()))
        # configurations timed at every size first (those best() compares), then the rest
        rows.append((len(pcts) == len(sizes), merit, [label, *(cell(pcts.get(s), ".1f", "%") for s in sizes), f"{merit:.1f}%"]))
    return text_table(columns, [row for *_, row in sorted(rows, reverse=True)], gap="")


def recorded_tile_comparison(rungs, tiles, *, folder=None) -> str:
    """A table, labelled as recorded, of the newest paired tune records of each rung at each CTA tile ("BMxBN"):
    % of the vendor baseline per cube size, so two rungs are compared at one tile. Other settings (stages, super tiles)
    are whatever the tune ran with; a missing cell reads "-"."""
    from .vendors import baseline_label
    from .records import load_runs

    rungs = [get(r).id for r in rungs]
    wanted = {tuple(int(x) for x in t.split("x")): t for t in tiles}
    cells: dict[tuple, float] = {}
    files: set[str] = set()
    shown: list[dict] = []
    for path, data in load_runs(folder, kind="tune"):              # oldest first: newer records overwrite
        for r in data["records"]:
            cfg = r.get("config") or {}
            tile = (cfg.get("bm"), cfg.get("bn"))
            if r.get("paired") and r["rung"] in rungs and tile in wanted and r["M"] == r["N"] == r["K"]:
                cells[(r["rung"], wanted[tile], r["M"])] = r["pct_cublas"]
                files.add(path.name)
                shown.append(r)
    if not cells:
        return (f"No recorded paired tune of rungs {', '.join(rungs)} at tiles {', '.join(tiles)}: run "
                f"`hgemm-course tune RUNG --tiles {' '.join(tiles)} --record` on the H200.")
    sizes = sorted({n for _, _, n in cells})
    columns = [Column("tile", 10, "<"), Column("rung", 6, "<")] + [Column(f"{n}^3", 9) for n in sizes]
    rows = [[tile, rung, *(cell(cells.get((rung, tile, n)), ".1f", "%") for n in sizes)] for tile in tiles for rung in rungs]
    return (f"RECORDED paired tunes ({', '.join(sorted(files))}), % of {baseline_label(shown, per_shape=True)}:\n"
            + text_table(columns, rows, gap=""))
