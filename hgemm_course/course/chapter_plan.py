"""Appendix A1's validation of gemm()'s plan: the launch the plan picks in this code against the fastest launch the
H200 timed, shape by shape, from the recorded tile probes (``research/tile_probe.py``); and the plan's fitted
constants summed up by kind. Functions return data; :func:`show_validation` prints it, and
:func:`hgemm_course.viz.plan_check.plan_validation_figure` draws it.
"""
from __future__ import annotations

from . import plan_tables

# The recorded tile probes of appendix A1, under results/probes/tile_probe/ (plan_tables.TILE_PROBE_DIR): each timed the
# plan's launch beside its variants, every launch in pairs with cuBLAS (cupy.matmul).
TILE_PROBES = ("tile_probe_nvidia-h200_20261201T180119_e5c91a.json", "tile_probe_nvidia-h200_20261201T180337_cacadf.json",
               "tile_probe_nvidia-h200_20261201T182855_22b34d.json", "tile_probe_nvidia-h200_20261201T193704_26723e.json",
               "tile_probe_nvidia-h200_20261201T191132_499508.json", "tile_probe_nvidia-h200_20261201T191335_6e60e9.json",
               "tile_probe_nvidia-h200_20261201T220632_2d96b7.json", "tile_probe_nvidia-h200_20261201T221110_b57063.json")
NEAR_POINTS = 2.0       # a plan within this many points of the fastest launch timed counts as near it


def validation_rows(probes=TILE_PROBES) -> list[dict]:
    """Per shape the probes timed the launch this code's plan picks: that launch's median % of cuBLAS, the fastest
    launch timed there and its median, and the points between them (0 where the plan's launch is the fastest)."""
    rows = []
    for r in plan_tables.probe_rows(*probes):
        if r["plan_now_pct"] is None:
            continue
        ahead = r["plan_now_pct"] >= r["best_pct"]
        best, best_pct = (r["plan_now"], r["plan_now_pct"]) if ahead else (r["best"], r["best_pct"])
        rows.append({"shape": r["shape"], "plan": r["plan_now"], "plan_pct": r["plan_now_pct"],
                     "best": best, "best_pct": best_pct, "gap": best_pct - r["plan_now_pct"]})
    return rows


def untimed_shapes(probes=TILE_PROBES) -> list[tuple]:
    """The probes' shapes where no probe timed the launch this code's plan picks."""
    return [r["shape"] for r in plan_tables.probe_rows(*probes) if r["plan_now_pct"] is None]


def show_validation(probes=TILE_PROBES) -> list[dict]:
    """Print how near the plan's launch came to the fastest launch timed, over the probes' shapes; returns the rows."""
    rows = validation_rows(probes)
    gaps = sorted(r["gap"] for r in rows)
    near = sum(g <= NEAR_POINTS for g in gaps)
    worst = max(rows, key=lambda r: r["gap"])
    print(f"RECORDED on the NVIDIA H200 ({len(probes)} tile probes, {plan_tables.TILE_PROBE_DIR.as_posix()}/{probes[0]} to "
          f"{probes[-1]}): "
          f"medians of % of cuBLAS (cupy.matmul), each launch in pairs with it")
    print(f"{len(rows)} shapes where a probe timed the launch this code's plan picks; at {near} the plan is the fastest "
          f"launch timed or within {NEAR_POINTS:g} points of it; median gap {gaps[len(gaps) // 2]:.1f} points, "
          f"largest {worst['gap']:.1f} at {'x'.join(map(str, worst['shape']))} ({worst['plan']} against {worst['best']})")
    missing = untimed_shapes(probes)
    if missing:
        print(f"{len(missing)} more shapes of the probes: the plan's launch there was not timed")
    return rows


def constants_by_kind(constants=plan_tables.CONSTANTS) -> dict[str, list[str]]:
    """The plan's constants that came from timings, their names grouped by kind ("fit", "margin", "choice")."""
    out: dict[str, list[str]] = {}
    for c in constants:
        out.setdefault(c.kind, []).append(c.name)
    return out


def show_constants(constants=plan_tables.CONSTANTS) -> dict[str, list[str]]:
    """Print the constants by kind in one line each, with how many name a record; returns :func:`constants_by_kind`."""
    kinds = constants_by_kind(constants)
    label = {"fit": "fitted to timings", "margin": "margins judged from timings", "choice": "settings chosen from timings"}
    for kind, names in kinds.items():
        print(f"{len(names):>2} {label[kind]}: {', '.join(names)}")
    print("each is listed with the H200 runs it came from, and the tests that derive it again, in "
          "hgemm_course/library/plan_constants.toml")
    return kinds
