"""Compile CUDA sources with NVRTC, on a machine with or without a GPU.

One path for both: NVRTC (``cuda.bindings.nvrtc``) turns a kernel source that
``#include``s headers from ``ptx_snippets/`` into PTX and a cubin for the target's
architecture (:mod:`hgemm_course.library.target`), and
ptxas's verbose report (asked for with ``-Xptxas=-v``) becomes a
:class:`KernelResources` per kernel. On a GPU the cubin is loaded through CuPy
(``cupy.RawModule``), so CuPy never compiles anything itself and a compile error
is always our message: the compiler's own text, with the file and line. Where the
GPU present is not the architecture a module was built for (a newer GPU, or
``--as sm_89`` on the H200), its PTX is loaded instead and the driver JIT-compiles it.

NVRTC's own cache across processes is off (``-no-cache``), so every build has its ptxas report.
Two caches of ours: compiled modules in memory, keyed by the source, its options and the
content of every header it includes; and cubin files in the temporary folder for
CuPy to load, each named by the sha256 of its bytes and checked against it on load.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import target
from .paths import KERNELS_DIR, PTX_SNIPPETS_DIR, write_atomic
from .toolchain import nvrtc_version


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
            if name_expression in self.lowered:
                raise KeyError(f"ptxas reported nothing for {name_expression!r} of {self.source_name} ({self.arch}): "
                               f"its log holds {len(self.resources)} kernel reports") from None
            raise KeyError(
                f"{name_expression!r} is not a kernel of {self.source_name}; it has "
                + ", ".join(self.lowered or self.resources)
            ) from None

    def function(self, name_expression: str):
        """The kernel as a ``cupy.RawKernel`` (needs a GPU): from the cubin where the GPU present is the
        architecture it was built for, else from its PTX, which the driver JIT-compiles for the GPU."""
        return self.raw_module().get_function(self.lowered.get(name_expression, name_expression))

    def raw_module(self):
        """The module as a ``cupy.RawModule`` (needs a GPU), loaded on the current GPU: from the cubin where the
        GPU present is the architecture it was built for, else from its PTX. Its ``__device__`` variables are
        read through ``get_global`` (the timing build's log, cta_clock.py)."""
        here = target.present()
        image = (self.cubin, ".cubin") if here is None or here.arch == self.arch else (self.ptx.encode(), ".ptx")
        return _raw_module(*image)


@lru_cache(maxsize=1)
def _nvrtc_archs() -> frozenset[str]:
    from cuda.bindings import nvrtc

    return frozenset(f"sm_{n}" for n in _check(nvrtc.nvrtcGetSupportedArchs(), "supported architectures"))


def nvrtc_builds(arch: str) -> bool:
    """Whether this NVRTC can compile for ``arch`` (``sm_90a`` counts as sm_90)."""
    return arch.rstrip("a") in _nvrtc_archs()


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
    """Directories holding cuda_fp16.h and crt/mma.h (pip's nvidia-cuda-runtime/-crt, else CUDA_HOME).

    CUDA 13's wheels put both in one folder (``nvidia/cu13/include``); CUDA 12's keep crt/ in the nvcc wheel's
    (``nvidia/cuda_nvcc/include``, nvidia-cuda-nvcc-cu12), which cuda.pathfinder names "nvcc"."""
    dirs: list[Path] = []
    for lib in ("cudart", "nvcc"):
        try:
            from cuda.pathfinder import find_nvidia_header_directory

            found = find_nvidia_header_directory(lib)
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


@lru_cache(maxsize=1)
def _no_cache() -> tuple[str, ...]:
    """NVRTC 12.9 and newer keep a cache across processes (on a machine with a driver): a compile answered from it
    runs no ptxas, so ``-Xptxas=-v`` reports nothing and a kernel's registers, shared memory and spills are lost
    on every run after the first. Every build asks for a compile of its own."""
    version = nvrtc_version()
    return ("-no-cache",) if version is not None and version >= (12, 9) else ()


def _read_bytes(prog, size_fn, get_fn) -> bytes:
    """What NVRTC writes for ``get_fn`` (a log, the PTX, the cubin), read into memory of our own.

    NVRTC writes into the buffer it is given, so that buffer is a ``bytearray``: a one-byte ``bytes`` object is
    one the interpreter shares with every other use of that byte, and an empty log is one NUL byte long, so
    writing it there would change that byte for the rest of the process."""
    size = _check(size_fn(prog), "size query")
    buf = bytearray(size)
    _check(get_fn(prog, buf), "read")
    return bytes(buf)


def compile_cuda(
    source: str | Path,
    *,
    name_expressions: tuple[str, ...] | list[str] = (),
    arch: str | None = None,
    options: tuple[str, ...] | list[str] = (),
    include_dirs: tuple[Path, ...] | list[Path] = (),
) -> CompiledModule:
    """Compile a ``.cu`` file (a Path, or a name under hgemm_course/library/kernels/) or a source string.

    ``name_expressions`` instantiate templates (``"k03_wmma<128, 128, 32>"``). ``arch`` defaults to
    the current target's (:func:`hgemm_course.library.target.current`), for code that needs no feature of it.
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
    dirs = (*extra_dirs, *map(Path, include_dirs))
    if arch is None:
        arch = target.current().build_arch(())
        arch = arch if nvrtc_builds(arch) else target.lowest_arch(())
    return _compile_cached(text, name, tuple(name_expressions), arch, tuple(options), tuple(map(str, dirs)),
                           _headers_digest(text, (PTX_SNIPPETS_DIR, KERNELS_DIR, *dirs)))


_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def _headers_digest(text: str, search_dirs: tuple[Path, ...]) -> str:
    """sha256 over every file the source pulls in with ``#include "..."``, followed recursively.

    Part of the compile cache's key, so an edited header (a snippet, or one beside a learner's .cu)
    is compiled again. Every file of an included name on the search path is hashed, not only the
    one the compiler picks: an extra file costs at most a needless compile, a missed one a stale cubin.
    """
    h = hashlib.sha256()
    seen: set[Path] = set()
    pending = [(text, ())]                      # (source text, its own folder to search first)
    while pending:
        source, own_dir = pending.pop()
        for name in _QUOTED_INCLUDE.findall(source):
            for header in ((d / name).resolve() for d in (*own_dir, *search_dirs)):
                if header in seen or not header.is_file():
                    continue
                seen.add(header)
                body = header.read_bytes()
                h.update(str(header).encode() + b"\0" + body)
                pending.append((body.decode(errors="replace"), (header.parent,)))
    return h.hexdigest()


@lru_cache(maxsize=64)
def _compile_cached(text, name, name_expressions, arch, options, include_dirs, _headers_digest) -> CompiledModule:
    """The in-memory cache: one NVRTC compile per source, options and header contents."""
    return _nvrtc_compile(text, name, name_expressions, arch, options, include_dirs)


def _nvrtc_compile(text, name, name_expressions, arch, options, include_dirs) -> CompiledModule:
    from cuda.bindings import nvrtc

    prog = _check(nvrtc.nvrtcCreateProgram(text.encode(), name.encode(), 0, [], []), "create")
    try:
        for expr in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), f"name expression {expr}")
        incs = [str(PTX_SNIPPETS_DIR), str(KERNELS_DIR), *include_dirs, *map(str, cuda_include_dirs())]
        opts = [f"-arch={arch}", "-std=c++17", "-Xptxas=-v", *_no_cache(), "-lineinfo", "-default-device",
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


# Cubin files for CuPy, which loads a cubin only from a path. Tests point this elsewhere.
CUBIN_CACHE_DIR = Path(tempfile.gettempdir()) / "hgemm_course_cubins"
_private_cubin_dir: tempfile.TemporaryDirectory | None = None    # made when the cache folder cannot be written


def cubin_file(cubin: bytes, suffix: str = ".cubin") -> Path:
    """A file holding exactly these cubin (or PTX) bytes, named by their sha256.

    A file whose bytes no longer match its name (cut short, damaged) is written again; every write
    goes to a temporary name first and is renamed, so a process loading the file meanwhile sees the
    whole of it. Where the cache folder cannot be written, the cubin goes to a private temporary
    folder of this process (removed at exit), with one warning per process.
    """
    name = hashlib.sha256(cubin).hexdigest() + suffix
    path = CUBIN_CACHE_DIR / name
    if _holds(path, cubin):
        return path
    try:
        CUBIN_CACHE_DIR.mkdir(exist_ok=True)
        return write_atomic(path, cubin)
    except OSError as exc:
        return write_atomic(_private_folder(exc) / name, cubin)


def _holds(path: Path, cubin: bytes) -> bool:
    try:
        return path.read_bytes() == cubin
    except OSError:
        return False


def _private_folder(reason: OSError) -> Path:
    global _private_cubin_dir
    if _private_cubin_dir is None:
        _private_cubin_dir = tempfile.TemporaryDirectory(prefix="hgemm_course_cubins_")
        warnings.warn(f"cannot write the cubin cache {CUBIN_CACHE_DIR} ({reason.strerror or reason}); this process "
                      f"keeps its cubins in {_private_cubin_dir.name} instead", stacklevel=3)
    return Path(_private_cubin_dir.name)


@lru_cache(maxsize=64)
def _raw_module(image: bytes, suffix: str):
    import cupy

    return cupy.RawModule(path=str(cubin_file(image, suffix)))
