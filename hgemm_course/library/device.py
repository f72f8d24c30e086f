"""What GPU, architecture and toolchain this machine has, and plain answers when it has none.

GPU detection goes through the CUDA driver API (``cuda.bindings.driver``), never
through Numba: ``NUMBA_ENABLE_CUDASIM`` is read once, when Numba is first
imported, so asking Numba about the GPU here would fix that choice for the rest
of the process.
"""
from __future__ import annotations

import os
import platform
import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import metadata


@dataclass(frozen=True)
class GpuInfo:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    l2_bytes: int
    smem_per_sm: int
    smem_per_block_optin: int
    regs_per_sm: int
    clock_khz: int
    memory_bytes: int
    threads_per_sm: int = 0


@dataclass
class MachineReport:
    gpu: GpuInfo | None
    no_gpu_reason: str | None
    driver_version: str | None
    runtime_version: str | None
    nvrtc_version: str | None
    packages: dict[str, str | None]
    python: str
    cudasim: bool
    warnings: list[str] = field(default_factory=list)
    wheels_cuda: int | None = None      # the CUDA major the installed wheels are built for

    def as_dict(self) -> dict:
        return asdict(self)


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _version_str(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


@lru_cache(maxsize=1)
def probe_gpu() -> tuple[GpuInfo | None, str | None, str | None]:
    """(info of device 0, why there is none, driver version). Cached: the driver is asked once."""
    try:
        from cuda.bindings import driver as drv
    except ImportError as exc:
        return None, f"cuda-bindings is not installed ({exc}); `pip install cuda-bindings`", None
    try:
        (err,) = drv.cuInit(0)
    except Exception as exc:  # the driver library itself is missing
        return None, f"no NVIDIA driver on this machine ({exc.__class__.__name__})", None
    if err != drv.CUresult.CUDA_SUCCESS:
        return None, f"the CUDA driver did not start ({err.name})", None
    err, count = drv.cuDeviceGetCount()
    _, drv_version = drv.cuDriverGetVersion()
    driver = _version_str(drv_version)
    if err != drv.CUresult.CUDA_SUCCESS or count == 0:
        return None, "the NVIDIA driver sees no GPU", driver
    _, dev = drv.cuDeviceGet(0)
    _, raw_name = drv.cuDeviceGetName(64, dev)
    A = drv.CUdevice_attribute

    def attr(a):
        return drv.cuDeviceGetAttribute(a, dev)[1]

    info = GpuInfo(
        name=raw_name.split(b"\0")[0].decode(),
        compute_capability=(attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                            attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
        sm_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        l2_bytes=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        smem_per_sm=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        smem_per_block_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        regs_per_sm=attr(A.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
        clock_khz=attr(A.CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_bytes=drv.cuDeviceTotalMem(dev)[1],
        threads_per_sm=attr(A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
    )
    return info, None, driver


def has_gpu() -> bool:
    return probe_gpu()[0] is not None


def current_gpu_id() -> int:
    """The current GPU's id, for caches kept per GPU; 0 where there is none (the grid of a kernel compiled, not
    launched, on a machine without a GPU)."""
    try:
        from cupy.cuda import runtime

        return runtime.getDevice()
    except Exception:  # no GPU, no driver or no CuPy: one id for the lot
        return 0


def cudasim_enabled() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def require_gpu(what: str) -> GpuInfo:
    """The GPU, or a RuntimeError that says what needs it and why there is none."""
    info, reason, _ = probe_gpu()
    if info is None:
        raise RuntimeError(
            f"{what} needs an NVIDIA GPU, and this machine has none usable: {reason}. "
            "Without a GPU you can still compile every kernel (`hgemm-course tour`), run the simulators, "
            "and run rungs 01-02 on the CPU under the Numba CUDA simulator: "
            "`NUMBA_ENABLE_CUDASIM=1 hgemm-course verify 01 02`."
        )
    return info


@lru_cache(maxsize=1)
def driver_release() -> str | None:
    """The driver's release as nvidia-smi prints it (580.159.04), or None without one."""
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def _runtime_version() -> str | None:
    try:
        from cuda.bindings import runtime as rt

        err, v = rt.cudaRuntimeGetVersion()
        return _version_str(v) if err == rt.cudaError_t.cudaSuccess else None
    except Exception:
        return None


def _nvrtc_version() -> str | None:
    try:
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        return f"{major}.{minor}"
    except Exception:
        return None


def known_bad_combinations(packages: dict[str, str | None]) -> list[str]:
    """Warnings, each with its fix, for version combinations known to fail."""
    out = []
    numba_cuda, numpy = packages.get("numba-cuda"), packages.get("numpy")
    if numba_cuda and numpy:
        nc = tuple(int(x) for x in numba_cuda.split(".")[:2])
        np_ver = tuple(int(x) for x in numpy.split(".")[:2])
        if nc <= (0, 30) and np_ver >= (2, 5):
            out.append(
                f"numba-cuda {numba_cuda} with numpy {numpy}: Numba CUDA kernels fail at launch "
                "(\"module 'numpy' has no attribute 'row_stack'\"), so rungs 01-02 cannot run. "
                "Fix: `pip install 'numpy<2.5'` (2.4.x works with numba-cuda and CuPy), or a numba-cuda newer than 0.30."
            )
    return out


def machine_report() -> MachineReport:
    gpu, reason, driver = probe_gpu()
    # the CUDA set installed: cu12's wheels where its CuPy is, else cu13's (pyproject.toml's two extras)
    cuda_set = (("cupy-cuda12x", "nvidia-cuda-nvrtc-cu12") if _package_version("cupy-cuda12x")
                else ("cupy-cuda13x", "nvidia-cuda-nvrtc"))
    packages = {name: _package_version(name) for name in (
        "numpy", "numba", "numba-cuda", cuda_set[0], "cuda-bindings", cuda_set[1], "matplotlib")}
    report = MachineReport(
        gpu=gpu, no_gpu_reason=reason, driver_version=driver, runtime_version=_runtime_version(),
        nvrtc_version=_nvrtc_version(), packages=packages,
        python=f"{platform.python_implementation()} {sys.version.split()[0]}", cudasim=cudasim_enabled(),
    )
    report.warnings = known_bad_combinations(packages)
    if report.nvrtc_version is None:
        report.warnings.append("NVRTC is missing: kernels cannot compile. Fix: `pip install nvidia-cuda-nvrtc`.")
    from .toolchain import advice, cupy_package, driver_cuda, installed_versions, wheels_cuda_major

    wheels = installed_versions()
    report.wheels_cuda = wheels_cuda_major(wheels) if cupy_package(wheels) else None
    supports = driver_cuda(driver)
    if (fix := advice(supports, report.wheels_cuda)) is not None:
        report.warnings.append(fix[0].upper() + fix[1:] + ("" if fix.endswith(".") else "."))
    elif supports and report.nvrtc_version and tuple(map(int, report.nvrtc_version.split("."))) > supports:
        report.warnings.append(
            f"NVRTC {report.nvrtc_version} is newer than the CUDA {driver} this driver supports: cubins load, but PTX "
            f"from this NVRTC (`--as`, or a GPU newer than NVRTC knows) will not JIT-compile. Fix: update the driver, "
            f"or install an NVRTC of CUDA {driver}.")
    return report


def format_report(report: MachineReport) -> str:
    lines = ["hgemm-course doctor", ""]
    if report.gpu:
        g = report.gpu
        lines += [
            f"GPU              {g.name} (compute capability {g.compute_capability[0]}.{g.compute_capability[1]})",
            f"SMs              {g.sm_count}",
            f"L2 cache         {g.l2_bytes / 2**20:.0f} MiB",
            f"shared memory    {g.smem_per_sm // 1024} KiB per SM, {g.smem_per_block_optin // 1024} KiB per block (opt-in)",
            f"registers        {g.regs_per_sm} per SM",
            f"memory           {g.memory_bytes / 2**30:.0f} GiB",
        ]
    else:
        lines.append(f"GPU              none: {report.no_gpu_reason}")
    lines += [
        f"driver           {report.driver_version and f'supports CUDA {report.driver_version}' or '-'}",
        f"CUDA wheels      {f'CUDA {report.wheels_cuda}' if report.wheels_cuda else 'none installed'}",
        f"CUDA runtime     {report.runtime_version or '-'}",
        f"NVRTC            {report.nvrtc_version or '-'}",
        f"python           {report.python}",
    ]
    lines += [f"{name:<16} {version or 'not installed'}" for name, version in report.packages.items()]
    lines.append(f"Numba CUDA sim.  {'on (NUMBA_ENABLE_CUDASIM=1)' if report.cudasim else 'off'}")
    lines.append("")
    if not report.gpu:
        lines += [
            "Runs here without a GPU: the simulators (swizzle, banks, CTA order, L2, occupancy, fragments),",
            "compiling every kernel for any target (`hgemm-course doctor --arch sm_89`), rungs 01-02 under the Numba CUDA",
            "simulator on tiny sizes (`NUMBA_ENABLE_CUDASIM=1 hgemm-course verify 01 02`), the exercise",
            "checkers, and the recorded H200 results.",
            "Needs a GPU: verifying and timing kernels, cuBLAS comparisons, the GPU tests (pytest -m gpu).",
        ]
    for w in report.warnings:
        lines += ["", f"WARNING: {w}"]
    return "\n".join(lines)
