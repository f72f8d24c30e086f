"""The roofs of chapter 00 and where each rung stands under them, from recorded figures.

The ceiling chain measured here or recorded (:func:`chain_here_or_recorded`, printed by :func:`ceilings_or_show`),
each ceiling with the work per SM cycle and clock that set it (:func:`ceilings_rows`, :func:`show_ceilings`); a
rung's TFLOP/s against the roofs of its instruction (:func:`ceilings_placement`, :func:`place_on_ceilings`) and its
work per SM cycle against the same roofs counted in cycles (:func:`cycles_placement`, :func:`place_in_cycles`), each
followed by its recorded profile and its SM cycles against cuBLAS's (:func:`profile_placement`).
"""
from __future__ import annotations

from pathlib import Path

from ..library import target
from ..library.ladder import get
from ..measurement import vendors
from ..measurement.records import load_records, write_run
from .here_or_recorded import measured_label, measurement_folder
from .stretch import stretch_row, with_samples


# ---------------------------------------------------------------- the chain of chapter 00

def chain_here_or_recorded() -> dict:
    """The roofs of chapter 00: on a GPU with mma.sync, measured (``ceilings.measure_ceilings``, 30-60 s) and written
    (:func:`measurement_folder`); elsewhere the newest recorded chain. Returns ``{"ceilings"`` (None where nothing is
    measured or recorded), ``"label"`` (the GPU, date and file), ``"why"`` (the GPU's refusal, None without one)``}``."""
    from ..measurement import ceilings as chain
    from ..measurement.roofline import recorded_ceilings

    here = target.runnable()
    why = None if here is None else here.refusal("measuring the ceiling chain", chain.NEEDS)
    if here is not None and why is None:
        folder = measurement_folder()
        ceilings = chain.measure_ceilings(progress=False)   # the chapter prints the chain, no bar
        return {"ceilings": ceilings, "why": None,
                "label": measured_label(here, write_run([ceilings], kind="ceilings", folder=folder))}
    ceilings = recorded_ceilings()
    label = None if ceilings is None else f"RECORDED on the {ceilings['gpu']} ({ceilings['file']}, {ceilings['date'][:10]})"
    return {"ceilings": ceilings, "why": why, "label": label}


def ceilings_or_show() -> dict | None:
    """Print :func:`chain_here_or_recorded`: the GPU's refusal where it has one, then the copy bandwidth and
    cuBLAS's rate under the label; returns the ceilings (None where nothing is measured or recorded)."""
    found = chain_here_or_recorded()
    if found["why"] is not None:
        print(f"{found['why']}; the recorded H200 chain is shown instead")
    ceilings = found["ceilings"]
    if ceilings is None:
        print("No recorded ceilings: `hgemm-course ceilings` on a GPU records them.")
        return None
    print(f"{found['label']}: copy {ceilings['bandwidth_gbs']:.0f} GB/s, cuBLAS fp16 {ceilings['cublas_tflops']:.0f} "
          "TFLOP/s")
    return ceilings


def ceilings_rows(record: dict) -> list[dict]:
    """The measured ceilings of a ceilings record, each with what sets it: the FP32 FMA loop, each wgmma loop and the
    fastest mma.sync loop (its operands in registers) with their flops per SM cycle and the clock they ran at (so
    TFLOP/s = flop/cycle x SMs x clock), cuBLAS fp16 at the record's GEMM size, and the copy bandwidth; ``roof`` marks
    the compute roof the roofline uses (:func:`hgemm_course.measurement.roofline.compute_roof`)."""
    from ..measurement.roofline import compute_roof

    roof = compute_roof(record)
    rows = [{"name": "FP32 CUDA cores, FMA loop", "value": record["fp32_tflops"], "unit": "TFLOP/s",
             "datasheet": record.get("datasheet_fp32_tflops")}]
    for r in record.get("wgmma_peak", ()):
        groups = f"{r['warpgroups']} warpgroup{'s' if r['warpgroups'] > 1 else ''}"
        rows.append({"name": f"wgmma loop, {groups} of m64n{r['n']}k16", "value": r["tflops"], "unit": "TFLOP/s",
                     "flop_per_cycle": r["flop_per_sm_cycle"], "ghz": r["clock_ghz"],
                     "datasheet": record.get("datasheet_fp16_tflops")})
    best = max((r for r in record.get("mma_sync_bound", ()) if r["feed"] == "registers"),
               key=lambda r: r["tflops"], default=None)
    if best is not None:
        tile = "x".join(map(str, best["warp_tile"]))
        rows.append({"name": f"mma.sync loop, {best['warps_per_sm']} warps of {tile}", "value": best["tflops"],
                     "unit": "TFLOP/s", "flop_per_cycle": best["flop_per_sm_cycle"], "ghz": best["clock_ghz"],
                     "datasheet": record.get("datasheet_fp16_tflops")})
    for row in rows:
        row["roof"] = row["value"] == roof["tflops"]
    n = record["gemm_size"]
    rows.append({"name": f"cuBLAS fp16 at {n}^3 (a kernel, not a roof)", "value": record["cublas_tflops"],
                 "unit": "TFLOP/s", "datasheet": record.get("datasheet_fp16_tflops"), "roof": False})
    rows.append({"name": "copy, device to device (read + write)", "value": record["bandwidth_gbs"], "unit": "GB/s",
                 "datasheet": record.get("datasheet_bandwidth_gbs"), "roof": False})
    return rows


def format_ceilings(rows: list[dict]) -> str:
    """:func:`ceilings_rows` as a table."""
    lines = [f"{'ceiling':<46} {'measured':>9} {'':<7} {'flop/SM cycle':>13} {'SM clock':>9} {'datasheet':>9}"]
    for r in rows:
        per_cycle = f"{r['flop_per_cycle']:13,.0f}" if r.get("flop_per_cycle") else f"{'-':>13}"
        clock = f"{r['ghz']:6.3f} GHz" if r.get("ghz") else f"{'-':>9}"
        sheet = f"{r['datasheet']:9.1f}" if r.get("datasheet") else f"{'-':>9}"
        lines.append(f"{r['name']:<46} {r['value']:9.1f} {r['unit']:<7} {per_cycle} {clock} {sheet}"
                     + ("   <- the roofline's compute roof" if r["roof"] else ""))
    return "\n".join(lines)


def show_ceilings(record: dict) -> list[dict]:
    """Print :func:`ceilings_rows` as a table; returns the rows."""
    rows = ceilings_rows(record)
    print(format_ceilings(rows))
    return rows


# ---------------------------------------------------------------- a rung under the roofs of its instruction

# The roofs of the ceiling chain that bound each instruction family: (key of the returned dict, label, where it is
# recorded). A rung is placed only against the roofs of the instruction it computes with.
_ROOFS = {
    "fp32": (("fp32", "FP32 CUDA cores", "fp32_tflops"),),
    "mma.sync": (("mma_sync_bound", "mma.sync bound, {warps} warps/SM of {wm}x{wn}, ldmatrix",
                  "mma_sync_bound ({warps} warps of {wm}x{wn} fed by ldmatrix)"),
                 ("mma_sync_peak", "mma.sync register peak", "mma_sync_tflops")),
    "wgmma": (("wgmma_peak", "wgmma peak", "wgmma_tflops"),),
}


def _instruction(rung: str) -> str:
    """The instruction family a rung computes with: "wgmma", "mma.sync", or "fp32" (the Numba rungs, CUDA cores)."""
    needs = get(rung).needs
    return "wgmma" if "wgmma" in needs else "mma.sync" if "mma.sync" in needs else "fp32"


def _warp_tiling(rung: str) -> tuple[int, int, int]:
    """(warps per CTA, warp tile M, warp tile N) of a rung: rungs 03-07 run one CTA of 8 warps of 64x64 per SM."""
    extra = get(rung).extra
    tiles = extra.get("tiles", {})
    return extra.get("threads", 256) // 32, tiles.get("wm", 64), tiles.get("wn", 64)


def _ceilings_label(ceilings: dict) -> dict | None:
    return {k: ceilings[k] for k in ("gpu", "file", "date")} if ceilings else None


def ceilings_placement(rung: str, size: int = 8192, *, folder=None) -> dict:
    """Where ``rung`` stands at ``size``^3, from recorded figures only.

    The rung's newest bench record at size^3 (``results.load_records``) as TFLOP/s, beside the vendor baseline timed
    in the same run (``baseline`` names it: :func:`hgemm_course.measurement.vendors.baseline_label`): a reference
    kernel, not a roof (chapter 00). Then the rung as a percentage of each roof that bounds the instruction it computes
    with, from the newest ``hgemm-course ceilings`` record: the FP32 CUDA-core peak for the FP32 rungs 01-02; for the
    mma.sync rungs 03-07 the mma.sync loop bound at the rung's warps and warp tile (fed by ldmatrix) and the mma.sync
    register peak; for the wgmma rungs 09 and up the wgmma peak. A roof that record lacks is ``skipped``; a roof the
    rung runs above has no percentage, as a roof measured too low. Then the rung's recorded profile
    (:func:`profile_placement`; under ``folder``/profiles). ``folder``: where the results live (default results/).
    Returns ``roofs``, each roof's ``{"label", "tflops", "pct"}`` (``pct`` None above the roof), ``cublas`` the
    reference's TFLOP/s and the rung's % of it, ``above`` the roofs the rung ran above, ``ceilings`` the record's
    GPU, file and date, and the profile's figures."""
    from ..measurement.ceilings import rung_bound
    from ..measurement.roofline import recorded_ceilings

    out: dict = {"rung": rung, "size": size, "tflops": None, "roofs": {}, "skipped": [], "above": [],
                 "cublas": None, "profile": None}
    rows = [r for r in load_records(folder) if r["rung"] == rung and r["M"] == r["N"] == r["K"] == size]
    if rows:
        row = rows[0]
        out.update(tflops=row["tflops"], file=row["file"], date=row["date"], gpu=row["gpu"],
                   baseline=vendors.baseline_label([row]))
        out["cublas"] = {"tflops": row["cublas_tflops"], "pct": 100.0 * row["tflops"] / row["cublas_tflops"]}
        ceilings = recorded_ceilings(folder) or {}
        out["family"], out["ceilings"] = _instruction(rung), _ceilings_label(ceilings)
        warps, wm, wn = _warp_tiling(rung)
        values = {"fp32": ceilings.get("fp32_tflops"),
                  "mma_sync_bound": (rung_bound(ceilings, (warps, wm, wn)) or {}).get("tflops"),
                  "mma_sync_peak": ceilings.get("mma_sync_tflops"),
                  "wgmma_peak": ceilings.get("wgmma_tflops")}
        peak = ceilings.get("mma_sync_peak") or {}
        for key, label, recorded_as in _ROOFS[out["family"]]:
            label = label.format(warps=warps, wm=wm, wn=wn)
            if key == "mma_sync_peak" and peak:
                label += f", {peak['warps_per_sm']} warps of {peak['warp_tile'][0]}x{peak['warp_tile'][1]}"
            if values[key] is None:
                out["skipped"].append(recorded_as.format(warps=warps, wm=wm, wn=wn))
                continue
            above = row["tflops"] > values[key]
            if above:
                out["above"].append(key)
            out["roofs"][key] = {"label": label, "tflops": values[key],
                                 "pct": None if above else 100.0 * row["tflops"] / values[key]}
    out.update(profile_placement(rung, size, folder))
    return out


def format_ceilings_placement(placed: dict) -> str:
    """:func:`ceilings_placement` as the lines chapters 01 and 02 print."""
    rung, size, roofs = placed["rung"], placed["size"], placed["roofs"]
    if placed["tflops"] is None:
        lines = [f"No recorded bench of rung {rung} at {size}^3: `hgemm-course bench {rung} --sizes {size}` "
                 "on a GPU records one."]
        return "\n".join(lines + [format_profile_placement(placed)])
    lines = [f"RECORDED on the {placed['gpu']} ({placed['file']}, {placed['date'][:10]}): rung {rung} at {size}^3 runs "
             f"{placed['tflops']:.1f} TFLOP/s; {placed['baseline']}, the vendor baseline timed in the same "
             "run (a reference kernel, not a roof), "
             f"{placed['cublas']['tflops']:.1f}: the rung is {placed['cublas']['pct']:.1f}% of it"]
    ceilings, family = placed["ceilings"], placed["family"]
    if ceilings:
        lines.append(f"RECORDED ceilings on the {ceilings['gpu']} ({ceilings['file']}, {ceilings['date'][:10]}), the "
                     f"roofs of {family if family != 'fp32' else 'FP32 arithmetic on the CUDA cores'}:")
    else:
        lines.append("No recorded ceilings (`hgemm-course ceilings` on a GPU records them).")
    if roofs:
        lines.append(f"  {'roof':<48}{'TFLOP/s':>9}{'rung ' + rung + ' is':>14}")
    for roof in roofs.values():
        if roof["pct"] is None:
            lines.append(f"  {roof['label']:<48}{roof['tflops']:>9.1f}{'above it':>14}")
        else:
            lines.append(f"  {roof['label']:<48}{roof['tflops']:>9.1f}{roof['pct']:>13.1f}%")
    for key in placed["above"]:
        lines.append(f"  the rung ran above the {roofs[key]['label']}: a roof bounds what the instruction can do, "
                     "so that measurement of it is wrong (too low), not the rung; `hgemm-course ceilings` re-measures it")
    if placed["skipped"]:
        lines.append(f"  skipped, not in the ceilings record: {', '.join(placed['skipped'])}; `hgemm-course ceilings` "
                     "on a GPU records them")
    if roofs:
        lines.append("  the roofs were timed in other runs than the rung, each kernel at the clock it got (chapter 08); "
                     "only the ratio to the vendor baseline is from the same run, and SM cycles, where a profile is "
                     "recorded, do not move with the clock")
    return "\n".join(lines + [format_profile_placement(placed)])


def place_on_ceilings(rung: str, size: int = 8192, *, folder=None) -> dict:
    """Print :func:`ceilings_placement` (:func:`format_ceilings_placement`); returns it."""
    placed = ceilings_placement(rung, size, folder=folder)
    print(format_ceilings_placement(placed))
    return placed


# ---------------------------------------------------------------- a rung's work per SM cycle under the same roofs

def cycles_placement(rung: str, size: int = 8192, *, folder=None) -> dict:
    """Where an mma.sync or wgmma rung stands at ``size``^3 in the one unit no clock moves: its newest bench record's
    matrix work per SM cycle (its timing build's median launch, :func:`stretch_row`, in ``stretch``) against each roof
    of its instruction in the newest ceilings record, each roof's loop counted in its own SM cycles (``roofs``, by
    label: ``{"flop_per_cycle", "pct"}``); the % of the vendor baseline, from the launches alternated with it, with its
    p10-p90; then the recorded profile (:func:`profile_placement`). Returns ``{"rung", "size", "flop_per_cycle",
    "roofs", "pct_vendor", ...}``."""
    from ..measurement.ceilings import rung_bound
    from ..measurement.roofline import recorded_ceilings

    out: dict = {"rung": rung, "size": size, "flop_per_cycle": None, "roofs": {}, "profile": None}
    rows = [r for r in load_records(folder) if r["rung"] == rung and r["M"] == r["N"] == r["K"] == size
            and r.get("launch_clocks")]
    stretch = stretch_row(with_samples(rows[:1], folder)[0]) if rows else None
    if stretch is not None:
        row, sms = rows[0], target.RECORDED.sm_count
        per_cycle = 2 * size**3 / (stretch["mcycles"] * 1e6 * sms)
        out.update(flop_per_cycle=per_cycle, pct_vendor=stretch["pct"], file=row["file"], gpu=row["gpu"],
                   date=row["date"], sms=sms, stretch=stretch, baseline=vendors.baseline_label([row]))
        ceilings = recorded_ceilings(folder) or {}
        warps, wm, wn = _warp_tiling(rung)
        roofs = []
        if _instruction(rung) == "mma.sync":
            bound = rung_bound(ceilings, (warps, wm, wn))
            if bound:
                roofs.append((f"mma.sync loop, {warps} warps/SM of {wm}x{wn}, ldmatrix", bound))
            peak = ceilings.get("mma_sync_peak") or {}
            best = next((r for r in ceilings.get("mma_sync_bound", ()) if r["feed"] == "registers"
                         and r["warps_per_sm"] == peak.get("warps_per_sm")
                         and list(r["warp_tile"]) == list(peak.get("warp_tile", ()))), None)
            if best:
                roofs.append((f"mma.sync loop, {best['warps_per_sm']} warps of {best['warp_tile'][0]}x"
                              f"{best['warp_tile'][1]}, registers", best))
        elif ceilings.get("wgmma_flop_per_sm_cycle"):
            roofs.append(("wgmma loop", {"flop_per_sm_cycle": ceilings["wgmma_flop_per_sm_cycle"]}))
        roofs = [(label, r) for label, r in roofs if r.get("flop_per_sm_cycle")]
        out["ceilings"] = _ceilings_label(ceilings) if roofs else None
        for label, r in roofs:
            out["roofs"][label] = {"flop_per_cycle": r["flop_per_sm_cycle"], "pct": 100 * per_cycle / r["flop_per_sm_cycle"]}
    out.update(profile_placement(rung, size, folder))
    return out


def format_cycles_placement(placed: dict) -> str:
    """:func:`cycles_placement` as the lines chapters 03-11 print."""
    rung, size = placed["rung"], placed["size"]
    if placed["flop_per_cycle"] is None:
        lines = [f"No recorded bench of rung {rung} at {size}^3 with its launches' cycles: `hgemm-course bench {rung} "
                 f"--sizes {size}` on a GPU records one."]
    else:
        s = placed["stretch"]
        lines = [f"RECORDED on the {placed['gpu']} ({placed['file']}, {placed['date'][:10]}): rung {rung} at {size}^3, "
                 f"its timing build's median launch: {s['mcycles']:.3f} Mcycles at {s['ghz']:.3f} GHz, "
                 f"{placed['flop_per_cycle']:,.0f} flop per SM cycle ({placed['sms']} SMs); {s['pct']:.1f}% of "
                 f"{placed['baseline']} (p10-p90 {s['pct_p10']:.1f}-{s['pct_p90']:.1f}), launches alternated"]
        ceilings = placed["ceilings"]
        if placed["roofs"]:
            lines += [f"RECORDED ceilings on the {ceilings['gpu']} ({ceilings['file']}, {ceilings['date'][:10]}), in "
                      "flop per SM cycle, which no clock moves:",
                      f"  {'roof':<48}{'flop/SM cycle':>14}{'rung ' + rung + ' is':>14}"]
            lines += [f"  {label:<48}{r['flop_per_cycle']:>14,.0f}{r['pct']:>13.1f}%" for label, r in placed["roofs"].items()]
        else:
            lines.append("No recorded ceilings with their cycles (`hgemm-course ceilings` on a GPU records them).")
    note = "a model fitted to the measured loops, not a measured loop"
    return "\n".join(lines + [format_profile_placement(placed, model_note=note)])


def place_in_cycles(rung: str, size: int = 8192, *, folder=None) -> dict:
    """Print :func:`cycles_placement` (:func:`format_cycles_placement`); returns it."""
    placed = cycles_placement(rung, size, folder=folder)
    print(format_cycles_placement(placed))
    return placed


# ---------------------------------------------------------------- the recorded profile under either

def profile_placement(rung: str, size: int, folder=None) -> dict:
    """The rung's recorded profile at size^3 (``profile``, None without one) and, with one, its SM cycles against
    cuBLAS's profile at the same size and, for the mma.sync rungs, against the fewest cycles mma.sync allows their
    tiling (:func:`hgemm_course.sim.issue.gemm_floor_cycles`): comparisons no clock moves (``cycles``, None without a
    cuBLAS profile at that size)."""
    from ..measurement import profile
    from ..sim.issue import gemm_floor_cycles

    profiles = None if folder is None else Path(folder) / "profiles"
    record = profile.recorded_profile(rung, M=size, folder=profiles)
    if record is None:
        return {"profile": None}
    row = next((r for r in profile.cycle_ratios(size, folder=profiles) if r["rung"] == rung), None)
    if row is None:
        return {"profile": record, "cycles": None}
    cycles = {"cycles": row["cycles"], "cublas_cycles": row["cublas_cycles"],
              "pct_cublas_cycles": row["pct_cublas_cycles"], "cublas_file": row["cublas_file"]}
    extra = get(rung).extra
    if rung[:2].isdigit() and int(rung[:2]) < 9 and "tiles" in extra:
        t = extra["tiles"]
        floor = gemm_floor_cycles(size, size, size, (t["bm"], t["bn"]), extra.get("threads", 256) // 32,
                                  (t["wm"], t["wn"]))
        cycles.update(floor_cycles=floor["cycles"], pct_of_floor=100.0 * floor["cycles"] / row["cycles"],
                      floor_pct_cublas=100.0 * row["cublas_cycles"] / floor["cycles"], floor_waves=floor["waves"],
                      floor_tile=(t["bm"], t["bn"]))
    return {"profile": record, "cycles": cycles}


def format_profile_placement(placed: dict, model_note: str | None = None) -> str:
    """:func:`profile_placement`'s lines: the profile as :func:`hgemm_course.measurement.profile.describe` gives it, the
    cycles against cuBLAS's and the floor (``model_note`` says what the floor is), or the lines that say what is
    missing."""
    from ..measurement import profile

    rung, size, record = placed["rung"], placed["size"], placed["profile"]
    if record is None:
        return (f"No recorded profile of rung {rung} at {size}^3: `hgemm-course profile {rung} --size {size}` "
                "on a GPU records one.")
    text = profile.describe(record)
    lines = [text] if text else []
    c = placed["cycles"]
    if c is None:
        lines.append(f"No recorded cuBLAS profile at {size}^3 to count cycles against: `hgemm-course profile cublas "
                     f"--size {size}` on a GPU records one.")
        return "\n".join(lines)
    lines.append(f"In SM cycles, which no clock moves: rung {rung} {c['cycles']:,.0f}, cuBLAS {c['cublas_cycles']:,.0f} "
                 f"({c['cublas_file']}): {c['pct_cublas_cycles']:.1f}% of cuBLAS.")
    if "floor_cycles" in c:
        note = model_note or ("a model, not the measured bound in the table above, which is in TFLOP/s at "
                              "the clock its own kernel ran at")
        bm, bn = c["floor_tile"]
        lines.append(f"The sim.issue model ({note}) puts the floor of mma.sync at this tiling ({bm}x{bn} "
                     f"tiles, {c['floor_waves']} waves) at {c['floor_cycles']:,.0f} cycles, {c['floor_pct_cublas']:.1f}% "
                     f"of cuBLAS's cycles; the rung takes {c['cycles'] / c['floor_cycles']:.2f}x the floor's cycles.")
    return "\n".join(lines)
