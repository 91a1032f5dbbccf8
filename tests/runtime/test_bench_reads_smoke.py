"""Smoke run of ``bench/reads.py --quick``: it runs to the end, serves reads in every set-up and prints
every figure (the figures of a quick run mean nothing and are not checked)."""

import re
import sys
from pathlib import Path

import pytest

from process_group import run_in_group

pytestmark = pytest.mark.timeout(200)
BENCH = Path(__file__).resolve().parents[2] / "bench" / "reads.py"


def test_reads_bench_quick_runs():
    result = run_in_group([sys.executable, str(BENCH), "--quick"], timeout=180)
    assert result.returncode == 0, result.stderr
    for setup in ("leader alone", "all three", "followers only"):
        line = re.search(
            rf"^{setup}: [\d,]+ linearizable reads/s \((\d+) served, 0 failed", result.stdout, re.M
        )
        assert line and int(line.group(1)) > 0, result.stdout
    assert result.stdout.count("read latency p50") == 3
    assert result.stdout.count("CPU ms per 1000 reads: leader") == 3
    assert "verdict: all three / leader alone =" in result.stdout
    assert "load average" in result.stdout
