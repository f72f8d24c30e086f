# Question: does sim.occupancy's CTAs-per-SM agree with the driver's occupancy calculator on the H200?
# Results: results/probes/check_occupancy_h200/*.json (every case and the device limits, with provenance). The run
# of 2026-11-29 (270 cases, all agreeing) wrote no provenance and is no longer kept; run it again on the H200.
"""Check hgemm_course.sim.occupancy against the CUDA driver's occupancy calculator on the H200.

    python3 research/check_occupancy_h200.py [--out DIR]

Compiles one register-hungry dummy kernel per ``--maxrregcount`` cap (NVRTC, through
hgemm_course.library.build), loads each cubin with the driver API, reads the registers the driver
sees (``CU_FUNC_ATTRIBUTE_NUM_REGS``), and for every (threads, dynamic shared memory) pair
compares ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` (what
``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` answers) with ``ctas_per_sm``. The device's
own limits are compared with ``hgemm_course.sim.occupancy.H200`` too. Writes a JSON of every
case with the run's provenance (hgemm_course.measurement.records.write_probe: by default to the recorded
results/probes/check_occupancy_h200/) and exits 1 if any disagrees. Needs an sm_90 GPU.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cuda.bindings import driver

from hgemm_course.measurement import records
from hgemm_course.library.build import compile_cuda
from hgemm_course.sim.occupancy import H200, occupancy_report

THREADS = (128, 256, 384, 512, 1024)
REGISTER_CAPS = (32, 64, 96, 128, 168, 255)
SMEM_BYTES = (0, 16 * 1024, 48 * 1024, 64 * 1024, 100 * 1024, 113 * 1024, 113 * 1024 + 1, 150 * 1024, 227 * 1024)

# LIVE_VALUES floats stay live across the loop, so ptxas uses registers up to the cap.
SOURCE = r"""
extern "C" __global__ void register_pressure(float* out, int steps) {
    float acc[LIVE_VALUES];
#pragma unroll
    for (int i = 0; i < LIVE_VALUES; ++i) acc[i] = out[threadIdx.x + i * blockDim.x];
    for (int s = 0; s < steps; ++s) {
#pragma unroll
        for (int i = 0; i < LIVE_VALUES; ++i) acc[i] = fmaf(acc[i], acc[(i + 1) % LIVE_VALUES], 1.0f);
    }
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < LIVE_VALUES; ++i) total += acc[i];
    out[threadIdx.x] = total;
}
"""

DEVICE_LIMITS = {  # H200 key -> driver attribute
    "max_threads_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR",
    "max_threads_per_cta": "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
    "max_ctas_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR",
    "regs_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR",
    "regs_per_cta": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK",
    "smem_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "max_smem_per_cta": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "smem_reserved_per_cta": "CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK",
}


def checked(result, what):
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what} failed: {err.name}")
    return values[0] if len(values) == 1 else values


def open_device():
    checked(driver.cuInit(0), "cuInit")
    device = checked(driver.cuDeviceGet(0), "cuDeviceGet")
    context = checked(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
    checked(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    return device


def device_limits(device):
    out = {}
    for key, name in DEVICE_LIMITS.items():
        attribute = getattr(driver.CUdevice_attribute, name)
        out[key] = {"device": checked(driver.cuDeviceGetAttribute(attribute, device), name), "model": H200[key]}
    major = checked(driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "compute capability")
    return major, out


def load_kernel(register_cap):
    compiled = compile_cuda(SOURCE, options=(f"--maxrregcount={register_cap}", f"-DLIVE_VALUES={register_cap}"))
    module = checked(driver.cuModuleLoadData(compiled.cubin), "cuModuleLoadData")
    function = checked(driver.cuModuleGetFunction(module, b"register_pressure"), "cuModuleGetFunction")
    checked(driver.cuFuncSetAttribute(
        function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        H200["max_smem_per_cta"]), "raising the dynamic shared memory limit")
    attribute = driver.CUfunction_attribute
    registers = checked(driver.cuFuncGetAttribute(attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, function), "NUM_REGS")
    static_smem = checked(driver.cuFuncGetAttribute(attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function),
                          "SHARED_SIZE_BYTES")
    return function, registers, static_smem


def compare(function, registers, static_smem, threads, dynamic_smem):
    err, hardware = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, dynamic_smem)
    case = {"threads": threads, "registers": registers, "static_smem": static_smem, "dynamic_smem": dynamic_smem,
            "hardware": hardware if err == driver.CUresult.CUDA_SUCCESS else 0}
    if err != driver.CUresult.CUDA_SUCCESS:  # a launch the driver refuses counts as 0 CTAs per SM
        case["hardware_error"] = err.name
    try:
        report = occupancy_report(threads, registers, static_smem + dynamic_smem)
        case.update(model=report["ctas_per_sm"], limited_by=report["limited_by"])
    except ValueError as error:  # the model says it cannot launch: the driver must answer 0
        case.update(model=0, limited_by=[str(error)])
    case["agree"] = case["model"] == hardware
    return case


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the folder to write the report of model vs hardware into "
                        "(default: the recorded results/probes/check_occupancy_h200/)")
    args = parser.parse_args(argv)

    device = open_device()
    major, limits = device_limits(device)
    if major != 9:
        sys.exit(f"This GPU is compute capability {major}.x; the model is for sm_90 (H100/H200).")
    cases = []
    for cap in REGISTER_CAPS:
        function, registers, static_smem = load_kernel(cap)
        cases += [compare(function, registers, static_smem, threads, smem)
                  for threads in THREADS for smem in SMEM_BYTES]
    limits_agree = all(v["device"] == v["model"] for v in limits.values())
    disagreements = [c for c in cases if not c["agree"]]
    path = records.write_probe({"device_limits": limits, "limits_agree": limits_agree, "cases": cases,
                                 "disagreements": len(disagreements)}, probe="check_occupancy_h200", folder=args.out)
    print(f"{len(cases) - len(disagreements)}/{len(cases)} cases agree; device limits "
          f"{'match' if limits_agree else 'DIFFER from'} the model; written to {path}")
    for case in disagreements:
        print(f"  threads={case['threads']} regs={case['registers']} smem={case['static_smem']}+"
              f"{case['dynamic_smem']}: model {case['model']}, hardware {case['hardware']}")
    return 1 if disagreements or not limits_agree else 0


if __name__ == "__main__":
    sys.exit(main())
