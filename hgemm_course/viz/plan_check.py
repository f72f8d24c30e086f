"""Appendix A1's validation figure: the plan's launch against the fastest launch timed, per probed shape."""
from __future__ import annotations


def plan_validation_figure(rows, near_points: float = 2.0):
    """Scatter of :func:`hgemm_course.course.chapter_plan.validation_rows`: x the fastest launch timed at a shape, y the launch
    the plan picks, both as % of cuBLAS; on the diagonal the plan picked the fastest. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 6))
    best = [r["best_pct"] for r in rows]
    ours = [r["plan_pct"] for r in rows]
    near = [r["gap"] <= near_points for r in rows]
    lo, hi = min(best + ours) - 3, max(best + ours) + 3
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, label="the plan's launch is the fastest timed")
    ax.plot([lo, hi], [lo - near_points, hi - near_points], color="grey", lw=1, ls="--",
            label=f"{near_points:g} points below it")
    ax.scatter([b for b, n in zip(best, near) if n], [o for o, n in zip(ours, near) if n], color="tab:blue",
               label="within it")
    ax.scatter([b for b, n in zip(best, near) if not n], [o for o, n in zip(ours, near) if not n], color="tab:red",
               label="further below")
    ax.set(xlim=(lo, hi), ylim=(lo, hi), xlabel="fastest launch timed at the shape, % of cuBLAS",
           ylabel="the launch plan() picks, % of cuBLAS")
    ax.set_title(f"The plan's launch is the fastest timed, or within {near_points:g} points,\n"
                 f"at {sum(near)} of {len(rows)} probed shapes", fontsize=11)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig
