"""Compile CUDA sources with NVRTC, on a machine with or without a GPU.

One path for both: NVRTC (``cuda.bindings.nvrtc``) turns a kernel source that
``#include``s headers from ``ptx_snippets/`` into PTX and an sm_90a cubin, and
ptxas's verbose report (asked for with ``-Xptxas=-v``) becomes a
:class:`KernelResources` per kernel. On a GPU the cubin is loaded through CuPy
(``cupy.RawModule``), so CuPy never compiles anything itself and a compile error
is always our message: the compiler's own text, with the file and line.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .paths import KERNELS_DIR, PTX_SNIPPETS_DIR

DEFAULT_ARCH = "sm_90a"


class CompileError(RuntimeError):
    """NVRTC refused the source. The message is the compiler's log."""

    def __init__(self, source_name: str, log: str):
        self.source_name = source_name
        self.log = log
        self.errors = parse_diagnostics(log)
        first = self.errors[0] if self.errors else None
        where = f"{first['file']}:{first['line']}: {first['message']}" if first else "see the log"
        super().__init__(f"{source_name} does not compile ({where})\n{log.strip()}")


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel: the numbers that decide occupancy."""

    name: str
    registers: int
    smem_static: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    barriers: int = 0

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass
class CompiledModule:
    """PTX, cubin and resource report of one compiled source."""

    source_name: str
    arch: str
    ptx: str
    cubin: bytes
    log: str
    lowered: dict[str, str] = field(default_factory=dict)
    resources: dict[str, KernelResources] = field(default_factory=dict)

    def resources_of(self, name_expression: str) -> KernelResources:
        """The report of one kernel, by its name expression (``k03_wmma<128,128,32>``) or mangled name."""
        mangled = self.lowered.get(name_expression, name_expression)
        try:
            return self.resources[mangled]
        except KeyError:
            raise KeyError(
                f"{name_expression!r} is not a kernel of {self.source_name}; it has "
                + ", ".join(self.lowered or self.resources)
            ) from None

    def function(self, name_expression: str):
        """The kernel as a ``cupy.RawKernel`` (needs a GPU)."""
        return _load_cubin(self.cubin, self.digest()).get_function(
            self.lowered.get(name_expression, name_expression)
        )

    def digest(self) -> str:
        return hashlib.sha256(self.cubin).hexdigest()[:20]


_DIAG = re.compile(r"^(?P<file>[^\s()]+)\((?P<line>\d+)\): (?P<kind>error|catastrophic error|warning)[^:]*: (?P<message>.*)$")
_PTXAS_FUNC = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")


def parse_diagnostics(log: str) -> list[dict]:
    """Errors first, then warnings: ``{'file', 'line', 'kind', 'message'}`` per diagnostic."""
    out = []
    for raw in log.splitlines():
        m = _DIAG.match(raw.strip())
        if m:
            out.append({"file": m["file"], "line": int(m["line"]), "kind": m["kind"], "message": m["message"]})
    return sorted(out, key=lambda d: d["kind"] == "warning")


def parse_ptxas_report(log: str) -> dict[str, KernelResources]:
    """Turn ptxas's ``-v`` lines into one :class:`KernelResources` per mangled kernel name."""
    found: dict[str, dict] = {}
    current = None
    for line in log.splitlines():
        if m := _PTXAS_FUNC.search(line):
            current = m.group(1)
            found[current] = {"name": current, "registers": 0, "smem_static": 0, "stack_frame": 0,
                              "spill_stores": 0, "spill_loads": 0, "barriers": 0}
        elif current and (m := _PTXAS_FRAME.search(line)):
            found[current].update(stack_frame=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif current and (m := _PTXAS_USED.search(line)):
            found[current].update(registers=int(m[1]), barriers=int(m[2] or 0), smem_static=int(m[3] or 0))
    return {name: KernelResources(**values) for name, values in found.items()}


def cuda_include_dirs() -> list[Path]:
    """Directories holding cuda_fp16.h and crt/mma.h (pip's nvidia-cuda-runtime/-crt, else CUDA_HOME)."""
    dirs: list[Path] = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        found = find_nvidia_header_directory("cudart")
        if found:
            dirs.append(Path(found))
    except Exception:  # an old cuda-pathfinder, or none: fall back to the toolkit below
        pass
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            dirs.append(Path(os.environ[env]) / "include")
    dirs.append(Path("/usr/local/cuda/include"))
    have = [d for d in dirs if (d / "cuda_fp16.h").is_file()]
    if not have:
        raise RuntimeError(
            "No CUDA headers found (cuda_fp16.h). Install them with "
            "`pip install nvidia-cuda-runtime nvidia-cuda-crt` or set CUDA_HOME to a CUDA toolkit."
        )
    crt = [d for d in dirs if (d / "crt" / "mma.h").is_file()]
    return list(dict.fromkeys(have[:1] + crt[:1]))


def _check(result, what: str):
    from cuda.bindings import nvrtc

    err = result[0]
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC {what} failed: {err.name}")
    return result[1] if len(result) == 2 else result[1:]


def _read_bytes(prog, size_fn, get_fn) -> bytes:
    size = _check(size_fn(prog), "size query")
    buf = b" " * size
    _check(get_fn(prog, buf), "read")
    return buf


def compile_cuda(
    source: str | Path,
    *,
    name_expressions: tuple[str, ...] | list[str] = (),
    arch: str = DEFAULT_ARCH,
    options: tuple[str, ...] | list[str] = (),
    include_dirs: tuple[Path, ...] | list[Path] = (),
) -> CompiledModule:
    """Compile a ``.cu`` file (a Path, or a name under hgemm_course/kernels/) or a source string.

    ``name_expressions`` instantiate templates (``"k03_wmma<128, 128, 32>"``).
    Raises :class:`CompileError` with the compiler's log when it does not compile.
    """
    if isinstance(source, Path) or (isinstance(source, str) and source.endswith(".cu") and "\n" not in source):
        path = Path(source)
        if not path.is_absolute() and not path.exists():
            path = KERNELS_DIR / path
        if not path.is_file():
            raise FileNotFoundError(f"No CUDA source at {path}")
        text, name, extra_dirs = path.read_text(), str(path), (path.parent,)
    else:
        text, name, extra_dirs = source, "<string>.cu", ()
    return _compile_cached(text, name, tuple(name_expressions), arch, tuple(options),
                           tuple(str(d) for d in (*extra_dirs, *include_dirs)), _snippets_digest())


def _snippets_digest() -> str:
    h = hashlib.sha256()
    for header in sorted(PTX_SNIPPETS_DIR.glob("*.cuh")) + sorted(KERNELS_DIR.glob("*.cuh")):
        h.update(header.name.encode())
        h.update(header.read_bytes())
    return h.hexdigest()


@lru_cache(maxsize=64)
def _compile_cached(text, name, name_expressions, arch, options, include_dirs, _headers_digest) -> CompiledModule:
    from cuda.bindings import nvrtc

    prog = _check(nvrtc.nvrtcCreateProgram(text.encode(), name.encode(), 0, [], []), "create")
    try:
        for expr in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), f"name expression {expr}")
        incs = [str(PTX_SNIPPETS_DIR), str(KERNELS_DIR), *include_dirs, *map(str, cuda_include_dirs())]
        opts = [f"-arch={arch}", "-std=c++17", "-Xptxas=-v", "-lineinfo", "-default-device",
                *(f"-I{d}" for d in dict.fromkeys(incs)), *options]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        log = _read_bytes(prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog).decode(errors="replace").rstrip("\x00")
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(name, log)
        ptx = _read_bytes(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX).decode().rstrip("\x00")
        cubin = _read_bytes(prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
        lowered = {}
        for expr in name_expressions:
            mangled = _check(nvrtc.nvrtcGetLoweredName(prog, expr.encode()), f"lowered name of {expr}")
            lowered[expr] = mangled.decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return CompiledModule(name, arch, ptx, cubin, log, lowered, parse_ptxas_report(log))


@lru_cache(maxsize=64)
def _load_cubin(cubin: bytes, digest: str):
    import cupy

    folder = Path(tempfile.gettempdir()) / "hgemm_course_cubins"
    folder.mkdir(exist_ok=True)
    path = folder / f"{digest}.cubin"
    if not path.exists():
        path.write_bytes(cubin)
    return cupy.RawModule(path=str(path))
