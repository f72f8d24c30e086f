"""hgemm-course: write an FP16 GEMM for NVIDIA GPUs, one idea at a time, measured against cuBLAS.

>>> import hgemm_course
>>> [r["rung"] for r in hgemm_course.rungs()][:2]
['01', '02']
>>> c = hgemm_course.gemm(a, b)                  # doctest: +SKIP  (fp16 row-major in, fp16 out; the top rung here)
>>> hgemm_course.gemm(a, b, rung="05", out=c)     # doctest: +SKIP  (into a preallocated C)
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hgemm-course")       # one source: pyproject.toml, through the installed metadata
except PackageNotFoundError:                    # imported from a checkout that was never installed
    __version__ = "0+unknown"


from .library.errors import NoGPUError  # noqa: E402  (the package's exception, raised by api.py and verification.py)


def rungs() -> list[dict]:
    """The ladder: id, chapter, title, idea and what each rung needs (GPU arch, CUDASIM or not)."""
    from .library.ladder import registry

    return [r.as_dict() for r in registry().values()]


from .library.api import gemm  # noqa: E402

__all__ = ["NoGPUError", "__version__", "gemm", "rungs"]
