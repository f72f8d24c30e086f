"""The ``hgemm-course`` command: one entry point, every subcommand on the same machinery."""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import warnings
from pathlib import Path

from . import device
from .harness import MIN_REPEATS
from .shapes import parse_shapes as _parse_shapes
from .shapes import parse_size as _parse_size

SIM_SHAPE = (48, 40, 72)             # M, N, K: tails in every dimension, a few seconds in the simulator
# The Numba CUDA simulator runs one Python thread per element of C: 256 x 256 x 1 took 13 s a rung, 128 x 128 x 512
# 27 s. verify refuses more under NUMBA_ENABLE_CUDASIM=1 (each operand then holds at most 2^22 elements, 8 MiB).
SIM_MAX_OUTPUTS = 2**16              # M x N
SIM_MAX_MACS = 2**22                 # M x N x K
OUTPUT_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)   # writes to a full or failing disk
VERIFY_SIZES = ((257, 136, 72), (1024, 1024, 1024))   # tails in M, N and K (multiples of 8: rungs 03-11), then square
DEFAULT_BENCH_SIZES = tuple((n, n, n) for n in (1024, 2048, 4096, 8192))
TUNE_SIZES = ((4096, 4096, 4096), (8192, 8192, 8192))
NEXT_STEPS = ("Next: open chapter 00 with `jupyter lab chapters/` (jupyter comes with the dev extra), "
              "then try an exercise: `hgemm-course check ex05_swizzle`.")


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=1)
    sys.stdout.write("\n")


def _parse_pair(text: str) -> tuple[int, int]:
    """argparse type: ``AxB`` (a tile or a super tile), both at least 1."""
    try:
        a, b = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected two numbers as AxB, e.g. 128x256") from None
    if min(a, b) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: both sides must be at least 1, e.g. 128x256")
    return a, b


def _at_least(minimum: int):
    """argparse type: a whole number of at least ``minimum``."""
    def whole_number(text: str) -> int:
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least {minimum}")
        return int(text)
    return whole_number


def _sizes_text(shapes) -> str:
    """Shapes as the command line takes them: 1024 for 1024x1024x1024, else MxNxK."""
    return " ".join(str(M) if M == N == K else f"{M}x{N}x{K}" for M, N, K in shapes)


# ---------------------------------------------------------------- subcommands


def cmd_doctor(args) -> int:
    """The machine (without --arch), and for its GPU or the --arch target what runs there and how it is sized."""
    from . import support, target

    if args.arch:
        t = target.named(args.arch)
        rows = support.rung_rows(t)
        if args.json:
            _print_json({"target": t.as_dict(), "rungs": rows})
        else:
            print(support.format_rung_rows(t, rows))
        return 0
    report = device.machine_report()
    here = target.present()
    rows = support.rung_rows(here) if here else None
    if args.json:
        _print_json({**report.as_dict(), **({"target": here.as_dict(), "rungs": rows} if here else {})})
        return 0
    print(device.format_report(report))
    if here:
        print("\n" + support.format_rung_rows(here, rows))
    return 0


def cmd_list(args) -> int:
    from . import rungs

    items = rungs()
    if args.json:
        _print_json(items)
        return 0
    rows = [("rung", "slug", "needs", "title")] + [
        (r["rung"], r["slug"], r["needs"] + (", or the simulator" if r["cudasim"] else ""), r["title"]) for r in items]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for *cells, title in rows:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(cells, widths)), title, sep="  ")
    return 0


def compile_report_rows(t=None) -> list[dict]:
    """Compile every NVRTC rung for the target ``t`` (default: the current one), each sized for it; one row per
    kernel with the resource report, or per rung the target cannot run with the reason."""
    from . import support, target

    t = t or target.current()
    rows = []
    for r in support.rung_rows(t):
        if r["backend"] != "nvrtc":
            continue
        if not r["runs"]:
            rows.append({"rung": r["rung"], "kernel": registry_source(r["rung"]), "not_for_target": r["why"]})
        rows += [{"rung": r["rung"], **k} for k in r["kernels"]]
    return rows


def registry_source(rung_id: str) -> str:
    from .ladder import get

    return get(rung_id).source


def format_compile_rows(rows) -> str:
    lines = [f"{'rung':<5} {'kernel':<56} {'regs':>5} {'smem':>8} {'dyn smem':>9} {'spills':>7}"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['rung']:<5} {r['kernel']:<56} COMPILE ERROR: {r['error']}")
        elif "not_for_target" in r:
            lines.append(f"{r['rung']:<5} not for this target: {r['not_for_target']}")
        else:
            lines.append(f"{r['rung']:<5} {r['kernel'][:56]:<56} {r['registers']:>5} {r['smem_static']:>8} "
                         f"{r['smem_dynamic']:>9} {r['spill_bytes']:>7}")
    return "\n".join(lines)


def cmd_compile(args) -> int:
    from . import target

    t = target.named(args.arch) if args.arch else target.current()
    rows = compile_report_rows(t)
    if args.json:
        _print_json(rows)
    else:
        print(f"Every CUDA rung compiled for {t.label()}, each sized for its shared memory:")
        print(format_compile_rows(rows))
    return 1 if any("error" in r for r in rows) else 0


def _checked_rungs(ids, shapes) -> list:
    """The rungs named by ``ids``, each checked against every (M, N, K) shape before anything runs:
    an unknown rung or a shape a rung cannot take is a ValueError that names the fix."""
    from .ladder import get
    from .plan import planned_rung

    rungs = [planned_rung() if str(rid).lower() == "plan" else get(rid) for rid in ids]
    for rung in rungs:
        for shape in shapes:
            rung.check_shape(*shape)
            M, N, K = shape
            if rung.cudasim and device.cudasim_enabled() and (M * N > SIM_MAX_OUTPUTS or M * N * K > SIM_MAX_MACS):
                raise ValueError(
                    f"{_sizes_text([shape])} is too big for the Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1), which "
                    f"runs a Python thread per element of C: it takes at most {SIM_MAX_OUTPUTS} (2^16) elements of C "
                    f"(M x N) and {SIM_MAX_MACS} (2^22) multiply-adds (M x N x K), half a minute a rung; give a "
                    f"smaller size, e.g. {_sizes_text([SIM_SHAPE])}, or verify this one on a GPU.")
    return rungs


def cmd_verify(args) -> int:
    from .harness import verify
    from .ladder import registry

    simulated = device.cudasim_enabled()           # then only rungs 01-02 run, on small sizes
    sizes = args.sizes or ([SIM_SHAPE] if simulated else VERIFY_SIZES)
    ids = args.rungs or [r.id for r in registry().values() if r.cudasim or not simulated]
    from .harness import why_not_here
    from .results import run_folder, write_run

    folder = run_folder(args.out_dir, record=args.record) if (args.out_dir or args.record) else None
    failed, results, rungs = 0, [], _checked_rungs(ids, sizes)
    refused = [(rung, why) for rung in rungs if not simulated and (why := why_not_here(rung)) is not None]
    for rung, why in refused:
        print(f"skip: {why}", flush=True)
    for rung in [r for r in rungs if all(r is not other for other, _ in refused)]:
        for M, N, K in sizes:
            result = verify(rung, M, N, K, seed=args.seed)
            print(result.summary() + ("" if result.passed else f" (repeat with --seed {result.seed})"), flush=True)
            failed += not result.passed
            results.append(result)
    if folder is not None and results:
        from dataclasses import asdict

        rows = [{**asdict(r), "passed": r.passed} for r in results]
        print(f"written to {write_run(rows, kind='verify', folder=folder)}")
    if failed:
        return 1
    return 2 if refused and not results else 0


def cmd_bench(args) -> int:
    from .harness import bench, format_table
    from .ladder import registry
    from .results import run_folder, write_run

    folder = run_folder(args.out_dir, record=args.record)  # checked before the run, not after it
    shapes = [shape for group in args.shapes or [] for shape in group]
    sizes = (args.sizes or []) + shapes or DEFAULT_BENCH_SIZES
    rungs = _checked_rungs(args.rungs or list(registry()), sizes)
    failures, skipped = [], []
    records = bench(rungs, sizes, repeats=args.repeats, progress=not args.json, failures=failures, skipped=skipped)
    for _, why in skipped:
        print(f"skip: {why}", file=sys.stderr)
    for failed in failures:
        print(f"verification failed, not timed: {failed.summary()} (seed={failed.seed})", file=sys.stderr)
    if not records:
        return 2 if skipped and not failures else 1
    path = write_run(records, folder=folder)
    from .results import load_records

    out = [r for r in load_records(path.parent) if r["file"] == path.name]
    if args.json:
        _print_json(out)
    else:
        print(format_table(records))
        print(f"\nwritten to {path}")
    return 1 if failures else 0


def cmd_plan(args) -> int:
    from . import api, target
    from .plan import plan, planned_rung

    here = target.runnable()
    if here is not None and (why := planned_rung().refusal(here)) is not None:
        print(f"gemm() on {here.describe()} runs rung {api._rung(None).id} at every shape: the plan chooses between "
              f"rungs 11 and 12, which need {why.split(' needs ', 1)[1]}.")
        return 0

    plans = [plan(*shape, units=args.units) for group in args.shapes for shape in group]
    if args.json:
        _print_json([p.as_dict() for p in plans])
        return 0
    for p in plans:
        options = "".join(f", {k}={v}" for k, v in p.options_text().items())
        print(f"{p.M}x{p.N}x{p.K}: rung {p.rung}{options}. {p.reason}")
        for name, value in p.efficiency.items():
            print(f"    {name:<22} {value:6.1%} of the GPU busy (model)")
    return 0


def cmd_tune(args) -> int:
    from . import tune
    from .results import run_folder, write_run

    from .harness import require_runs_here

    args.rung = tune.get(args.rung).id          # "11", 11 and "11_persistent" alike
    if not args.dry_run:
        require_runs_here(tune.get(args.rung))
    configs = tune.sweep(args.rung, tiles=args.tiles, stages=args.stages, supers=args.supers, clusters=args.clusters,
                         consumers=args.consumers)
    runnable, skipped = tune.plan(args.rung, configs)
    for cfg, reason in skipped:
        print(f"skip {cfg.label}: {reason}", file=sys.stderr)
    print(f"rung {args.rung}: {len(runnable)} of {len(configs)} configurations can run", file=sys.stderr)
    if args.dry_run:
        for cfg in runnable:
            kernel = tune.build(args.rung, cfg)
            print(f"run  {cfg.label}: {kernel.threads} threads, {kernel.smem_bytes} B of shared memory")
        return 0
    folder = run_folder(args.out_dir, record=args.record)  # checked before the run, not after it
    records, _, failures = tune.run(args.rung, args.sizes or TUNE_SIZES, runnable, repeats=args.repeats)
    for cfg, failed in failures:
        print(f"verification failed, not timed: {cfg.label}: {failed.summary()} (seed={failed.seed})", file=sys.stderr)
    if not records:
        return 1
    chosen = tune.best(records)
    default = tune.default_config(args.rung)
    path = write_run(records, kind="tune", folder=folder,
                     extra={"rung": args.rung, "skipped": [[c.label, r] for c, r in skipped],
                            "failed": [[c.label, f.summary()] for c, f in failures],
                            "default": default.label, "best": chosen[0] if chosen else None})
    print(tune.format_tune_table(records))
    if chosen:
        print(f"\nbest: {tune.TuneConfig(**chosen[0]).label} ({chosen[1]:.1f}% of cuBLAS, geometric mean); "
              f"the rung's default: {default.label}")
    print(f"written to {path}")
    return 1 if failures else 0


def cmd_ceilings(args) -> int:
    from .results import run_folder

    folder = run_folder(args.out_dir, record=args.record)  # checked before the run, not after it
    info, reason, _ = device.probe_gpu()
    if info is None:
        print(f"hgemm-course ceilings: measuring needs an NVIDIA GPU and this machine has none ({reason}); "
              "run it on a GPU machine (scripts/h200.sh does), or read the recorded chain with "
              "hgemm_course.roofline.recorded_ceilings()", file=sys.stderr)
        return 2
    from .ceilings import format_ceilings, measure_ceilings
    from .results import write_run

    ceilings = measure_ceilings()
    path = write_run([ceilings], kind="ceilings", folder=folder)
    print(f"The ceiling chain on the {info.name}:\n{format_ceilings(ceilings)}\nwritten to {path}")
    return 0


def cmd_limits(args) -> int:
    from .harness import require_runs_here
    from .ladder import get
    from .limits import format_limits, run_all
    from .results import run_folder

    folder = run_folder(args.out_dir, record=args.record)  # checked before the run, not after it
    device.require_gpu("Chapter 08's experiments")
    require_runs_here(get("07"))                 # they time rung 07's variants

    path, data = run_all(n=args.size, folder=folder)
    print(format_limits(data))
    print(f"written to {path}")
    return 0


def cmd_results(args) -> int:
    from .harness import format_table
    from .results import load_records

    if args.readme:
        from .paths import REPO_ROOT
        from .results import rewrite_readme

        if args.dir:
            raise ValueError("--readme writes README's table from the recorded H200 runs in results/ only; "
                             "leave out --dir.")
        changed = rewrite_readme(REPO_ROOT / "README.md")
        print("README.md ladder table " + ("rewritten" if changed else "already up to date"))
        return 0
    if args.dir is not None and not args.dir.is_dir():
        raise ValueError(f"{args.dir} is {'not a folder' if args.dir.exists() else 'no folder'}; give --dir a folder "
                         "of run files (bench_*.json), e.g. ./hgemm-results, or leave it out for the recorded results/.")
    records = load_records(args.dir)
    if args.json:
        _print_json(records)
        return 0
    if not records:
        print("No recorded results yet (run `hgemm-course bench` on a GPU).")
        return 0
    files = sorted({(r["file"], r["date"], r["gpu"]) for r in records}, key=str)
    print("Recorded results (not measured now):")
    for name, date, gpu in files:
        print(f"  {name}: {gpu}, {date}")
    print(format_table(records))
    _print_own_runs(args.dir)
    return 0


def _print_own_runs(shown: Path | None) -> None:
    """The learner's own runs in ./hgemm-results/, after the recorded ones, each GPU's apart and labelled."""
    from .harness import format_table
    from .paths import user_results_dir
    from .results import load_records

    folder = user_results_dir()
    if shown is not None and Path(shown).resolve() == folder.resolve() or not folder.is_dir():
        return
    own = load_records(folder)
    for gpu in sorted({r["gpu"] for r in own}, key=str):
        rows = [r for r in own if r["gpu"] == gpu]
        print(f"\nYour runs on the {gpu} ({folder}, newest per rung and shape):")
        print(format_table(rows))


def _add_launch_arguments(s) -> None:
    """The options that pick one launch of a rung, for `profile` and `sass`: its shape (which also picks the
    instantiation: rungs 04-06 drop the tail guards on whole tiles) and launcher settings."""
    shape = s.add_mutually_exclusive_group()
    shape.add_argument("--size", type=_at_least(1), default=8192, help="M = N = K (default: 8192)")
    shape.add_argument("--shape", type=_parse_size, help="MxNxK instead of --size, e.g. 4096x8192x2048 (default: --size)")
    s.add_argument("--super", type=_at_least(1), nargs=2, metavar=("SM", "SN"),
                   help="super tile in output tiles, rungs 06 and up (default: the rung's own)")
    s.add_argument("--cluster", type=_at_least(1), help="CTAs per cluster along M, rung 11 only (default: the rung's own)")
    s.add_argument("--tiles", type=_parse_pair, metavar="BMxBN",
                   help="CTA tile, e.g. 256x128, on rungs whose launcher takes tiles (default: the rung's own)")


def _launch_of(args):
    """(rung, launcher overrides, kernel, (M, N, K)) of the launch `_add_launch_arguments`' options name."""
    from . import profile

    shape = args.shape or args.size
    M, N, K = (shape,) * 3 if isinstance(shape, int) else shape
    rung, overrides, kernel = profile.launch_config(args.rung, M, N, K, super_mn=args.super, cluster_m=args.cluster,
                                                    tiles=args.tiles)
    return rung, overrides, kernel, (M, N, K)


def cmd_profile(args) -> int:
    import shlex

    from . import profile
    from .harness import VerificationError
    from .ncu import find_ncu

    rung, overrides, kernel, (M, N, K) = _launch_of(args)
    if args.dry_run:
        print(shlex.join(profile.ncu_command(find_ncu() or "ncu", rung, M, N, K, overrides, kernel,
                                             Path("ncu_raw.csv"))))
        return 0
    from .results import run_folder

    # checked before the run, not after it
    folder = run_folder(args.out_dir, record=args.record, recorded=profile.profiles_folder())
    try:
        device.require_gpu("Profiling")
    except RuntimeError as exc:
        raise RuntimeError(f"{exc} Profile on a GPU machine (the H200); `hgemm-course profiles` shows the recorded "
                           "profiles.") from None
    if rung.id != "cublas":
        from .harness import require_runs_here

        require_runs_here(rung)
    ncu_path = profile.require_ncu()
    print(f"profiling rung {rung.id} at {M}x{N}x{K} ({profile.variant_label(overrides)}) with ncu "
          "(a few seconds per replay pass)...", flush=True)
    try:
        path = profile.run_profile(rung.id, M, N, K, super_mn=args.super, cluster_m=args.cluster, tiles=args.tiles,
                                   folder=folder, ncu_path=ncu_path)
    except (VerificationError, profile.NcuFailed) as exc:
        print(f"hgemm-course profile: {exc}", file=sys.stderr)
        return 1
    print(profile.describe({**json.loads(path.read_text())["records"][0], "file": path.name}))
    print(f"written to {path} (ncu's raw CSV: {path.with_suffix('.csv').name})")
    return 0


def cmd_sass(args) -> int:
    from . import sass

    kernel = _launch_of(args)[2]
    if kernel is None:
        raise ValueError("cuBLAS's kernels come compiled, without their source here: `hgemm-course sass` reads the "
                         "rungs' kernels (03 and up).")
    print(sass.loop_schedule(kernel).describe())
    return 0


def cmd_profiles(args) -> int:
    from . import profile

    records = profile.load_profiles(args.dir)
    if args.rungs:
        wanted = {profile.rung_id(r) for r in args.rungs}
        records = [r for r in records if r["rung"] in wanted]
    if args.json:
        _print_json(records)
        return 0
    if not records:
        print(f"No recorded profiles in {profile.profiles_folder(args.dir)} (run `hgemm-course profile RUNG` on a "
              "GPU machine with Nsight Compute).")
        return 0
    print("Recorded profiles (Nsight Compute, not measured now):")
    print(profile.format_profiles(records))
    for M, N, K in sorted({(r["M"], r["N"], r["K"]) for r in records if r["rung"] == profile.CUBLAS}):
        rows = [r for r in profile.cycle_ratios(M, N, K, folder=args.dir) if r["rung"] in {x["rung"] for x in records}]
        if rows:
            print(f"\nAt {M}x{N}x{K}, against cuBLAS in SM cycles (no clock moves this comparison):")
            print(profile.format_cycle_ratios(rows))
    return 0


def cmd_diff(args) -> int:
    from .ladder import get

    old, new = get(args.a), get(args.b)
    a_path, b_path = old.kernel_path, new.kernel_path
    if a_path is None or b_path is None:
        print("Both rungs need a kernel source to diff.", file=sys.stderr)
        return 2
    from .book import rung_diff     # the diff without the exercises' region markers

    sys.stdout.write(rung_diff(old, new, args.context))
    return 0


def cmd_book(args) -> int:
    from .book import build

    index = build(args.out)
    print(f"wrote the course website to {index.parent}; open {index} in a browser")
    return 0


FIGURES_WITH_RUNG = ("pipeline",)    # viz figures that take --rung


def cmd_viz(args) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backend_bases import FigureCanvasBase

    from .paths import PACKAGE_DIR
    from .viz import FIGURES

    options = {}
    if args.rung is not None:                                     # figures drawn per rung (pipeline)
        if args.name not in FIGURES_WITH_RUNG:
            raise ValueError(f"viz {args.name} draws no single rung; --rung goes with {', '.join(FIGURES_WITH_RUNG)}.")
        from .ladder import get

        options["rung"] = get(args.rung).id
    name = "_".join([args.name, *options.values()])
    out = Path(args.out or f"{name}.png").resolve()               # default: the current folder
    formats = FigureCanvasBase.get_supported_filetypes()
    if not out.parent.is_dir():
        raise ValueError(f"folder {out.parent} does not exist; create it, or give --out a file in an existing folder.")
    if not os.access(out.parent, os.W_OK) or PACKAGE_DIR in out.parents:
        raise ValueError(f"cannot write into {out.parent}; give --out a file in a folder of your own, e.g. "
                         f"--out ./{out.name}.")
    if out.suffix.lstrip(".") not in formats:
        raise ValueError(f"{out.name}: end --out with a type matplotlib writes: {', '.join(sorted(formats))}.")
    try:
        FIGURES[args.name](**options).savefig(out, dpi=120, bbox_inches="tight")
    except OSError as exc:
        raise ValueError(f"cannot write {out} ({exc.strerror}); give --out a file in a folder of your own.") from None
    print(f"wrote {out}")
    return 0


def cmd_check(args) -> int:
    from .check import ALL_EXERCISES, run_check

    if args.list or not args.exercise:
        for name, text in ALL_EXERCISES.items():
            print(f"{name:<18} {text}")
        return 0
    return run_check(args.exercise, args.path, draw=args.draw, timeout=args.timeout)


def cmd_tour(args) -> int:
    from .results import run_folder

    report = device.machine_report()
    folder = run_folder(args.out_dir, record=args.record) if report.gpu else None  # checked before the run, not after it
    print(device.format_report(report))
    from . import target

    t = target.current()
    print(f"\n== Every CUDA kernel compiled for {t.label()}, each sized for it (NVRTC, no GPU needed) ==")
    rows = compile_report_rows(t)
    print(format_compile_rows(rows))
    failures = sum("error" in r for r in rows)
    if report.gpu is None:
        failures += _tour_without_gpu()
    else:
        failures += _tour_with_gpu(args, folder)
    print("\n== Recorded H200 results (from results/, not measured now) ==")
    cmd_results(argparse.Namespace(json=False, dir=None, readme=False))
    print(f"\n{NEXT_STEPS}")
    return 1 if failures else 0


def _tour_without_gpu() -> int:
    print("\n== Rungs 01-02 under the Numba CUDA simulator (no GPU here) ==")
    if "numba" in sys.modules and not device.cudasim_enabled():
        print("Numba was imported before the simulator could be switched on; run `NUMBA_ENABLE_CUDASIM=1 hgemm-course tour`.")
        return 1
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    from .harness import verify
    from .ladder import registry

    failed = 0
    for rung in registry().values():
        if rung.cudasim:
            result = verify(rung, *SIM_SHAPE)
            print(result.summary() + "  (simulated)")
            failed += not result.passed
    return failed


def _tour_with_gpu(args, folder: Path) -> int:
    from .harness import SHOWN_INSTEAD, bench, format_table
    from .ladder import registry
    from .results import write_run

    print("\n== Verify and time every rung this GPU runs against cuBLAS ==")
    failures, skipped = [], []
    records = bench(list(registry()), args.sizes or DEFAULT_BENCH_SIZES, repeats=30, failures=failures,
                    skipped=skipped)
    for _, why in skipped:
        print(f"skip: {why}{SHOWN_INSTEAD}")
    for failed in failures:
        print(f"verification failed, not timed: {failed.summary()} (seed={failed.seed})")
    if not records:
        return 1
    path = write_run(records, folder=folder)
    print(format_table(records))
    print(f"written to {path}")
    import matplotlib

    matplotlib.use("Agg")
    from .results import load_records
    from .viz import FIGURES

    plot = path.with_suffix(".png")
    FIGURES["ladder"](records=[r for r in load_records(path.parent) if r["file"] == path.name]).savefig(
        plot, dpi=120, bbox_inches="tight")
    print(f"plot of this run: {plot}")
    return len(failures)


# ---------------------------------------------------------------- parser

EXAMPLES = """\
A refusal prints one line that names the fix and exits 2; HGEMM_COURSE_TRACEBACK=1 shows the traceback.

examples:
  hgemm-course tour                                  what runs here: compile, verify (and time, on a GPU)
  hgemm-course verify 05 --sizes 1000x1000x64        one rung on one shape, against an FP32 reference
  hgemm-course bench 05 11 --sizes 4096              time two rungs against cuBLAS
  hgemm-course viz swizzle                           draw a figure into ./swizzle.png
  hgemm-course check ex05_swizzle --path my_ex05.py  check your answer to exercise 05
  hgemm-course diff 05 06                            what chapter 06 changes in the kernel
  hgemm-course plan 3072x3072x16384                  which kernel gemm() runs for a shape, and why
  hgemm-course book --out site                       the course as a website, in ./site/
"""


def _figure_list(figures: dict | None) -> str | None:
    """`viz --help`'s list of figures: each name with the first line of its function's docstring."""
    if not figures:
        return None
    import inspect

    width = max(map(len, figures))
    lines = ["figures:"]
    for name, fn in figures.items():
        summary = (inspect.getdoc(fn) or "").partition("\n")[0].replace("``", "")
        lines.append(f"  {name:<{width}}  {summary}")
    return "\n".join(lines)


def _add_output_arguments(s, recorded: str = "results/") -> None:
    """--out-dir or --record: where a command that measures writes its run."""
    where = s.add_mutually_exclusive_group()
    where.add_argument("--out-dir", type=Path, metavar="DIR",
                       help="folder the run is written to (default: ./hgemm-results/ in the current folder)")
    where.add_argument("--record", action="store_true",
                       help=f"write into the course's recorded {recorded} instead of --out-dir; refused unless this "
                            "is an H200 run with complete provenance (default: off)")


def build_parser(figures: dict | None = None) -> argparse.ArgumentParser:
    """The whole command line. ``figures`` is the viz registry, for `viz`'s choices and its list of
    figures; main() passes it for `viz` only, since importing it imports Numba, and tour must switch
    the simulator on (NUMBA_ENABLE_CUDASIM) before Numba is first imported."""
    p = argparse.ArgumentParser(prog="hgemm-course", epilog=EXAMPLES,
                                description="Verify, time, profile and draw the rungs of an FP16 GEMM ladder, from a\n"
                                            "naive kernel to Hopper's persistent wgmma kernel. New here? Start with\n"
                                            "`hgemm-course tour`.",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, text: str, **kwargs) -> argparse.ArgumentParser:
        """A subcommand whose one line shows in `hgemm-course --help` and atop its own --help."""
        return sub.add_parser(name, help=text, description=text, **kwargs)

    s = command("doctor", "what GPU, toolchain and packages this machine has, and which rungs run on its GPU "
                          "(or on the --arch target) sized how")
    s.add_argument("--arch", metavar="ARCH", help="a target to report on instead of this machine: sm_75, sm_80, sm_86, "
                                                  "sm_89, sm_90a, sm_100 or sm_120 (default: this machine's GPU)")
    s.add_argument("--json", action="store_true", help="print the report as JSON (default: off, text)")
    s.set_defaults(fn=cmd_doctor)

    s = command("list", "the rungs of the ladder")
    s.add_argument("--json", action="store_true", help="print the rungs as JSON (default: off, a table)")
    s.set_defaults(fn=cmd_list)

    s = command("tour", "the main job: doctor, compile, verify (and time, on a GPU), results")
    s.add_argument("--sizes", nargs="+", type=_parse_size, metavar="SIZE",
                   help=f"sizes a GPU tour verifies and times, each n (for n x n x n) or MxNxK (default: "
                        f"{_sizes_text(DEFAULT_BENCH_SIZES)}; without a GPU the simulator runs {_sizes_text([SIM_SHAPE])})")
    _add_output_arguments(s)
    s.set_defaults(fn=cmd_tour)

    s = command("compile", "compile every CUDA rung for a target, sized for it, and print the resource report")
    s.add_argument("--arch", metavar="ARCH", help="the target: sm_80, sm_86, sm_89, sm_90a, sm_100, sm_120, ... "
                                                  "(default: this machine's GPU, or the H200's sm_90a without one)")
    s.add_argument("--json", action="store_true", help="print the rows as JSON (default: off, a table)")
    s.set_defaults(fn=cmd_compile)

    s = command("verify", "run rungs on random inputs and compare with an FP32 reference")
    s.add_argument("rungs", nargs="*", metavar="RUNG",
                   help="rungs to verify, e.g. 01 05 11 (default: every rung; rungs 01-02 under NUMBA_ENABLE_CUDASIM=1)")
    s.add_argument("--sizes", nargs="+", type=_parse_size, metavar="SIZE",
                   help=f"each n (for n x n x n) or MxNxK (default: {_sizes_text(VERIFY_SIZES)}; "
                        f"{_sizes_text([SIM_SHAPE])} under NUMBA_ENABLE_CUDASIM=1, which takes at most "
                        f"{SIM_MAX_OUTPUTS} elements of C and {SIM_MAX_MACS} multiply-adds)")
    s.add_argument("--seed", type=_at_least(0),
                   help="seed of the random inputs, to repeat a failure (default: a fresh one, printed on failure)")
    s.add_argument("--as", dest="as_arch", metavar="ARCH",
                   help="run another target's code on this GPU: each rung sized for ARCH (e.g. sm_89) and built as "
                        "PTX for the oldest architecture it needs, JIT-compiled by the driver (default: this GPU's own)")
    _add_output_arguments(s)
    s.set_defaults(fn=cmd_verify)

    s = command("bench", "verify, then time rungs against cuBLAS (needs a GPU)")
    s.add_argument("rungs", nargs="*", metavar="RUNG", help="rungs to time, e.g. 05 11, or plan: what gemm() runs for "
                                                         "each shape (default: every rung)")
    s.add_argument("--sizes", nargs="+", type=_parse_size, metavar="SIZE",
                   help=f"each n (for n x n x n) or MxNxK (default: {_sizes_text(DEFAULT_BENCH_SIZES)})")
    s.add_argument("--shapes", nargs="+", type=_parse_shapes, metavar="FILE|MxNxK",
                   help="more shapes, each MxNxK or a file of them, one per line (e.g. benchmarks/shapes_nonsquare.txt); "
                        "timed after --sizes (default: none)")
    s.add_argument("--repeats", type=_at_least(MIN_REPEATS), default=30,
                   help=f"timed launches, each paired with a cuBLAS launch, per rung and size, of which the median counts (default: 30, at least {MIN_REPEATS})")
    _add_output_arguments(s)
    s.add_argument("--as", dest="as_arch", metavar="ARCH",
                   help="run another target's code on this GPU: each rung sized for ARCH (e.g. sm_89) and built as "
                        "PTX for the oldest architecture it needs, JIT-compiled by the driver (default: this GPU's own)")
    s.add_argument("--json", action="store_true", help="print the records as JSON (default: off, a table)")
    s.set_defaults(fn=cmd_bench)

    s = command("plan", "which kernel gemm() runs for a shape on a Hopper GPU, and why (no GPU needed)")
    s.add_argument("shapes", nargs="+", type=_parse_shapes, metavar="MxNxK|FILE",
                   help="shapes, each n, MxNxK or a file of them, one per line")
    s.add_argument("--units", type=_at_least(1), default=None,
                   help="clusters that run at once (default: this GPU's count, or the H200's 66 without a GPU)")
    s.add_argument("--json", action="store_true", help="print the plans as JSON (default: off, text)")
    s.set_defaults(fn=cmd_plan)

    s = command("tune", "sweep a tensor-core rung's tiles, stages, order, clusters and consumers (needs a GPU, "
                        "except with --dry-run)")
    s.add_argument("rung", help="the rung to tune: one whose module declares TUNABLE, e.g. 05 or 11")
    s.add_argument("--sizes", nargs="+", type=_parse_size, metavar="SIZE",
                   help=f"each n (for n x n x n) or MxNxK (default: {_sizes_text(TUNE_SIZES)})")
    sweep = "the rung's sweep; --dry-run lists it"
    s.add_argument("--tiles", nargs="+", type=_parse_pair, metavar="BMxBN",
                   help=f"tiles of C per CTA, e.g. 128x256 256x128 (default: {sweep})")
    s.add_argument("--stages", nargs="+", type=int, help=f"ring stages, as many as shared memory allows, e.g. 3 4 5 "
                                                         f"(default: {sweep})")
    axis = "on a rung whose kernel takes them (default: the rung's sweep)"
    s.add_argument("--supers", nargs="+", type=_parse_pair, metavar="SMxSN",
                   help=f"super tiles in output tiles, e.g. 16x2 8x4, {axis}")
    s.add_argument("--clusters", nargs="+", type=int, help=f"CTAs per cluster along M, e.g. 1 2, {axis}")
    s.add_argument("--consumers", nargs="+", type=int, help=f"consumer warpgroups, e.g. 2 1, {axis}")
    s.add_argument("--repeats", type=_at_least(MIN_REPEATS), default=30,
                   help=f"timed launches per configuration and size (default: 30, at least {MIN_REPEATS})")
    s.add_argument("--dry-run", action="store_true",
                   help="only list what would run and what is skipped, and why; no GPU needed (default: off)")
    _add_output_arguments(s)
    s.set_defaults(fn=cmd_tune)

    s = command("ceilings", "measure the ceiling chain: FP32 cores, mma.sync bounds, cuBLAS, copy bandwidth "
                            "(about a minute, on a GPU)")
    _add_output_arguments(s)
    s.set_defaults(fn=cmd_ceilings)

    s = command("limits", "chapter 08's experiments: occupancy cliffs, carveout, BK=32, BN and stages (on a GPU)")
    s.add_argument("--size", type=_at_least(1), default=8192, help="M = N = K of the experiments (default: 8192)")
    _add_output_arguments(s)
    s.set_defaults(fn=cmd_limits)

    s = command("results", "the recorded GPU results")
    s.add_argument("--json", action="store_true", help="print the records as JSON (default: off, a table)")
    s.add_argument("--dir", type=Path, help="folder to read (default: the recorded results/)")
    s.add_argument("--readme", action="store_true",
                   help="rewrite README.md's ladder table from the records (default: off)")
    s.set_defaults(fn=cmd_results)

    s = command("profile", "one launch of a rung under Nsight Compute: tensor pipe, stalls, memory; "
                           "writes a profile_*.json and ncu's CSV")
    s.add_argument("rung", help="the rung to profile, e.g. 05 (rungs 03 and up), or cublas: cuBLAS's own GEMM, "
                                "whose cycles the rungs' compare with at any clock")
    _add_launch_arguments(s)
    _add_output_arguments(s, recorded="results/profiles/")
    s.add_argument("--dry-run", action="store_true", help="print the ncu command and stop; no GPU needed (default: off)")
    s.set_defaults(fn=cmd_profile)

    s = command("sass", "the main loop of a rung's kernel as ptxas scheduled it, from its SASS (no GPU needed)")
    s.add_argument("rung", help="the rung to read, e.g. 05 (rungs 03 and up)")
    _add_launch_arguments(s)
    s.set_defaults(fn=cmd_sass)

    s = command("profiles", "the recorded profiles, newest per rung, shape and variant")
    s.add_argument("rungs", nargs="*", metavar="RUNG", help="rungs to show, e.g. 05 06 (default: every rung)")
    s.add_argument("--json", action="store_true", help="print the profiles as JSON (default: off, a table)")
    s.add_argument("--dir", type=Path, help="default results/profiles/")
    s.set_defaults(fn=cmd_profiles)

    s = command("diff", "unified diff of two rungs' kernel sources: what a chapter changes")
    s.add_argument("a", metavar="OLD", help="the earlier rung, e.g. 05")
    s.add_argument("b", metavar="NEW", help="the later rung, e.g. 06")
    s.add_argument("-U", "--context", type=_at_least(0), default=3, help="lines of context around each change (default: 3)")
    s.set_defaults(fn=cmd_diff)

    s = command("book", "build the course website (static HTML) from the chapter notebooks as committed: nothing runs, "
                        "no GPU needed (needs the book extra: pip install -e .[book])")
    s.add_argument("--out", type=Path, default=Path("hgemm-book"), metavar="DIR",
                   help="folder the site is written to, new or from an earlier build (default: ./hgemm-book/ in the "
                        "current folder)")
    s.set_defaults(fn=cmd_book)

    s = command("viz", "draw one of the course's figures into a file", epilog=_figure_list(figures),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("name", choices=figures, metavar="NAME", help="the figure, one of those listed below")
    s.add_argument("--out", help="the file to write, .png, .pdf or .svg (default: ./NAME.png in the current folder, "
                                 "./NAME_RUNG.png with --rung)")
    s.add_argument("--rung", metavar="RUNG", help="the rung to draw, for pipeline: 03, 07, 09, 10 or 11, the rungs whose "
                                                  "ring the model plays (default: 07)")
    s.set_defaults(fn=cmd_viz)

    s = command("check", "check your solution of an exercise in a separate process (exit code 0 pass, 1 fail, "
                         "2 could not check)")
    s.add_argument("exercise", nargs="?", help="ex05_swizzle, ex05 or 5 (default: list the exercises)")
    s.add_argument("--path", help="your file (default: ./EXERCISE.py, else ./exercises/EXERCISE.py, else the "
                                  "checkout's exercises/EXERCISE.py; .cu for a kernel exercise)")
    s.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="how long your code may run before the check fails (default: 60; 120 for the GPU run "
                        "of a .cu exercise)")
    s.add_argument("--list", action="store_true", help="list the exercises (default: off)")
    s.add_argument("--draw", action="store_true",
                   help="save a picture of your answer next to the right one (default: off)")
    s.set_defaults(fn=cmd_check)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    figures = None
    if argv[:1] == ["viz"]:                  # only viz needs the figure registry, which imports Numba
        from .viz import FIGURES as figures
    args = build_parser(figures).parse_args(argv)
    warnings.formatwarning = lambda message, category, *_, **__: f"warning: {message}\n"   # one line each
    try:
        if getattr(args, "as_arch", None):
            from . import target

            with target.use(target.named(args.as_arch).run_here()):
                code = args.fn(args)
        else:
            code = args.fn(args)
        sys.stdout.flush()           # a full disk shows here, not as an exception Python ignores at exit
        return code
    except (ValueError, TypeError, RuntimeError) as exc:     # the package's refusals, each naming its fix
        if os.environ.get("HGEMM_COURSE_TRACEBACK"):          # for a developer chasing a bug behind a refusal
            raise
        print(f"hgemm-course {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:          # `hgemm-course list --json | head`
        sys.stderr.close()
        return 0
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRORS or exc.filename is not None or os.environ.get("HGEMM_COURSE_TRACEBACK"):
            raise                    # not a write that failed, or one to a file the command named
        _drop_stdout()
        print(f"hgemm-course {args.command}: cannot write the output ({exc.strerror or exc}); free space on the disk "
              "it goes to, or redirect it elsewhere.", file=sys.stderr)
        return 1


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so that what could not be written is not tried again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):    # no file descriptor behind sys.stdout (a test's capture)
        pass


if __name__ == "__main__":
    sys.exit(main())
