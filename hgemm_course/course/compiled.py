"""What the compiler makes of a rung, no kernel launched: its kernels sized and compiled for a target (registers,
shared memory, spills: :func:`compiled_kernels`, printed by :func:`compile_report`), every rung on each known target
(:func:`where_rows`, printed by :func:`what_runs_where`), the block that builds for the recorded H200
(:func:`recorded_build`), and probes of what ptxas makes of a one-line change (:func:`compile_edited`,
:func:`wgmma_reports`). NVRTC compiles for any architecture it knows: no GPU is needed.
"""
from __future__ import annotations

import contextlib
import re

from ..library import target
from ..library.ladder import get, registry


@contextlib.contextmanager
def recorded_build():
    """Build the block's kernels for the recorded H200's target (:data:`target.RECORDED`): the configurations
    the chapter's prose and recorded figures describe, whatever GPU is here. Where the current target is
    another, one line says so and how to see its own (``hgemm-course compile``). Nothing in the block may
    launch a kernel: it is for compiling, counting and reading."""
    here = target.current()
    if (here.arch, here.smem_per_block) != (target.RECORDED.arch, target.RECORDED.smem_per_block):
        print(f"compiled for {target.RECORDED.describe()}, where the chapter's figures were recorded, not for "
              f"{here.describe()}{f' ({here.arch})' if here.present else ''}; `hgemm-course compile` shows what "
              f"{here.arch} builds")
    with target.use(target.RECORDED):
        yield target.RECORDED


# ---------------------------------------------------------------- one rung on one target

def compiled_kernels(rung_id: str, t: target.Target | None = None) -> dict:
    """What the rung's kernels sized for ``t`` (default: the current target) compile to, not run:
    ``{"rung", "target", "refusal"`` (the rung's for ``t``, None where ``t`` runs it), ``"numba"`` (a Numba rung,
    which Numba compiles only when it runs), ``"kernels"`` (registers, dynamic shared memory, spills of each:
    :func:`hgemm_course.course.target_report.kernel_row`)``}``."""
    from .target_report import kernel_row

    t = t or target.current()
    rung = get(rung_id)
    report = {"rung": rung.id, "target": t, "refusal": rung.refusal(t), "numba": False, "kernels": []}
    if report["refusal"] is None:
        kernels = rung.kernels(t)
        report["numba"] = not kernels
        report["kernels"] = [kernel_row(k, t) for k in kernels]
    return report


def format_compiled(report: dict) -> str:
    """:func:`compiled_kernels` as the lines a chapter prints: one per kernel, or the one line that says why none."""
    if report["refusal"] is not None:
        return f"{report['refusal']}; not compiled"
    if report["numba"]:
        return f"rung {report['rung']} is Numba CUDA (Python), which Numba compiles for the GPU when it runs; not run"
    t = report["target"]
    lines = [f"rung {report['rung']} compiled for {t.describe()}{f' ({t.arch})' if t.present else ''}, not run:"]
    for k in report["kernels"]:
        if "error" in k:
            lines.append(f"  {k['kernel']}: COMPILE ERROR: {k['error']}")
            continue
        built = f"PTX for {k['arch']}, JIT-compiled by the driver" if k["from_ptx"] else f"cubin for {k['arch']}"
        lines.append(f"  {k['kernel']} ({built}): {k['registers']} registers, {k['smem_dynamic']} bytes of dynamic "
                     f"shared memory, {k['spill_bytes']} bytes spilled")
    return "\n".join(lines)


def compile_report(rung_id: str, t: target.Target | None = None) -> list[dict]:
    """Print :func:`compiled_kernels` (:func:`format_compiled`); returns the kernels' rows."""
    report = compiled_kernels(rung_id, t)
    print(format_compiled(report))
    return report["kernels"]


# ---------------------------------------------------------------- every rung on every target

_STAGES = re.compile(r"^\w+<(\d+), (\d+), \d+, (\d+)")     # TmaRing<BM, BN, BK, STAGES>, SwizzledStages<...>, ...


def _config(kernel) -> str:
    """A kernel's tiling in a few characters: ``256x128 s4`` (a 256x128 tile of C per CTA, a 4-stage ring),
    read from the shared-memory struct it is built with; its name where it has none."""
    m = _STAGES.match(kernel.smem_layout or "")
    return f"{m[1]}x{m[2]} s{m[3]}" if m else kernel.name_expression


def where_rows(targets) -> list[dict]:
    """Every rung on each of ``targets``, from real compiles for it with NVRTC, no GPU needed
    (:func:`hgemm_course.course.target_report.rung_rows`, a few seconds per target): one row per (rung, target),
    ``{"rung", "slug", "arch", "runs", "why", "config", "kernels"}``, ``config`` the tile and stages the rung is
    sized to there (or the architecture it needs), ``why`` the rung's refusal for that target (None where it runs)."""
    from .target_report import rung_rows

    rungs = registry()
    rows = []
    for t in targets:
        for r in rung_rows(t):
            rung = rungs[r["rung"]]
            errors = [k["error"] for k in r["kernels"] if "error" in k]
            if not r["runs"]:
                config = f"needs {rung.arch}"
            elif r["backend"] == "numba":
                config = "Numba"
            elif errors:
                config = "COMPILE ERR"
            else:
                first = rung.kernels(t)[0]
                config = _config(first) + ("*" if r["kernels"][0]["from_ptx"] else "")
            rows.append({"rung": r["rung"], "slug": r["slug"], "arch": t.arch, "runs": r["runs"] and not errors,
                         "why": r["why"] or (errors[0] if errors else None), "config": config,
                         "kernels": r["kernels"]})
    return rows


def format_where(targets, rows: list[dict]) -> str:
    """:func:`where_rows` as a table, rung by target, then the targets, then each refusal once with the targets it
    holds for."""
    width = max(13, *(len(r["config"]) + 1 for r in rows))
    cell = {(r["rung"], r["arch"]): r for r in rows}
    lines = [f"{'rung':<19}" + "".join(f"{t.arch:>{width}}" for t in targets)]
    for rid, rung in registry().items():
        lines.append(f"{rid + ' ' + rung.slug:<19}" + "".join(f"{cell[rid, t.arch]['config']:>{width}}" for t in targets))
    lines.append("BMxBN sN: a BM x BN tile of C per CTA and N shared-memory stages, sized to the target's shared memory")
    if any(r["config"].endswith("*") for r in rows):
        lines.append("*: built as PTX for the oldest architecture with the rung's features (this NVRTC does not know "
                     "the target's own), which the driver JIT-compiles")
    lines += [f"{t.arch}: {t.gpu}, {t.smem_per_block // 1024} KiB of shared memory per CTA" for t in targets]
    lines.append("why not:")
    by_target = {t.arch: t for t in targets}
    reasons: dict[str, list[str]] = {}
    for r in rows:
        if r["runs"]:
            continue
        lacks = by_target[r["arch"]].missing(get(r["rung"]).needs)
        # a missing feature's line reads "<rung> needs <features>; <the target> does not have it"
        reasons.setdefault(r["why"].partition("; ")[0] if lacks else r["why"], []).append(r["arch"])
    lines += [f"  {why}: not on {', '.join(arches)}" for why, arches in reasons.items()]
    return "\n".join(lines)


def what_runs_where(arches=None) -> list[dict]:
    """Print :func:`where_rows` of the named targets (default: all of :data:`target.KNOWN`), :func:`format_where`;
    returns the rows."""
    targets = [target.named(a) for a in arches] if arches is not None else list(target.KNOWN.values())
    rows = where_rows(targets)
    print(format_where(targets, rows))
    return rows


# ---------------------------------------------------------------- what ptxas makes of a change

_WGMMA_REPORT = re.compile(r"\((C75\d\d)\) (.*?)(?: in (?:the )?function '[^']*')?(?: in line \d+)?$")


def wgmma_reports(log: str) -> list[dict]:
    """ptxas's reports on the wgmma pipeline in a compile log (codes C75xx: a wait it injected, wgmma it
    serialized), ``{"code", "message", "count"}`` each, one per distinct message, the function's mangled name cut."""
    seen: dict[tuple[str, str], int] = {}
    for line in log.splitlines():
        m = _WGMMA_REPORT.search(line.strip())
        if m:
            message = re.sub(r"around line \d+", "around line N", m[2]).rstrip(" .")
            seen[(m[1], message)] = seen.get((m[1], message), 0) + 1
    return [{"code": code, "message": message, "count": n} for (code, message), n in seen.items()]


def compile_edited(rung_id: str, old: str, new: str):
    """Rung ``rung_id``'s default kernel compiled for the recorded H200 with the one line ``old`` of its source
    replaced by ``new`` (a probe of what the compiler makes of a change, never launched). A ValueError says when
    ``old`` is not exactly one line of the source."""
    from ..library.build import KERNELS_DIR, compile_cuda

    rung = get(rung_id)
    text = rung.kernel_path.read_text()
    if text.count(old) != 1:
        raise ValueError(f"{old!r} occurs {text.count(old)} times in {rung.kernel_path.name}, not once")
    with target.use(target.RECORDED):
        return compile_cuda(text.replace(old, new), name_expressions=rung.name_expressions[:1],
                            include_dirs=(KERNELS_DIR,))
