"""The ``hgemm-course`` command: it parses the arguments and dispatches to the module whose work each command is.

doctor, list, compile, plan: :mod:`.support`; tour: :mod:`.tour`; verify, bench, tune, ceilings, limits:
:mod:`.measure`; profile, profiles, sass: :mod:`.profile`; results: :mod:`.results`; viz: :mod:`.viz`;
diff and book: :mod:`.book`; check: :mod:`.check`. A refusal those raise (ValueError, TypeError, RuntimeError)
is printed here in one line and exits 2.
"""
from __future__ import annotations

import argparse
import errno
import os
import sys
import warnings
from pathlib import Path

from ..measurement.timing import MIN_REPEATS
from ..measurement.commands import DEFAULT_BENCH_SIZES, SIM_MAX_MACS, SIM_MAX_OUTPUTS, SIM_SHAPE, TUNE_SIZES, VERIFY_SIZES
from ..measurement.shapes import parse_shapes, parse_size, shapes_text

OUTPUT_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)   # writes to a full or failing disk
NAME_ERRORS = (errno.ENAMETOOLONG, errno.ELOOP)   # a name no file can have: the command says so in one line


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


# ---------------------------------------------------------------- dispatch: each command's options to its module


def cmd_doctor(args) -> int:
    from .target_report import doctor_command

    return doctor_command(args.arch, as_json=args.json)


def cmd_list(args) -> int:
    from .target_report import list_command

    return list_command(as_json=args.json)


def cmd_compile(args) -> int:
    from .target_report import compile_command

    return compile_command(args.arch, as_json=args.json)


def cmd_plan(args) -> int:
    from .target_report import plan_command

    return plan_command([shape for group in args.shapes for shape in group], units=args.units, as_json=args.json)


def cmd_tour(args) -> int:
    from .tour import tour_command

    return tour_command(args.sizes, out_dir=args.out_dir, record=args.record)


def cmd_verify(args) -> int:
    from ..measurement.commands import verify_command

    return verify_command(args.rungs, args.sizes, seed=args.seed, out_dir=args.out_dir, record=args.record)


def cmd_bench(args) -> int:
    from ..measurement.commands import bench_command

    sizes = (args.sizes or []) + [shape for group in args.shapes or [] for shape in group]
    return bench_command(args.rungs, sizes, repeats=args.repeats, out_dir=args.out_dir, record=args.record,
                         as_json=args.json)


def cmd_tune(args) -> int:
    from ..measurement.commands import tune_command

    return tune_command(args.rung, args.sizes, tiles=args.tiles, stages=args.stages, supers=args.supers,
                        clusters=args.clusters, consumers=args.consumers, repeats=args.repeats, dry_run=args.dry_run,
                        out_dir=args.out_dir, record=args.record)


def cmd_ceilings(args) -> int:
    from ..measurement.commands import ceilings_command

    return ceilings_command(out_dir=args.out_dir, record=args.record)


def cmd_limits(args) -> int:
    from ..measurement.commands import limits_command

    return limits_command(args.size, out_dir=args.out_dir, record=args.record)


def cmd_results(args) -> int:
    from ..measurement.records import readme_command, results_command

    return readme_command(args.dir) if args.readme else results_command(args.dir, as_json=args.json)


def _launch_options(args) -> dict:
    """The launch `_add_launch_arguments`' options name: its (M, N, K) and launcher settings."""
    shape = args.shape or (args.size,) * 3
    return {"shape": shape, "super_mn": args.super, "cluster_m": args.cluster, "tiles": args.tiles}


def cmd_profile(args) -> int:
    from ..measurement.profile import profile_command

    return profile_command(args.rung, **_launch_options(args), dry_run=args.dry_run, out_dir=args.out_dir,
                           record=args.record)


def cmd_sass(args) -> int:
    from ..library import target
    from ..measurement.profile import sass_command

    if args.arch is None:
        return sass_command(args.rung, **_launch_options(args))
    with target.use(target.named(args.arch)):
        return sass_command(args.rung, **_launch_options(args))


def cmd_profiles(args) -> int:
    from ..measurement.profile import profiles_command

    return profiles_command(args.rungs, folder=args.dir, as_json=args.json)


def cmd_diff(args) -> int:
    from .book_site import rung_diff
    from ..library.ladder import get

    sys.stdout.write(rung_diff(get(args.a), get(args.b), args.context))
    return 0


def cmd_book(args) -> int:
    from .book import build

    index = build(args.out)
    print(f"wrote the course website to {index.parent}; open {index} in a browser")
    return 0


def cmd_viz(args) -> int:
    from ..viz import draw

    print(f"wrote {draw(args.name, args.out, args.rung)}")
    return 0


def cmd_check(args) -> int:
    from ..check import ALL_EXERCISES, run_check

    if args.list or not args.exercise:
        for name, text in ALL_EXERCISES.items():
            print(f"{name:<18} {text}")
        return 0
    return run_check(args.exercise, args.path, draw=args.draw, timeout=args.timeout)


# ---------------------------------------------------------------- parser

EXAMPLES = """\
A refusal prints one line that names the fix and exits 2; HGEMM_COURSE_TRACEBACK=1 shows the traceback.

examples:
  hgemm-course tour                                  what runs here: compile, verify (and time, on a GPU)
  hgemm-course verify 05 --sizes 1000x1000x64        one rung on one shape, against an FP32 reference
  hgemm-course bench 05 11 --sizes 4096              time two rungs against the vendor baseline
  hgemm-course viz swizzle                           draw a figure into ./swizzle.png
  hgemm-course check ex05_swizzle --path my_ex05.py  check your answer to exercise 05
  hgemm-course diff 05 06                            what chapter 06 changes in the kernel
  hgemm-course plan 3072x3072x16384                  which kernel gemm() runs for a shape, and why
  hgemm-course book --out site                       the course as a website, in ./site/
"""


def _figure_list(figures: dict | None) -> str | None:
    """`viz --help`'s list of figures: each name with the first paragraph of its function's docstring, whole, on one
    line (a description that wraps in the source is not cut at the wrap)."""
    if not figures:
        return None
    import inspect

    width = max(map(len, figures))
    lines = ["figures:"]
    for name, fn in figures.items():
        summary = " ".join((inspect.getdoc(fn) or "").split("\n\n", 1)[0].split()).replace("``", "")
        lines.append(f"  {name:<{width}}  {summary}")
    return "\n".join(lines)


def _add_launch_arguments(s) -> None:
    """The options that pick one launch of a rung, for `profile` and `sass`: its shape (which also picks the
    instantiation: rungs 04-06 drop the tail guards on whole tiles) and launcher settings."""
    shape = s.add_mutually_exclusive_group()
    shape.add_argument("--size", type=_at_least(1), default=8192, help="M = N = K (default: 8192)")
    shape.add_argument("--shape", type=parse_size, help="MxNxK instead of --size, e.g. 4096x8192x2048 (default: --size)")
    s.add_argument("--super", type=_at_least(1), nargs=2, metavar=("SM", "SN"),
                   help="super tile in output tiles, rungs 06 and up (default: the rung's own)")
    s.add_argument("--cluster", type=_at_least(1), help="CTAs per cluster along M, rung 11 only (default: the rung's own)")
    s.add_argument("--tiles", type=_parse_pair, metavar="BMxBN",
                   help="CTA tile, e.g. 256x128, on rungs whose launcher takes tiles (default: the rung's own)")


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
    s.add_argument("--sizes", nargs="+", type=parse_size, metavar="SIZE",
                   help=f"sizes a GPU tour verifies and times, each n (for n x n x n) or MxNxK (default: "
                        f"{shapes_text(DEFAULT_BENCH_SIZES)}; without a GPU the simulator runs {shapes_text([SIM_SHAPE])})")
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
    s.add_argument("--sizes", nargs="+", type=parse_size, metavar="SIZE",
                   help=f"each n (for n x n x n) or MxNxK (default: {shapes_text(VERIFY_SIZES)}; "
                        f"{shapes_text([SIM_SHAPE])} under NUMBA_ENABLE_CUDASIM=1, which takes at most "
                        f"{SIM_MAX_OUTPUTS} elements of C and {SIM_MAX_MACS} multiply-adds)")
    s.add_argument("--seed", type=_at_least(0),
                   help="seed of the random inputs, to repeat a failure (default: a fresh one, printed on failure)")
    s.add_argument("--as", dest="as_arch", metavar="ARCH",
                   help="run another target's code on this GPU: each rung sized for ARCH (e.g. sm_89) and built as "
                        "PTX for the oldest architecture it needs, JIT-compiled by the driver (default: this GPU's own)")
    _add_output_arguments(s)
    s.set_defaults(fn=cmd_verify)

    s = command("bench", "verify, then time rungs against the faster of cuBLAS and, with PyTorch installed, "
                         "cuBLASLt (needs a GPU)")
    s.add_argument("rungs", nargs="*", metavar="RUNG", help="rungs to time, e.g. 05 11, or plan: what gemm() runs for "
                                                         "each shape (default: every rung)")
    s.add_argument("--sizes", nargs="+", type=parse_size, metavar="SIZE",
                   help=f"each n (for n x n x n) or MxNxK (default: {shapes_text(DEFAULT_BENCH_SIZES)})")
    s.add_argument("--shapes", nargs="+", type=parse_shapes, metavar="FILE|MxNxK",
                   help="more shapes, each MxNxK or a file of them, one per line (e.g. benchmarks/shapes_nonsquare.txt); "
                        "timed after --sizes (default: none)")
    s.add_argument("--repeats", type=_at_least(MIN_REPEATS), default=30,
                   help=f"timed launches, each paired with a vendor baseline's launch, per rung and size, of which the median counts (default: 30, at least {MIN_REPEATS})")
    _add_output_arguments(s)
    s.add_argument("--as", dest="as_arch", metavar="ARCH",
                   help="run another target's code on this GPU: each rung sized for ARCH (e.g. sm_89) and built as "
                        "PTX for the oldest architecture it needs, JIT-compiled by the driver (default: this GPU's own)")
    s.add_argument("--json", action="store_true", help="print the records as JSON (default: off, a table)")
    s.set_defaults(fn=cmd_bench)

    s = command("plan", "which kernel gemm() runs for a shape on a Hopper GPU, and why (no GPU needed)")
    s.add_argument("shapes", nargs="+", type=parse_shapes, metavar="MxNxK|FILE",
                   help="shapes, each n, MxNxK or a file of them, one per line")
    s.add_argument("--units", type=_at_least(1), default=None,
                   help="clusters that run at once (default: this GPU's count, or the H200's 66 without a GPU)")
    s.add_argument("--json", action="store_true", help="print the plans as JSON (default: off, text)")
    s.set_defaults(fn=cmd_plan)

    s = command("tune", "sweep a tensor-core rung's tiles, stages, order, clusters and consumers (needs a GPU, "
                        "except with --dry-run)")
    s.add_argument("rung", help="the rung to tune: one whose module declares TUNABLE, e.g. 05 or 11")
    s.add_argument("--sizes", nargs="+", type=parse_size, metavar="SIZE",
                   help=f"each n (for n x n x n) or MxNxK (default: {shapes_text(TUNE_SIZES)})")
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
    s.add_argument("rung", help="the rung to profile, e.g. 05 (rungs 03 and up); or cublas (cupy.matmul) or cublaslt "
                                "(torch.matmul): a vendor's own GEMM, whose cycles the rungs' compare with at any "
                                "clock; or plan: what gemm() launches for the shape")
    _add_launch_arguments(s)
    _add_output_arguments(s, recorded="results/profiles/")
    s.add_argument("--dry-run", action="store_true", help="print the ncu command and stop; no GPU needed (default: off)")
    s.set_defaults(fn=cmd_profile)

    s = command("sass", "the main loop of a rung's kernel as ptxas scheduled it, from its SASS (no GPU needed)")
    s.add_argument("rung", help="the rung to read, e.g. 05 (rungs 03 and up)")
    s.add_argument("--arch", metavar="ARCH", help="the target it is built and sized for: sm_80, sm_86, sm_89, sm_90a, "
                                                  "... (default: this machine's GPU, or the H200's sm_90a without one)")
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


def _odd_environment() -> str | None:
    """A setting in the environment that Numba cannot start with, named with its fix; None when there is none."""
    value = os.environ.get("NUMBA_NUM_THREADS")
    if value is not None and not (value.strip().isdigit() and int(value) > 0):
        return (f"NUMBA_NUM_THREADS={value[:40]!r} is not a number of threads: unset it, or give a whole number "
                "from 1 to the cores this machine has.")
    return None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    odd = _odd_environment()
    if odd is not None:
        print(f"hgemm-course: {odd}", file=sys.stderr)
        return 2
    figures = None
    if argv[:1] == ["viz"]:                  # only viz needs the figure registry, which imports Numba
        try:
            from ..viz import FIGURES as figures
        except (ValueError, ImportError) as exc:   # MPLBACKEND names no backend matplotlib has
            print(f"hgemm-course viz: matplotlib cannot start ({exc}); unset MPLBACKEND or name a backend it has "
                  "(Agg draws into files).", file=sys.stderr)
            return 2
    args = build_parser(figures).parse_args(argv)
    warnings.formatwarning = lambda message, category, *_, **__: f"warning: {message}\n"   # one line each
    try:
        if getattr(args, "as_arch", None):
            from ..library import target

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
        if exc.errno in NAME_ERRORS and exc.filename is not None and not os.environ.get("HGEMM_COURSE_TRACEBACK"):
            name = str(exc.filename)
            shown = name if len(name) <= 80 else f"{name[:60]}... ({len(name)} characters)"
            print(f"hgemm-course {args.command}: cannot use {shown}: {exc.strerror}; give another name.",
                  file=sys.stderr)
            return 2
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
