"""The ladder: one registry of rungs that the CLI, bench, plots, README table and tests all read.

Each rung lives in its own module ``rNN_<slug>.py`` in this folder and defines ``RUNG``.
Nothing else lists the rungs: :func:`registry` finds the modules by name.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from ..paths import KERNELS_DIR
from ..target import FEATURES, Target, lowest_arch

_MODULE_NAME = re.compile(r"^r(\d\d[a-z]?)_(\w+)$")


@dataclass(frozen=True)
class Rung:
    """One rung of the ladder: a kernel, what it teaches and what it needs."""

    id: str                      # "01" .. "11" (or "10a")
    slug: str                    # "naive", "wmma", ...
    title: str                   # one line for tables
    idea: str                    # the one new idea of its chapter
    backend: str                 # "numba" (Numba CUDA, Python source) or "nvrtc" (a .cu under kernels/)
    launch: Callable[[Any, Any, Any], Any]    # launch(a (M,K), b (K,N), c (M,N)) on device arrays; an NVRTC
                                              # rung's returns the launch again as a call of no arguments
    source: str | None = None    # kernel file: kernels/kNN_<slug>.cu, or ladder/kNN_<slug>.py for Numba rungs
    name_expressions: tuple[str, ...] = ()    # template instantiations of the recorded H200 runs
    needs: tuple[str, ...] = ()  # target features its kernel uses (target.FEATURES); () for the Numba rungs
    instantiations: Callable[[Target], tuple] | None = None   # target -> its TemplateKernels sized for it
    cudasim: bool = False        # runs under NUMBA_ENABLE_CUDASIM=1 on tiny sizes
    multiple_m: int = 1          # M must be a multiple of this
    multiple_n: int = 1
    multiple_k: int = 1
    max_bench_size: int | None = None    # bench caps benchmarks of slow rungs
    extra: dict = field(default_factory=dict)  # rung-specific facts for reports (tile shape, smem bytes)

    @property
    def chapter(self) -> str:
        return f"chapters/{self.id[:2]}_{self.slug}.ipynb"

    @property
    def kernel_path(self) -> Path | None:
        """The kernel's source: a .cu under kernels/, or the Numba module beside this file."""
        if not self.source:
            return None
        return (Path(__file__).parent if self.source.endswith(".py") else KERNELS_DIR) / self.source

    @property
    def arch(self) -> str:
        """The oldest architecture that runs it ("any" for the Numba rungs): the PTX a newer GPU JIT-compiles."""
        return lowest_arch(self.needs) if self.needs else "any"

    @property
    def needs_gpu(self) -> str:
        if not self.needs:
            return "any CUDA GPU"
        return ", ".join(FEATURES[n][1] for n in self.needs)

    def kernels(self, target: Target) -> tuple:
        """Its kernels sized and built for ``target`` (TemplateKernels; () for the Numba rungs). Raises
        ValueError with the refusal where the target lacks a feature or nothing of its sweep fits."""
        if (why := self.refusal(target)) is not None:
            raise ValueError(why)
        return self.instantiations(target) if self.instantiations else ()

    def refusal(self, target: Target) -> str | None:
        """None where ``target`` runs this rung; else one line that says why not."""
        what = f"rung {self.id} ({self.slug})"
        if (why := target.refusal(what, self.needs)) is not None:
            return why
        if self.instantiations is not None:
            try:
                self.instantiations(target)
            except ValueError as exc:
                return f"{what} does not fit {target.label()}: {exc}"
        return None

    def check_shape(self, M: int, N: int, K: int) -> None:
        """Refuse a size this rung cannot do, naming the multiple it needs."""
        for dim, value, multiple in (("M", M, self.multiple_m), ("N", N, self.multiple_n), ("K", K, self.multiple_k)):
            if value < 1:
                raise ValueError(f"{dim}={value}: every dimension must be at least 1.")
            if value % multiple:
                raise ValueError(
                    f"{dim}={value} is not a multiple of {multiple}: rung {self.id} ({self.slug}) needs "
                    f"{dim} % {multiple} == 0. Pad the matrix to {dim}={-(-value // multiple) * multiple}."
                )

    def padded_shape(self, M: int, N: int, K: int) -> tuple[int, int, int]:
        """(M, N, K) each rounded up to the multiple this rung needs: the shape gemm() pads a product to when no
        rung is named and the product's own shape is off those multiples."""
        return tuple(-(-value // multiple) * multiple
                     for value, multiple in ((M, self.multiple_m), (N, self.multiple_n), (K, self.multiple_k)))

    def as_dict(self) -> dict:
        return {
            "rung": self.id, "slug": self.slug, "title": self.title, "idea": self.idea,
            "backend": self.backend, "chapter": self.chapter, "source": self.source,
            "arch": self.arch, "needs": self.needs_gpu, "features": list(self.needs), "cudasim": self.cudasim,
            "multiples": {"M": self.multiple_m, "N": self.multiple_n, "K": self.multiple_k},
        }


@lru_cache(maxsize=1)
def registry() -> dict[str, Rung]:
    """All rungs by id, in ladder order, found from the ``rNN_<slug>.py`` modules here."""
    found = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        m = _MODULE_NAME.match(info.name)
        if not m:
            continue
        rung = importlib.import_module(f"{__name__}.{info.name}").RUNG
        if rung.id != m.group(1) or rung.slug != m.group(2):
            raise RuntimeError(f"{info.name}.py defines rung {rung.id}_{rung.slug}; the module name and RUNG must agree.")
        found[rung.id] = rung
    return dict(sorted(found.items()))


def get(rung_id: str | int) -> Rung:
    """A rung by id: ``"03"``, ``3`` or ``"03_wmma"`` all work."""
    key = str(rung_id)
    key = key.split("_")[0]
    if key.isdigit():
        key = f"{int(key):02d}"
    rungs = registry()
    if key not in rungs:
        raise ValueError(f"No rung {rung_id!r}. The ladder has: {', '.join(rungs)}.")
    return rungs[key]


def numba_stream(array):
    """The stream a Numba rung launches on: CuPy's current stream for a CuPy array, so that CuPy work
    on the same arrays before and after stays in order; the default stream (0) otherwise."""
    if not type(array).__module__.startswith("cupy"):
        return 0
    import cupy
    from numba import cuda

    ptr = cupy.cuda.get_current_stream().ptr
    return cuda.external_stream(ptr) if ptr else 0

