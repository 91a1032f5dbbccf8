"""The core is sans-IO: no module under node/core imports I/O, threading, clocks or global randomness,
and hand-written node modules stay small (a pure core is what lets the simulator replay a seed)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "node" / "core"
FORBIDDEN = {"asyncio", "socket", "selectors", "threading", "time", "os", "pathlib", "random", "io",
             "shutil", "tempfile", "subprocess", "multiprocessing", "datetime", "secrets"}
FORBIDDEN_CALLS = {"open", "input", "print"}


def _modules() -> list[Path]:
    files = sorted(CORE.glob("*.py"))
    assert files, CORE
    return files


def test_core_imports_no_io_modules() -> None:
    bad = []
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                if n.split(".")[0] in FORBIDDEN:
                    bad.append(f"{path.name}:{node.lineno} imports {n}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
                bad.append(f"{path.name}:{node.lineno} calls {node.func.id}()")
    assert not bad, "\n".join(bad)


def test_core_module_sizes() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in _modules()}
    assert max(sizes.values()) <= 600, sizes
    ordered = sorted(sizes.values())
    assert ordered[len(ordered) // 2] <= 250, sizes
