"""Two real nodes of a three-voter quorum whose third voter is down, neither campaigning: each asks
the other who leads, and each NOT_LEADER_OR_FOLLOWER answer naming no leader backs the asker off for
``controller.quorum.retry.backoff.ms``. Counted from node 1's own capture, decoded by ``kraftwire
decode``. Before, node 1 sent up to 1,378 Fetch/s to node 2 (issue 25)."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time

import pytest

from runtime_settings import formatted_cluster

pytestmark = pytest.mark.timeout(120)

QUIET = {
    "controller.quorum.election.timeout.ms": 60_000,  # nobody campaigns during the test
    "controller.quorum.request.timeout.ms": 1000,
    "controller.quorum.retry.backoff.ms": 20,
}


def _fetches_per_second(capture: str, port: int) -> collections.Counter[str]:
    out = subprocess.run(
        [sys.executable, "-m", "kraftwire", "decode", "--format", "jsonl", capture],
        capture_output=True,
        timeout=60,
        check=True,
    ).stdout
    per_second: collections.Counter[str] = collections.Counter()
    for line in out.decode().splitlines():
        row = json.loads(line)
        if row["api_name"] == "Fetch" and row["server_port"] == port:
            # NOT_LEADER_OR_FOLLOWER from the partition (None: the last one, unanswered at the stop)
            assert row["error_codes"] in ([0, 6], None), row
            per_second[row["request_ts"][:19]] += 1
    return per_second


def test_an_unattached_voter_asks_a_peer_that_knows_no_leader_at_most_every_retry_backoff(
    tmp_path,
) -> None:
    capture = str(tmp_path / "node1.pcapng")
    with formatted_cluster(tmp_path / "cluster", settings=QUIET) as cluster:
        cluster.start(2)
        cluster.start(1, "--capture", capture)
        time.sleep(4)
        cluster.stop_all(graceful_s=5)
    per_second = _fetches_per_second(capture, cluster.endpoints[2].port)
    assert sum(per_second.values()) > 0
    # Node 2 is both a voter and a bootstrap server of node 1: two targets of 50 asks a second each.
    busiest = max(per_second.values())
    assert busiest <= 2 * (1000 // 20) + 10, sorted(per_second.items())
