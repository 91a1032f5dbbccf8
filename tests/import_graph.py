"""The first-party import graph of a source tree, read with ``ast`` (nothing is imported or run).

Used by ``test_layering.py``; also a small command for the numbers of a layering change::

    python tests/import_graph.py node/core

A *module* is a ``.py`` file named by its dotted path below the tree's parent (``node/core/vote.py`` is
``node.core.vote``; a package's ``__init__.py`` is the package itself). Only imports that resolve to a
module of the tree are edges: relative imports, and absolute ones spelled through the installed names
(``kraftwire.node.core.api`` is ``node.core.api``). Lazy imports of optional third-party accelerators
are no layering question and are not looked at.

Each edge records where its import statement sits:

* ``top``: in the leading run of the module (docstring, imports, ``if TYPE_CHECKING:`` blocks);
* ``type_checking``: inside an ``if TYPE_CHECKING:`` block (annotations only, never executed);
* ``bottom``: at module level, but after other code (the "import last to break a cycle" trick);
* ``nested``: inside a function, class or other block.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

INSTALLED_PREFIX = {
    "kraftwire.node": "node",
    "kraftwire.codegen": "codegen",
    "kraftwire.records": None,
}
"""Installed dotted names -> names in the source tree (``None``: outside every tree we walk)."""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    where: str  # "top" | "type_checking" | "bottom" | "nested"

    def __str__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target} ({self.where})"


class ImportGraph:
    """Modules of one tree and the first-party imports between them."""

    def __init__(self, tree: Path, root: Path = ROOT) -> None:
        self.tree = tree if tree.is_absolute() else root / tree
        self.base = self.tree.parent
        self.files = {self._module_name(p): p for p in sorted(self.tree.rglob("*.py"))}
        self.package = self._module_name(self.tree / "__init__.py")
        self.edges: list[Edge] = []
        for name, path in self.files.items():
            self.edges.extend(self._edges_of(name, path))

    # -- reading ---------------------------------------------------------------------------------------

    def _module_name(self, path: Path) -> str:
        parts = list(path.relative_to(self.base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def _is_package(self, name: str) -> bool:
        return self.files[name].name == "__init__.py"

    def _resolve(self, name: str) -> str | None:
        """The module ``name`` refers to, if it is one of ours (``a.b.c`` may name ``a.b``'s attribute)."""
        while name:
            if name in self.files:
                return name
            name = name.rpartition(".")[0]
        return None

    def _targets(self, module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            names = [self._absolute(a.name) for a in node.names]
        else:
            if node.level:
                package = module if self._is_package(module) else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                stem = f"{package}.{node.module}" if node.module else package
            else:
                stem = self._absolute(node.module or "")
            # ``from pkg import mod`` imports the module ``pkg.mod`` when there is one.
            names = [
                f"{stem}.{a.name}" if f"{stem}.{a.name}" in self.files else stem for a in node.names
            ]
        found = {self._resolve(n) for n in names if n}
        return sorted(t for t in found if t is not None and t != module)

    @staticmethod
    def _absolute(name: str) -> str:
        for installed, local in INSTALLED_PREFIX.items():
            if name == installed or name.startswith(installed + "."):
                return "" if local is None else local + name[len(installed) :]
        return name

    def _edges_of(self, module: str, path: Path) -> list[Edge]:
        tree = ast.parse(path.read_text(), str(path))
        edges: list[Edge] = []
        leading = True
        for stmt in tree.body:
            if _is_type_checking_block(stmt):
                edges += self._collect(module, stmt.body, "type_checking")  # type: ignore[attr-defined]
                edges += self._collect(module, stmt.orelse, "nested")  # type: ignore[attr-defined]
                continue
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                edges += self._edge_list(module, stmt, "top" if leading else "bottom")
                continue
            if not (leading and _is_docstring(stmt)):
                leading = False
            edges += self._collect(module, [stmt], "nested")
        return edges

    def _collect(self, module: str, stmts: list[ast.stmt], where: str) -> list[Edge]:
        edges: list[Edge] = []
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    edges += self._edge_list(module, node, where)
        return edges

    def _edge_list(self, module: str, node: ast.Import | ast.ImportFrom, where: str) -> list[Edge]:
        return [Edge(module, t, node.lineno, where) for t in self._targets(module, node)]

    # -- questions -------------------------------------------------------------------------------------

    def modules_of(self, package: str) -> list[str]:
        """The modules of ``package`` itself (its ``__init__`` included, its subpackages' not)."""
        return [m for m in self.files if _parent(m, self) == package]

    def arrows(self, within: str | None = None) -> set[tuple[str, str]]:
        """Module -> imported module, optionally only among modules of the package ``within`` itself
        (not its subpackages). ``TYPE_CHECKING`` imports count: a handler that names ``KRaftCore`` in its
        annotations depends on it as much as one that calls it."""
        pairs = {(e.source, e.target) for e in self.edges}
        if within is None:
            return pairs
        return {
            (s, t) for s, t in pairs if _parent(s, self) == within and _parent(t, self) == within
        }

    def misplaced(self, within: str | None = None) -> list[Edge]:
        """Imports that are not at the top of their module (``TYPE_CHECKING`` blocks allowed)."""
        return [
            e
            for e in self.edges
            if e.where in ("bottom", "nested")
            and (within is None or _parent(e.source, self) == within)
        ]

    def adjacency(self, within: str | None = None) -> dict[str, list[str]]:
        adjacency: dict[str, list[str]] = {}
        for s, t in sorted(self.arrows(within)):
            adjacency.setdefault(s, []).append(t)
        return adjacency

    def components(self, within: str | None = None) -> list[list[str]]:
        """The import circles: modules that all reach each other (strongly connected, more than one)."""
        return strongly_connected(self.adjacency(within))

    def cycles(self, within: str | None = None) -> list[list[str]]:
        """One cycle path (first module repeated at the end) per import circle."""
        adjacency = self.adjacency(within)
        return [_cycle_through(component, adjacency) for component in strongly_connected(adjacency)]

    def cross_package_cycles(self) -> list[list[str]]:
        """Cycles whose modules are not all in one package (each package's own cycles are asked for
        separately, with :meth:`cycles`)."""
        return [c for c in self.cycles() if len({_parent(m, self) for m in c}) > 1]

    def back_edges(self, within: str | None = None) -> list[tuple[str, str]]:
        """Edges that point back up a depth-first walk (visiting modules and imports in name order):
        for an acyclic graph there are none, else each one closes at least one cycle."""
        adjacency = self.adjacency(within)
        state: dict[str, int] = {}  # 1: on the walk's stack, 2: done
        back: list[tuple[str, str]] = []
        for start in sorted(adjacency):
            if start in state:
                continue
            state[start] = 1
            stack = [(start, iter(adjacency.get(start, ())))]
            while stack:
                node, children = stack[-1]
                child = next(children, None)
                if child is None:
                    state[node] = 2
                    stack.pop()
                elif state.get(child) == 1:
                    back.append((node, child))
                elif child not in state:
                    state[child] = 1
                    stack.append((child, iter(adjacency.get(child, ()))))
        return back


def _parent(module: str, graph: ImportGraph) -> str:
    return module if graph._is_package(module) else module.rpartition(".")[0]


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _is_type_checking_block(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If):
        return False
    test = stmt.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def strongly_connected(adjacency: dict[str, list[str]]) -> list[list[str]]:
    """Components with more than one module (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    nodes = sorted(set(adjacency) | {t for ts in adjacency.values() for t in ts})
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = adjacency.get(node, [])
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            for child in children:
                if child in on_stack:
                    low[node] = min(low[node], low[child])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _cycle_through(component: list[str], adjacency: dict[str, list[str]]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first inside the component)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in adjacency.get(node, []):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return (
                        [start, *reversed(path[:-1]), start]
                        if len(path) > 1
                        else [start, node, start]
                    )
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def summary(tree: str) -> str:
    graph = ImportGraph(Path(tree))
    package = graph.package
    edges = graph.arrows(package)
    cycles = graph.cycles(package)
    components = graph.components(package)
    where = Counter(
        e.where for e in graph.edges if package is None or _parent(e.source, graph) == package
    )
    lines = [
        f"{tree}: {len(graph.modules_of(package))} modules, "
        f"{len(edges)} import arrows among them",
        f"  modules in import circles: {sum(len(c) for c in components)} in {len(components)} circle(s) "
        f"{[len(c) for c in components]}",
        f"  arrows pointing back up (depth-first): {len(graph.back_edges(package))}",
        f"  imports by place: {dict(sorted(where.items()))}",
    ]
    lines += [f"  cycle: {' -> '.join(c)}" for c in cycles]
    return "\n".join(lines)


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["node/core"]:
        print(summary(arg))
