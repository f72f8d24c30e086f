"""The ladder's tile geometry is declared once (hgemm_course/library/rung_geometry.toml): the launchers build their tiles
from it, sim/ and viz/ read it and import no rung, and each choice was measured by the tune record it names."""
import ast
import json
import math
from pathlib import Path

import pytest

from hgemm_course.library import geometry
from hgemm_course.sim import raster
from hgemm_course.library.ladder import registry
from hgemm_course.library.paths import results_dir

PACKAGE = Path(geometry.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, relative imports written out from the package (hgemm_course.library.ladder.r06_...)."""
    package = ["hgemm_course", *path.parent.relative_to(PACKAGE).parts]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return out


@pytest.mark.parametrize("folder", ["sim", "viz"])
def test_the_models_and_figures_import_no_rung(folder):
    rungs = {f"hgemm_course.library.ladder.{p.stem}" for p in (PACKAGE / "ladder").glob("[rk][0-9][0-9]_*.py")}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        assert not imported_modules(path) & rungs, f"{path.name} imports {sorted(imported_modules(path) & rungs)}"


def test_each_rung_launches_the_geometry_declared_for_it():
    import importlib

    for rung, g in geometry.geometries().items():
        module = importlib.import_module(registry()[rung].launch.__module__)
        assert {k: getattr(module.TILES, k) for k in g.tiles} == g.tiles, rung
        if g.super_mn is not None:
            assert module.SUPER == g.super_mn, rung
    from hgemm_course.library.ladder import r10_warp_specialized, r11_persistent

    assert (r10_warp_specialized.CONSUMERS, r11_persistent.CLUSTER_M) == (geometry.of("10").consumers,
                                                                        geometry.of("11").cluster_m)


def _measures(config: dict, g: geometry.Geometry) -> bool:
    """Whether a tune record's configuration is this geometry (its tile, stages, super tile and cluster)."""
    want = {"bm": g.bm, "bn": g.bn, "stages": g.stages, "cluster_m": g.cluster_m,
            **({"super_m": g.super_mn[0], "super_n": g.super_mn[1]} if g.super_mn else {})}
    return all((config.get(key) or (1 if key == "cluster_m" else None)) == value for key, value in want.items())


def _geomean_by_config(records: list[dict]) -> dict[str, float]:
    """The geometric mean of % of the vendor over the record's sizes, per configuration."""
    by = {}
    for r in records:
        by.setdefault(json.dumps(r["config"], sort_keys=True), []).append(r["pct_cublas"])
    return {key: math.exp(sum(map(math.log, pcts)) / len(pcts)) for key, pcts in by.items()}


@pytest.mark.parametrize("rung", sorted(geometry.geometries()))
def test_each_geometry_was_measured_by_its_record_and_stands_within_its_stated_tie_of_the_best(rung):
    g = geometry.of(rung)
    data = json.loads((results_dir() / g.source).read_text())
    assert data["provenance"]["rung"] == rung
    means = _geomean_by_config(data["records"])
    chosen = [key for key in means if _measures(json.loads(key), g)]
    assert chosen, f"{g.source} measured no configuration of rung {rung}'s geometry {g}"
    best = max(means.values())
    stands = max(means[key] for key in chosen)
    assert stands >= best - g.tie_pct, (f"rung {rung}'s geometry reads {stands:.1f}% in {g.source}, "
                                        f"{best - stands:.1f} points below its best")
    assert g.tie_pct == 0 or g.why, "a geometry kept below its record's best says why"


def test_the_cluster_walk_gives_every_tile_once():
    M, N, bm, bn, super_mn = 2176, 2944, 128, 128, (16, 2)
    for cluster_m in (1, 2):
        order = raster.cluster_order(M, N, bm, bn, super_mn, cluster_m)
        inside = [tuple(p) for p in order.tolist() if p[0] >= 0]
        assert sorted(inside) == [(m, n) for m in range(-(-M // (bm * cluster_m))) for n in range(-(-N // bn))]
        assert len(order) * cluster_m == geometry.launch_positions(M, N, bm, bn, super_mn, cluster_m)
        assert sum(raster.tiles_per_cluster(7, M, N, bm, bn, super_mn, cluster_m)) == len(inside)


def test_an_unknown_rung_names_those_with_a_geometry():
    with pytest.raises(ValueError, match="rung '02' has no tile geometry; rungs 03, 04"):
        geometry.of("02")
