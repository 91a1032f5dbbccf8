"""bench/raft.py --quick runs against Kafka's TestRaftServer and prints every figure and verdict, with
numbers that agree with each other (the ratios are the quotients of the figures printed beside them).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from process_group import run_in_group

pytestmark = pytest.mark.timeout(400)

BENCH = Path(__file__).resolve().parents[2] / "bench" / "raft.py"
NUMBER = r"([\d,]+(?:\.\d+)?)"


def number(text: str) -> float:
    return float(text.replace(",", ""))


def find(pattern: str, output: str) -> list[float]:
    match = re.search(pattern, output, re.MULTILINE)
    assert match, f"no line matches {pattern!r} in:\n{output}"
    return [number(group) for group in match.groups()]


@pytest.fixture(scope="module")
def output() -> str:
    """One quick run's output, for every test here."""
    result = run_in_group([sys.executable, str(BENCH), "--quick"], 380, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_quick_run_prints_every_row(output: str):
    for name in ("Kafka TestRaftServer", "kraftwire"):
        row = find(
            rf"^{name} at {NUMBER} records/s: {NUMBER} committed records/s .*"
            rf"p75 {NUMBER} p99 {NUMBER} p999 {NUMBER}; CPU s per 10,000 records leader {NUMBER}, "
            rf"follower {NUMBER}, follower {NUMBER}; RSS MiB per node {NUMBER}/{NUMBER}/{NUMBER}",
            output,
        )
        assert row[0] == 200 and row[1] > 0, row
        assert row[2] <= row[3] <= row[4], f"{name}'s percentiles out of order: {row}"
        assert all(value > 0 for value in row[5:]), f"{name}: CPU and memory must be measured"
        find(rf"^failover {name}: median {NUMBER} s, p90 {NUMBER} s over 1 trials", output)
    assert find(r"leader CPU per Fetch served ([\d,]+) us", output)[0] > 0


def test_quick_run_prints_the_request_cost_and_the_ceilings(output: str):
    per_request, in_write, requests = find(
        rf"; request path per request served {NUMBER} us thread CPU, {NUMBER} us of it in the "
        rf"transport's write .*, over {NUMBER} requests$",
        output,
    )
    assert 0 < in_write <= per_request and requests > 0
    total, *steps = find(
        rf"^request path per follower Fetch, in this process alone \((?:pure|native) codecs, .*\): "
        rf"{NUMBER} us = read {NUMBER} \+ decode {NUMBER} \+ answer built {NUMBER} \+ encoded "
        rf"{NUMBER} us$",
        output,
    )
    assert all(step > 0 for step in steps) and total == pytest.approx(sum(steps), abs=2)
    for name in ("Kafka TestRaftServer", "kraftwire"):
        top, rate = find(
            rf"^ceiling {name}: {NUMBER} committed records/s \(at a target of {NUMBER}/s\); "
            rf"ceiling NOT found: every rate up to 200/s sustained, a lower bound$",
            output,
        )
        assert top > 0 and rate == 200


def test_quick_run_prints_every_ratio(output: str):
    ours, theirs, ratio = find(
        rf"^verdict records/s: kraftwire {NUMBER} \(at [\d,]+\) / Kafka {NUMBER} \(at [\d,]+\) = "
        rf"{NUMBER}x \(goal >= 1.0x, floor 0.5x\): (?:met|NOT met); floor (?:met|NOT met)$",
        output,
    )
    assert ratio == pytest.approx(ours / theirs, abs=0.02)
    for what, unit in (("p99 commit latency at 200 records/s", "ms"), ("memory .*?", "MiB")):
        ours, theirs, ratio = find(
            rf"^verdict {what}: kraftwire {NUMBER} {unit} / Kafka {NUMBER} {unit} = {NUMBER}x",
            output,
        )
        assert ratio == pytest.approx(ours / theirs, rel=0.1, abs=0.02), what
    ours, theirs, ratio = find(
        rf"^verdict failover median over 1/1 trials: kraftwire {NUMBER} s / Kafka {NUMBER} s = "
        rf"{NUMBER}x",
        output,
    )
    assert ours > 0 and theirs > 0 and ratio == pytest.approx(ours / theirs, abs=0.02)
    ours, theirs, ratio = find(
        rf"^catch-up of a follower 200 records behind .*: kraftwire {NUMBER} s, Kafka {NUMBER} s = "
        rf"{NUMBER}x",
        output,
    )
    assert ours > 0 and theirs > 0 and ratio == pytest.approx(ours / theirs, abs=0.02)
    cores, _, ours, theirs, ratio = find(
        rf"^machine: {NUMBER} cores, load average {NUMBER};.*cannot show.*kraftwire {NUMBER}, Kafka "
        rf"{NUMBER} = {NUMBER}x \(floor 0.5x: (?:met|NOT met); goal 1.0x: (?:met|NOT met)\)$",
        output,
    )
    assert cores >= 1 and ratio == pytest.approx(ours / theirs, rel=0.05)
