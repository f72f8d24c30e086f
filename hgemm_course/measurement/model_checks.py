"""Compare the simulators with Nsight Compute on the H200: shared-memory banks and L2 reuse.

    python3 -m hgemm_course.measurement.model_checks --plan [--bank-size 2048] [--l2-size 8192] > DIR/plan.tsv
    python3 -m hgemm_course.measurement.model_checks --ncu-dir DIR [--out results/]

``--plan`` prints the configurations to profile, one per line (``name kind rung M N K super_m
super_n kernel``); scripts/h200_model_checks.sh runs ncu on each through ``python3 -m
hgemm_course.measurement.profile_target`` and saves ``DIR/<name>.csv`` (``ncu --csv --page raw``). With ``--ncu-dir``
this module reads them back, checks that this tree still builds the profiled instantiations,
computes the models for exactly those configurations, and writes ``model_banks_<gpu>_<date>.json``
and ``model_l2_<gpu>_<date>.json`` through :func:`hgemm_course.measurement.records.write_run`, with the
provenance of the ncu run (``DIR/doctor.json``, ``DIR/nvidia_smi.csv``, ``DIR/ncu_version.txt``).

- banks: :func:`hgemm_course.sim.main_loop_bank_conflicts` with the rung's own tiles and
  the layout its kernel source uses, against ncu's shared-memory counters. Agreement means
  equal counts.
- L2: :func:`hgemm_course.sim.l2_model` with rung 06's tiles, its super-tile order and
  ``SMs x ctas_per_sm`` CTAs in flight (registers from NVRTC's resource report), against
  ncu's L2 hit rate of the SMs' reads. Agreement means within 5 points, and the same ranking
  of the orders (no pair that both sides separate by more than ``--rank-tol`` points flips).

Prints a short table last; exits 1 when a check disagrees or a configuration has no data.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from hgemm_course.measurement import ncu
from hgemm_course.measurement.records import write_run
from hgemm_course.library.ladder import get, registry
from hgemm_course.library.ladder.nvrtc_kernel import MmaTiles, cdiv, launched_kernel
from hgemm_course.sim import cta_order, ctas_per_sm, l2_model, main_loop_bank_conflicts
from hgemm_course.sim.l2 import H200_L2_BYTES, H200_SMS

BANK_SIZE = 2048
L2_SIZE = 8192
L2_RUNG = "06"
L2_TOLERANCE_POINTS = 5.0

# ----------------------------------------------------------------------------- what to profile


@dataclass(frozen=True)
class Config:
    """One profiled launch: ``name`` is also the stem of its CSV files; ``kernel`` the template
    instantiation this tree builds for it (``k06_supertile<128,256,64,64,64,4,16,2>``)."""

    name: str
    kind: str                              # "banks" or "l2"
    rung: str
    M: int
    N: int
    K: int
    super_mn: tuple[int, int] | None = None
    kernel: str = ""

    def line(self) -> str:
        sm, sn = self.super_mn or ("-", "-")
        return f"{self.name}\t{self.kind}\t{self.rung}\t{self.M}\t{self.N}\t{self.K}\t{sm}\t{sn}\t{self.kernel}"

    @classmethod
    def from_line(cls, line: str) -> "Config":
        name, kind, rung, M, N, K, sm, sn, kernel = line.split()
        return cls(name, kind, rung, int(M), int(N), int(K), None if sm == "-" else (int(sm), int(sn)), kernel)


def rung_module(rung_id: str):
    return importlib.import_module(get(rung_id).launch.__module__)


def kernel_facts(rung_id: str) -> dict | None:
    """How a rung's main loop touches shared memory, read from its kernel source and module,
    so the check follows the kernels as they change. None for a rung the bank model does not
    cover (no MmaTiles, or fragments loaded by something other than ldmatrix/wmma)."""
    rung = get(rung_id)
    module = rung_module(rung_id)
    if rung.backend != "nvrtc" or not isinstance(getattr(module, "TILES", None), MmaTiles):
        return None
    source = rung.kernel_path.read_text()
    if "ldmatrix_x4" not in source and "load_matrix_sync" not in source:
        return None
    if "tma_load_2d" in source:
        stores = "tma"
    elif "cp_async_16" in source:
        stores = "cp.async"
    else:
        raise RuntimeError(f"{rung.source} fills shared memory with neither cp_async_16 nor tma_load_2d; "
                           "teach kernel_facts how it does before comparing its bank counters.")
    swizzled = "swizzle_128b(" in source
    if not swizzled and not hasattr(module, "PAD"):
        raise RuntimeError(f"{rung.source} neither swizzles nor has a PAD in {module.__name__}; "
                           "teach kernel_facts its shared-memory layout.")
    return {
        "layout": "swizzle128" if swizzled else "padded",
        "pad_halfs": None if swizzled else module.PAD,
        "stores": stores,
        "epilogue_through_smem": "store_matrix_sync" in source,
        "tiles": asdict(module.TILES),
    }


def l2_orders(M: int, N: int) -> list[tuple[str, tuple[int, int]]]:
    """Rung 06's launch orders to compare: row-major, column-major, its default super tile and
    two of the same area, twice as tall and twice as wide (all as super tiles, as the kernel decodes them)."""
    module = rung_module(L2_RUNG)
    grid_m, grid_n = cdiv(M, module.TILES.bm), cdiv(N, module.TILES.bn)
    sm, sn = module.SUPER
    taller = (sm * 2, sn // 2) if sn % 2 == 0 else (sm * 2, sn)
    wider = (sm // 2, sn * 2) if sm % 2 == 0 else (sm, sn * 2)
    shapes = {"row_major": (1, grid_n), "col_major": (grid_m, 1)}
    for shape in ((sm, sn), taller, wider):
        shape = (min(shape[0], grid_m), min(shape[1], grid_n))
        if shape not in shapes.values():
            shapes[f"super_{shape[0]}x{shape[1]}"] = shape
    return list(shapes.items())


def order_name(config: Config) -> str:
    """``row_major``, ``super_16x2``, ...: the launch order an L2 configuration's name ends with."""
    return config.name.removeprefix(f"l2_r{config.rung}_{config.M}_")


def kernel_of(rung_id: str, M: int, N: int, K: int, super_mn: tuple[int, int] | None):
    """The TemplateKernel the rung's launcher runs at M x N x K, with its own tiles and the given super tile."""
    return launched_kernel(rung_module(rung_id), M, N, K, **({"super_mn": super_mn} if super_mn else {}))


def instantiation(rung_id: str, M: int, N: int, K: int, super_mn: tuple[int, int] | None) -> str:
    return kernel_of(rung_id, M, N, K, super_mn).name_expression.replace(" ", "")


def plan(bank_size: int = BANK_SIZE, l2_size: int = L2_SIZE) -> list[Config]:
    configs = [Config(f"banks_r{rid}_{bank_size}", "banks", rid, bank_size, bank_size, bank_size, None,
                      instantiation(rid, bank_size, bank_size, bank_size, None))
               for rid in registry() if kernel_facts(rid)]
    configs += [Config(f"l2_r{L2_RUNG}_{l2_size}_{name}", "l2", L2_RUNG, l2_size, l2_size, l2_size, shape,
                       instantiation(L2_RUNG, l2_size, l2_size, l2_size, shape))
                for name, shape in l2_orders(l2_size, l2_size)]
    return configs


# ----------------------------------------------------------------------------- ncu's rows (read by hgemm_course.measurement.ncu)

def _same_kernel(row: dict, kernel: str) -> bool:
    """ncu prints demangled names (``void k06_supertile<128, 256, ...>(const __half *, ...)``) unless told
    to print the function's base name only; then only the template's name can be matched."""
    name = row["name"].replace(" ", "")
    return kernel in name if "<" in name else row["kernel"] == kernel.split("<")[0]


def measured(ncu_dir: Path, config: Config) -> dict:
    """Every metric ncu gave for this configuration's kernel in ``<name>.csv`` ({} when there is none)."""
    path = ncu_dir / f"{config.name}.csv"
    try:
        rows = ncu.read_raw(path)
    except (OSError, ValueError):
        return {}
    row = next((r for r in rows if _same_kernel(r, config.kernel)), None)
    return {k: v for k, v in row["metrics"].items() if v is not None} if row else {}


# ----------------------------------------------------------------------------- the models


def bank_model(config: Config) -> dict:
    """Per-kernel model counts of ``config``: ldmatrix and cp.async requests, wavefronts, conflicts."""
    facts = kernel_facts(config.rung)
    t = MmaTiles(**facts["tiles"])
    kwargs = {"layout": facts["layout"]}
    if facts["pad_halfs"] is not None:
        kwargs["pad_halfs"] = facts["pad_halfs"]
    r = main_loop_bank_conflicts(t.bm, t.bn, t.bk, t.bm // t.wm, t.bn // t.wn, M=config.M, N=config.N, K=config.K,
                                 **kwargs)["per_kernel"]
    keys = ("requests", "wavefronts", "bank_conflicts")
    ldsm = {k: r["A ldmatrix.x4"][k] + r["B ldmatrix.x4.trans"][k] for k in keys}
    cp = {k: 0 if facts["stores"] == "tma" else r["A cp.async 16B"][k] + r["B cp.async 16B"][k] for k in keys}
    return {"facts": facts, "ldmatrix": ldsm, "cp.async": cp}


# (quantity, model path, ncu metrics in order of preference, shared-memory op the epilogue of rung 03 adds to)
BANK_QUANTITIES = (
    ("ldmatrix instructions", ("ldmatrix", "requests"),
     ("smsp__sass_inst_executed_op_ldsm.sum", "smsp__inst_executed_op_ldsm.sum"), None),
    ("ldmatrix wavefronts", ("ldmatrix", "wavefronts"),
     ("sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
      "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), "ld"),
    ("ldmatrix bank conflicts", ("ldmatrix", "bank_conflicts"),
     ("sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
      "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"), "ld"),
    ("cp.async instructions", ("cp.async", "requests"),
     ("smsp__sass_inst_executed_op_ldgsts.sum", "smsp__inst_executed_op_ldgsts.sum"), None),
    ("cp.async wavefronts", ("cp.async", "wavefronts"),
     ("sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
      "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"), None),
    ("cp.async bank conflicts", ("cp.async", "bank_conflicts"),
     ("sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
      "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"), None),
    ("shared store wavefronts", None, ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",), "st"),
    ("shared store bank conflicts", None, ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",), "st"),
)


def bank_records(config: Config, metrics: dict) -> list[dict]:
    """One record per (quantity, ncu metric that measured it). The ``sass`` metrics count what the
    instructions' addresses cost; the ``l1tex__`` ones count what the hardware did, epilogue included."""
    model = bank_model(config)
    facts = model["facts"]
    records = []
    for quantity, path, counters, op in BANK_QUANTITIES:
        value = model[path[0]][path[1]] if path else 0
        for counter in counters:
            if counter not in metrics:
                continue
            hardware = int(round(metrics[counter]))
            record = {"check": "banks", "config": {**asdict(config), **facts}, "quantity": quantity,
                      "counter": counter, "model": value, "hardware": hardware, "difference": value - hardware,
                      "agree": value == hardware}
            if op and facts["epilogue_through_smem"] and counter.startswith("l1tex__"):
                record["agree"] = None
                record["note"] = (f"the epilogue parks accumulators in shared memory (wmma::store_matrix_sync), "
                                  f"which adds shared {op} traffic the model does not count")
            records.append(record)
    return records


def l2_record(config: Config, metrics: dict, *, l2_bytes: int, sm_count: int) -> dict:
    """Model and ncu L2 hit rate (percent) of one launch order of rung 06."""
    t = rung_module(config.rung).TILES
    kernel = kernel_of(config.rung, config.M, config.N, config.K, config.super_mn)
    resources = kernel.compile().resources_of(kernel.name_expression)
    per_sm = ctas_per_sm(kernel.threads, resources.registers, kernel.smem_bytes + resources.smem_static)
    grid_m, grid_n = cdiv(config.M, t.bm), cdiv(config.N, t.bn)
    order = cta_order("supertile", grid_m, grid_n, super_m=config.super_mn[0], super_n=config.super_mn[1])
    r = l2_model(config.M, config.N, config.K, t.bm, t.bn, t.bk, order, l2_bytes=l2_bytes,
                 ctas_in_flight=sm_count * per_sm)
    hit = metrics.get("lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum")
    miss = metrics.get("lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum")
    if hit is not None and miss is not None and hit + miss > 0:
        counter, hardware = "lts__t_sectors_srcunit_tex_op_read_lookup_hit / (hit + miss)", 100 * hit / (hit + miss)
    else:
        counter = next((c for c in ("lts__t_sector_op_read_hit_rate.pct", "lts__t_sector_hit_rate.pct")
                        if c in metrics), "lts__t_sector_hit_rate.pct")
        hardware = metrics.get(counter)
    model = 100 * r.hit_rate
    dram = metrics.get("dram__bytes_read.sum")
    return {
        "check": "l2", "quantity": "L2 hit rate of A and B reads (%)",
        "config": {**asdict(config), "order": order_name(config), "BM": t.bm, "BN": t.bn,
                   "BK": t.bk, "grid": [grid_m, grid_n], "ctas_per_sm": per_sm, "ctas_in_flight": sm_count * per_sm,
                   "registers_nvrtc": resources.registers,
                   "registers_ncu": _int(metrics.get("launch__registers_per_thread")),
                   "l2_bytes": l2_bytes},
        "counter": counter, "model": round(model, 3),
        "hardware": None if hardware is None else round(hardware, 3),
        "difference": None if hardware is None else round(model - hardware, 3),
        "agree": None if hardware is None else abs(model - hardware) <= L2_TOLERANCE_POINTS,
        "ncu_lts_t_sector_hit_rate_pct": metrics.get("lts__t_sector_hit_rate.pct"),
        "ncu_lts_t_sector_op_read_hit_rate_pct": metrics.get("lts__t_sector_op_read_hit_rate.pct"),
        "model_dram_bytes": r.dram_bytes, "ncu_dram_bytes_read": dram,
        "dram_model_over_ncu": None if not dram else round(r.dram_bytes / dram, 3),
        "ncu_l2_read_sectors": metrics.get("lts__t_sectors_srcunit_tex_op_read.sum"),
        "model_l2_read_bytes": r.l2_read_bytes,
        "ncu_time_ms": None if metrics.get("gpu__time_duration.sum") is None
        else metrics["gpu__time_duration.sum"] / 1e6,
    }


def ranking_record(l2: list[dict], tol: float) -> dict:
    """Do model and ncu order the launch orders alike? Pairs either side puts within ``tol`` points are ties."""
    rows = [r for r in l2 if r["hardware"] is not None]
    flips = [(a["config"]["order"], b["config"]["order"])
             for i, a in enumerate(rows) for b in rows[i + 1:]
             if abs(a["model"] - b["model"]) > tol and abs(a["hardware"] - b["hardware"]) > tol
             and (a["model"] > b["model"]) != (a["hardware"] > b["hardware"])]
    return {"check": "l2", "quantity": "ranking of the orders by hit rate", "config": {"tie_points": tol},
            "model": [r["config"]["order"] for r in sorted(rows, key=lambda r: -r["model"])],
            "hardware": [r["config"]["order"] for r in sorted(rows, key=lambda r: -r["hardware"])],
            "difference": flips, "agree": bool(rows) and not flips}


# ----------------------------------------------------------------------------- provenance and report


def ncu_provenance(ncu_dir: Path) -> dict:
    """The machine the ncu run was made on, from the files scripts/h200_model_checks.sh left beside the CSVs."""
    out = {"script": "python3 -m hgemm_course.measurement.model_checks", "ncu_dir": str(ncu_dir)}
    doctor = ncu_dir / "doctor.json"
    if doctor.is_file():
        d = json.loads(doctor.read_text())
        gpu = d.get("gpu") or {}
        out.update({k: v for k, v in {
            "gpu": gpu.get("name"), "arch": gpu.get("arch"), "sm_count": gpu.get("sm_count"),
            "l2_bytes": gpu.get("l2_bytes"), "driver": d.get("driver_version"),
            "cuda_runtime": d.get("runtime_version"),
            "nvrtc": d.get("nvrtc_version"), "packages": d.get("packages"), "python": d.get("python")}.items()
            if v is not None})
    smi = ncu_dir / "nvidia_smi.csv"
    if smi.is_file() and smi.read_text().strip():
        out["driver_release"] = smi.read_text().strip().splitlines()[-1].split(",")[-1].strip()
    for key, name in (("ncu", "ncu_version.txt"), ("measured_at", "measured_at.txt")):
        path = ncu_dir / name
        if path.is_file() and path.read_text().strip():
            out[key] = path.read_text().strip().splitlines()[-1]
    return out


def _int(x: float | None) -> int | None:
    return None if x is None else int(round(x))


def _fmt(x) -> str:
    return "-" if x is None else f"{x:,}" if isinstance(x, int) else f"{x:.2f}" if isinstance(x, float) else str(x)


def _verdict(agree) -> str:
    return {True: "agree", False: "DISAGREE", None: "n/c"}[agree]


def bank_table(records: list[dict], configs: list[Config]) -> str:
    """Per rung, the preferred counter of each headline quantity: model vs ncu."""
    headline = ("ldmatrix bank conflicts", "ldmatrix wavefronts", "cp.async bank conflicts", "cp.async wavefronts")
    lines = [f"{'rung':<5}{'quantity':<26}{'model':>14}{'ncu':>14}  verdict  counter"]
    for config in configs:
        rows = [r for r in records if r["config"]["name"] == config.name]
        if not rows:
            lines.append(f"{config.rung:<5}no ncu data for {config.name}")
        for quantity in headline:
            first = next((r for r in rows if r["quantity"] == quantity), None)
            if first:
                lines.append(f"{config.rung:<5}{quantity:<26}{_fmt(first['model']):>14}{_fmt(first['hardware']):>14}"
                             f"  {_verdict(first['agree']):<8} {first['counter']}")
    return "\n".join(lines)


def l2_table(records: list[dict]) -> str:
    lines = [f"{'order':<14}{'super':>8}{'model %':>9}{'ncu %':>8}{'diff':>7}  {'verdict':<9}"
             f"{'DRAM model/ncu':>15}{'ncu all %':>10}{'ms':>7}"]
    for r in records:
        if r["quantity"].startswith("ranking"):
            lines.append(f"ranking (ties within {r['config']['tie_points']} points): model {' > '.join(r['model'])}; "
                         f"ncu {' > '.join(r['hardware'])}: {_verdict(r['agree'])}"
                         + (f", flipped {r['difference']}" if r["difference"] else ""))
            continue
        sm, sn = r["config"]["super_mn"]
        lines.append(f"{r['config']['order']:<14}{f'{sm}x{sn}':>8}{_fmt(r['model']):>9}{_fmt(r['hardware']):>8}"
                     f"{_fmt(r['difference']):>7}  {_verdict(r['agree']):<9}{_fmt(r['dram_model_over_ncu']):>15}"
                     f"{_fmt(r['ncu_lts_t_sector_hit_rate_pct']):>10}{_fmt(r['ncu_time_ms']):>7}")
    return "\n".join(lines)


def compare(ncu_dir: Path, out: Path | None, rank_tol: float) -> int:
    plan_path = ncu_dir / "plan.tsv"
    if not plan_path.is_file():
        sys.exit(f"{plan_path} is missing: scripts/h200_model_checks.sh writes it (--plan).")
    configs = [Config.from_line(line) for line in plan_path.read_text().splitlines() if line.strip()]
    for config in configs:
        built = instantiation(config.rung, config.M, config.N, config.K, config.super_mn)
        if built != config.kernel:
            sys.exit(f"{config.name}: the ncu run profiled {config.kernel}, but this tree builds {built} (the "
                     "rung's tiles changed since); compare with the tree the run was made from.")
    prov = ncu_provenance(ncu_dir)
    if "gpu" not in prov:
        print(f"warning: {ncu_dir / 'doctor.json'} is missing or names no GPU; the provenance's GPU fields "
              "describe this machine instead", file=sys.stderr)
    l2_bytes = prov.get("l2_bytes") or H200_L2_BYTES
    if l2_bytes % (128 * 16):
        l2_bytes = H200_L2_BYTES
    sm_count = prov.get("sm_count") or H200_SMS

    bank, l2, missing = [], [], []
    for config in configs:
        metrics = measured(ncu_dir, config)
        if not metrics:
            missing.append(config.name)
            continue
        if config.kind == "banks":
            bank += bank_records(config, metrics)
        else:
            l2.append(l2_record(config, metrics, l2_bytes=l2_bytes, sm_count=sm_count))
    if l2:
        l2.append(ranking_record(l2, rank_tol))
    written = []
    for kind, records in (("model_banks", bank), ("model_l2", l2)):
        if records:
            written.append(write_run(records, kind=kind, folder=out, extra=prov))

    bank_configs = [c for c in configs if c.kind == "banks"]
    print(f"\nshared-memory banks at {bank_configs[0].M}^3 (model = sim.main_loop_bank_conflicts; "
          "ncu sass counters preferred, n/c = not comparable):" if bank_configs else "")
    print(bank_table(bank, bank_configs))
    print(f"\nL2, rung {L2_RUNG} (model = sim.l2_model; ncu = read lookups of the SMs; agree within "
          f"{L2_TOLERANCE_POINTS:g} points):")
    print(l2_table(l2))
    for name in missing:
        print(f"NO DATA: {name} (see {ncu_dir / (name + '.log')})")
    for path in written:
        print(f"written: {path}")
    verdicts = [r["agree"] for r in bank + l2 if r["agree"] is not None]
    return 1 if missing or not all(verdicts) else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plan", action="store_true", help="print the configurations to profile and exit")
    p.add_argument("--bank-size", type=int, default=BANK_SIZE)
    p.add_argument("--l2-size", type=int, default=L2_SIZE)
    p.add_argument("--ncu-dir", type=Path, help="folder of the ncu CSVs, plan.tsv and doctor.json")
    p.add_argument("--out", type=Path, help="folder for the results JSON (default results/)")
    p.add_argument("--rank-tol", type=float, default=1.0, help="hit rates this close (points) rank as ties")
    args = p.parse_args(argv)
    if args.plan:
        for config in plan(args.bank_size, args.l2_size):
            print(config.line())
        return 0
    if not args.ncu_dir:
        p.error("pass --plan, or --ncu-dir DIR with the CSVs of scripts/h200_model_checks.sh")
    return compare(args.ncu_dir, args.out, args.rank_tol)


if __name__ == "__main__":
    sys.exit(main())
