"""What runs on a target, rung by rung: ``hgemm-course doctor --arch sm_XX`` and ``compile --arch sm_XX``.

For each rung: whether the target runs it and, if not, the one line that says why; where it does, the
configuration it is sized to (tile, stages, shared memory) and what ptxas made of it (registers, spills),
from a real compile for that target. No GPU is needed: NVRTC compiles for any architecture it knows.
"""
from __future__ import annotations

from .build import CompileError
from .ladder import registry
from .target import Target


def kernel_row(kernel, t: Target) -> dict:
    """One sized kernel of a rung, compiled for ``t``: its configuration and ptxas's resource report."""
    row = {"kernel": kernel.name_expression, "arch": kernel.arch, "threads": kernel.threads,
           "smem_dynamic": kernel.smem_bytes, "from_ptx": kernel.arch != t.arch}
    try:
        res = kernel.compile().resources_of(kernel.name_expression)
    except CompileError as exc:
        return {**row, "error": str(exc).splitlines()[0]}
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
TARGETS_BEGIN = "<!-- targets-table:begin (written by `hgemm_course.support.targets_markdown()`; do not edit by hand) -->"
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
    from .target import named

    targets = [named(a) for a in arches]
    lines = ["| rung | " + " | ".join(f"{t.arch} ({t.gpu})" for t in targets) + " |",
             "|---|" + "---|" * len(targets)]
    for rung in registry().values():
        lines.append(f"| {rung.id} {rung.slug} | " + " | ".join(_cell(rung, t) for t in targets) + " |")
    return "\n".join(lines)
