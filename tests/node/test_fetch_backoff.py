"""A voter with no known leader asks its peers who leads with Fetch; a peer that answers
NOT_LEADER_OR_FOLLOWER naming no leader is asked again only after ``retry.backoff.ms``. So is a
peer that names the leader we already follow, while that leader cannot be reached (it died: both
followers ask each other until their fetch timers run out).

Before, the asker counted that answer a success and asked again on its next poll: between two real
nodes that answer within 0.1 ms this was up to 1,378 Fetch/s to one peer (issue 25), where Kafka
4.4.0's controller asked 10-60 times a second in the same window.
"""

from __future__ import annotations

import pytest

from kraftwire.node.core import OutboundRequest, Role, Tick

from wired_cores import core, exchange


def _fetches_per_peer(
    retry_backoff_ms: int, seconds: int, leader: int | None = None
) -> dict[tuple[int, int], int]:
    """Voters 1 and 2 of {1, 2, 3} (3 is down), every message delivered at once, time advancing
    1 ms a step: how many Fetch requests each sent the other. With ``leader``, both start as
    followers of it, else unattached."""
    cores = {
        n: core(
            n,
            [1, 2, 3],
            leader,
            seed=n,
            election_timeout_ms=60_000,  # nobody campaigns within the test
            fetch_timeout_ms=60_000,
            retry_backoff_ms=retry_backoff_ms,
        )
        for n in (1, 2)
    }
    counts = {(1, 2): 0, (2, 1): 0}

    def count(src: int, m: OutboundRequest) -> None:
        if type(m.request).__name__ == "FetchRequest":
            counts[(src, m.destination)] += 1

    for now in range(1, seconds * 1000 + 1):
        for c in cores.values():
            c.step(Tick(now))
        exchange(cores, now, count)
    expected = Role.UNATTACHED if leader is None else Role.FOLLOWER
    assert all(c.status().role is expected for c in cores.values())
    return counts


@pytest.mark.parametrize("retry_backoff_ms", [20, 100])
def test_a_peer_that_knows_no_leader_is_asked_once_per_retry_backoff(retry_backoff_ms: int) -> None:
    seconds = 2
    counts = _fetches_per_peer(retry_backoff_ms, seconds)
    ceiling = seconds * (1000 // retry_backoff_ms + 1)
    for (src, dest), n in counts.items():
        assert 0 < n <= ceiling, f"node {src} sent {n} Fetch to {dest} in {seconds} s"


@pytest.mark.parametrize("retry_backoff_ms", [20, 100])
def test_followers_of_a_dead_leader_ask_each_other_once_per_retry_backoff(
    retry_backoff_ms: int,
) -> None:
    """Each answers NOT_LEADER_OR_FOLLOWER naming the dead leader, which teaches nothing. Before,
    that counted as a success and was asked again at once: about 3,000 Fetch a second between two
    real nodes (a bench/raft.py failover trace), keeping both loops awake in step until their fetch
    timers ran out in the same millisecond."""
    seconds = 2
    counts = _fetches_per_peer(retry_backoff_ms, seconds, leader=3)
    ceiling = seconds * (1000 // retry_backoff_ms + 1)
    for (src, dest), n in counts.items():
        assert 0 < n <= ceiling, f"node {src} sent {n} Fetch to {dest} in {seconds} s"
