"""node/core stays readable in pieces: every module under 600 lines, every function under 60."""

from __future__ import annotations

import ast
from pathlib import Path

NODE = Path(__file__).resolve().parents[2] / "node"
FILES = sorted((NODE / "core").glob("*.py")) + [NODE / "batches.py"]


def too_long(path: Path, max_lines: int = 600, max_function_lines: int = 60) -> list[str]:
    text = path.read_text()
    found = []
    if len(text.splitlines()) >= max_lines:
        found.append(f"{path.name}: {len(text.splitlines())} lines")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length >= max_function_lines:
                found.append(f"{path.name}:{node.lineno} {node.name}(): {length} lines")
    return found


def test_core_modules_and_functions_are_short() -> None:
    assert len(FILES) > 20
    found = [problem for path in FILES for problem in too_long(path)]
    assert not found, "\n".join(found)


def test_the_size_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    probe = tmp_path / "probe.py"
    probe.write_text(f"def long():\n{body}\n")
    assert too_long(probe) == ["probe.py:1 long(): 61 lines"]
