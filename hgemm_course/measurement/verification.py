"""Verify before timing: fresh random fp16 inputs on every call (never zeros), C poisoned with NaN before the launch,
and the result compared with an FP32 reference by relative error, counting the elements the kernel left unwritten.
A rung that computes the wrong thing raises :class:`VerificationError` naming the first wrong element; a rung this GPU
cannot run raises :class:`NotForThisGPU` before anything launches."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..library import device, target
from ..library.errors import NoGPUError
from ..library.ladder import Rung, get

# fp16 output rounding alone gives a relative error near 2^-11 / sqrt(3) = 2.8e-4;
# FP32 accumulation in another order adds far less. Anything past these is a bug.
REL_FRO_TOL = 1e-3
MAX_ERR_TOL = 4e-3   # max |C - ref| over max |ref|

class VerificationError(AssertionError):
    """A rung computed the wrong thing. The message names the first wrong element."""


class NotForThisGPU(NoGPUError):
    """This machine's GPU (or the ``--as`` target) cannot run the rung; the message says why, in one line."""


SHOWN_INSTEAD = "; its recorded H200 figures are shown instead"


def why_not_here(rung: Rung) -> str | None:
    """Why the GPU here (or the target run here with ``--as``) cannot run ``rung``, in one line; None where it
    can, and where there is no GPU (the callers that need one say so themselves)."""
    here = target.runnable()
    return None if here is None else rung.refusal(here)


def refusal_here(rung: Rung) -> str | None:
    """:func:`why_not_here`'s line, saying that the recorded H200 figures are shown instead."""
    why = why_not_here(rung)
    return None if why is None else why + SHOWN_INSTEAD


def require_runs_here(rung: Rung) -> None:
    """Raise :class:`NotForThisGPU` with :func:`refusal_here`'s line where the rung cannot run here."""
    if (why := refusal_here(rung)) is not None:
        raise NotForThisGPU(why)


@dataclass
class VerifyResult:
    rung: str
    M: int
    N: int
    K: int
    seed: int
    rel_fro_err: float
    max_err: float
    nonfinite: int                  # NaN (unwritten: C was poisoned) or inf elements
    first_bad: dict | None = None   # {"row", "col", "expected", "got"}
    backend: str = "gpu"

    @property
    def passed(self) -> bool:
        return self.nonfinite == 0 and self.rel_fro_err <= REL_FRO_TOL and self.max_err <= MAX_ERR_TOL

    def summary(self) -> str:
        verdict = "ok" if self.passed else "FAILED"
        text = (f"rung {self.rung} {self.M}x{self.N}x{self.K}: {verdict}  rel. error {self.rel_fro_err:.2e}, "
                f"max error {self.max_err:.2e}, unwritten/non-finite {self.nonfinite}")
        if not self.passed and self.first_bad:
            b = self.first_bad
            text += f"; first wrong element C[{b['row']}, {b['col']}] expected {b['expected']:.5g} got {b['got']:.5g}"
        return text

    def raise_if_failed(self) -> "VerifyResult":
        if not self.passed:
            raise VerificationError(self.summary() + f" (reproduce with seed={self.seed})")
        return self


def random_inputs(M: int, N: int, K: int, *, seed: int | None = None, xp=np):
    """Uniform(-1, 1) fp16 A (M,K) and B (K,N); returns (a, b, seed)."""
    seed = int(np.random.SeedSequence(seed).generate_state(1)[0]) if seed is None else seed
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    return xp.asarray(a), xp.asarray(b), seed


def compare(c, reference, *, K: int, rung: str = "?", seed: int = -1, backend: str = "gpu") -> VerifyResult:
    """Compare an fp16 result with an FP32 reference (NumPy or CuPy arrays)."""
    c32 = np.asarray(_to_host(c), dtype=np.float32)
    ref = np.asarray(_to_host(reference), dtype=np.float32)
    M, N = ref.shape
    bad_mask = ~np.isfinite(c32)
    nonfinite = int(bad_mask.sum())
    diff = np.where(bad_mask, np.inf, np.abs(c32 - ref))
    ref_norm = float(np.linalg.norm(ref)) or 1.0
    rel_fro = float(np.linalg.norm(np.where(bad_mask, 0.0, c32 - ref)) / ref_norm) if nonfinite == 0 else math.inf
    ref_max = float(np.abs(ref).max()) or 1.0
    max_err = float(diff.max()) / ref_max
    first_bad = None
    wrong = bad_mask | (diff > MAX_ERR_TOL * ref_max)
    if wrong.any():
        row, col = map(int, np.argwhere(wrong)[0])
        first_bad = {"row": row, "col": col, "expected": float(ref[row, col]), "got": float(c32[row, col])}
    return VerifyResult(rung, M, N, K, seed, rel_fro, max_err, nonfinite, first_bad, backend)


def _to_host(x):
    return x.get() if hasattr(x, "get") else x


def _use_simulator(rung: Rung) -> bool:
    if device.cudasim_enabled():
        if not rung.cudasim:
            raise RuntimeError(
                f"Rung {rung.id} ({rung.slug}) does not run under the Numba CUDA simulator "
                "(NUMBA_ENABLE_CUDASIM=1): only the Numba rungs 01-02 do. Unset the variable on a GPU machine."
            )
        return True
    return False


def run_rung(rung: Rung, a, b):
    """C = A @ B on the rung's device; C is poisoned with NaN first so unwritten elements show."""
    if _use_simulator(rung):
        xp = np
    else:
        import cupy as xp
    c = xp.full((a.shape[0], b.shape[1]), xp.nan, dtype=xp.float16)
    rung.launch(a, b, c)
    return c


def verify(rung: Rung | str, M: int, N: int, K: int, *, seed: int | None = None) -> VerifyResult:
    """Run a rung once on fresh random inputs and compare with an FP32 reference."""
    rung = get(rung) if not isinstance(rung, Rung) else rung
    rung.check_shape(M, N, K)
    simulated = _use_simulator(rung)
    if simulated:
        xp = np
    else:
        device.require_gpu(f"Verifying rung {rung.id}")
        require_runs_here(rung)
        import cupy as xp
    a, b, seed = random_inputs(M, N, K, seed=seed, xp=xp)
    c = run_rung(rung, a, b)
    reference = xp.matmul(a.astype(xp.float32), b.astype(xp.float32))
    return compare(c, reference, K=K, rung=rung.id, seed=seed, backend="cudasim" if simulated else "gpu")

