"""Smoke run of ``bench/node.py --quick``: it runs to the end and prints every figure (the figures of a
quick run mean nothing and are not checked)."""

import sys
from pathlib import Path

import pytest

from process_group import run_in_group

pytestmark = pytest.mark.timeout(400)
BENCH = Path(__file__).resolve().parents[2] / "bench" / "node.py"


def test_node_bench_quick_runs():
    result = run_in_group([sys.executable, str(BENCH), "--quick"], timeout=360)
    assert result.returncode == 0, result.stderr
    assert "committed records/s" in result.stdout and "commit latency p50" in result.stdout
    assert "failover over 1 trials: median" in result.stdout
    assert "PySyncObj" in result.stdout
