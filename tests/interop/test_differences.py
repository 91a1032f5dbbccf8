"""Behaviours where kraftwire once differed from Apache Kafka, each pinned against a real Kafka process
(the release each follows is named). The voter-change answers (ErrorMessage null on success, as
Kafka 4.4.0 answers; 4.0.x answered "NONE") are checked in test_tools.py, where both kinds answer them.
"""

from __future__ import annotations

import json
import time

import pytest

from quorum import MixedQuorum, kraftwire_cli, wait_until

pytestmark = pytest.mark.timeout(240)

# What Kafka's own client does in the same place: it waits controller.quorum.retry.backoff.ms (20 ms by
# default) after a NOT_LEADER_OR_FOLLOWER that names no leader, and one request is in flight per
# connection, so 30-40 Fetch/s were seen from it; kraftwire once sent up to 1,378/s.
MOST_FETCHES_PER_SECOND = 60


def fetches_to(capture, port: int) -> list[float]:
    """The times (s) of the Fetch requests the capture saw go to ``port``."""
    rows = kraftwire_cli("decode", str(capture), "--format", "jsonl").stdout.splitlines()
    times = []
    for line in rows:
        row = json.loads(line)
        if row["api_name"] == "Fetch" and row["server_port"] == port and row["request_ts"]:
            times.append(row["request_ts"])
    return times


def test_fetch_to_a_leaderless_kafka_voter_backs_off(tmp_path):
    """A kraftwire observer whose only reachable voter (a Kafka controller that cannot win an
    election alone) answers NOT_LEADER_OR_FOLLOWER with no leader keeps to Kafka's pace."""
    quorum = MixedQuorum(tmp_path, {1: "kafka", 2: "kafka"}, dynamic=False, observers={3: "kraftwire"})
    quorum.format()
    capture = tmp_path / "observer.pcapng"
    try:
        quorum.start(1)  # voter 2 never starts: no election can succeed
        quorum.start(3, "--capture", str(capture))
        wait_until(lambda: capture.exists() and capture.stat().st_size > 4096, 60, "Fetch traffic")
        time.sleep(6)
        quorum.kill(3)
    finally:
        quorum.stop_all()
    times = fetches_to(capture, quorum.members[1].port)
    assert len(times) >= 3, "the observer sent (almost) no Fetch"
    span_s = max(1.0, _seconds(times[-1]) - _seconds(times[0]))
    rate = len(times) / span_s
    assert rate <= MOST_FETCHES_PER_SECOND, f"{len(times)} Fetch in {span_s:.1f} s: {rate:.0f}/s"


def _seconds(timestamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(timestamp).timestamp()
