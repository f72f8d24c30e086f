"""A rung's design as parameters, and what it does across sizes: its tile, ring, warps, occupancy and grid read from
the ladder's own definitions and kernel source (:func:`rung_parameters`), the parameters that change from one rung to
the next (:func:`parameter_changes`, printed by :func:`rung_changes`), and whether its throughput is flat across
sizes, waves of tiles counted (:func:`sweep_sizes`, printed by :func:`size_sweep`). No GPU is needed.
"""
from __future__ import annotations

import importlib

from ..library import target
from ..library.ladder import get
from ..measurement import vendors, verdict
from ..measurement.records import load_records
from .kernel_source import code_facts
from .stretch import HOLD_SINCE, stretch_row, with_samples


def rung_parameters(rung_id: str) -> dict[str, str]:
    """A wgmma- or mma.sync-rung's design parameters, as text, from the ladder's own definitions sized for the
    recorded H200 (:data:`target.RECORDED`): its module's TILES, SUPER and extra facts, its default kernel (threads,
    dynamic shared memory; compiled with NVRTC for the registers that, with them, set the CTAs per SM by
    :func:`hgemm_course.sim.occupancy_report`) and its kernel source (:func:`hgemm_course.course.kernel_source.code_facts`:
    the PTX snippet headers it includes, how far ahead its ring loads, whether its CTAs walk the tiles, how C
    leaves). No GPU is needed."""
    from ..sim.occupancy import hardware_of, occupancy_report

    rung = get(rung_id)
    module = importlib.import_module(rung.launch.__module__)
    tiles, extra = module.TILES, rung.extra
    t = target.RECORDED
    with target.use(t):
        kern = rung.instantiations(t)[0]
        registers = kern.compile().resources_of(kern.name_expression).registers
    occ = occupancy_report(kern.threads, registers, kern.smem_bytes, **hardware_of(t))
    consumers = extra.get("consumers")
    after = extra.get("registers_after_setmaxnreg")
    if "wgmma" in rung.needs:
        mma = f"wgmma m64n{tiles.bn}k16, issued by a warpgroup"
    else:
        mma = f"mma.sync m16n8k16, {tiles.wm}x{tiles.wn} of C per warp"
    code = code_facts(rung)
    ahead = code["ahead"]
    cluster = extra.get("cluster_m", 1)
    return {
        "features used": ", ".join(rung.needs),
        "PTX snippet headers": " ".join(code["headers"]),
        "MMA": mma,
        "tile of C per CTA (BM x BN)": f"{tiles.bm}x{tiles.bn}",
        "k-slice (BK)": str(tiles.bk),
        "threads per CTA": f"{kern.threads} ({kern.threads // 32} warps)",
        "warp roles": (f"1 producer + {consumers} consumer warpgroups" if consumers
                       else "every warp computes; thread 0 also issues TMA"),
        "registers after setmaxnreg": f"producer {after['producer']}, consumers {after['consumer']}" if after else "-",
        "dynamic shared memory": f"{kern.smem_bytes // 1024} KiB",
        "CTAs per SM": f"{occ['ctas_per_sm']} (limited by {', '.join(occ['limited_by']).replace('_', ' ')})",
        "ring stages (STAGES)": str(tiles.stages),
        "slices loaded ahead": f"{tiles.stages - int(ahead.rsplit(' ', 1)[1])} ({ahead})",
        "super tile (SUPER_M x SUPER_N)": "x".join(map(str, module.SUPER)) if hasattr(module, "SUPER") else "-",
        "grid": "persistent: each CTA walks tiles" if code["walks_tiles"] else "one CTA per tile",
        "cluster": f"{cluster} CTAs along M, B multicast" if cluster > 1 else "none",
        "epilogue": "stmatrix to shared memory, TMA store" if code["tma_store"] else "st.global from registers",
    }


def parameter_changes(rung_a: str, rung_b: str) -> dict:
    """The design parameters (:func:`rung_parameters`) of rungs ``rung_a`` and ``rung_b``: ``{"a", "b"}`` (each
    rung's, by rung id in ``"rungs"``) and ``"changed"``, every parameter that differs, ``{"parameter", rung_a,
    rung_b}`` each, in table order."""
    a, b = rung_parameters(rung_a), rung_parameters(rung_b)
    return {"rungs": (rung_a, rung_b), "a": a, "b": b,
            "changed": [{"parameter": p, rung_a: a[p], rung_b: b[p]} for p in a if a[p] != b[p]]}


def format_changes(changes: dict) -> str:
    """:func:`parameter_changes` as a table of what differs, then one line of what stays."""
    (rung_a, rung_b), a, b, changed = changes["rungs"], changes["a"], changes["b"], changes["changed"]
    width = max(len(a[p]) for p in a) + 2
    t = target.RECORDED
    lines = [f"rung {rung_a} -> rung {rung_b}, sized for {t.arch} ({t.gpu}): {len(changed)} of {len(a)} parameters "
             "differ",
             f"{'parameter':<32}{'rung ' + rung_a:<{width}}rung {rung_b}"]
    lines += [f"{row['parameter']:<32}{row[rung_a]:<{width}}{row[rung_b]}" for row in changed]
    lines.append("the same in both: " + "; ".join(f"{p} {a[p]}" for p in a if a[p] == b[p]))
    return "\n".join(lines)


def rung_changes(rung_a: str, rung_b: str) -> list[dict]:
    """Print :func:`parameter_changes` (:func:`format_changes`); returns the changes."""
    changes = parameter_changes(rung_a, rung_b)
    print(format_changes(changes))
    return changes["changed"]


# ---------------------------------------------------------------- the same rung across sizes

FULL_WAVES = 0.9    # the fraction of SM-tile slots a size's tiles must fill for size_sweep to count its waves full


def sweep_sizes(rung: str, sizes=(1024, 2048, 4096, 8192), folder=None, one_stretch: bool = False) -> dict | None:
    """The H800 post's test of wave quantization on the course's own records: is a rung's throughput flat across
    sizes? From the rung's newest recorded runs that held the stream (HOLD_SINCE) at sizes^3, one row per size:
    TFLOP/s, the vendor baseline timed alongside (``vendor`` names it), % of it, SM cycles and clock (where its
    timing build logged them), FLOP per SM cycle, and how full its waves are: tiles of C against the SM-tile slots
    (SMs x CTAs per SM, :func:`rung_parameters`) of the waves they take. Then, as verdicts (:func:`verdict.compare`),
    each size's SM cycles scaled to the largest size's work against the largest size's; ``full``, those of the sizes
    whose tiles fill at least FULL_WAVES of their slots, and ``flat``: whether all of them are level with the largest
    (None without such sizes). With ``one_stretch``, TFLOP/s, Mcycles and GHz are one stretch's, the timing build's
    (:func:`stretch_row`), and % vendor is the median pair's. Returns ``{"rung", "gpu", "files", "tile", "slots",
    "sms", "vendor", "rows", "verdicts", "full", "flat"}``, or None without a recorded run at those sizes."""
    sms = target.RECORDED.sm_count
    rows = {r["M"]: r for r in load_records(folder) if r["rung"] == rung and r["M"] == r["N"] == r["K"]
            and r["M"] in sizes and str(r.get("date", "")) >= HOLD_SINCE}
    if not rows:
        return None
    params = rung_parameters(rung)
    bm, bn = map(int, params["tile of C per CTA (BM x BN)"].split("x"))
    slots = sms * int(params["CTAs per SM"].split()[0])
    shown = []
    for n in sorted(rows):
        r = rows[n]
        tiles = -(-n // bm) * -(-n // bn)
        waves = -(-tiles // slots)
        row = {"size": n, "tflops": r["tflops"], "cublas_tflops": r["cublas_tflops"], "pct_cublas": r["pct_cublas"],
               "cycles": r.get("cycles"), "clock_ghz": r.get("clock_ghz"), "tiles": tiles, "waves": waves,
               "slots_used": tiles / (waves * slots), "launch_cycles": verdict.cycles_of(r), "file": r["file"]}
        row["flop_per_sm_cycle"] = 2 * n**3 / (row["cycles"] * sms) if row["cycles"] else None
        stretch = stretch_row(with_samples([r], folder)[0]) if one_stretch else None
        if stretch is not None:
            row.update(tflops=stretch["tflops"], pct_cublas=stretch["pct"], cycles=stretch["mcycles"] * 1e6,
                       clock_ghz=stretch["ghz"])
            row["flop_per_sm_cycle"] = 2 * n**3 / (row["cycles"] * sms)
        shown.append(row)
    largest = shown[-1]
    judged = []                           # (verdict, row): each size against the largest
    for row in shown[:-1]:
        if row["launch_cycles"] and largest["launch_cycles"]:
            scale = (largest["size"] / row["size"]) ** 3
            judged.append((verdict.compare(f"{largest['size']}^3", largest["launch_cycles"], f"{row['size']}^3",
                                           [c * scale for c in row["launch_cycles"]],
                                           f"SM cycles per {largest['size']}^3 of work, rung {rung}"), row))
    full = [v for v, row in judged if row["slots_used"] >= FULL_WAVES]
    return {"rung": rung, "gpu": next(iter(rows.values()))["gpu"], "files": sorted({r["file"] for r in rows.values()}),
            "tile": (bm, bn), "slots": slots, "sms": sms, "vendor": vendors.baseline_label(rows.values(), per_shape=True),
            "rows": shown, "verdicts": [v for v, _ in judged], "full": full,
            "flat": all(v.outcome == "level" for v in full) if full else None}


def format_sweep(sweep: dict, *, one_stretch: bool = False) -> str:
    """:func:`sweep_sizes`' rows as a table (without the vendor's column ``one_stretch``), its verdicts, and the line
    on the sizes whose waves are full."""
    (bm, bn), slots, sms, largest = sweep["tile"], sweep["slots"], sweep["sms"], sweep["rows"][-1]["size"]
    lines = [f"RECORDED on the {sweep['gpu']} ({', '.join(sweep['files'])}): rung {sweep['rung']}, {bm}x{bn} tiles, "
             f"{slots} SM-tile slots ({sms} SMs x {slots // sms}); vendor: {sweep['vendor']}",
             f"{'size':>6}{'TFLOP/s':>9}{'' if one_stretch else 'vendor':>8}{'% vendor':>10}{'Mcycles':>9}{'GHz':>7}"
             f"{'FLOP/SM-cycle':>15}{'tiles':>7}{'waves':>7}{'slots used':>12}"]
    for row in sweep["rows"]:
        clocked = (f"{row['cycles'] / 1e6:>9.3f}{row['clock_ghz']:>7.3f}{row['flop_per_sm_cycle']:>15,.0f}"
                   if row["cycles"] else f"{'-':>9}{'-':>7}{'-':>15}")
        vendor = "" if one_stretch else f"{row['cublas_tflops']:.1f}"
        lines.append(f"{row['size']:>6}{row['tflops']:>9.1f}{vendor:>8}{row['pct_cublas']:>9.1f}%{clocked}"
                     f"{row['tiles']:>7}{row['waves']:>7}{row['slots_used']:>12.1%}")
    lines += [str(v) for v in sweep["verdicts"]]
    full = sweep["full"]
    if full:
        apart = [v.b for v in full if v.outcome != "level"]
        said = ("flat: each is level with" if sweep["flat"] else
                f"not flat: {', '.join(apart)} {'differs' if len(apart) == 1 else 'differ'} beyond the spread from")
        lines.append(f"rung {sweep['rung']} at the sizes whose tiles fill at least {FULL_WAVES:.0%} of their SM-tile "
                     f"slots ({', '.join(v.b for v in full)}, against {largest}^3): {said} {largest}^3 in SM "
                     "cycles per unit of work")
    return "\n".join(lines)


def size_sweep(*rungs: str, sizes=(1024, 2048, 4096, 8192), folder=None, one_stretch: bool = False) -> dict:
    """Print :func:`sweep_sizes` of each rung (:func:`format_sweep`), or the line that says how to record one;
    returns ``{rung: sweep}`` for the rungs recorded."""
    out = {}
    for rung in rungs:
        sweep = sweep_sizes(rung, sizes, folder, one_stretch)
        if sweep is None:
            print(f"No recorded run of rung {rung} at {', '.join(map(str, sizes))} that held the stream: "
                  f"`hgemm-course bench {rung} --sizes {' '.join(map(str, sizes))}` on a GPU records one.")
            continue
        print(format_sweep(sweep, one_stretch=one_stretch))
        out[rung] = sweep
    return out
