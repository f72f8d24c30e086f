"""The SM clock as NVML reports it while a launch runs, and whether the power cap was holding it down. NVML's
figure lags the hardware: the clock a launch ran at is its SM cycles over its time (the timing build's log,
:mod:`hgemm_course.library.cta_clock`)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClockReading:
    """One NVML reading: the SM clock in MHz and whether the software power cap was lowering it."""
    mhz: int
    power_capped: bool


def sm_clock_reader():
    """A function that returns a :class:`ClockReading` of the current GPU as NVML sees it now, or None where
    NVML is missing (the GPU is found by its PCI bus id, so CUDA_VISIBLE_DEVICES cannot mix GPUs up)."""
    try:
        import cupy
        from cuda.bindings import nvml

        nvml.init_v2()
        handle = nvml.device_get_handle_by_pci_bus_id_v2(cupy.cuda.Device().pci_bus_id)
    except Exception:  # no NVML library, an older cuda-bindings, no GPU: the clock is simply not recorded
        return lambda: None
    power_cap = int(nvml.ClocksEventReasons.EVENT_REASON_SW_POWER_CAP)

    def read() -> ClockReading | None:
        try:
            mhz = int(nvml.device_get_clock_info(handle, nvml.ClockType.CLOCK_SM))
            return ClockReading(mhz, bool(int(nvml.device_get_current_clocks_event_reasons(handle)) & power_cap))
        except Exception:
            return None
    return read
