"""The first-party import graph of the installed packages, read with ``ast`` (nothing is imported or run).

Used by ``test_layering.py``; also a small command that prints the graph's numbers::

    python tests/import_graph.py            # circles, arrows across layers, late imports

Modules carry their installed names: pyproject.toml's ``[tool.setuptools.package-dir]`` maps each
installed package to its folder (``kraftwire.node`` is ``node/``), so ``node/core/vote.py`` is
``kraftwire.node.core.vote`` and a package's ``__init__.py`` is the package itself. Every ``.py`` file
under a mapped folder is a module. Edges are what loading a module makes Python run:

* ``import`` -- an ``import``/``from ... import`` statement naming one of our modules, wherever it sits
  (module top, ``if TYPE_CHECKING:``, a function body: a module annotated with a class depends on its
  module all the same, and a late import runs as surely as an early one, only later);
* ``parent`` -- the ``__init__`` of every package the import runs on the way: importing ``a.b.c`` runs
  ``a/__init__`` and ``a/b/__init__`` first, unless the importer is itself inside them (a module's own
  packages are already running when it runs);
* ``importlib`` -- ``importlib.import_module(...)`` or ``__import__(...)`` whose name is a literal, a
  module-level string constant, or an f-string or ``+`` concatenation whose leading literal part names
  one of our modules (an edge to the longest module it names). A module that imports by a name
  computed some other way (the CLI's table of subcommands) depends on every module it names in a
  string constant.

Each edge records where its statement sits: ``top`` (the leading run of the module: docstring,
imports, ``if TYPE_CHECKING:`` blocks), ``type_checking`` (inside such a block), ``bottom`` (module
level after other code, the "import last to break a cycle" trick) or ``nested`` (inside a function,
class or other block).
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

IMPORTERS = {"import_module", "__import__"}
"""Calls that import the module their first argument names."""


def installed_packages(root: Path = ROOT) -> dict[str, Path]:
    """Installed top package name -> its folder, as pyproject.toml maps them."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    package_dir = pyproject["tool"]["setuptools"]["package-dir"]
    return {name: root / folder for name, folder in package_dir.items()}


def listed_packages(root: Path = ROOT) -> list[str]:
    """The packages pyproject.toml tells setuptools to install (``[tool.setuptools] packages``)."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    return list(pyproject["tool"]["setuptools"]["packages"])


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    where: str  # "top" | "type_checking" | "bottom" | "nested"
    how: str = "import"  # "import" | "parent" | "importlib"

    def __str__(self) -> str:
        how = "" if self.how == "import" else f", {self.how}"
        return f"{self.source}:{self.line} -> {self.target} ({self.where}{how})"


class ImportGraph:
    """Modules of some installed packages and the first-party imports between them."""

    def __init__(self, packages: dict[str, Path] | None = None) -> None:
        self.folders = installed_packages() if packages is None else packages
        self.files: dict[str, Path] = {}
        for installed, folder in self.folders.items():
            nested = [f for f in self.folders.values() if f != folder and f.is_relative_to(folder)]
            for path in sorted(folder.rglob("*.py")):
                if not any(path.is_relative_to(n) for n in nested):
                    self.files[_module_name(installed, folder, path)] = path
        self.edges: list[Edge] = []
        for name, path in self.files.items():
            self.edges.extend(_ModuleReader(self, name, path).edges())

    def is_package(self, name: str) -> bool:
        return self.files[name].name == "__init__.py"

    def package_of(self, module: str) -> str:
        """The package a module belongs to: itself for an ``__init__``, else the folder's."""
        return module if self.is_package(module) else module.rpartition(".")[0]

    def resolve(self, name: str) -> str | None:
        """The module ``name`` refers to, if it is one of ours (``a.b.c`` may name ``a.b``'s attribute)."""
        while name:
            if name in self.files:
                return name
            name = name.rpartition(".")[0]
        return None

    def runs(self, source: str, target: str) -> list[str]:
        """The package ``__init__`` modules importing ``target`` from ``source`` runs first: the
        target's enclosing packages, except those that enclose ``source`` (already running)."""
        own = _ancestors(source) | ({source} if self.is_package(source) else set())
        return [p for p in sorted(_ancestors(target)) if p in self.files and p not in own]

    # -- questions -------------------------------------------------------------------------------------

    def modules_of(self, package: str) -> list[str]:
        """The modules of ``package`` itself (its ``__init__`` included, its subpackages' not)."""
        return [m for m in self.files if self.package_of(m) == package]

    def arrows(self, within: str | None = None) -> set[tuple[str, str]]:
        """Module -> module it makes run, optionally only among the modules of the package ``within``
        itself (not its subpackages)."""
        pairs = {(e.source, e.target) for e in self.edges}
        if within is None:
            return pairs
        return {
            (s, t)
            for s, t in pairs
            if self.package_of(s) == within and self.package_of(t) == within
        }

    def late(self) -> list[Edge]:
        """Imports that are not at the top of their module (``TYPE_CHECKING`` blocks there are)."""
        return [e for e in self.edges if e.where in ("bottom", "nested") and e.how != "parent"]

    def adjacency(self, within: str | None = None) -> dict[str, list[str]]:
        adjacency: dict[str, list[str]] = {}
        for s, t in sorted(self.arrows(within)):
            adjacency.setdefault(s, []).append(t)
        return adjacency

    def components(self, within: str | None = None) -> list[list[str]]:
        """The import circles: modules that all reach each other (strongly connected, more than one)."""
        return strongly_connected(self.adjacency(within))

    def cycles(self, within: str | None = None) -> list[list[str]]:
        """One shortest cycle path (first module repeated at the end) per import circle."""
        adjacency = self.adjacency(within)
        return [_cycle_through(component, adjacency) for component in strongly_connected(adjacency)]

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


class _ModuleReader:
    """The edges of one module."""

    def __init__(self, graph: ImportGraph, module: str, path: Path) -> None:
        self.graph = graph
        self.module = module
        self.tree = ast.parse(path.read_text(), str(path))
        self.constants = _string_constants(self.tree)

    def edges(self) -> list[Edge]:
        edges: list[Edge] = []
        leading = True
        for stmt in self.tree.body:
            if _is_type_checking_block(stmt):
                assert isinstance(stmt, ast.If)
                edges += self._collect(stmt.body, "type_checking")
                edges += self._collect(stmt.orelse, "nested")
                continue
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                edges += self._collect([stmt], "top" if leading else "bottom")
                continue
            if not (leading and _is_docstring(stmt)):
                leading = False
            edges += self._collect([stmt], "nested" if _is_block(stmt) else "bottom")
        return edges

    def _collect(self, stmts: list[ast.stmt], where: str) -> list[Edge]:
        edges: list[Edge] = []
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    targets, how = self._statement_targets(node), "import"
                elif isinstance(node, ast.Call) and _call_name(node) in IMPORTERS:
                    targets, how = self._call_targets(node), "importlib"
                else:
                    continue
                edges += self._edges_to(targets, node.lineno, where, how)
        return edges

    def _edges_to(self, targets: set[str], line: int, where: str, how: str) -> list[Edge]:
        edges = [
            Edge(self.module, t, line, where, how) for t in sorted(targets) if t != self.module
        ]
        parents = {p for t in targets for p in self.graph.runs(self.module, t)} - targets
        edges += [Edge(self.module, p, line, where, "parent") for p in sorted(parents)]
        return edges

    def _statement_targets(self, node: ast.Import | ast.ImportFrom) -> set[str]:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            stem = self._relative(node.level, node.module or "") if node.level else node.module
            stem = stem or ""
            # ``from pkg import mod`` imports the module ``pkg.mod`` when there is one.
            names = [
                f"{stem}.{a.name}" if f"{stem}.{a.name}" in self.graph.files else stem
                for a in node.names
            ]
        return {t for t in map(self.graph.resolve, names) if t is not None}

    def _relative(self, level: int, name: str, anchor: str | None = None) -> str:
        package = anchor or self.graph.package_of(self.module)
        for _ in range(level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{name}" if name else package

    def _call_targets(self, call: ast.Call) -> set[str]:
        if not call.args:
            return set()
        prefix = self._string_prefix(call.args[0])
        if prefix is None:
            # A name computed at run time: every module the module names in a string constant
            # (but its own packages, which are running already).
            named = {t for t in map(self.graph.resolve, self.constants.names) if t is not None}
            return named - _ancestors(self.module)
        if prefix.startswith("."):
            level = len(prefix) - len(prefix.lstrip("."))
            anchor = self._string_prefix(call.args[1]) if len(call.args) > 1 else None
            prefix = self._relative(level, prefix[level:], anchor)
        target = self.graph.resolve(prefix.rstrip("."))
        # A package loading its own modules by name (``import_module(f".{name}", __name__)``)
        # runs nothing that is not running already.
        return set() if target is None or target in _ancestors(self.module) else {target}

    def _string_prefix(self, node: ast.expr) -> str | None:
        """The leading text ``node`` evaluates to, as far as it is written in the module."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "__name__":
                return self.module
            if node.id == "__package__":
                return self.graph.package_of(self.module)
            return self.constants.values.get(node.id)
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.FormattedValue):
                return self._string_prefix(first.value)
            return self._string_prefix(first)  # type: ignore[arg-type]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._string_prefix(node.left)
        return None


@dataclass
class _Constants:
    values: dict[str, str]  # module-level NAME = "text"
    names: list[str]  # every string constant that looks like a dotted module name


def _string_constants(tree: ast.Module) -> _Constants:
    values = {
        target.id: stmt.value.value
        for stmt in tree.body
        if isinstance(stmt, (ast.Assign, ast.AnnAssign))
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
        for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
        if isinstance(target, ast.Name)
    }
    names = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.replace(".", "").replace("_", "").isalnum()
    ]
    return _Constants(values, names)


def _module_name(installed: str, folder: Path, path: Path) -> str:
    parts = [*installed.split("."), *path.relative_to(folder).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _is_block(stmt: ast.stmt) -> bool:
    """A statement whose body runs later or conditionally (a def, a class, an if, a try ...)."""
    return not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign))


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


def summary(graph: ImportGraph) -> str:
    components = graph.components()
    where = Counter(e.where for e in graph.edges if e.how != "parent")
    lines = [
        f"{len(graph.files)} modules in {len({graph.package_of(m) for m in graph.files})} packages, "
        f"{len(graph.arrows())} arrows ({dict(sorted(Counter(e.how for e in graph.edges).items()))})",
        f"  modules in import circles: {sum(len(c) for c in components)} in {len(components)} "
        f"circle(s) {[len(c) for c in components]}",
        f"  arrows pointing back up (depth-first): {len(graph.back_edges())}",
        f"  imports by place: {dict(sorted(where.items()))}",
    ]
    lines += [f"  cycle: {' -> '.join(c)}" for c in graph.cycles()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(ImportGraph()))
    sys.exit(0)
