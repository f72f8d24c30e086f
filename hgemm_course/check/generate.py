"""Write ``exercises/`` and ``solutions/`` from one source per exercise, nbgrader style.

The sources live in ``hgemm_course/check/sources/``: each is the solution with the learner's
regions marked by comment lines (``#`` in Python, ``//`` in CUDA)::

    // BEGIN SOLUTION
    // EXERCISE: // TODO: what to write, the problem and not the answer
    // EXERCISE: const int tile = 0;              (placeholder code that still compiles)
    ... the solution's lines ...
    // END SOLUTION

The ``EXERCISE:`` lines right after ``BEGIN SOLUTION`` are the learner's stub, each written at the
marker's indentation. The exercise keeps the markers around the stub (the learner sees where to
write, the checker where the regions are); the solution is the source without any marker line.

A kernel exercise comes from the rung's kernel itself: its source holds the exercise's header
comment, then the line ``// INSERT kernels/kNN_name.cu``, which stands for that kernel file with
its own marked regions, then optional extra questions. The markers are comment lines, so the
kernels compile exactly as without them, and ``hgemm-course diff`` leaves them out. Two options
follow the file name, each after a ``;``: ``inline a.cuh b.cuh`` puts those PTX snippet headers, with
their own marked regions, in place of the kernel's ``#include`` of them (the learner writes the asm);
``solve 1 3`` leaves the kernel file's own regions 1 and 3 (counted from 1) solved, for the exercise
on the same kernel that asks for them.

    python -m hgemm_course.check.generate             # rewrite exercises/ and solutions/
    python -m hgemm_course.check.generate --out DIR   # write DIR/exercises and DIR/solutions

A pair found in ``exercises/`` and ``solutions/`` with no source yet (the solution with its
markers, the exercise with its stubs) is first turned into a source.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..library.paths import KERNELS_DIR, PACKAGE_DIR, PTX_SNIPPETS_DIR, REPO_ROOT

SOURCES_DIR = PACKAGE_DIR / "check" / "sources"
COMMENT = {".py": "#", ".cu": "//"}
INSERT = "// INSERT kernels/"
_MARKER = re.compile(r"^\s*(#|//) ((BEGIN|END) SOLUTION\s*$|EXERCISE:)")


def is_marker(line: str) -> bool:
    """A BEGIN SOLUTION, END SOLUTION or EXERCISE: line (what ``hgemm-course diff`` leaves out)."""
    return bool(_MARKER.match(line))


def without_markers(text: str) -> str:
    """``text`` with every marker line removed: the solution, or the kernel as it compiles."""
    return "".join(line for line in text.splitlines(keepends=True) if not is_marker(line))


@dataclass
class Region:
    """One marked region: the stub the learner starts from and the solution's lines."""

    indent: str
    stub: list[str]        # lines, with their line ends
    solution: list[str]
    before: str            # the last non-blank line before the region (stripped): where it starts
    after: str             # the first non-blank line after it (stripped): where it ends


def parse(text: str, comment: str) -> tuple[list[str], list[Region]]:
    """(the text outside the regions, piece by piece: one piece more than regions; the regions)."""
    outside, regions, current = [], [], []
    region: Region | None = None
    for line in text.splitlines(keepends=True):
        marker = line.strip()
        if marker == f"{comment} BEGIN SOLUTION":
            if region is not None:
                raise ValueError(f"BEGIN SOLUTION inside a region: {line.strip()!r}")
            before = next((piece.strip() for piece in reversed(current) if piece.strip()), "")
            outside.append("".join(current))
            current = []
            region = Region(line[:len(line) - len(line.lstrip())], [], [], before, "")
        elif marker == f"{comment} END SOLUTION":
            if region is None:
                raise ValueError("END SOLUTION without a BEGIN SOLUTION")
            regions.append(region)
            region = None
        elif region is not None:
            head = f"{region.indent}{comment} EXERCISE:"
            if line.startswith(head) and not region.solution:
                stub = line.rstrip("\n")[len(head):].removeprefix(" ")
                region.stub.append(region.indent + stub + "\n" if stub else "\n")
            else:
                region.solution.append(line)
        else:
            if regions and not regions[-1].after and line.strip():
                regions[-1].after = line.strip()
            current.append(line)
    if region is not None:
        raise ValueError("BEGIN SOLUTION without an END SOLUTION")
    outside.append("".join(current))
    return outside, regions


def exercise_text(source: str, comment: str) -> str:
    """The learner's file: each region's stub between the markers."""
    outside, regions = parse(source, comment)
    out = [outside[0]]
    for region, piece in zip(regions, outside[1:]):
        out += [f"{region.indent}{comment} BEGIN SOLUTION\n", *region.stub, f"{region.indent}{comment} END SOLUTION\n",
                piece]
    return "".join(out)


def solution_text(source: str, comment: str) -> str:
    """The solution: the source without its marker and stub lines."""
    outside, regions = parse(source, comment)
    out = [outside[0]]
    for region, piece in zip(regions, outside[1:]):
        out += [*region.solution, piece]
    return "".join(out)


def expand(path: Path) -> str:
    """The source at ``path`` with each ``// INSERT kernels/FILE[; inline H ...][; solve N ...]`` line replaced
    by that kernel file, the snippet headers named put in place of its ``#include`` of them, the regions
    numbered left solved."""
    out = []
    for line in path.read_text().splitlines(keepends=True):
        if line.startswith(INSERT):
            name, *options = (part.split() for part in line[len(INSERT):].split(";"))
            words = {option[0]: option[1:] for option in options}
            if not set(words) <= {"inline", "solve"} or len(name) != 1:
                raise ValueError(f"{path.name}: cannot read {line.strip()!r}")
            text = _solved((KERNELS_DIR / name[0]).read_text(), {int(n) for n in words.get("solve", [])})
            for header in words.get("inline", []):
                text = _inlined(text, header, path.name)
            out.append(text)
        else:
            out.append(line)
    return "".join(out)


def _inlined(text: str, header: str, shown: str) -> str:
    """``text`` with its ``#include "header"`` line replaced by the snippet header's text (less ``#pragma once``)."""
    include = f'#include "{header}"\n'
    if include not in text:
        raise ValueError(f"{shown}: the kernel does not include {header}")
    body = "".join(line for line in (PTX_SNIPPETS_DIR / header).read_text().splitlines(keepends=True)
                   if line.strip() != "#pragma once")
    return text.replace(include, body, 1)


def _solved(text: str, numbers: set[int]) -> str:
    """``text`` with its regions ``numbers`` (counted from 1) solved: their marker and stub lines dropped."""
    out, region, stub = [], 0, False
    for line in text.splitlines(keepends=True):
        marker = line.strip()
        if marker == "// BEGIN SOLUTION":
            region += 1
            stub = region in numbers
            if stub:
                continue
        elif marker == "// END SOLUTION" and stub:
            stub = False
            continue
        elif stub and marker.startswith("// EXERCISE:"):
            continue
        out.append(line)
    if not numbers <= set(range(1, region + 1)):
        raise ValueError(f"the kernel has {region} regions, not {max(numbers)}")
    return "".join(out)


def sources(folder: Path = SOURCES_DIR) -> dict[str, Path]:
    """Exercise file name (``ex05_swizzle.py``) -> its source, in course order."""
    return {p.name: p for p in sorted(folder.iterdir()) if p.suffix in COMMENT}


def source_text(file_name: str) -> str:
    """The expanded source of one exercise (``ex09_wgmma_loop.cu``)."""
    return expand(SOURCES_DIR / file_name)


def regions_of(file_name: str) -> list[Region]:
    """The marked regions of one exercise, for a checker that reads the learner's code."""
    return parse(source_text(file_name), COMMENT[Path(file_name).suffix])[1]


def extra_count(file_name: str) -> int:
    """How many of a kernel exercise's regions are extra questions: those after the kernel file it inserts."""
    text = (SOURCES_DIR / file_name).read_text()
    if INSERT not in text:
        return 0
    after = text.split(INSERT, 1)[1].split("\n", 1)[-1]
    return len(parse(after, COMMENT[Path(file_name).suffix])[1])


def render(file_name: str) -> tuple[str, str]:
    """(exercise, solution) text of one exercise."""
    text, comment = source_text(file_name), COMMENT[Path(file_name).suffix]
    return exercise_text(text, comment), solution_text(text, comment)


def adopt(exercise: Path, solution: Path) -> str:
    """A source made from a plain pair: the solution with its markers, the exercise with its stubs
    (outside the regions the two must agree)."""
    comment = COMMENT[solution.suffix]
    ex_outside, ex_regions = parse(exercise.read_text(), comment)
    sol_outside, sol_regions = parse(solution.read_text(), comment)
    if not sol_regions or len(ex_regions) != len(sol_regions):
        raise ValueError(f"{solution.name}: the solution must mark the same regions as the exercise "
                         f"({len(sol_regions)} in the solution, {len(ex_regions)} in the exercise).")
    if ex_outside != sol_outside:
        raise ValueError(f"{solution.name}: exercise and solution differ outside the marked regions.")
    out = [sol_outside[0]]
    for stubbed, solved, piece in zip(ex_regions, sol_regions, sol_outside[1:]):
        indent = solved.indent
        out.append(f"{indent}{comment} BEGIN SOLUTION\n")
        for line in stubbed.solution:         # the exercise's region body is its stub
            body = line.rstrip("\n").removeprefix(indent)
            out.append(f"{indent}{comment} EXERCISE: {body}\n" if body.strip() else f"{indent}{comment} EXERCISE:\n")
        out += [*solved.solution, f"{indent}{comment} END SOLUTION\n", piece]
    return "".join(out)


def adopt_plain(root: Path, folder: Path = SOURCES_DIR) -> list[str]:
    """Turn every plain pair in ``root``/exercises and ``root``/solutions into a source: a pair without a
    source, or one whose solution carries markers (a generated solution never does, so its markers mean
    someone edited the pair by hand since). Their names."""
    known = sources(folder)
    adopted = []
    for exercise in sorted((root / "exercises").iterdir()):
        solution = root / "solutions" / exercise.name
        if not (exercise.suffix in COMMENT and solution.is_file()):
            continue
        if exercise.name not in known or any(is_marker(line) for line in solution.read_text().splitlines()):
            (folder / exercise.name).write_text(adopt(exercise, solution))
            adopted.append(exercise.name)
    return adopted


def generate(out: Path) -> list[Path]:
    """Write ``out``/exercises and ``out``/solutions from the sources; the files written."""
    written = []
    for name in sources():
        exercise, solution = render(name)
        for folder, text in (("exercises", exercise), ("solutions", solution)):
            path = out / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hgemm_course.check.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write OUT/exercises and OUT/solutions (default: the checkout's)")
    args = parser.parse_args(argv)
    if args.out is None and REPO_ROOT is None:
        parser.error("there is no checkout here: give --out DIR")
    out = args.out or REPO_ROOT
    if REPO_ROOT is not None:
        for name in adopt_plain(REPO_ROOT):
            print(f"new source: {SOURCES_DIR / name} (from exercises/{name} and solutions/{name})")
    written = generate(out)
    print(f"wrote {len(written)} files under {out}/exercises and {out}/solutions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
