# Question: what gemm(out=) pays on a shape with N or K off a multiple of 8 (the padded path, api._gemm_padded),
# against its aligned neighbour and against torch.matmul on the same shape (issue 50, point 2; needs a GPU).
"""Times, per pair of shapes (ragged, aligned neighbour), these ways of C = A @ B, each into a preallocated C:

  ragged        hgemm_course.gemm(a, b, out=c) on the ragged shape (the kept buffers, its three launches kept as
                one CUDA graph)
  launches      the same with the three launches kept one after another (padded.as_graph turned off while
                they are kept), into C arrays of their own
  padded_shape  hgemm_course.gemm(out=) on arrays of the padded shape itself: the kernel without the copies
  padded64      the same on the shape with N and K, where off a multiple of 8, rounded up to 64 instead (rows of
                128 bytes: the plan charges rows off 128 bytes, plan.ROW_ALIGN_BYTES): a padding the path could take
  aligned       hgemm_course.gemm(a, b, out=c) on the aligned neighbour
  old_path      what the padded path did before: cupy.zeros and slice copies of A and B, gemm() on the padded
                arrays into a new C, C's corner copied out with a slice assignment
  torch         torch.matmul(a, b, out=c) on the ragged shape (cuBLASLt), on the same stream
  torch_aligned torch.matmul on the aligned neighbour

Everything runs on one non-blocking stream, CuPy's and torch's. Each timed batch is ``calls`` back-to-back calls
(no sync between them) between two CUDA events on the stream, the inputs rotated over enough sets to pass the
60 MB L2; the variants run in a fresh random order every round and the figure is the median over rounds of the time
per call. The host's time to issue a batch is timed beside it (where
it exceeds the events' time the GPU waited for the host). Before timing, every variant's C is checked against an
FP32 reference with C poisoned with NaN. The table comes last.

    python scripts/padded_vs_aligned.py [--pairs 1001x1003x1005:1000x1000x1008 ...] [--rounds 15]
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import random
import statistics
import subprocess
import time
from pathlib import Path

import cupy
import numpy as np
import torch

import hgemm_course
from hgemm_course.library import api, padded
from hgemm_course.measurement import verification

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


def padded64(M: int, N: int, K: int) -> tuple[int, int, int]:
    """N and K, where off a multiple of 8, rounded up to a multiple of 64 halves (128-byte rows)."""
    def up(x):
        return x if x % 8 == 0 else -(-x // 64) * 64

    return M, up(N), up(K)


def variants(ragged_sets, aligned_sets, padded_sets, padded64_sets) -> dict:
    """Each variant as (a call of one argument, the index of the set to use; its sets)."""
    def ours(sets):
        return lambda i: hgemm_course.gemm(sets[i][0], sets[i][1], out=sets[i][2])

    def theirs(sets):
        return lambda i: torch.matmul(sets[i][3], sets[i][4], out=sets[i][5])

    launch_sets = [(a, b, cupy.empty_like(c), *rest) for a, b, c, *rest in ragged_sets]
    as_graph = padded.as_graph
    padded.as_graph = lambda launches, stream: None         # these sets' calls keep their launches one by one
    try:
        for i in range(len(launch_sets)):
            ours(launch_sets)(i)
    finally:
        padded.as_graph = as_graph
    return {"ragged": (ours(ragged_sets), ragged_sets), "launches": (ours(launch_sets), launch_sets),
            "padded_shape": (ours(padded_sets), padded_sets), "padded64": (ours(padded64_sets), padded64_sets),
            "aligned": (ours(aligned_sets), aligned_sets),
            "old_path": (lambda i: old_path(*ragged_sets[i][:3]), ragged_sets),
            "torch": (theirs(ragged_sets), ragged_sets), "torch_aligned": (theirs(aligned_sets), aligned_sets)}


def wrong(call, sets) -> str | None:
    """None where C is right on the first two sets, C poisoned first, called twice; else what was wrong."""
    for i, (a, b, c, *_) in enumerate(sets[:2]):
        reference = a.astype(cupy.float32) @ b.astype(cupy.float32)
        for _ in range(2):                        # the second through what the first kept
            c.fill(cupy.nan)
            call(i)
            result = verification.compare(c, reference, K=a.shape[1])
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
    padded_sets = operand_sets(*api._rung(None).padded_shape(*ragged), np_rng)
    ways = variants(ragged_sets, aligned_sets, padded_sets, operand_sets(*padded64(*ragged), np_rng))
    for name, (call, sets) in ways.items():
        if (why := wrong(call, sets)) is not None:
            raise SystemExit(f"{name} at {ragged} is wrong: {why}")
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

    def ratio(top, bottom):
        return statistics.median(t[0] / b[0] for t, b in zip(times[top], times[bottom]))

    return {"sets": (len(ragged_sets), len(aligned_sets)), "calls": calls,
            "us": {name: statistics.median(t for t, _ in ts) for name, ts in times.items()},
            "host_us": {name: statistics.median(h for _, h in ts) for name, ts in times.items()},
            "ratios": {"ragged/aligned": ratio("ragged", "aligned"), "ragged/padded": ratio("ragged", "padded_shape"),
                       "padded64/padded": ratio("padded64", "padded_shape"),
                       "launches/aligned": ratio("launches", "aligned"), "torch/ragged": ratio("torch", "ragged")}}


def provenance() -> str:
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    package = Path(hgemm_course.__file__).parent
    digest = hashlib.sha256(b"".join((package / f).read_bytes() for f in ("api.py", "padded.py",
                                                                          "kernels/copy_corners.cu"))).hexdigest()
    clocks = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu",
                             "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}  {props['name'].decode()}  "
            f"sha256 of api.py, padded.py, copy_corners.cu {digest[:12]}  cupy {cupy.__version__}  "
            f"torch {torch.__version__}  nvidia-smi (sm, max sm, power, temp): {clocks}")


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
          "past L2); ratios: medians of the per-round ratios; % of torch: torch's time over ours on the ragged shape; "
          "padded: gemm(out=) on the padded shape's own arrays; padded64: on N and K rounded to 64 instead; launches: "
          "the three launches without the graph")
    names = ("ragged", "aligned", "ragged us", "host us", "aligned us", "ragged/aligned", "padded us", "ragged/padded",
             "padded64 us", "padded64/padded", "launches us", "launches/aligned", "old path us", "torch us", "% of torch", "torch aligned us")
    print(" ".join(f"{n:>{max(len(n), 9)}}" for n in names))
    for ragged, aligned, f in rows:
        us, r = f["us"], f["ratios"]
        cells = ("x".join(map(str, ragged)), "x".join(map(str, aligned)), f"{us['ragged']:.1f}",
                 f"{f['host_us']['ragged']:.1f}", f"{us['aligned']:.1f}", f"{r['ragged/aligned']:.3f}",
                 f"{us['padded_shape']:.1f}", f"{r['ragged/padded']:.3f}", f"{us['padded64']:.1f}",
                 f"{r['padded64/padded']:.3f}", f"{us['launches']:.1f}",
                 f"{r['launches/aligned']:.3f}", f"{us['old_path']:.1f}", f"{us['torch']:.1f}",
                 f"{100 * r['torch/ragged']:.1f}%", f"{us['torch_aligned']:.1f}")
        print(" ".join(f"{c:>{max(len(n), 9)}}" for c, n in zip(cells, names)))


if __name__ == "__main__":
    main()
