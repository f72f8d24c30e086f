"""Checker for ex02_outer_product: rung 02's register-blocked outer products over one k-slice, as a Numba CUDA
device function.

The learner's function runs in the check's child inside a one-block kernel of the course's (:mod:`.outer_product_run`)
under the Numba CUDA simulator, on random tiles and a random starting acc for every thread; every element of every
thread's acc is compared here with the reference. A wrong element is explained from a trace of what that thread did:
which acc element took which products, of which a_tile and b_tile elements at which kk, against the rows and columns
the thread owns. Then the kernel is compiled by Numba's CUDA compiler for the target, in a process of its own: its PTX
must keep acc and the frags in registers (no local memory); where a GPU here runs it, its acc is compared too.
"""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from . import sandbox
from .feedback import MEMORY_LIMIT_GIB, OUTPUT_CAP_BYTES, Exercise, Failure, Learner, explained, passed_message

FUNCTION = "outer_products"
SEEDS = (0, 1)                 # random slices checked under the simulator
RTOL, ATOL = 1e-5, 1e-5        # float32 sums of 17 terms of size ~1, in any order
COMPILE_TIMEOUT_S = 60
LOCAL_MEMORY = (".local", "ld.local", "st.local")


def geometry() -> dict[str, int]:
    """Rung 02's tile constants (the kernel module imports Numba's CUDA target, so the check imports it before any
    learner code runs: EXERCISE.imports)."""
    from ..library.ladder import k02_tiled as k

    return {"BM": k.BM, "BN": k.BN, "BK": k.BK, "TM": k.TM, "TN": k.TN, "THREADS_X": k.THREADS_X,
            "THREADS_Y": k.THREADS_Y}


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a_tile (BM, BK), b_tile (BK, BN), every thread's starting acc (THREADS_Y, THREADS_X, TM, TN)), float32, uniform
    in (-1, 1): no zeros, so a product left out or added twice shows."""
    g = geometry()
    rng = np.random.default_rng(20_002 + seed)
    a = rng.uniform(-1, 1, (g["BM"], g["BK"])).astype(np.float32)
    b = rng.uniform(-1, 1, (g["BK"], g["BN"])).astype(np.float32)
    acc0 = rng.uniform(-1, 1, (g["THREADS_Y"], g["THREADS_X"], g["TM"], g["TN"])).astype(np.float32)
    return a, b, acc0


def reference(seed: int) -> np.ndarray:
    """Every thread's acc after the slice: its starting value plus, for each of its rows and columns, the sum over
    kk of a_tile[row, kk] * b_tile[kk, col] (float64)."""
    g = geometry()
    a, b, acc0 = inputs(seed)
    product = a.astype(np.float64) @ b.astype(np.float64)         # (BM, BN): every row of a_tile by every column
    out = acc0.astype(np.float64)
    for ty in range(g["THREADS_Y"]):
        for tx in range(g["THREADS_X"]):
            out[ty, tx] += product[ty::g["THREADS_Y"], tx::g["THREADS_X"]]
    return out


def owned(ty: int, tx: int) -> tuple[list[int], list[int]]:
    """The rows and the columns of the tiles thread (ty, tx) owns, in the order of acc's indices."""
    g = geometry()
    return ([ty + g["THREADS_Y"] * i for i in range(g["TM"])], [tx + g["THREADS_X"] * j for j in range(g["TN"])])


def verify(learner: Learner) -> str:
    g = geometry()
    cases = 0
    for seed in SEEDS:
        got = _acc(learner(run="kernel", seed=seed), f"{FUNCTION}, k-slice {seed}", g)
        _compare(learner, seed, got, "under the simulator")
        cases += got.size
    compiled = _compiled(learner)
    notes = [f"compiles for {compiled['arch']} with acc, a_frag and b_frag in registers (no local memory); its PTX has "
             f"{compiled['shared_loads']} ld.shared and {compiled['fmas']} fma.rn.f32"]
    if compiled["acc"] is not None:
        _compare(learner, SEEDS[0], _acc(compiled["acc"], f"{FUNCTION} on the GPU", g), f"on {compiled['ran_on']}")
        notes.append(f"on {compiled['ran_on']}: every thread's acc right")
    else:
        notes.append(f"not run on a GPU: {compiled['not_run']}")
    return passed_message(cases, f"every thread of the {g['THREADS_Y']}x{g['THREADS_X']} block adds the outer products "
                          "of its rows and columns over the whole k-slice to its acc, under the simulator",
                          "\n".join(notes))


def _acc(got, what: str, g: dict) -> np.ndarray:
    shape = (g["THREADS_Y"], g["THREADS_X"], g["TM"], g["TN"])
    array = np.asarray(got, dtype=np.float64) if isinstance(got, (np.ndarray, list)) else None
    if array is None or array.shape != shape:
        raise Failure(f"The run of {what} gave back {got!r:.200}, not every thread's acc {shape}: does your function "
                      "change acc's shape, or return something the kernel does not expect?",
                      {"input": what, "expected": f"acc of shape {shape}", "got": repr(got)[:200]})
    return array


def _compare(learner: Learner, seed: int, got: np.ndarray, where: str) -> None:
    """The first wrong acc element (thread by thread in order, then i, j), explained from that thread's trace."""
    expected = reference(seed)
    wrong = ~np.isclose(got, expected, rtol=RTOL, atol=ATOL)
    if not wrong.any():
        return
    ty, tx, i, j = (int(v) for v in np.argwhere(wrong)[0])
    _, _, acc0 = inputs(seed)
    count = int(wrong.sum())
    message = (f"acc[{i}, {j}] of thread (ty={ty}, tx={tx}), k-slice {seed}, {where}: expected {expected[ty, tx, i, j]:.6f} "
               f"(its starting value {acc0[ty, tx, i, j]:.6f} plus the slice's products), got {got[ty, tx, i, j]:.6f}; "
               f"{count} of the block's {got.size} acc elements are wrong.\n")
    message += explained(lambda: explain(learner(run="trace", seed=seed, ty=ty, tx=tx), ty, tx, i, j))
    raise Failure(message, {"input": {"seed": seed, "ty": ty, "tx": tx, "i": i, "j": j},
                            "expected": float(expected[ty, tx, i, j]), "got": float(got[ty, tx, i, j])})


# ---------------------------------------------------------------------------------- what the trace shows

def explain(trace, ty: int, tx: int, i: int, j: int) -> str:
    """What thread (ty, tx) put into acc[i, j], from its trace (:func:`.outer_product_run._trace`), against what the
    ownership rule asks: one sentence on the first thing that differs, never the loop that would be right."""
    if not isinstance(trace, dict) or not isinstance(trace.get("acc"), list):
        why = trace.get("why") if isinstance(trace, dict) else None
        return "(The trace of what your function did is not available" + (f": {why:.200})." if why else ".)")
    try:
        terms = [tuple(tuple(factor) for factor in term) for term in trace["acc"][i][j]]
        wrote = [tuple(w) for w in trace.get("wrote") or []]
    except (TypeError, IndexError, KeyError):
        return "(The trace of what your function did came back out of its format.)"
    g = geometry()
    rows, cols = owned(ty, tx)
    me, element = f"thread (ty={ty}, tx={tx})", f"acc[{i}, {j}]"
    if wrote:
        tile, *index = wrote[0]
        return (f"Your function writes {tile}[{', '.join(map(str, index))}]: the tiles in shared memory belong to the "
                "whole block, and every thread reads them; write only this thread's acc and frags.")
    unloaded = [f for term in terms for f in term if f[0] in ("a_frag", "b_frag")]
    if unloaded:
        frag = unloaded[0]
        return (f"{element} of {me} took {frag[0]}[{frag[1]}] before any value was stored into it (the kernel leaves "
                "the frags unset: NaN): load a frag element from the tile before using it.")
    start = [t for t in terms if t == (("acc", i, j),)]
    odd = [t for t in terms if t not in start and not _is_product(t)]
    products = [t for t in terms if _is_product(t)]
    if odd:
        return (f"{element} of {me} holds {_show(odd[0])}, which is not a product of one a_tile value and one b_tile "
                f"value, nor acc's starting value: acc[i, j] is that starting value plus, for each kk, the product of "
                f"a value of the thread's row i and one of its column j.")
    if len(start) != 1:
        last = sorted({_kk(p) for p in products})
        kept = f"only the product{'s' * (len(last) != 1)} for kk = {_ranges(last)}" if products else "no product"
        if not start:
            return (f"{element} of {me} no longer holds its starting value (the sum of the k-slices before this one) and "
                    f"holds {kept}: each product must be added to what acc holds, and a value stored into acc "
                    "replaces it.")
        return f"{element} of {me} holds its starting value {len(start)} times, not once."
    if not products:
        return f"{element} of {me} holds only its starting value: no product was added to it."
    for p in products:
        a, b = _factor(p, "a_tile"), _factor(p, "b_tile")
        if a[2] != b[1]:
            columns = {_factor(q, "a_tile")[2] for q in products}
            if len(columns) == 1 and len({_factor(q, "b_tile")[1] for q in products}) > 1:
                return (f"Every product in {element} of {me} takes its a_tile value from column {a[2]}, whatever its "
                        f"b_tile value's row kk: a value of a_frag must come from column kk of a_tile for each kk.")
            brows = {_factor(q, "b_tile")[1] for q in products}
            if len(brows) == 1 and len(columns) > 1:
                return (f"Every product in {element} of {me} takes its b_tile value from row {b[1]}, whatever its "
                        f"a_tile value's column kk: a value of b_frag must come from row kk of b_tile for each kk.")
            return (f"A product in {element} of {me} multiplies a_tile[{a[1]}, {a[2]}] by b_tile[{b[1]}, {b[2]}]: "
                    "both factors of a product come from the same kk (column kk of a_tile, row kk of b_tile).")
    for p in products:
        row, col = _factor(p, "a_tile")[1], _factor(p, "b_tile")[2]
        if row not in rows:
            return (f"{element} of {me} takes a_tile values from row {row}, which this thread does not own: it owns rows "
                    f"{', '.join(map(str, rows))} (the ownership rule).")
        if col not in cols:
            return (f"{element} of {me} takes b_tile values from column {col}, which this thread does not own: it owns "
                    f"columns {', '.join(map(str, cols))} (the ownership rule).")
        if row != rows[i]:
            return (f"{element} of {me} takes a_tile values from row {row}: one of this thread's rows, but not the one "
                    f"the ownership rule pairs with i = {i}.")
        if col != cols[j]:
            return (f"{element} of {me} takes b_tile values from column {col}: one of this thread's columns, but not the "
                    f"one the ownership rule pairs with j = {j}.")
    kks = Counter(_kk(p) for p in products)
    twice = sorted(k for k, n in kks.items() if n > 1)
    if twice:
        return f"{element} of {me} adds the product for kk = {_ranges(twice)} more than once."
    missing = sorted(set(range(g["BK"])) - set(kks))
    if missing:
        return (f"{element} of {me} has no product for kk = {_ranges(missing)}: the k-slice is BK = {g['BK']} wide, "
                f"kk = 0 to {g['BK'] - 1}.")
    return (f"The trace of {element} of {me} shows the right products and its starting value, yet the value differs: "
            "does your function compute something besides them (a cast, a scale)?")


def _is_product(term: tuple) -> bool:
    names = sorted(f[0] for f in term)
    return names == ["a_tile", "b_tile"] and all(len(f) == 3 for f in term)


def _factor(term: tuple, name: str) -> tuple:
    return next(f for f in term if f[0] == name)


def _kk(term: tuple) -> int:
    return _factor(term, "a_tile")[2]


def _show(term: tuple) -> str:
    def one(f):
        if f[0] in ("const", "neg"):
            return {"const": "a constant", "neg": "-1"}[f[0]]
        return f"{f[0]}[{', '.join(map(str, f[1:]))}]" if f[0] != "acc" else f"the starting value of acc[{f[1]}, {f[2]}]"
    return " * ".join(one(f) for f in term)


def _ranges(values: list[int]) -> str:
    """``0-7, 9`` for [0, 1, ..., 7, 9]."""
    out, start = [], None
    for k, v in enumerate(values):
        if start is None:
            start = v
        if k + 1 == len(values) or values[k + 1] != v + 1:
            out.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ", ".join(out)


# ------------------------------------------------------------------------------ compiled by Numba, on a GPU

def _compiled(learner: Learner) -> dict:
    """The kernel around the learner's function compiled by Numba's CUDA compiler for the target (and run where a GPU
    here runs it), in a process of its own: ``{"arch", "shared_loads", "fmas", "acc", "ran_on", "not_run"}``; a Failure
    when it does not compile or its PTX keeps acc or a frag in local memory."""
    from ..library import device, target

    arch = target.current().arch
    gpu = not device.cudasim_enabled()
    timeout = min(COMPILE_TIMEOUT_S, learner.timeout or COMPILE_TIMEOUT_S)
    with tempfile.TemporaryDirectory(prefix="hgemm-course-outer-product-", ignore_cleanup_errors=True) as folder:
        out = Path(folder) / "answer.json"
        request = json.dumps({"path": str(learner.source), "function": FUNCTION, "seed": SEEDS[0], "arch": arch,
                              "gpu": gpu})
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
        finished = sandbox.run([sys.executable, "-P", "-m", "hgemm_course.check.outer_product_run", request, str(out)],
                               timeout=timeout, cwd=folder, env=dict(env, PYTHONDONTWRITEBYTECODE="1"),
                               limits=sandbox.Limits(cpu_s=math.ceil(timeout) + 5,     # no RLIMIT_AS with a GPU:
                                                     memory_bytes=None if gpu else MEMORY_LIMIT_GIB << 30),  # CUDA maps much
                               stdout_cap=OUTPUT_CAP_BYTES, stderr_cap=OUTPUT_CAP_BYTES)
        if finished.timed_out:
            raise Failure(f"Compiling {FUNCTION} for {arch} (and running it where a GPU is here) took more than "
                          f"{timeout:g} s: does your file or your function loop without end outside the simulator?",
                          {"input": arch, "expected": "a compiled kernel", "got": f"no end after {timeout:g} s"})
        size = out.stat().st_size if out.is_file() else 0
        answer = json.loads(out.read_text()) if finished.returncode == 0 and 0 < size <= 64 << 20 else None
    if not isinstance(answer, dict):
        tail = "\n".join(finished.stderr.text().strip().splitlines()[-4:])
        raise Failure(f"Compiling {FUNCTION} for {arch} stopped (exit status {finished.returncode}) before giving an "
                      f"answer.\n{tail}".rstrip(), {"input": arch, "expected": "a compiled kernel",
                                                    "got": f"exit status {finished.returncode}"})
    if "import_failed" in answer or "compile_error" in answer:
        text = str(answer.get("import_failed") or answer.get("compile_error"))
        lines = [line for line in text.splitlines() if line.strip()][:8]
        raise Failure(f"Your function runs under the simulator, but Numba's CUDA compiler cannot compile it for {arch}:\n"
                      + "\n".join("  " + line for line in lines)
                      + "\nThe simulator runs Python; the GPU needs what Numba can type: numbers, the arrays given, "
                        "loops over range().", {"input": arch, "expected": "a compiled kernel", "got": lines[:1]})
    return _read_ptx(answer, arch)


def _read_ptx(answer: dict, arch: str) -> dict:
    ptx = answer.get("ptx")
    if not isinstance(ptx, str):
        raise Failure(f"Compiling {FUNCTION} for {arch} gave back no PTX.", {"input": arch, "expected": "PTX", "got": None})
    local = [" ".join(line.split()) for line in ptx.splitlines() if any(word in line for word in LOCAL_MEMORY)]
    if local:
        raise Failure(f"Compiled for {arch}, the kernel keeps acc or a frag in local memory (its PTX has "
                      f"{len(local)} lines like `{local[0]}`): the compiler keeps a small array in registers only when it "
                      "knows every index into it when it compiles, as it knows the counter of a loop over range(TM) or "
                      "range(TN), which it unrolls; local memory is off the chip, as slow as global memory on a miss.",
                      {"input": arch, "expected": "no local memory", "got": local[:3]})
    body = ptx.split(".entry", 1)[-1]
    return {"arch": arch, "shared_loads": body.count("ld.shared"), "fmas": body.count("fma.rn.f32"),
            "acc": answer.get("acc"), "ran_on": answer.get("ran_on"), "not_run": answer.get("not_run")}


EXERCISE = Exercise(
    name="ex02_outer_product",
    function=FUNCTION,
    description="Tiled kernel: the register-blocked outer products of one k-slice, as a Numba CUDA device function.",
    verify=verify,
    runner="hgemm_course.check.outer_product_run:run",
    imports=("hgemm_course.library.ladder.k02_tiled", "hgemm_course.library.target", "hgemm_course.library.device"),
)
