"""Which CUDA the driver supports, which CUDA the installed wheels are, and the one command that fixes a mismatch.

The CUDA wheels come as one of two extras of pyproject.toml: ``cu13`` (cupy-cuda13x, cuda-bindings 13, the CUDA 13
NVRTC and headers) needs a driver of CUDA 13 (580 or newer); ``cu12`` (cupy-cuda12x, cuda-bindings 12.9, the -cu12
NVRTC and headers) runs on any CUDA 12 driver (525 or newer). A driver runs code of its own CUDA major and older,
so the wheels fit when the driver's major is at least theirs. The functions here are pure where they can be:
:func:`wheels_cuda_major` and :func:`cupy_package` take the package versions to judge (read from importlib.metadata
when left out), :func:`advice` takes what the other two found,; ``hgemm-course doctor`` asks this machine.
"""
from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata

# The lowest Linux driver of each CUDA major (CUDA's release notes, table 3).
MIN_DRIVER = {12: "525", 13: "580"}
EXTRAS = {12: "cu12", 13: "cu13"}
CUPY_WHEELS = {"cupy-cuda13x": 13, "cupy-cuda12x": 12, "cupy-cuda11x": 11}
# The wheels whose CUDA major counts: CuPy, NVRTC and cuda-bindings. cuda-bindings alone is not a set: numba-cuda
# pulls in the newest whatever the extra.
WHEELS = (*CUPY_WHEELS, "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12", "cuda-bindings")

_ASK = object()     # "read it from this machine"


def installed_versions(names=WHEELS) -> dict[str, str | None]:
    """The installed version of each named distribution, None where it is not installed."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def nvrtc_version() -> tuple[int, int] | None:
    """(major, minor) of the NVRTC that cuda.bindings loads, None when it loads none."""
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
        return (major, minor) if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else None
    except Exception:       # no cuda-bindings, or no libnvrtc to load
        return None


def _major(version: str | None) -> int | None:
    try:
        return int(version.split(".")[0]) if version else None
    except ValueError:
        return None


def cupy_package(packages: Mapping[str, str | None] | None = None) -> str | None:
    """The installed CuPy wheel's name (``cupy-cuda13x``), None when there is none."""
    packages = installed_versions() if packages is None else packages
    return next((name for name in CUPY_WHEELS if packages.get(name)), None)


def wheels_cuda_major(packages: Mapping[str, str | None] | None = None, nvrtc=_ASK) -> int | None:
    """The CUDA major the installed CUDA wheels need of the driver: the highest among CuPy's wheel, the NVRTC
    wheel, cuda-bindings and the NVRTC that loads (``nvrtc``: (major, minor) or None; read here when left out).
    None when no CUDA set is installed: neither CuPy nor an NVRTC, whatever cuda-bindings numba-cuda brought."""
    packages = installed_versions() if packages is None else packages
    nvrtc = nvrtc_version() if nvrtc is _ASK else nvrtc
    majors = {CUPY_WHEELS[name] for name in CUPY_WHEELS if packages.get(name)}
    majors |= {12} if packages.get("nvidia-cuda-nvrtc-cu12") else set()
    majors |= {m for m in (_major(packages.get("nvidia-cuda-nvrtc")), nvrtc and nvrtc[0]) if m}
    if not majors:
        return None
    bindings = _major(packages.get("cuda-bindings"))
    return max(majors | ({bindings} if bindings else set()))


def driver_cuda(driver_version: str | None) -> tuple[int, int] | None:
    """``"12.4"`` (the driver's CUDA version, as :func:`hgemm_course.library.device.probe_gpu` gives it) as (12, 4);
    None for None or anything that is not a version."""
    try:
        major, minor = (driver_version or "").strip().split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def _install(major: int) -> str:
    return f'`pip install -e ".[{EXTRAS[major]},dev]"`'


def advice(driver: tuple[int, int] | None, wheels_major: int | None) -> str | None:
    """One sentence naming the fix when the wheels do not fit the driver, None when they do.

    ``driver``: the driver's CUDA (:func:`driver_cuda`), None without a driver (then any set fits: NVRTC
    compiles without one). ``wheels_major``: :func:`wheels_cuda_major`, None when no CUDA set is installed.
    """
    supports = f"the driver supports CUDA {driver[0]}.{driver[1]}" if driver else None
    if driver and driver[0] < min(MIN_DRIVER):
        return (f"{supports}, older than the course's CUDA 12 and 13 wheels: update the driver to "
                f"{MIN_DRIVER[12]} or newer (CUDA 12), or {MIN_DRIVER[13]} or newer (CUDA 13)")
    if wheels_major is None:
        if driver:
            return f"no CUDA wheels are installed (CuPy is missing) and {supports}: {_install(min(driver[0], 13))}"
        return (f"no CUDA wheels are installed (CuPy is missing): {_install(13)}"
                f" (with a CUDA 12 driver, {_install(12)})")
    if driver is None or driver[0] >= wheels_major:
        return None
    # a fresh venv: installed over the other set, both CuPy wheels and both NVRTCs would stay
    mismatch = f"{supports} but the installed wheels are CUDA {wheels_major}"
    update = (f"update the driver to {MIN_DRIVER[wheels_major]} or newer" if wheels_major in MIN_DRIVER
              else f"update the driver to one of CUDA {wheels_major}")
    if driver[0] in EXTRAS:
        return f"{mismatch}: {_install(driver[0])} in a fresh venv (or {update})"
    return f"{mismatch}: {update}"
