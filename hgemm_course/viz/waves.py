"""Waves figure: the output tiles on the persistent units over time, data-parallel against stream-K and the hybrid."""
from __future__ import annotations

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..sim import waves

# on a tie, the simpler schedule: data-parallel, then the hybrid (fewer tiles split), as plan.plan does
TIE_ORDER = ("dp", "hybrid", "streamk")
TITLES = {"dp": "data-parallel", "streamk": "stream-K", "hybrid": "hybrid (data-parallel + stream-K)"}


def waves_data(*, M=3072, N=3072, K=3072, tile_m=waves.TILE_M, tile_n=waves.TILE_N, tile_k=waves.TILE_K,
               units=waves.UNITS, cluster_m=waves.CLUSTER_M, fixup_iters=waves.FIXUP_ITERS, sk_waves=1):
    """The three schedules of one shape (:func:`hgemm_course.sim.schedule`), rung 11's tiles on the H200 by default.

    Returns ``{'schedules': {mode: WaveSchedule}, 'tiles', 'iters_per_tile', 'units', 'waves',
    'even_share' (the iterations per unit of a perfect split), 'best' (the mode with the shortest
    makespan; on a tie data-parallel, then the hybrid), 'speedup' (data-parallel's makespan over the best one's)}``.
    """
    schedules = {mode: waves.schedule(M, N, K, tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, units=units,
                                      cluster_m=cluster_m, mode=mode, fixup_iters=fixup_iters, sk_waves=sk_waves)
                 for mode in waves.MODES}
    dp = schedules["dp"]
    best = min(TIE_ORDER, key=lambda mode: schedules[mode].makespan)     # min keeps the first on a tie
    return {"schedules": schedules, "tiles": dp.tiles, "iters_per_tile": dp.iters_per_tile, "units": units,
            "waves": dp.waves, "even_share": dp.tiles * dp.iters_per_tile / units, "best": best,
            "speedup": dp.makespan / schedules[best].makespan}


def waves_figure(*, M=3072, N=3072, K=3072, tile_m=waves.TILE_M, tile_n=waves.TILE_N, tile_k=waves.TILE_K,
                 units=waves.UNITS, cluster_m=waves.CLUSTER_M, fixup_iters=waves.FIXUP_ITERS, sk_waves=1) -> Figure:
    """Output tiles on the persistent units over time: data-parallel's half-empty last wave against stream-K."""
    data = waves_data(M=M, N=N, K=K, tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, units=units, cluster_m=cluster_m,
                      fixup_iters=fixup_iters, sk_waves=sk_waves)
    colors = colormaps["tab20"]
    fig = Figure(figsize=(16, 7), layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    horizon = max(s.makespan for s in data["schedules"].values())
    for ax, (mode, plan) in zip(axes, data["schedules"].items()):
        for (unit, tile, kb, ke, start), done in zip(plan.segments, plan.segment_done):
            ax.broken_barh([(start, ke - kb)], (unit - 0.45, 0.9), color=colors(tile % 20), linewidth=0)
            if done > start + ke - kb:          # a partial tile's fix-up: write, or wait, read back and add
                ax.broken_barh([(start + ke - kb, done - start - ke + kb)], (unit - 0.45, 0.9), color="black",
                               linewidth=0)
        ax.axvline(data["even_share"], color="black", ls=":", lw=1)
        ax.axvline(plan.makespan, color="#e15759", ls="--", lw=1.5)
        split = f", {plan.partial_tiles} tiles split" if plan.partial_tiles else ""
        ax.set_title(f"{TITLES[mode]}: {plan.makespan:g} iterations, {plan.efficiency:.0%} busy{split}", fontsize=10)
        ax.set_xlim(0, horizon * 1.02)
        ax.set_xlabel("time (K-iterations of one unit)")
    axes[0].set_ylim(units - 0.5, -0.5)
    axes[0].set_ylabel(f"unit (cluster of {cluster_m} CTA{'s' if cluster_m > 1 else ''})")
    fig.legend(handles=[Patch(color=colors(0), label="a tile's K-iterations (colour: tile)"),
                        Patch(color="black", label=f"fix-up of a split tile ({fixup_iters:g} iterations each)"),
                        Patch(facecolor="none", edgecolor="#e15759", ls="--", label="makespan"),
                        Patch(facecolor="none", edgecolor="black", ls=":", label="even share of the work")],
               loc="outside lower center", ncols=4, fontsize=9)
    dp, best = data["schedules"]["dp"], data["schedules"][data["best"]]
    if data["best"] == "dp":
        finding = f"data-parallel is already the fastest ({dp.efficiency:.0%} busy)"
    else:
        finding = (f"{TITLES[data['best']]} finishes {data['speedup']:.2f}x sooner than data-parallel "
                   f"({dp.efficiency:.0%} -> {best.efficiency:.0%} busy)")
    fig.suptitle(f"Model of {M}x{N}x{K}: {data['tiles']} tiles of {cluster_m * tile_m}x{tile_n} on {units} units "
                 f"= {data['waves']:.2f} waves; {finding}")
    return fig


def walk_data(*, M=2176, N=2944, tile_m=128, tile_n=128, cluster_m=1, units=132, supers=((16, 2), (1, 1))):
    """How many tiles each persistent unit walks on each of ``supers`` (rung 11's launch order: whole super tiles,
    positions past the grid's edge skipped, units taking positions round-robin); by default the plan's small tiles
    at 2176 x 2944. Returns ``{'tiles', 'units', 'walks': {super: [tiles per unit]}, 'positions': {super: launch
    positions}, 'busy': {super: busy fraction}}`` (busy as :func:`hgemm_course.library.plan.rung11_efficiency` counts it)."""
    from ..library.geometry import cdiv, launch_positions
    from ..sim.raster import tiles_per_cluster

    walks = {s: tiles_per_cluster(units, M, N, tile_m, tile_n, s, cluster_m) for s in supers}
    count = cdiv(cdiv(M, tile_m), cluster_m) * cdiv(N, tile_n)     # cluster tiles
    return {"tiles": count, "units": units, "walks": walks,
            "positions": {s: launch_positions(M, N, tile_m, tile_n, s, cluster_m) // cluster_m for s in supers},
            "busy": {s: sum(w) / (units * max(w)) for s, w in walks.items()}}


def walk_figure(*, M=2176, N=2944, tile_m=128, tile_n=128, cluster_m=1, units=132, supers=((16, 2), (1, 1))) -> Figure:
    """Tiles each persistent unit walks, for several super tiles: empty launch positions give some units more."""
    data = walk_data(M=M, N=N, tile_m=tile_m, tile_n=tile_n, cluster_m=cluster_m, units=units, supers=supers)
    fig = Figure(figsize=(14, 4.5), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(supers)
    for i, (s, walk) in enumerate(data["walks"].items()):
        ax.bar([u + (i - (len(supers) - 1) / 2) * width for u in range(units)], walk, width=width,
               label=(f"{s[0]}x{s[1]} super tiles: {data['positions'][s]} launch positions, busiest unit "
                      f"{max(walk)} tiles, {data['busy'][s]:.0%} busy"))
    ax.axhline(data["tiles"] / units, color="black", ls=":", lw=1, label="even share")
    ax.set_xlabel(f"unit ({'cluster of ' + str(cluster_m) + ' CTAs' if cluster_m > 1 else 'CTA'})")
    ax.set_ylabel("tiles walked")
    ax.set_xlim(-1, units)
    ax.set_ylim(0, max(max(w) for w in data["walks"].values()) + 0.5)
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.legend(loc="outside lower center", ncols=len(supers) + 1, fontsize=9)
    fig.suptitle(f"{M}x{N}: {data['tiles']} tiles of {cluster_m * tile_m}x{tile_n} on {units} units "
                 f"({data['tiles'] / units:.2f} waves)")
    return fig
