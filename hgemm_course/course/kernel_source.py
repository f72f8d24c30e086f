"""A kernel's code on the page, read from its file so that it cannot drift: a banner section, a function or a stretch
of lines of a rung's kernel or a PTX snippet header, as it compiles (:func:`read_source`, :func:`read_lines`; printed
by :func:`show_source`, :func:`show_lines`); and the facts of a rung's design that its code states (:func:`code_facts`:
the snippet headers it includes, how far ahead its ring loads, whether its CTAs walk the tiles, how C leaves).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..library.ladder import get
from ..library.paths import PACKAGE_DIR, PTX_SNIPPETS_DIR

_BANNER = re.compile(r"^(\s*)// ---- ([^:]+):")


def source_file(where: str) -> Path:
    """``where`` as a file: a rung id ("04") names its kernel, a snippet header's name ("ldmatrix") its file under
    ptx_snippets/, anything else is a path."""
    if re.fullmatch(r"\d\d", where):
        return get(where).kernel_path
    snippet = PTX_SNIPPETS_DIR / f"{where}.cuh"
    return snippet if snippet.exists() else Path(where)


def shown_name(path: Path) -> str:
    """A source's path as a page names it: relative to the repository where it lies in it."""
    try:
        return path.resolve().relative_to(PACKAGE_DIR.parent).as_posix()
    except ValueError:
        return str(path)


def source_excerpt(text: str, name: str) -> str:
    """The part of a CUDA source named ``name``: a banner section (``// ---- main loop: ...`` up to the next
    banner or the end of its block), or the function or lambda ``name`` with the comment lines and ``template``
    line above it, through its closing brace. A ValueError names what the source lacks."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _BANNER.match(line)
        if m and m[2].strip() == name:
            indent, end = len(m[1]), len(lines)
            for j in range(i + 1, len(lines)):
                stripped = lines[j].lstrip()
                if _BANNER.match(lines[j]) or (stripped and not stripped.startswith("#")
                                                and len(lines[j]) - len(stripped) < indent):
                    end = j
                    break
            return "\n".join(lines[i:end]).rstrip() + "\n"
    head = re.compile(rf"\b{re.escape(name)}\s*(?:\(|=\s*\[)")
    for i, line in enumerate(lines):
        if not head.search(line) or line.lstrip().startswith("//"):
            continue
        rest = "\n".join(lines[i:])
        opening, ending = rest.find("{"), rest.find(";")
        if opening < 0 or 0 <= ending < opening:
            continue                                   # a call or a declaration, not the definition
        depth, end = 0, None
        for j in range(i, len(lines)):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth == 0 and "{" in "\n".join(lines[i:j + 1]):
                end = j
                break
        start = i
        while start > 0 and (lines[start - 1].lstrip().startswith(("//", "template")) and lines[start - 1].strip()):
            start -= 1
        return "\n".join(lines[start:end + 1]) + "\n"
    raise ValueError(f"the source has no banner '// ---- {name}:' and no definition of {name}")


def source_lines(text: str, first: str, last: str) -> str:
    """The lines of a source from the first that contains ``first`` through the next that contains ``last``: a
    stretch of a kernel's body that no banner or function names. A ValueError names what is missing."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if first in line), None)
    end = None if start is None else next((i for i in range(start, len(lines)) if last in lines[i]), None)
    if end is None:
        raise ValueError(f"the source has no line with {first!r} followed by one with {last!r}")
    return "\n".join(lines[start:end + 1]) + "\n"


def _as_compiled(path: Path) -> str:
    """A source as it compiles: without the exercise's region markers."""
    from ..check.generate import without_markers

    return without_markers(path.read_text())


def read_source(where: str, *names: str) -> str:
    """Each named part (:func:`source_excerpt`) of a kernel or snippet source (:func:`source_file`) as it compiles,
    under the file's name."""
    path = source_file(where)
    text, shown = _as_compiled(path), shown_name(path)
    return "\n".join(f"// {shown}: {name}\n{source_excerpt(text, name)}" for name in names)


def read_lines(where: str, first: str, last: str) -> str:
    """:func:`source_lines` of a kernel or snippet source as it compiles, under the file's name."""
    path = source_file(where)
    return f"// {shown_name(path)}\n{source_lines(_as_compiled(path), first, last)}"


def show_source(where: str, *names: str) -> str:
    """Print :func:`read_source`; returns what it printed."""
    out = read_source(where, *names)
    print(out, end="")
    return out


def show_lines(where: str, first: str, last: str) -> str:
    """Print :func:`read_lines`; returns what it printed."""
    out = read_lines(where, first, last)
    print(out, end="")
    return out


# ---------------------------------------------------------------- what a rung's code states of its design

# Comments go before a kernel's code is read for its ring and grid: a comment may say what the code does not.
_CPP_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_REFILL = re.compile(r"\bkt \+ STAGES - (\d+)")              # rungs 07, 09: one loop refills slice kt + STAGES - d
_RELEASE = re.compile(r"\((?:kt|it) - (\d+)\) % STAGES")      # the consumers free slice kt - d while kt runs
_TILE_WALK = re.compile(r"for \(int t = \w+; t < tiles; t \+= \w+\)")   # a persistent CTA's walk over the tiles
_INCLUDE = re.compile(r'^#include "(\w+)\.cuh"', re.M)


def without_comments(text: str) -> str:
    """CUDA source with its // and /* */ comments cut."""
    return _CPP_COMMENT.sub("", text)


def prefetch_distance(code: str) -> str:
    """How many slices ahead of the one being computed the ring loads, as the kernel's code computes it: a kernel
    whose one loop refills slice kt + STAGES - d loads d slices' worth less than the ring holds; a producer that
    refills each stage as soon as the consumers free slice kt - d (while slice kt runs) loads STAGES - d ahead."""
    m = _REFILL.search(code) or _RELEASE.search(code)
    if m is None:
        raise ValueError("the kernel's code names neither a refill of slice kt + STAGES - d nor a release of slice "
                         "kt - d; rung_parameters cannot read its prefetch distance")
    return f"STAGES - {m[1]}"


def code_facts(rung) -> dict:
    """What a rung's kernel source (comments cut) states of its design: the PTX snippet headers it includes but
    common (``headers``), how far ahead its ring loads (``ahead``, :func:`prefetch_distance`), whether its CTAs walk
    the tiles (``walks_tiles``) and whether C leaves by a TMA store (``tma_store``)."""
    code = without_comments(rung.kernel_path.read_text())
    return {"headers": [h for h in _INCLUDE.findall(code) if h != "common"], "ahead": prefetch_distance(code),
            "walks_tiles": _TILE_WALK.search(code) is not None, "tma_store": "tma_store_2d" in code}
