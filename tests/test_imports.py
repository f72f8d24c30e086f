"""The package's imports run one way: no module imports itself through others, and its halves import only
downward: the library (what gemm() needs) and the models under it (sim/) import nothing of measurement or of the
course, and measurement imports nothing of the course (viz/, check/ and course/).

Read from the source with ast, not by importing: every ``import`` and ``from ... import`` statement counts, at a
module's top and inside its functions alike, since a function-level import is still a dependency (it only runs
later). ``from . import device`` counts as an import of the module ``device``; ``from .ladder import get`` as one of
the package ``ladder`` (its ``__init__``). Imports through ``importlib`` by a computed name are not seen.
"""
from __future__ import annotations

import ast

import pytest

from hgemm_course.library.paths import PACKAGE_DIR

PACKAGE = PACKAGE_DIR.name

# what each lower half may import of the package; the course's halves (course/, viz/, check/) may import anything
MAY_IMPORT = {
    "library": ("library", "sim"),
    "sim": ("sim", "library.target", "library.geometry", "library.plan_constants", "library.device", "library.toolchain", "library.errors"),
    "measurement": ("library", "sim", "measurement"),
}
# what draws or runs notebooks: the course's, never the library's or measurement's
COURSE_ONLY = {"matplotlib", "nbformat", "nbclient", "sphinx", "myst_nb", "IPython", "jupyter_client"}


def package_modules() -> dict[str, tuple[ast.Module, bool]]:
    """Every module of the package by its dotted name (a package by its own name, not ``...__init__``): its
    syntax tree, and whether it is a package."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(PACKAGE_DIR).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (ast.parse(path.read_text(), filename=str(path)), is_package)
    return modules


def imported_modules(name: str, tree: ast.Module, known: set[str], is_package: bool) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in its source."""
    here = name.split(".") if is_package else name.split(".")[:-1]       # what a relative import starts from
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            origin = ".".join(base + ([node.module] if node.module else []))
            submodules = [f"{origin}.{alias.name}" for alias in node.names if f"{origin}.{alias.name}" in known]
            targets = submodules + ([origin] if len(submodules) < len(node.names) else [])
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports."""
    modules = package_modules()
    return {name: imported_modules(name, tree, set(modules), is_package)
            for name, (tree, is_package) in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules (Tarjan's algorithm), each as a path back to its start."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path_back(graph, group) for group in groups]


def _path_back(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group (breadth first)."""
    start = min(group)
    came_from = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    path = [v]
                    while came_from[path[-1]] is not None:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w not in came_from:
                    came_from[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{sorted(group)} is no cycle")


def test_the_walk_sees_known_imports():
    """The walk finds what the source says: a top-level relative import, a function-level one, a package's."""
    graph = import_graph()
    assert f"{PACKAGE}.measurement.shapes" in graph[f"{PACKAGE}.course.cli"]      # from ..measurement.shapes import
    assert f"{PACKAGE}.library.ladder.r12_streamk" in graph[f"{PACKAGE}.library.plan"]   # inside units_here()
    assert f"{PACKAGE}.sim.waves" in graph[f"{PACKAGE}.sim"]        # the package sim's __init__


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def _half(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def _may_import(half: str, module: str) -> bool:
    inside = module.removeprefix(f"{PACKAGE}.")
    return any(inside == top or inside.startswith(top + ".") for top in MAY_IMPORT[half])


@pytest.mark.parametrize("half", sorted(MAY_IMPORT))
def test_each_half_imports_only_downward(half):
    graph = import_graph()
    climbs = [f"{module} imports {target}" for module in sorted(graph) if _half(module) == half
              for target in sorted(graph[module]) if not _may_import(half, target)]
    assert not climbs, "\n".join(climbs)


@pytest.mark.parametrize("half", sorted(MAY_IMPORT))
def test_the_library_and_measurement_draw_nothing(half):
    drawn = []
    for module, (tree, _) in package_modules().items():
        if _half(module) != half:
            continue
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            drawn += [f"{module} imports {n}" for n in names if n.split(".")[0] in COURSE_ONLY]
    assert not drawn, "\n".join(drawn)


def test_every_module_lives_in_a_half():
    loose = sorted(p.name for p in PACKAGE_DIR.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules at the package's top: {loose}; each belongs in library/, measurement/ or course/"
    assert {_half(m) for m in import_graph() if _half(m)} == {"library", "sim", "measurement", "course", "viz",
                                                                "check"}


def test_the_package_top_imports_only_the_library():
    assert {_half(m) for m in import_graph()[PACKAGE]} <= {"library"}


def test_the_layer_rule_sees_a_climb():
    assert not _may_import("library", f"{PACKAGE}.course.here_or_recorded")
    assert not _may_import("sim", f"{PACKAGE}.measurement.roofline")
    assert _may_import("library", f"{PACKAGE}.sim.waves")
    assert f"{PACKAGE}.library.plan" in import_graph()[f"{PACKAGE}.library.api"]
