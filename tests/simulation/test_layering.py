"""node/simulation imports strictly downward: no cycle among its modules (imports inside a
``TYPE_CHECKING`` block count too, since they are arrows a reader has to follow), every import at the
top of its module (a ``TYPE_CHECKING`` block there is allowed), and hand-written files and functions
within the size limits of style.md."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "node" / "simulation"
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60


def _trees() -> dict[str, ast.Module]:
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) > 5, PACKAGE
    return {p.stem: ast.parse(p.read_text(), str(p)) for p in files}


def _is_type_checking_block(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for stmt in tree.body:
        block = stmt.body if isinstance(stmt, ast.If) and _is_type_checking_block(stmt) else [stmt]
        found.extend(s for s in block if isinstance(s, (ast.Import, ast.ImportFrom)))
    return found


def misplaced_imports(trees: dict[str, ast.Module]) -> list[str]:
    """Every import that is neither at module level nor in a module-level TYPE_CHECKING block."""
    bad = []
    for name, tree in trees.items():
        allowed = {id(s) for s in _top_level_imports(tree)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in allowed:
                bad.append(f"{name}.py:{node.lineno}")
    return bad


def import_graph(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Module -> the sibling modules it imports (relative ``from .x import``, or ``from . import x``)."""
    graph: dict[str, set[str]] = {name: set() for name in trees}
    for name, tree in trees.items():
        for node in _top_level_imports(tree):
            if not isinstance(node, ast.ImportFrom) or node.level != 1:
                continue
            targets = [node.module] if node.module else [a.name for a in node.names]
            graph[name].update(t.split(".")[0] for t in targets if t.split(".")[0] in trees)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as a path (first module repeated at the end), or ``[]``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = 1
        path.append(module)
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                return path[path.index(dep) :] + [dep]
            if dep not in state:
                cycle = visit(dep)
                if cycle:
                    return cycle
        path.pop()
        state[module] = 2
        return []

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return []


def test_no_import_cycle() -> None:
    cycle = find_cycle(import_graph(_trees()))
    assert not cycle, " -> ".join(cycle)


def test_every_import_at_the_top() -> None:
    assert not misplaced_imports(_trees())


def test_sizes() -> None:
    too_long = []
    for name, tree in _trees().items():
        lines = len((PACKAGE / f"{name}.py").read_text().splitlines())
        if lines > MAX_FILE_LINES:
            too_long.append(f"{name}.py has {lines} lines")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}.py:{node.lineno} {node.name}() has {length} lines")
    assert not too_long, too_long


def test_the_checks_can_fail() -> None:
    """The walkers find what they look for: a two-module cycle, a function-level import."""
    trees = {
        "a": ast.parse("from .b import x\n"),
        "b": ast.parse(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import y\n"
        ),
        "c": ast.parse("def f():\n    import os\n"),
    }
    assert find_cycle(import_graph(trees)) == ["a", "b", "a"]
    assert misplaced_imports(trees) == ["c.py:2"]
