"""The ``hgemm-course`` command: one entry point, every subcommand on the same machinery."""
from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from pathlib import Path

from . import device

TOUR_SIM_SHAPE = (48, 40, 72)        # M, N, K: tails in every dimension, small enough for the simulator
DEFAULT_BENCH_SIZES = (1024, 2048, 4096, 8192)


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=1)
    sys.stdout.write("\n")


def _parse_size(text: str):
    parts = [int(p) for p in text.lower().replace("*", "x").split("x")]
    if len(parts) == 1:
        return parts[0]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"{text!r}: give n (for n x n x n) or MxNxK.")
    return tuple(parts)


# ---------------------------------------------------------------- subcommands


def _parse_pair(text: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected two numbers as AxB, e.g. 128x256") from None
    return a, b


def cmd_doctor(args) -> int:
    report = device.machine_report()
    if args.json:
        _print_json(report.as_dict())
    else:
        print(device.format_report(report))
    return 0


def cmd_list(args) -> int:
    from . import rungs

    items = rungs()
    if args.json:
        _print_json(items)
        return 0
    for r in items:
        sim = ", runs under CUDASIM" if r["cudasim"] else ""
        print(f"{r['rung']}  {r['slug']:<11} {r['title']}  [{r['needs']}{sim}]")
    return 0


def compile_report_rows() -> list[dict]:
    """Compile every NVRTC rung for its target; one row per kernel with the resource report."""
    from .build import CompileError
    from .ladder import registry

    rows = []
    for rung in registry().values():
        if rung.backend != "nvrtc":
            continue
        from .build import compile_cuda

        try:
            module = compile_cuda(rung.source, name_expressions=rung.name_expressions, arch=rung.arch)
        except CompileError as exc:
            rows.append({"rung": rung.id, "kernel": rung.source, "error": str(exc).splitlines()[0]})
            continue
        for expr in rung.name_expressions:
            res = module.resources_of(expr)
            rows.append({"rung": rung.id, "kernel": expr, "arch": rung.arch, "registers": res.registers,
                         "smem_static": res.smem_static, "smem_dynamic": rung.extra.get("smem_bytes", 0),
                         "spill_bytes": res.spills, "stack_frame": res.stack_frame})
    return rows


def format_compile_rows(rows) -> str:
    lines = [f"{'rung':<5} {'kernel':<56} {'regs':>5} {'smem':>8} {'dyn smem':>9} {'spills':>7}"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['rung']:<5} {r['kernel']:<56} COMPILE ERROR: {r['error']}")
        else:
            lines.append(f"{r['rung']:<5} {r['kernel'][:56]:<56} {r['registers']:>5} {r['smem_static']:>8} "
                         f"{r['smem_dynamic']:>9} {r['spill_bytes']:>7}")
    return "\n".join(lines)


def cmd_compile(args) -> int:
    rows = compile_report_rows()
    if args.json:
        _print_json(rows)
    else:
        print(format_compile_rows(rows))
    return 1 if any("error" in r for r in rows) else 0


def cmd_verify(args) -> int:
    from .harness import verify
    from .ladder import get, registry

    ids = args.rungs or list(registry())
    sizes = args.sizes or [(257, 129, 64), 1024]
    failed = 0
    for rid in ids:
        for size in sizes:
            M, N, K = (size, size, size) if isinstance(size, int) else size
            try:
                result = verify(get(rid), M, N, K, seed=args.seed)
            except ValueError as exc:
                print(f"rung {rid} {M}x{N}x{K}: refused: {exc}")
                continue
            print(result.summary())
            failed += not result.passed
    return 1 if failed else 0


def cmd_bench(args) -> int:
    from .harness import bench, format_table
    from .ladder import registry
    from .results import write_run

    ids = args.rungs or list(registry())
    failures = []
    records = bench(ids, args.sizes or DEFAULT_BENCH_SIZES, repeats=args.repeats, progress=not args.json,
                    failures=failures)
    for failed in failures:
        print(f"verification failed, not timed: {failed.summary()} (seed={failed.seed})", file=sys.stderr)
    if not records:
        return 1
    path = write_run(records, folder=args.out_dir)
    from .results import load_records

    out = [r for r in load_records(path.parent) if r["file"] == path.name]
    if args.json:
        _print_json(out)
    else:
        print(format_table(records))
        print(f"\nwritten to {path}")
    return 1 if failures else 0


def cmd_tune(args) -> int:
    from . import tune
    from .results import write_run

    args.rung = tune.get(args.rung).id          # "11", 11 and "11_persistent" alike
    configs = tune.sweep(args.rung, tiles=args.tiles, stages=args.stages, supers=args.supers, clusters=args.clusters,
                         consumers=args.consumers)
    runnable, skipped = tune.plan(args.rung, configs)
    for cfg, reason in skipped:
        print(f"skip {cfg.label}: {reason}", file=sys.stderr)
    print(f"rung {args.rung}: {len(runnable)} of {len(configs)} configurations can run", file=sys.stderr)
    if args.dry_run:
        for cfg in runnable:
            print(f"run  {cfg.label}: {cfg.ring_bytes() + tune.c_buffer_bytes(args.rung, cfg)} B "
                  "of shared memory by the seed's arithmetic")
        return 0
    records, _, failures = tune.run(args.rung, args.sizes or [4096, 8192], runnable, repeats=args.repeats)
    for cfg, failed in failures:
        print(f"verification failed, not timed: {cfg.label}: {failed.summary()} (seed={failed.seed})", file=sys.stderr)
    if not records:
        return 1
    chosen = tune.best(records)
    default = tune.default_config(args.rung)
    path = write_run(records, kind="tune", folder=args.out_dir,
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
    info, reason, _ = device.probe_gpu()
    if info is None:
        print(f"hgemm-course ceilings: measuring needs an NVIDIA GPU and this machine has none ({reason}); "
              "run it on a GPU machine (scripts/h200.sh does), or read the recorded chain with "
              "hgemm_course.roofline.recorded_ceilings()", file=sys.stderr)
        return 2
    from .ceilings import format_ceilings, measure_ceilings
    from .results import write_run

    ceilings = measure_ceilings()
    path = write_run([ceilings], kind="ceilings", folder=args.out_dir)
    print(f"The ceiling chain on the {info.name}:\n{format_ceilings(ceilings)}\nwritten to {path}")
    return 0


def cmd_limits(args) -> int:
    from .limits import format_limits, run_all

    path, data = run_all(n=args.size, folder=args.out_dir)
    print(format_limits(data))
    print(f"written to {path}")
    return 0


def cmd_results(args) -> int:
    from .harness import format_table
    from .results import load_records

    records = load_records(args.dir)
    if args.readme:
        from .paths import REPO_ROOT
        from .results import rewrite_readme

        changed = rewrite_readme(REPO_ROOT / "README.md", records)
        print("README.md ladder table " + ("rewritten" if changed else "already up to date"))
        return 0
    if args.json:
        _print_json(records)
        return 0
    if not records:
        print("No recorded results yet (run `hgemm-course bench` on a GPU).")
        return 0
    files = sorted({(r["file"], r["date"], r["gpu"]) for r in records})
    print("Recorded results (not measured now):")
    for name, date, gpu in files:
        print(f"  {name}: {gpu}, {date}")
    print(format_table(records))
    return 0


def cmd_profile(args) -> int:
    import shlex

    from . import profile
    from .harness import VerificationError
    from .ncu import find_ncu

    shape = args.shape or args.size
    M, N, K = (shape,) * 3 if isinstance(shape, int) else shape
    rung, overrides, kernel = profile.launch_config(args.rung, M, N, K, super_mn=args.super, cluster_m=args.cluster)
    if args.dry_run:
        print(shlex.join(profile.ncu_command(find_ncu() or "ncu", rung, M, N, K, overrides, kernel,
                                             Path("ncu_raw.csv"))))
        return 0
    try:
        device.require_gpu("Profiling")
    except RuntimeError as exc:
        raise RuntimeError(f"{exc} Profile on a GPU machine (the H200); `hgemm-course profiles` shows the recorded "
                           "profiles.") from None
    ncu_path = profile.require_ncu()
    print(f"profiling rung {rung.id} at {M}x{N}x{K} ({profile.variant_label(overrides)}) with ncu "
          "(a few seconds per replay pass)...", flush=True)
    try:
        path = profile.run_profile(rung.id, M, N, K, super_mn=args.super, cluster_m=args.cluster,
                                   folder=args.out_dir, ncu_path=ncu_path)
    except (VerificationError, profile.NcuFailed) as exc:
        print(f"hgemm-course profile: {exc}", file=sys.stderr)
        return 1
    print(profile.describe({**json.loads(path.read_text())["records"][0], "file": path.name}))
    print(f"written to {path} (ncu's raw CSV: {path.with_suffix('.csv').name})")
    return 0


def cmd_profiles(args) -> int:
    from . import profile
    from .ladder import get

    records = profile.load_profiles(args.dir)
    if args.rungs:
        wanted = {get(r).id for r in args.rungs}
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
    return 0


def cmd_diff(args) -> int:
    from .ladder import get

    old, new = get(args.a), get(args.b)
    a_path, b_path = old.kernel_path, new.kernel_path
    if a_path is None or b_path is None:
        print("Both rungs need a kernel source to diff.", file=sys.stderr)
        return 2
    diff = difflib.unified_diff(
        a_path.read_text().splitlines(keepends=True), b_path.read_text().splitlines(keepends=True),
        fromfile=a_path.name, tofile=b_path.name, n=args.context)
    sys.stdout.writelines(diff)
    return 0


def cmd_viz(args) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from .viz import FIGURES

    if args.name not in FIGURES:
        print(f"No figure {args.name!r}; choose one of: {', '.join(FIGURES)}", file=sys.stderr)
        return 2
    out = Path(args.out or f"{args.name}.png")
    FIGURES[args.name]().savefig(out, dpi=120, bbox_inches="tight")
    print(f"wrote {out}")
    return 0


def cmd_check(args) -> int:
    from .check import ALL_EXERCISES, run_check

    if args.list or not args.exercise:
        for name, text in ALL_EXERCISES.items():
            print(f"{name:<18} {text}")
        return 0
    return run_check(args.exercise, args.path, draw=args.draw)


def cmd_tour(args) -> int:
    report = device.machine_report()
    print(device.format_report(report))
    print("\n== Every CUDA kernel compiled for its target (NVRTC, no GPU needed) ==")
    rows = compile_report_rows()
    print(format_compile_rows(rows))
    failures = sum("error" in r for r in rows)
    if report.gpu is None:
        failures += _tour_without_gpu()
    else:
        failures += _tour_with_gpu(args)
    print("\n== Recorded H200 results (from results/, not measured now) ==")
    cmd_results(argparse.Namespace(json=False, dir=None, readme=False))
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
            result = verify(rung, *TOUR_SIM_SHAPE)
            print(result.summary() + "  (simulated)")
            failed += not result.passed
    return failed


def _tour_with_gpu(args) -> int:
    from .harness import bench, format_table
    from .ladder import registry
    from .results import write_run

    print("\n== Verify and time every rung against cuBLAS ==")
    failures = []
    records = bench(list(registry()), args.sizes or DEFAULT_BENCH_SIZES, repeats=30, failures=failures)
    for failed in failures:
        print(f"verification failed, not timed: {failed.summary()} (seed={failed.seed})")
    if not records:
        return 1
    path = write_run(records, folder=args.out_dir)
    print(format_table(records))
    print(f"written to {path}")
    import matplotlib

    matplotlib.use("Agg")
    from .results import load_records
    from .viz import FIGURES

    plot = path.parent / "ladder.png"
    FIGURES["ladder"](records=[r for r in load_records(path.parent) if r["file"] == path.name]).savefig(
        plot, dpi=120, bbox_inches="tight")
    print(f"plot of this run: {plot}")
    return len(failures)


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hgemm-course", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("doctor", help="what GPU, toolchain and packages this machine has")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_doctor)

    s = sub.add_parser("list", help="the rungs of the ladder")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_list)

    s = sub.add_parser("tour", help="the main job: doctor, compile, verify (and time, on a GPU), results")
    s.add_argument("--sizes", nargs="+", type=_parse_size)
    s.add_argument("--out-dir", type=Path, help="where a GPU tour writes its results (default results/)")
    s.set_defaults(fn=cmd_tour)

    s = sub.add_parser("compile", help="compile every CUDA rung for sm_90a and print the resource report")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_compile)

    s = sub.add_parser("verify", help="run rungs on random inputs and compare with an FP32 reference")
    s.add_argument("rungs", nargs="*")
    s.add_argument("--sizes", nargs="+", type=_parse_size)
    s.add_argument("--seed", type=int)
    s.set_defaults(fn=cmd_verify)

    s = sub.add_parser("bench", help="verify, then time rungs against cuBLAS; writes results/*.json")
    s.add_argument("rungs", nargs="*")
    s.add_argument("--sizes", nargs="+", type=_parse_size)
    s.add_argument("--repeats", type=int, default=30)
    s.add_argument("--out-dir", type=Path)
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_bench)

    s = sub.add_parser("tune", help="sweep a Hopper rung's tiles, stages, order, clusters and consumers; "
                                    "writes results/tune_*.json")
    s.add_argument("rung", help="09, 10 or 11")
    s.add_argument("--sizes", nargs="+", type=_parse_size, help="default: 4096 8192")
    s.add_argument("--tiles", nargs="+", type=_parse_pair, help="BMxBN, e.g. 128x256 256x128")
    s.add_argument("--stages", nargs="+", type=int)
    s.add_argument("--supers", nargs="+", type=_parse_pair, help="SUPER_MxSUPER_N, e.g. 16x2 8x4")
    s.add_argument("--clusters", nargs="+", type=int, help="CTAs per cluster along M (rung 11): 1 2")
    s.add_argument("--consumers", nargs="+", type=int, help="consumer warpgroups (rung 11): 2 1")
    s.add_argument("--repeats", type=int, default=30)
    s.add_argument("--dry-run", action="store_true", help="only list what would run and what is skipped, and why")
    s.add_argument("--out-dir", type=Path)
    s.set_defaults(fn=cmd_tune)

    s = sub.add_parser("ceilings", help="measure the ceiling chain: FP32 cores, mma.sync bounds, cuBLAS, "
                                        "copy bandwidth (about a minute)")
    s.add_argument("--out-dir", type=Path)
    s.set_defaults(fn=cmd_ceilings)

    s = sub.add_parser("limits", help="chapter 08's experiments: occupancy cliffs, carveout, BK=32, BN and stages")
    s.add_argument("--size", type=int, default=8192)
    s.add_argument("--out-dir", type=Path)
    s.set_defaults(fn=cmd_limits)

    s = sub.add_parser("results", help="the recorded GPU results")
    s.add_argument("--json", action="store_true")
    s.add_argument("--dir", type=Path)
    s.add_argument("--readme", action="store_true", help="rewrite README.md's ladder table from the records")
    s.set_defaults(fn=cmd_results)

    s = sub.add_parser("profile", help="one launch of a rung under Nsight Compute: tensor pipe, stalls, memory; "
                                       "writes results/profiles/profile_*.json and ncu's CSV")
    s.add_argument("rung")
    shape = s.add_mutually_exclusive_group()
    shape.add_argument("--size", type=int, default=8192, help="M = N = K (default 8192)")
    shape.add_argument("--shape", type=_parse_size, help="MxNxK, e.g. 4096x8192x2048")
    s.add_argument("--super", type=int, nargs=2, metavar=("SM", "SN"), help="super tile, in output tiles (06 and up)")
    s.add_argument("--cluster", type=int, help="CTAs per cluster along M (rung 11)")
    s.add_argument("--out-dir", type=Path, help="default results/profiles/")
    s.add_argument("--dry-run", action="store_true", help="print the ncu command and stop (no GPU needed)")
    s.set_defaults(fn=cmd_profile)

    s = sub.add_parser("profiles", help="the recorded profiles, newest per rung, shape and variant")
    s.add_argument("rungs", nargs="*")
    s.add_argument("--json", action="store_true")
    s.add_argument("--dir", type=Path, help="default results/profiles/")
    s.set_defaults(fn=cmd_profiles)

    s = sub.add_parser("diff", help="unified diff of two rungs' kernel sources")
    s.add_argument("a")
    s.add_argument("b")
    s.add_argument("-U", "--context", type=int, default=3)
    s.set_defaults(fn=cmd_diff)

    s = sub.add_parser("viz", help="draw one of the course's figures")
    s.add_argument("name")
    s.add_argument("--out")
    s.set_defaults(fn=cmd_viz)

    s = sub.add_parser("check", help="check your solution of an exercise")
    s.add_argument("exercise", nargs="?")
    s.add_argument("--path")
    s.add_argument("--list", action="store_true")
    s.add_argument("--draw", action="store_true", help="save a picture of your answer next to the right one")
    s.set_defaults(fn=cmd_check)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (ValueError, TypeError, RuntimeError) as exc:
        print(f"hgemm-course {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:          # `hgemm-course list --json | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
