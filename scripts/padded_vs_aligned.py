# Question: what gemm(out=) pays on a shape with N or K off a multiple of 8 (the padded path, api._gemm_padded),
# against its aligned neighbour and against torch.matmul on the same shape (issue 50, point 2; needs a GPU).
"""Times, per pair of shapes (ragged, aligned neighbour), these ways of C = A @ B, each into a preallocated C:

  ragged        hgemm_course.gemm(a, b, out=c) on the ragged shape (the kept buffers and launches)
  aligned       hgemm_course.gemm(a, b, out=c) on the aligned neighbour
  old_path      what the padded path did before: cupy.zeros and slice copies of A and B, gemm() on the padded
                arrays into a new C, C's corner copied out with a slice assignment
  torch         torch.matmul(a, b, out=c) on the ragged shape (cuBLASLt), on the same stream
  torch_aligned torch.matmul on the aligned neighbour
  graph         an experiment: the ragged call's kept launches (copies in, kernel, copy out) captured once into a
                CUDA graph and launched as one, to see what a single launch a call would save the host (skipped,
                saying why, where the capture fails or its C is wrong: rung 12's launches take a new epoch per call)

Everything runs on one non-blocking stream, CuPy's and torch's. Each timed batch is ``calls`` back-to-back calls
(no sync between them) between two CUDA events on the stream, the
inputs rotated over enough sets to pass the 60 MB L2; the variants run in a fresh random order every round and the
figure is the median over rounds of the time per call. The host's time to issue a batch is timed beside it (where
it exceeds the events' time the GPU waited for the host). Before timing, every variant's C is checked against an
FP32 reference with C poisoned with NaN. The table comes last.

    python scripts/padded_vs_aligned.py [--pairs 1001x1003x1005:1000x1000x1008 ...] [--rounds 15]
"""
from __future__ import annotations

import argparse
import datetime
import random
import statistics
import subprocess
import time

import cupy
import numpy as np
import torch

import hgemm_course
from hgemm_course import api, harness

PAIRS = ("1001x1003x1005:1000x1000x1008", "777x1001x1113:777x1000x1112", "2047x2049x2051:2048x2048x2048",
         "4095x4095x4095:4096x4096x4096")
ROTATE_BYTES = 120e6        # inputs and outputs rotated over at least this many bytes: twice the H200's L2
MAX_SETS = 16
BATCH_S = 0.02              # a timed batch lasts about this long


def shape(text: str) -> tuple[int, int, int]:
    M, N, K = (int(x) for x in text.split("x"))
    return M, N, K


def operand_sets(M: int, N: int, K: int, rng: np.random.Generator) -> list[tuple]:
    """(a, b, c) CuPy fp16 sets, as many as rotate past the L2, with torch views of the same memory."""
    count = int(min(MAX_SETS, max(1, -(-ROTATE_BYTES // (2 * (M * K + K * N + M * N))))))
    sets = []
    for _ in range(count):
        a = cupy.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float16))
        b = cupy.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float16))
        c = cupy.empty((M, N), cupy.float16)
        sets.append((a, b, c, torch.from_dlpack(a), torch.from_dlpack(b), torch.from_dlpack(c)))
    return sets


def old_path(a, b, c):
    """The padded path as it was: new zero arrays and slice copies per call, C's corner copied out."""
    (M, K), N = a.shape, b.shape[1]
    Mp, Np, Kp = api._rung(None).padded_shape(M, N, K)
    a_p = cupy.zeros((Mp, Kp), cupy.float16)
    a_p[:M, :K] = a
    b_p = cupy.zeros((Kp, Np), cupy.float16)
    b_p[:K, :N] = b
    c[...] = hgemm_course.gemm(a_p, b_p)[:M, :N]


def variants(ragged_sets, aligned_sets) -> dict:
    """Each variant as a call of one argument, the index of the set to use."""
    def ours(sets):
        return lambda i: hgemm_course.gemm(sets[i][0], sets[i][1], out=sets[i][2])

    def theirs(sets):
        return lambda i: torch.matmul(sets[i][3], sets[i][4], out=sets[i][5])

    return {"ragged": (ours(ragged_sets), ragged_sets), "aligned": (ours(aligned_sets), aligned_sets),
            "old_path": (lambda i: old_path(*ragged_sets[i][:3]), ragged_sets),
            "torch": (theirs(ragged_sets), ragged_sets), "torch_aligned": (theirs(aligned_sets), aligned_sets)}


def graph_variant(ragged_sets):
    """Each set's kept padded launches (api._again) captured into a CUDA graph; one call launches one graph."""
    stream = cupy.cuda.get_current_stream()
    graphs = []
    for a, b, c, *_ in ragged_sets:
        again = api._again[api._again_key(a, b, c, None)]
        stream.begin_capture()
        try:
            again()
        finally:
            graphs.append(stream.end_capture())
    return lambda i: graphs[i].launch(stream)


def wrong(call, sets) -> str | None:
    """None where C is right on the first two sets, C poisoned first, called twice; else what was wrong."""
    for i, (a, b, c, *_) in enumerate(sets[:2]):
        reference = a.astype(cupy.float32) @ b.astype(cupy.float32)
        for _ in range(2):                        # the second through what the first kept
            c.fill(cupy.nan)
            call(i)
            result = harness.compare(c, reference, K=a.shape[1])
            if not result.passed:
                return f"set {i}: {result}"
    return None


def batch(call, sets, calls: int) -> tuple[float, float]:
    """(GPU us per call by the events, host us per call to issue them)."""
    stream = cupy.cuda.get_current_stream()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    t0 = time.perf_counter()
    for j in range(calls):
        call(j % len(sets))
    host = time.perf_counter() - t0
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) * 1e3 / calls, host * 1e6 / calls


def time_pair(ragged, aligned, rounds: int, rng: random.Random, np_rng) -> dict:
    ragged_sets, aligned_sets = operand_sets(*ragged, np_rng), operand_sets(*aligned, np_rng)
    ways = variants(ragged_sets, aligned_sets)
    for name, (call, sets) in ways.items():
        if (why := wrong(call, sets)) is not None:
            raise SystemExit(f"{name} {ragged if sets is ragged_sets else aligned} is wrong: {why}")
    for i in range(len(ragged_sets)):             # each set's padded launches kept, for the graphs
        ways["ragged"][0](i)
    try:
        graph_call = graph_variant(ragged_sets)
        why = wrong(graph_call, ragged_sets)
    except Exception as exc:                      # noqa: BLE001 (the experiment's failure is reported, not raised)
        why = f"capture failed: {type(exc).__name__}: {exc}"
    if why is None:
        ways["graph"] = (graph_call, ragged_sets)
    else:
        print(f"graph variant skipped at {ragged}: {why}")
    calls = {}
    for name, (call, sets) in ways.items():        # warm-up, and the calls that make a batch of BATCH_S
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            us, _ = batch(call, sets, 10)
        calls[name] = max(10, int(BATCH_S * 1e6 / us))
    times = {name: [] for name in ways}
    for _ in range(rounds):
        order = list(ways)
        rng.shuffle(order)
        for name in order:
            call, sets = ways[name]
            times[name].append(batch(call, sets, calls[name]))
    graph = [g[0] / a[0] for g, a in zip(times.get("graph", []), times["aligned"])]
    return {"sets": (len(ragged_sets), len(aligned_sets)), "calls": calls,
            "graph_over_aligned": statistics.median(graph) if graph else float("nan"),
            "us": {name: statistics.median(t for t, _ in ts) for name, ts in times.items()},
            "host_us": {name: statistics.median(h for _, h in ts) for name, ts in times.items()},
            "ragged_over_aligned": statistics.median(r[0] / a[0] for r, a in zip(times["ragged"], times["aligned"])),
            "torch_over_ragged": statistics.median(t[0] / r[0] for t, r in zip(times["torch"], times["ragged"]))}


def provenance() -> str:
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    clocks = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu",
                             "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}  {props['name'].decode()}  "
            f"commit {commit or '?'}  cupy {cupy.__version__}  torch {torch.__version__}  "
            f"hgemm-course {hgemm_course.__version__}  nvidia-smi (sm, max sm, power, temp): {clocks}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", nargs="+", default=PAIRS, help="RAGGED:ALIGNED shapes, each MxNxK")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    print(provenance())
    rng, np_rng = random.Random(0), np.random.default_rng(0)
    stream = cupy.cuda.Stream(non_blocking=True)
    torch.cuda.set_stream(torch.cuda.ExternalStream(stream.ptr))
    rows = []
    for pair in args.pairs:
        ragged, aligned = (shape(s) for s in pair.split(":"))
        with stream:
            found = time_pair(ragged, aligned, args.rounds, rng, np_rng)
        print(f"{pair}: sets {found['sets']}, calls per batch {found['calls']}, host us per call "
              + ", ".join(f"{k} {v:.1f}" for k, v in found["host_us"].items()))
        rows.append((ragged, aligned, found))
    print(f"\nmedian of {args.rounds} rounds, us per call by CUDA events (back-to-back gemm(out=) calls, inputs rotated "
          "past L2); ragged/aligned: median of the per-round ratios; % of torch: torch's time over ours on the ragged "
          "shape")
    print(f"{'ragged':>16} {'aligned':>16} {'ragged us':>10} {'aligned us':>11} {'ragged/aligned':>15} "
          f"{'old path us':>12} {'torch us':>9} {'% of torch':>11} {'torch aligned us':>17} {'graph us':>9} "
          f"{'graph/aligned':>14}")
    for ragged, aligned, f in rows:
        us = f["us"]
        print(f"{'x'.join(map(str, ragged)):>16} {'x'.join(map(str, aligned)):>16} {us['ragged']:10.1f} "
              f"{us['aligned']:11.1f} {f['ragged_over_aligned']:15.3f} {us['old_path']:12.1f} {us['torch']:9.1f} "
              f"{100 * f['torch_over_ragged']:10.1f}% {us['torch_aligned']:17.1f} {us.get('graph', float('nan')):9.1f} "
              f"{f['graph_over_aligned']:14.3f}")


if __name__ == "__main__":
    main()
