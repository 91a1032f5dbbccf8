"""A voter with no known leader asks its peers who leads with Fetch; a peer that answers
NOT_LEADER_OR_FOLLOWER naming no leader is asked again only after ``retry.backoff.ms``. So is a
peer that names the leader we already follow, while that leader cannot be reached (it died: both
followers ask each other until their fetch timers run out).

Before, the asker counted that answer a success and asked again on its next poll: between two real
nodes that answer within 0.1 ms this was up to 1,378 Fetch/s to one peer (issue 25), where Kafka
4.4.0's controller asked 10-60 times a second in the same window.
"""

from __future__ import annotations

import random
import uuid

import pytest

from kraftwire.node.core import (
    Config,
    Endpoint,
    KRaftCore,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    OutboundRequest,
    ReplicaKey,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    Role,
    Tick,
    VoterSpec,
)
from kraftwire.node.core.values import ElectionState

LISTENER = "CONTROLLER"
BROKER_NOT_AVAILABLE = 8


def _spec(node_id: int) -> VoterSpec:
    key = ReplicaKey(node_id, uuid.UUID(int=node_id))
    return VoterSpec(key, {LISTENER: Endpoint("127.0.0.1", 9000 + node_id)}, (0, 1))


def _core(
    node_id: int, voters: list[int], retry_backoff_ms: int, leader: int | None = None
) -> KRaftCore:
    quorum_state = MemoryQuorumStateStore()
    if leader is not None:  # restarted as a follower of ``leader`` in epoch 5
        quorum_state.write(ElectionState(5, leader))
    return KRaftCore(
        Config(
            node_id=node_id,
            directory_id=uuid.UUID(int=node_id),
            cluster_id="cluster",
            voters=[_spec(v) for v in voters],
            rng=random.Random(node_id),
            listeners={LISTENER: _spec(node_id).listeners[LISTENER]},
            election_timeout_ms=60_000,  # nobody campaigns within the test
            fetch_timeout_ms=60_000,
            retry_backoff_ms=retry_backoff_ms,
        ),
        MemoryLog(),
        quorum_state,
        MemorySnapshotStore(),
    )


def _fetches_per_peer(
    retry_backoff_ms: int, seconds: int, leader: int | None = None
) -> dict[tuple[int, int], int]:
    """Voters 1 and 2 of {1, 2, 3} (3 is down: its connection is refused at once), every message
    delivered at once, time advancing 1 ms a step: how many Fetch requests each sent the other.
    With ``leader``, both start as followers of it, else unattached."""
    cores = {n: _core(n, [1, 2, 3], retry_backoff_ms, leader) for n in (1, 2)}
    counts = {(1, 2): 0, (2, 1): 0}
    now = 0
    for _ in range(seconds * 1000):
        now += 1
        for core in cores.values():
            core.step(Tick(now))
        for _ in range(10):
            pending = []
            for src, core in cores.items():
                while core.has_ready():
                    rd = core.ready()
                    pending.extend((src, m) for m in rd.messages)
                    core.advance(rd)
            if not pending:
                break
            for src, m in pending:
                dest = cores.get(m.destination)
                if dest is None:  # node 3: connection refused, as the runtime reports it
                    refused = RequestFailed(
                        m.destination, m.correlation_id, BROKER_NOT_AVAILABLE, now
                    )
                    cores[src].step(refused)
                    continue
                if isinstance(m, OutboundRequest):
                    if type(m.request).__name__ == "FetchRequest":
                        counts[(src, m.destination)] += 1
                    version = m.request.HIGHEST_VERSION
                    dest.step(RequestReceived(src, m.correlation_id, version, m.request, now))
                else:
                    dest.step(
                        ResponseReceived(src, m.correlation_id, m.api_version, m.response, now)
                    )
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
