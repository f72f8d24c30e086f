"""Question: at shapes whose kernels run for tens of microseconds, how much of what the paired timing reported
was the host preparing each launch? Each shape is timed, paired with cuBLAS, in rounds that alternate two ways
of queuing the launches: one by one as the host prepares them ("unheld"), and all of a batch behind a
timing.StreamHold ("held"), so that they run back to back. Beside them, the host's own time per launch of
gemm()'s plan and of cuBLAS (cupy.matmul), taken while a hold keeps the GPU from running anything.
Result file: results/probes/hold_probe/hold_probe_<gpu>_<date>.json (written with --record; --out DIR writes it
there instead)."""
from __future__ import annotations

import argparse
import time

import cupy

from hgemm_course.measurement import clocks, records, timing, vendors
from hgemm_course.library.plan import _launch_planned, plan

SHAPES = [(1024, 1024, 1024), (1024, 4096, 2048), (2176, 2944, 1024), (2048, 2688, 3072), (2560, 2304, 2560),
          (4608, 2304, 1536), (2500, 2504, 2504), (2048, 2048, 2048), (4096, 4096, 4096)]


class Unheld(timing.StreamHold):
    """No hold: each launch is queued as the host prepares it, as the timing was before the hold."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def host_us_per_launch(fn, sets, launches: int = 20) -> float:
    """Microseconds the host spends in ``fn`` per call, measured while a hold keeps the stream from starting."""
    with timing.StreamHold():
        start = time.perf_counter()
        for i in range(launches):
            fn(*sets[i % len(sets)])
        host = time.perf_counter() - start
    cupy.cuda.get_current_stream().synchronize()
    return 1e6 * host / launches


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=None, help="write the report to this folder")
    ap.add_argument("--record", action="store_true", help="write it to the recorded results/probes/hold_probe/")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--shapes", nargs="+", default=None, help="MxNxK to time (default: SHAPES)")
    args = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes] if args.shapes else SHAPES
    held_hold = timing.StreamHold
    report = {"timing": [], "host_us": []}
    clock = clocks.sm_clock_reader()
    for M, N, K in shapes:
        sets = timing.input_sets(M, N, K, 60 << 20)
        timing.settle(vendors.cublas, sets)
        for rnd in range(args.rounds):
            for queuing in ("unheld", "held"):
                timing.StreamHold = held_hold if queuing == "held" else Unheld
                try:
                    t = timing.time_paired(_launch_planned, vendors.cublas, sets, warmup=5, repeats=args.repeats,
                                           clock=clock)
                finally:
                    timing.StreamHold = held_hold
                got = t.summary()
                report["timing"].append({"queuing": queuing, "shape": [M, N, K], "round": rnd, **got,
                                         "plan": f"rung {plan(M, N, K).rung} {plan(M, N, K).options_text()}"})
                print(f"{M}x{N}x{K} {queuing:>7} round {rnd}: plan {1e3 * got['ms']:7.1f} us, cuBLAS "
                      f"{1e3 * got['cublas_ms']:7.1f} us, {got['pct_cublas']:5.1f}%", flush=True)
        # after the timing: every input set has been launched on, so no first-call work (the kernel's build, the
        # tensor maps of new buffers) is counted
        for fn, name in ((_launch_planned, "plan"), (vendors.cublas, "cublas")):
            report["host_us"].append({"shape": [M, N, K], "launcher": name, "host_us": host_us_per_launch(fn, sets)})
        del sets
        cupy.get_default_memory_pool().free_all_blocks()
    if args.out or args.record:
        print("written", records.write_probe(report, probe="hold_probe", folder=args.out))
    print("\nsummary: medians in us, % of cuBLAS (last round), host us per launch")
    print(f"{'shape':>16} {'plan unheld':>11} {'cuBLAS':>8} {'%':>6} {'plan held':>10} {'cuBLAS':>8} {'%':>6}"
          f" {'host plan':>9} {'host cuBLAS':>11}")
    for M, N, K in shapes:
        row = {t["queuing"]: t for t in report["timing"] if t["shape"] == [M, N, K] and t["round"] == args.rounds - 1}
        host = {h["launcher"]: h["host_us"] for h in report["host_us"] if h["shape"] == [M, N, K]}
        u, h = row["unheld"], row["held"]
        print(f"{f'{M}x{N}x{K}':>16} {1e3 * u['ms']:11.1f} {1e3 * u['cublas_ms']:8.1f} {u['pct_cublas']:6.1f}"
              f" {1e3 * h['ms']:10.1f} {1e3 * h['cublas_ms']:8.1f} {h['pct_cublas']:6.1f}"
              f" {host['plan']:9.1f} {host['cublas']:11.1f}")


if __name__ == "__main__":
    main()
