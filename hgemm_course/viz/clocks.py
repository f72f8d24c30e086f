"""Clock figure: the SM clock each paired launch really ran at, the rung's beside its vendor baseline's.

A launch's SM cycles are what Nsight Compute counted in the recorded profile of the same kernel at the same
shape (cycles hardly move with the clock for a kernel that is not waiting on DRAM); over the launch's time
they give the clock it ran at. NVML's reading, taken during the same launch, is drawn beside it.
"""
from __future__ import annotations

from matplotlib.figure import Figure

CLOCKED_RUN = ("samples_ms", "cublas_samples_ms", "sm_clock_mhz", "cublas_sm_clock_mhz")   # what a pair's clocks need


def clocks_data(rung: str = "07", size: int = 8192, *, folder=None, profiles_folder=None) -> dict:
    """Per pair of the newest recorded paired bench of ``rung`` at ``size``^3 that read clocks during its launches:
    ``{'rung_ms', 'cublas_ms', 'rung_mhz', 'cublas_mhz' (cycles / time), 'nvml_mhz', 'nvml_cublas_mhz',
    'pct' (per pair), 'pct_cycles' (the baseline's cycles over the rung's), 'rung_cycles', 'cublas_cycles', 'file',
    'profile_files', 'gpu', 'date', 'baseline'}``, 'baseline' the vendor the run paired the rung with
    (:func:`hgemm_course.measurement.vendors.baseline_label`), whose recorded profile gives its cycles. ``folder``: where the
    bench runs are (default results/), ``profiles_folder`` the profiles (default results/profiles/). A ValueError names what to record when the bench or a profile is
    missing.
    """
    from ..measurement.vendors import CUBLASLT_NAME, baseline_label
    from ..library.ladder import get
    from ..measurement.profile import recorded_profile
    from ..measurement.records import load_runs

    rung = get(rung).id
    runs = [{**r, "file": path.name, "gpu": r.get("gpu", data["provenance"].get("gpu")),
             "date": r.get("date", data["provenance"].get("date"))}
            for path, data in load_runs(folder) for r in data["records"]
            if r.get("rung") == rung and r.get("M") == r.get("N") == r.get("K") == size
            and all(r.get(key) for key in CLOCKED_RUN)]
    if not runs:
        raise ValueError(f"No recorded paired bench of rung {rung} at {size}^3 with clock readings: run "
                         f"`hgemm-course bench {rung} --sizes {size} --record` on the H200.")
    run = max(runs, key=lambda r: r["file"])                      # run files are named by date and time
    baseline = baseline_label([run])
    vendor = "cublaslt" if baseline == CUBLASLT_NAME else "cublas"        # the profile targets' ids (profile.TARGETS)
    profiles = {who: recorded_profile(who, size, folder=profiles_folder) for who in (rung, vendor)}
    missing = [who for who, p in profiles.items() if not (p and p.get("cycles"))]
    if missing:
        raise ValueError(f"No recorded profile of {' and '.join(missing)} at {size}^3 to count cycles with: run "
                         + " and ".join(f"`hgemm-course profile {who} --size {size} --record`" for who in missing)
                         + " on the H200.")
    rung_cycles, cublas_cycles = profiles[rung]["cycles"], profiles[vendor]["cycles"]
    rung_ms, cublas_ms = run["samples_ms"], run["cublas_samples_ms"]
    return {"rung": rung, "size": size, "rung_ms": rung_ms, "cublas_ms": cublas_ms,
            "rung_mhz": [rung_cycles / (ms * 1e3) for ms in rung_ms],
            "cublas_mhz": [cublas_cycles / (ms * 1e3) for ms in cublas_ms],
            "nvml_mhz": run["sm_clock_mhz"], "nvml_cublas_mhz": run["cublas_sm_clock_mhz"],
            "pct": [100.0 * c / r for r, c in zip(rung_ms, cublas_ms)],
            "pct_cycles": 100.0 * cublas_cycles / rung_cycles, "rung_cycles": rung_cycles,
            "cublas_cycles": cublas_cycles, "file": run["file"],
            "profile_files": [profiles[rung]["file"], profiles[vendor]["file"]], "gpu": run.get("gpu", "?"),
            "date": run.get("date", "?"), "baseline": baseline}


def clocks_figure(*, rung: str = "07", size: int = 8192, folder=None) -> Figure:
    """Top: each pair's clock, rung and vendor baseline, from cycles over time, with NVML's readings dotted. Bottom:
    the pair's % of the baseline against the ratio of cycles."""
    data = clocks_data(rung, size, folder=folder, profiles_folder=None if folder is None else folder / "profiles")
    pairs = range(1, len(data["rung_ms"]) + 1)
    fig = Figure(figsize=(11, 7), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(pairs, data["rung_mhz"], "o-", color="tab:blue", label=f"rung {data['rung']}: its cycles / its time")
    base = data["baseline"]
    top.plot(pairs, data["cublas_mhz"], "s-", color="tab:red", label=f"{base}: its cycles / its time")
    for key, color, who in (("nvml_mhz", "tab:blue", f"rung {data['rung']}"), ("nvml_cublas_mhz", "tab:red", base)):
        got = [(p, v) for p, v in zip(pairs, data[key]) if v]
        if got:
            top.plot(*zip(*got), ":", color=color, alpha=0.6, label=f"NVML's reading during {who}'s launch")
    top.set_ylabel("SM clock (MHz)")
    top.legend(fontsize=8, loc="center right")
    fig.suptitle(f"RECORDED on the {data['gpu']} ({data['file']}, {data['date'][:10]}): rung {data['rung']} and "
                  f"{base} at {size}^3, launch by launch\nSM cycles from {' and '.join(data['profile_files'])}",
                  fontsize=9)
    bottom.plot(pairs, data["pct"], "o-", color="black", label=f"rung's % of {base}, pair by pair")
    bottom.axhline(data["pct_cycles"], color="tab:green", linestyle="--",
                   label=f"{base}'s cycles / the rung's: {data['pct_cycles']:.1f}%")
    bottom.set_xlabel("pair (rung launch, then the baseline's launch), in the order they ran")
    bottom.set_ylabel(f"% of {base}")
    bottom.legend(fontsize=8)
    return fig
