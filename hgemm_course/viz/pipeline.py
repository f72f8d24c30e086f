"""Pipeline figure: a rung's shared-memory ring over time, from the event model of :mod:`..sim.pipeline`,
with the tensor-pipe activity the H200 recorded for that rung beside the model's prediction."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..sim.pipeline import EPILOGUE_TIME, LOAD_LATENCY, rung_timeline

PREDICT_K = 8192              # the recorded profiles' K: the prediction plays whole tiles of this depth
PREDICT_TILES = 2             # ... two per CTA slot, so a tile boundary is in it
COLORS = {"loading": "#d9d9d9", "parity 0": "#a0cbe8", "parity 1": "#76b7b2", "wait_empty": "#e15759", "wait_full": "#f28e2b",
          "wait_mma": "#edc948", "mma": "#4e79a7", "issue": "#59a14f", "epilogue": "#b07aa1", "idle": "#ff9d9a"}


def _idle_gaps(starts: np.ndarray, ends: np.ndarray, end: float) -> list[tuple[float, float]]:
    """The intervals of [0, end] in which no product runs on the tensor cores."""
    order = np.argsort(starts)
    gaps, covered = [], 0.0
    for s, e in zip(starts[order], ends[order]):
        if s > covered:
            gaps.append((covered, float(s)))
        covered = max(covered, float(e))
    if end > covered:
        gaps.append((covered, end))
    return gaps


def pipeline_data(*, rung="07", stages=None, k_tiles=12, tiles=2, load_latency=LOAD_LATENCY, mma_time=None,
                  epilogue_time=EPILOGUE_TIME, profiles_folder=None):
    """The ring of ``rung`` (03, 07, 09, 10 or 11) played by :func:`..sim.pipeline.rung_timeline` for
    ``tiles`` tiles of ``k_tiles`` slices, laid out as lanes of intervals, and the prediction next to the
    recorded profile.

    Returns ``{'timeline': the model's events, 'lanes': [{'name', 'intervals': [(start, end, kind, label)]}],
    'stages': [{'name', 'intervals'}] (a slice loading, then held until its release), 'idle': the tensor
    cores' idle intervals, 'idle_waiting_cycles' / 'idle_epilogue_cycles': idle time while a consumer waits
    for a slice / while the consumers write C, 'predicted_busy_pct': the model over ``PREDICT_TILES`` tiles of
    K = ``PREDICT_K``, 'recorded': the newest recorded default profile of the rung at 8192^3 (``None`` if
    there is none), its ``tensor_pipe_active_pct`` the measured figure}``.
    """
    from ..measurement.profile import recorded_profile

    settings = {"stages": stages, "load_latency": load_latency, "mma_time": mma_time, "epilogue_time": epilogue_time}
    tl = rung_timeline(rung, k_tiles=k_tiles, tiles=tiles, **settings)
    ring = tl["ring"]
    full_label = "cp.async.wait_group" if ring.wait_before_refill else "full[{}]"
    stage_rows, lanes = [], []
    for c in range(ring.ctas):
        cta = f"CTA {c}: " if ring.ctas > 1 else ""
        rows = [{"name": f"{cta}stage {s}", "intervals": []} for s in range(ring.stages)]
        for j in range(tiles * k_tiles):
            stage, phase = int(tl["stage"][j]), int(tl["phase"][j])
            held_until = tl["release"][c, j] if tl["release"][c, j] >= 0 else tl["end"]
            rows[stage]["intervals"] += [(tl["issue"][c, j], tl["land"][c, j], "loading", f"{j}"),
                                         (tl["land"][c, j], held_until, f"parity {phase % 2}", f"{j}")]
        stage_rows += rows
        producer = {"name": f"{cta}{ring.producer_label}", "intervals": []}
        for j in range(tiles * k_tiles):
            stage = int(tl["stage"][j])
            if tl["issue"][c, j] > tl["p_ready"][c, j]:
                producer["intervals"].append((tl["p_ready"][c, j], tl["issue"][c, j], "wait_empty", f"empty[{stage}]"))
            producer["intervals"].append((tl["issue"][c, j], tl["issue"][c, j], "issue", f"{j}"))
        lanes.append(producer)
        for k in range(ring.consumers):
            name = f"consumer {k}" if ring.dedicated_producer else ("warpgroup" if ring.async_mma else "warps")
            lane = {"name": f"{cta}{name}", "intervals": []}
            for j in range(tiles * k_tiles):
                stage = int(tl["stage"][j])
                if tl["w_pass"][c, k, j] > tl["w_ready"][c, k, j]:
                    lane["intervals"].append((tl["w_ready"][c, k, j], tl["w_pass"][c, k, j], "wait_full",
                                              full_label.format(stage)))
                if ring.async_mma:
                    if tl["g_pass"][c, k, j] > tl["g_ready"][c, k, j]:
                        lane["intervals"].append((tl["g_ready"][c, k, j], tl["g_pass"][c, k, j], "wait_mma",
                                                  "wgmma wait"))
                else:
                    lane["intervals"].append((tl["m_issue"][c, k, j], tl["m_end"][c, k, j], "mma", f"{j}"))
            parts = tl["e_part"].shape[3]
            lane["intervals"] += [(*tl["e_part"][c, k, t, q], "epilogue", "epilogue" if parts == 1 else f"C {q}")
                                  for t in range(tiles) for q in range(parts)]
            lanes.append(lane)
    starts, ends = tl["m_start"].ravel(), tl["m_end"].ravel()
    tensor = {"name": "tensor cores", "intervals": [(s, e, "mma", "") for s, e in zip(starts, ends)]}
    idle = _idle_gaps(starts, ends, tl["end"])
    tensor["intervals"] += [(s, e, "idle", "") for s, e in idle]
    lanes.append(tensor)

    def in_epilogue(time):
        return bool(((tl["e_part"][..., 0] <= time) & (time < tl["e_part"][..., 1])).any())

    idle_epilogue = sum(e - s for s, e in idle if in_epilogue((s + e) / 2))
    predicted = rung_timeline(rung, k_tiles=PREDICT_K // 64, tiles=PREDICT_TILES, **settings)["tensor_busy_pct"]
    return {"timeline": tl, "ring": ring, "stages": stage_rows, "lanes": lanes, "idle": idle,
            "idle_epilogue_cycles": idle_epilogue,
            "idle_waiting_cycles": sum(e - s for s, e in idle) - idle_epilogue,
            "predicted_busy_pct": predicted, "recorded": recorded_profile(rung, 8192, folder=profiles_folder)}


def pipeline_figure(*, rung="07", stages=None, k_tiles=12, tiles=2, load_latency=LOAD_LATENCY, mma_time=None,
                    epilogue_time=EPILOGUE_TIME) -> Figure:
    """The ring of a rung over time (a model): stages filled and freed, who waits on which barrier, tensor-core idle."""
    data = pipeline_data(rung=rung, stages=stages, k_tiles=k_tiles, tiles=tiles, load_latency=load_latency,
                         mma_time=mma_time, epilogue_time=epilogue_time)
    tl, ring = data["timeline"], data["ring"]
    rows = data["stages"] + data["lanes"]
    fig = Figure(figsize=(13, 1.2 + 0.42 * len(rows)), layout="constrained")
    ax = fig.subplots()
    for y, row in enumerate(rows):
        for start, end, kind, label in row["intervals"]:
            if kind == "issue":
                ax.plot([start], [y], marker="v", color=COLORS["issue"], markersize=7)
                continue
            ax.barh(y, end - start, left=start, height=0.7, color=COLORS[kind],
                    hatch="//" if kind in ("loading", "idle") else None, edgecolor="white", linewidth=0.5)
            if label and end - start > 0.02 * tl["end"] * len(label):
                ax.text((start + end) / 2, y, label, ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [row["name"] for row in rows], fontsize=8)
    ax.invert_yaxis()
    ax.axhline(len(data["stages"]) - 0.5, color="black", linewidth=0.8)
    ax.set_xlim(0, tl["end"])
    ax.set_xlabel("SM cycles (model)")
    ax.grid(True, axis="x", alpha=0.3)
    legend = [Patch(color=COLORS["loading"], hatch="//", label="slice j loading (issue -> land)"),
              Patch(color=COLORS["parity 0"], label="slice j held (landed -> freed), phase parity 0"),
              Patch(color=COLORS["parity 1"], label="... phase parity 1: it flips each time round the ring"),
              Patch(color=COLORS["wait_empty"], label="producer waits on empty[s]"),
              Patch(color=COLORS["wait_full"], label=f"consumer waits on {'cp.async.wait_group' if ring.wait_before_refill else 'full[s]'}"),
              Patch(color=COLORS["mma"], label="products on the tensor cores" + ("" if ring.async_mma else " (mma.sync: warps busy)")),
              Patch(color=COLORS["idle"], hatch="//", label="tensor cores idle"),
              Patch(color=COLORS["epilogue"], label="epilogue (C written out)")]
    if ring.async_mma:
        legend.insert(4, Patch(color=COLORS["wait_mma"], label="wgmma wait (the previous slice's products)"))
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    recorded = data["recorded"]
    text = (f"MODEL, not a measurement: load latency {tl['load_latency']:.0f} cycles, "
            f"{tl['mma_time']:.0f} cycles of tensor-core work per k-slice\n"
            f"predicted tensor-core busy at K={PREDICT_K}: {data['predicted_busy_pct']:.1f}%")
    if recorded is not None:
        text += (f"\nrecorded on the H200 ({recorded['file']}, {recorded['date'][:10]}): tensor pipe active "
                 f"{recorded['tensor_pipe_active_pct']:.1f}% at {recorded['M']}^3\n(another quantity: the share of "
                 "cycles the pipe holds work, at the hardware's own rate, not the model's fitted one)")
    ax.text(1.01, 0.0, text, transform=ax.transAxes, fontsize=8, va="bottom", ha="left",
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "#999999"})
    where = (f"{data['idle_waiting_cycles']:.0f} waiting for slices to land, "
             f"{data['idle_epilogue_cycles']:.0f} in epilogues")
    fig.suptitle(f"Rung {rung}, {ring.stages}-stage ring (model): tensor cores busy {tl['tensor_busy_pct']:.0f}% of "
                 f"{tiles} tile(s) x {k_tiles} slices; idle cycles: {where}", fontsize=11)
    return fig
