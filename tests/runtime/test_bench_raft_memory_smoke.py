"""Smoke run of ``bench/raft_memory.py`` with a short window: it runs three real node processes to the
end and prints every figure; and in those processes, as in the bench's, each node's log holds little
more than its encoded bytes (the decoded records are not kept beside them)."""

import re
import sys
from pathlib import Path

import pytest

from process_group import run_in_group

pytestmark = pytest.mark.timeout(200)
BENCH = Path(__file__).resolve().parents[2] / "bench" / "raft_memory.py"
_NODE = re.compile(
    r"node \d (leader|follower) +VmRSS +[\d.]+ MiB, CPU +[\d.]+ s, \d+ modules; log \d+ batches, "
    r"(\d+) records, ([\d.]+) MiB encoded, ([\d.]+) MiB reachable"
)


def test_memory_bench_runs_and_each_node_holds_its_log_once():
    result = run_in_group(
        [sys.executable, str(BENCH), "--rate", "2000", "--warmup", "1", "--window", "3"],
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "import kraftwire.node.runtime alone:" in out and "median VmRSS then:" in out
    end = out.split("as bench/raft.py reads it", 1)[1]
    nodes = _NODE.findall(end)
    assert sorted(role for role, *_ in nodes) == ["follower", "follower", "leader"], out
    for role, records, encoded, reachable in nodes:
        assert int(records) > 1000, out
        assert float(reachable) <= 1.15 * float(encoded), f"a {role} holds its log twice:\n{out}"
