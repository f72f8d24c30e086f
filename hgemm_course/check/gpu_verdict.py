"""The GPU part of a kernel exercise's check: the learner's kernel runs through the rung's launcher in a separate
process (``python -m hgemm_course.check.gpu_run``) with a timeout, on random inputs whose sizes leave tails in M, N
and K; that process only produces C and a report of the kernels it launched, which are read here against their
format and compared with this process's own reference. An illegal address, a hang or a wrong element is reported;
the notebook's own CUDA context never sees the learner's kernel.
"""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

from . import sandbox
from .feedback import OUTPUT_CAP_BYTES, Failure, Unchecked
from .kernel_exercise import GPU_TIMEOUT_S, MAX_REPORT_BYTES, Compiled, KernelExercise, display_path


def run_on_gpu(exercise: KernelExercise, path: Path, *, timeout: float = GPU_TIMEOUT_S, seed: int = 0,
               compiled: Compiled | None = None) -> str:
    """Run the learner's kernel through the rung's launcher in a child process; a Failure on
    a compile, launch or verification problem, a timeout (hang) or a crash (illegal address).
    With ``compiled`` (the CPU part's), the child runs for its target, and every kernel the launcher
    launched must be one the CPU part compiled, for the same architecture (else :class:`Unchecked`)."""
    shown = display_path(path)
    with tempfile.TemporaryDirectory(prefix="hgemm-course-gpu-run-", ignore_cleanup_errors=True) as folder:
        command = [sys.executable, "-P", "-m", "hgemm_course.check.gpu_run", exercise.rung, str(Path(path).resolve()),
                   "--seed", str(seed), "--out", folder,
                   "--shapes", *(f"{m}x{n}x{k}" for m, n, k in exercise.gpu_shapes)]
        if compiled is not None and compiled.target.run_from_ptx:
            command += ["--as", compiled.target.arch]
        finished = sandbox.run(command, timeout=timeout, cwd=folder, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
                               limits=sandbox.Limits(cpu_s=math.ceil(timeout) + 10),   # no RLIMIT_AS: CUDA maps much
                               stdout_cap=OUTPUT_CAP_BYTES, stderr_cap=OUTPUT_CAP_BYTES)
        if finished.timed_out:
            raise Failure(f"{shown}: the kernel did not finish within {timeout:.0f} s: it hangs. A wait on an mbarrier "
                          "phase that never completes spins forever; check which phase each wait asks for.",
                          {"input": shown, "expected": "the kernel finishes", "got": "timeout (hang)"})
        report = Path(folder) / "results.jsonl"
        size = report.stat().st_size if report.is_file() else 0
        results = gpu_results(report.read_text(), shown) if 0 < size <= MAX_REPORT_BYTES else []
        for result in results:
            if "error" in result:
                raise Failure(f"{shown}: {result['error']}", {"input": result["shape"], "expected": None,
                                                              "got": result["error"].splitlines()[0]})
            _compare_c(Path(folder) / result["c"], result, exercise.rung, shown)
    if finished.returncode != 0 or len(results) != len(exercise.gpu_shapes):
        tail = "\n".join((finished.stderr.text() or finished.stdout.text()).strip().splitlines()[-6:])
        raise Failure(f"{shown}: the GPU run stopped (exit status {finished.returncode}):\n{tail}",
                      {"input": shown, "expected": "a clean run", "got": f"exit status {finished.returncode}"})
    if compiled is not None:
        same_kernels(compiled, results)
    shapes = ", ".join("x".join(map(str, r["shape"])) for r in results)
    return f"on this GPU: right on {shapes} (random inputs, tails in M, N and K)"


def _compare_c(path: Path, result: dict, rung: str, shown: str) -> None:
    """C from the GPU run against this process's own reference, A @ B in FP32 of the same inputs."""
    import numpy as np

    from ..measurement.verification import compare, random_inputs

    M, N, K = result["shape"]
    try:
        if path.stat().st_size > M * N * 2 + 4096:
            raise ValueError(f"{path.stat().st_size} bytes")
        c = np.load(path, allow_pickle=False)
        if c.shape != (M, N) or c.dtype != np.float16:
            raise ValueError(f"a {c.dtype} array of shape {c.shape}")
    except (OSError, ValueError) as exc:
        raise Failure(f"{shown}: the GPU run's C for {M}x{N}x{K} cannot be read as a ({M}, {N}) float16 array: {exc}",
                      {"input": {"M": M, "N": N, "K": K}, "expected": "C", "got": str(exc)}) from None
    a, b, _ = random_inputs(M, N, K, seed=result["seed"])
    verdict = compare(c, a.astype(np.float32) @ b.astype(np.float32), K=K, rung=rung, seed=result["seed"])
    if not verdict.passed:
        bad = verdict.first_bad or {}
        where = (f"first wrong element C[{bad['row']}, {bad['col']}]: expected {bad['expected']:.5g}, "
                 f"got {bad['got']:.5g}" if bad else "the errors are too large")
        raise Failure(f"{shown}: wrong result on {M}x{N}x{K} (seed {result['seed']}): {where}.\n  {verdict.summary()}",
                      {"input": {"M": M, "N": N, "K": K, **({k: bad[k] for k in ('row', 'col')} if bad else {})},
                       "expected": bad.get("expected"), "got": bad.get("got")})


def gpu_results(text: str, shown: str) -> list[dict]:
    """The GPU run's report, one JSON object a line (:mod:`.gpu_run`), each checked against its format: a
    Failure that shows the first line out of it."""
    out = []
    for line in text.splitlines():
        try:
            result = json.loads(line)
            shape = result["shape"]
            assert isinstance(shape, list) and len(shape) == 3 and all(type(v) is int and v > 0 for v in shape)
            if "error" in result:
                assert set(result) == {"shape", "error"} and type(result["error"]) is str
            else:
                assert set(result) == {"shape", "seed", "c", "kernels"} and type(result["seed"]) is int
                assert result["c"] == f"c{len(out)}.npy"
                assert isinstance(result["kernels"], list) and all(
                    isinstance(k, dict) and set(k) == {"name_expression", "arch"} for k in result["kernels"])
        except (ValueError, KeyError, TypeError, AssertionError):
            raise Failure(f"{shown}: the GPU run's report is not in its format: {line[:200]!r}",
                          {"input": shown, "expected": "the GPU run's report", "got": line[:200]}) from None
        out.append(result)
    return out


def same_kernels(compiled: Compiled, results: list[dict]) -> None:
    """Every kernel the GPU run launched is one the CPU part compiled and checked, for the same architecture:
    else the two parts checked different code, and :class:`Unchecked` says so."""
    for result in results:
        for launched in result.get("kernels", []):
            if launched["name_expression"] not in compiled.name_expressions or launched["arch"] != compiled.arch:
                raise Unchecked(f"the GPU run launched {launched['name_expression']} for {launched['arch']}, not "
                                f"what the CPU part checked ({compiled.name_expressions[0]} for {compiled.arch}, sized "
                                f"for {compiled.target.describe()}); the two parts must check one kernel")
