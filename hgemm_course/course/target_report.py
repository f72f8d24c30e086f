"""What runs on a target, rung by rung: ``hgemm-course doctor``, ``list``, ``compile`` and ``plan``.

For each rung: whether the target runs it and, if not, the one line that says why; where it does, the
configuration it is sized to (tile, stages, shared memory) and what ptxas made of it (registers, spills),
from a real compile for that target. No GPU is needed: NVRTC compiles for any architecture it knows.
Each ``*_command`` takes the command's options as keywords, prints, and returns the exit status.
"""
from __future__ import annotations

import json

from ..library.build import CompileError
from ..library.ladder import registry
from ..library.target import Target


def kernel_row(kernel, t: Target) -> dict:
    """One sized kernel of a rung, compiled for ``t``: its configuration and ptxas's resource report."""
    row = {"kernel": kernel.name_expression, "arch": kernel.arch, "threads": kernel.threads,
           "smem_dynamic": kernel.smem_bytes, "from_ptx": kernel.arch != t.arch}
    try:
        res = kernel.compile().resources_of(kernel.name_expression)
    except CompileError as exc:
        return {**row, "error": str(exc).splitlines()[0]}
    except KeyError as exc:                     # compiled, but ptxas said nothing of it
        return {**row, "error": exc.args[0]}
    return {**row, "registers": res.registers, "smem_static": res.smem_static, "spill_bytes": res.spills,
            "stack_frame": res.stack_frame}


def rung_rows(t: Target) -> list[dict]:
    """Every rung on ``t``: ``{"rung", "slug", "runs", "why", "kernels": [kernel_row, ...]}``."""
    rows = []
    for rung in registry().values():
        why = rung.refusal(t)
        kernels = [] if why is not None else [kernel_row(k, t) for k in rung.kernels(t)]
        rows.append({"rung": rung.id, "slug": rung.slug, "runs": why is None, "why": why, "kernels": kernels,
                     "backend": rung.backend})
    return rows


def format_rung_rows(t: Target, rows: list[dict]) -> str:
    """doctor's table: one line per kernel (or per rung that does not run), widths fixed."""
    lines = [f"What runs on {t.label()}: {t.smem_per_block // 1024} KiB of shared memory per CTA, "
             f"{t.sm_count} SMs{'' if t.present else ' on the GPU named first'}",
             f"{'rung':<5} {'':<4} {'kernel (template arguments)':<52} {'smem':>8} {'regs':>5} {'spills':>6}  built as"]
    for r in rows:
        if not r["runs"]:
            lines.append(f"{r['rung']:<5} {'no':<4} {r['why']}")
        elif r["backend"] == "numba":
            lines.append(f"{r['rung']:<5} {'yes':<4} Numba CUDA (Python): compiled by Numba for the GPU when it runs")
        for k in r["kernels"]:
            if "error" in k:
                lines.append(f"{r['rung']:<5} {'no':<4} COMPILE ERROR: {k['error']}")
                continue
            built = f"PTX for {k['arch']} (JIT)" if k["from_ptx"] else f"cubin for {k['arch']}"
            lines.append(f"{r['rung']:<5} {'yes':<4} {k['kernel'][:52]:<52} {k['smem_dynamic']:>8} {k['registers']:>5} "
                         f"{k['spill_bytes']:>6}  {built}")
    return "\n".join(lines)


# README's table of what runs where: the architectures a learner is most likely to bring, oldest first.
README_ARCHES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100", "sm_120")
TARGETS_BEGIN = "<!-- targets-table:begin (written by `hgemm_course.course.target_report.targets_markdown()`; do not edit by hand) -->"
TARGETS_END = "<!-- targets-table:end -->"


def _cell(rung, t: Target) -> str:
    if rung.refusal(t) is not None:
        return f"no (needs {rung.arch}{'' if rung.arch.endswith('a') else ' or later'})"
    kernels = rung.kernels(t)
    if not kernels:
        return "yes"
    k = kernels[0]
    bm, bn, *_ = k.template_args
    stages = f", {k.template_args[5]} stages" if rung.id <= "07" else ""
    return f"{bm}x{bn}{stages}, {k.smem_bytes // 1024} KiB"


def targets_markdown(arches=README_ARCHES) -> str:
    """Rung by architecture: the tile, ring and shared memory each rung is sized to there, or what it needs."""
    from ..library.target import named

    targets = [named(a) for a in arches]
    lines = ["| rung | " + " | ".join(f"{t.arch} ({t.gpu})" for t in targets) + " |",
             "|---|" + "---|" * len(targets)]
    for rung in registry().values():
        lines.append(f"| {rung.id} {rung.slug} | " + " | ".join(_cell(rung, t) for t in targets) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the commands


def doctor_command(arch: str | None = None, *, as_json: bool = False) -> int:
    """The machine (without ``arch``), and for its GPU or the ``arch`` target what runs there and how it is sized."""
    from ..library import device, target

    if arch:
        t = target.named(arch)
        rows = rung_rows(t)
        print(json.dumps({"target": t.as_dict(), "rungs": rows}, indent=1) if as_json else format_rung_rows(t, rows))
        return 0
    report = device.machine_report()
    here = target.present()
    rows = rung_rows(here) if here else None
    if as_json:
        print(json.dumps({**report.as_dict(), **({"target": here.as_dict(), "rungs": rows} if here else {})},
                         indent=1))
        return 0
    print(device.format_report(report))
    if here:
        print("\n" + format_rung_rows(here, rows))
    return 0


def list_command(*, as_json: bool = False) -> int:
    """The rungs of the ladder: a table with aligned columns, or JSON."""
    items = [r.as_dict() for r in registry().values()]
    if as_json:
        print(json.dumps(items, indent=1))
        return 0
    rows = [("rung", "slug", "needs", "title")] + [
        (r["rung"], r["slug"], r["needs"] + (", or the simulator" if r["cudasim"] else ""), r["title"]) for r in items]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for *cells, title in rows:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(cells, widths)), title, sep="  ")
    return 0


def compile_report_rows(t: Target | None = None) -> list[dict]:
    """Compile every NVRTC rung for the target ``t`` (default: the current one), each sized for it; one row per
    kernel with the resource report, or per rung the target cannot run with the reason."""
    from ..library.target import current

    t = t or current()
    rows = []
    for r in rung_rows(t):
        if r["backend"] != "nvrtc":
            continue
        if not r["runs"]:
            rows.append({"rung": r["rung"], "kernel": registry()[r["rung"]].source, "not_for_target": r["why"]})
        rows += [{"rung": r["rung"], **k} for k in r["kernels"]]
    return rows


def format_compile_rows(rows) -> str:
    lines = [f"{'rung':<5} {'kernel':<56} {'regs':>5} {'smem':>8} {'dyn smem':>9} {'spills':>7}"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['rung']:<5} {r['kernel']:<56} COMPILE ERROR: {r['error']}")
        elif "not_for_target" in r:
            lines.append(f"{r['rung']:<5} not for this target: {r['not_for_target']}")
        else:
            lines.append(f"{r['rung']:<5} {r['kernel'][:56]:<56} {r['registers']:>5} {r['smem_static']:>8} "
                         f"{r['smem_dynamic']:>9} {r['spill_bytes']:>7}")
    return "\n".join(lines)


def compile_command(arch: str | None = None, *, as_json: bool = False) -> int:
    """Compile every CUDA rung for ``arch`` (default: this GPU's, or the H200's without one); 1 on a compile error."""
    from ..library.target import current, named

    t = named(arch) if arch else current()
    rows = compile_report_rows(t)
    if as_json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"Every CUDA rung compiled for {t.label()}, each sized for its shared memory:")
        print(format_compile_rows(rows))
    return 1 if any("error" in r for r in rows) else 0


def plan_command(shapes, *, units: int | None = None, as_json: bool = False) -> int:
    """Which kernel gemm() runs for each (M, N, K) shape, and why: the plan's choice and the model's figures. On a
    GPU the plan's rungs do not run on, the one rung gemm() runs there instead."""
    from ..library import api, target
    from ..library import padded as pad
    from ..library.plan import plan, planned_rung

    here = target.runnable()
    if here is not None and (why := planned_rung().refusal(here)) is not None:
        print(f"gemm() on {here.describe()} runs rung {api._rung(None).id} at every shape: the plan chooses between "
              f"rungs 11 and 12, which need {why.split(' needs ', 1)[1]}.")
        return 0
    padded = [pad.shape(planned_rung(), *shape) for shape in shapes]    # the shape gemm() runs
    plans = [plan(*shape, units=units) for shape in padded]
    if as_json:
        print(json.dumps([p.as_dict() | ({"asked": list(shape)} if tuple(shape) != (p.M, p.N, p.K) else {})
                          for shape, p in zip(shapes, plans)], indent=1))
        return 0
    for shape, p in zip(shapes, plans):
        options = "".join(f", {k}={v}" for k, v in p.options_text().items())
        asked = "x".join(map(str, shape))
        pad = (f"{asked} runs zero-padded to {p.M}x{p.N}x{p.K} (TMA needs rows of 16-byte multiples; a padded N "
               f"or K goes to whole {pad.PAD_MULTIPLE}-wide tiles); "
               if tuple(shape) != (p.M, p.N, p.K) else "")
        print(f"{pad}{p.M}x{p.N}x{p.K}: rung {p.rung}{options}. {p.reason}")
        for name, value in p.efficiency.items():
            print(f"    {name:<22} {value:6.1%} of the GPU busy (model)")
    return 0

