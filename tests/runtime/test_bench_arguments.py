"""bench/raft.py, bench/raft_cpu.py, bench/raft_memory.py and bench/node.py refuse a bad argument
with argparse's one-line error and exit status 2, before they start a process or make a folder (no
traceback)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)
BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize(
    "script, argument",
    [
        ("raft.py", ["--rates", "abc"]),
        ("raft.py", ["--rates", "2000,x"]),
        ("raft.py", ["--rates", "-5"]),
        ("raft.py", ["--sides", "x"]),
        ("raft.py", ["--trials", "-1"]),
        ("raft.py", ["--refine", "-1"]),
        ("raft.py", ["--window", "-1"]),
        ("raft.py", ["--record-size", "0"]),
        ("raft_cpu.py", ["--rates", "abc"]),
        ("raft_cpu.py", ["--rates", "0"]),
        ("raft_cpu.py", ["--window", "0"]),
        ("raft_cpu.py", ["--tree", "/nonexistent"]),
        ("raft_memory.py", ["--rate", "-5"]),
        ("raft_memory.py", ["--rate", "abc"]),
        ("raft_memory.py", ["--window", "0"]),
        ("raft_memory.py", ["--record-size", "0"]),
        ("node.py", ["--seconds", "-1"]),
        ("node.py", ["--producers", "0"]),
        ("node.py", ["--batch", "0"]),
        ("node.py", ["--single-producers", "0"]),
        ("node.py", ["--linger-ms", "-5"]),
        ("node.py", ["--trials", "-1"]),
    ],
)
def test_bad_argument_is_one_line_and_exit_2(script, argument):
    result = subprocess.run(
        [sys.executable, str(BENCH / script), *argument],
        capture_output=True,
        text=True,
        timeout=50,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stdout == "", result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"{script}: error: "), result.stderr
