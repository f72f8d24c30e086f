"""The package's imports run one way: no module imports itself through others.

Read from the source with ast, not by importing: every ``import`` and ``from ... import`` statement counts, at a
module's top and inside its functions alike, since a function-level import is still a dependency (it only runs
later). ``from . import device`` counts as an import of the module ``device``; ``from .ladder import get`` as one of
the package ``ladder`` (its ``__init__``). Imports through ``importlib`` by a computed name are not seen.
"""
from __future__ import annotations

import ast

from hgemm_course.paths import PACKAGE_DIR

PACKAGE = PACKAGE_DIR.name


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
    assert f"{PACKAGE}.shapes" in graph[f"{PACKAGE}.cli"]           # from .shapes import ... at the top
    assert f"{PACKAGE}.ladder.r12_streamk" in graph[f"{PACKAGE}.plan"]   # inside units_here()
    assert f"{PACKAGE}.sim.waves" in graph[f"{PACKAGE}.sim"]        # the package sim's __init__


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)
