"""The generated modules read like careful hand-written code: nothing emitted that is never used."""

from __future__ import annotations

import ast
from pathlib import Path

import kraftwire.generated as bundled


def _message_modules(package) -> list[Path]:
    directory = Path(package.__file__).parent
    # framing and records are the runtime's public faces; errors and api_keys are Kafka's facts, their
    # lookups are called by the users of the package
    others = ("framing", "records", "errors", "api_keys")
    return sorted(p for p in directory.glob("*.py") if not p.name.startswith("_") and p.stem not in others)


def _unused(path: Path) -> list[str]:
    """Functions never referenced, and locals assigned in a function but never read there."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names_read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    problems = []
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef):
            continue
        if function.name not in names_read:
            problems.append(f"{path.name}: {function.name} is never called")
        stored = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        loaded = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        parameters = {arg.arg for arg in function.args.args}
        for name in sorted(stored - loaded - parameters - {"_", "_t", "_i"}):
            problems.append(f"{path.name}: {function.name} assigns {name} but never reads it")
    return problems


def _check(package) -> int:
    modules = _message_modules(package)
    problems = [problem for path in modules for problem in _unused(path)]
    assert not problems, "\n".join(problems[:20]) + f"\n({len(problems)} in all)"
    return len(modules)


def test_no_dead_function_or_local_in_the_bundled_package():
    assert _check(bundled) == len(bundled.SPECS)


def test_no_dead_function_or_local_in_the_upstream_package(upstream):
    assert _check(upstream) > 250


def test_the_checker_notices_a_dead_function(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def _read_a(buf, pos):\n    _len = len(buf)\n    return pos\n")
    assert _unused(sample) == ["sample.py: _read_a is never called", "sample.py: _read_a assigns _len but never reads it"]
