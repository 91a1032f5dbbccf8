"""Hand-written code stays readable in pieces: every module under 600 lines, every function under 60.

Generated code (``generated/``, and packages generated in tests) is exempt: it is one module per
message, however large the message. The exceptions below are the only ones, each with its reason;
an exception that is no longer needed fails the test too, so the list cannot go stale.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60

# "path" for a module, "path:function" for a function -> why it may be longer.
EXCEPTIONS: dict[str, str] = {
    "codegen/runtime/_v2_read.py:_read_records": (
        "the record-decoding hot loop, varints inlined on purpose: a helper call per varint makes "
        "decoding about 40% slower (bench/records.py)"
    ),
    "codegen/runtime/_v2_view.py:_record_views": (
        "the same hot loop reading records straight into their JSON view, inlined for the same reason"
    ),
    "codegen/runtime/_v2_read.py:decode_v2_batch": (
        "the batch header checked field by field in wire order, each check naming its field"
    ),
    "codegen/runtime/_buffer.py:encode_batch": (
        "one public entry point normalising every accepted record shape before the v2 writer"
    ),
    "codegen/runtime/_frames.py:zstd_frame_bound": (
        "the zstd frame header walked in the order of RFC 8878 section 3.1.1"
    ),
    "bench/codec.py:main": "the benchmark's table: every message and peer measured in one run",
    "bench/_decode_capture.py:exchange_pool": "the mixed KRaft and classic traffic the benchmark replays",
    "tests/node/kraft_requests.py:build": "one table of every request the transcripts can send",
    "tests/node/test_core_random.py:_run": "a random schedule driven step by step, read top-down",
    "tests/spark/test_standalone.py:cluster": "a Spark master and two workers started and stopped",
}


def hand_written_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [REPO / name for name in listed if not name.startswith("generated/")]


def oversized(path: Path, relative: str) -> list[str]:
    text = path.read_text()
    found = []
    lines = len(text.splitlines())
    if lines >= MAX_MODULE_LINES:
        found.append(relative)
    for node in ast.walk(ast.parse(text, relative)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length >= MAX_FUNCTION_LINES:
                found.append(f"{relative}:{node.name}")
    return found


def test_modules_and_functions_are_short() -> None:
    files = hand_written_files()
    assert len(files) > 100
    found = {item for path in files for item in oversized(path, str(path.relative_to(REPO)))}
    unexpected = sorted(found - EXCEPTIONS.keys())
    stale = sorted(EXCEPTIONS.keys() - found)
    assert not unexpected, "too long (split it, or list it in EXCEPTIONS with the reason):\n" + (
        "\n".join(unexpected)
    )
    assert not stale, "no longer too long, drop from EXCEPTIONS:\n" + "\n".join(stale)


@pytest.mark.parametrize("lines", [59, 60])
def test_the_check_sees_a_long_function(tmp_path: Path, lines: int) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(lines - 1))
    probe = tmp_path / "probe.py"
    probe.write_text(f"def long():\n{body}\n")
    assert oversized(probe, "probe.py") == ([] if lines < 60 else ["probe.py:long"])
