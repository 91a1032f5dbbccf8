"""Cores built for tests (:func:`core`), and a network that delivers every message at once beside a
voter that is down (its connection is refused at once, as the runtime reports it): the cores of
test_fetch_backoff.py, test_pre_vote_jitter.py and test_accept_append.py."""

from __future__ import annotations

import random
import uuid
from typing import Any, Callable

from kraftwire.generated.errors import BROKER_NOT_AVAILABLE
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
    VoterSpec,
)
from kraftwire.node.core.values import ElectionState

LISTENER = "CONTROLLER"


def voter_spec(node_id: int) -> VoterSpec:
    key = ReplicaKey(node_id, uuid.UUID(int=node_id))
    return VoterSpec(key, {LISTENER: Endpoint("localhost", 9000 + node_id)}, (0, 1))


def core(
    node_id: int,
    voters: list[int],
    leader: int | None,
    seed: int,
    log: MemoryLog | None = None,
    **settings: Any,
) -> KRaftCore:
    """Voter ``node_id`` of ``voters`` (on ``log``, else a new one); with ``leader``, restarted as
    its follower in epoch 5, else unattached."""
    quorum_state = MemoryQuorumStateStore()
    if leader is not None:
        quorum_state.write(ElectionState(5, leader))
    return KRaftCore(
        Config(
            node_id=node_id,
            directory_id=uuid.UUID(int=node_id),
            cluster_id="cluster",
            voters=[voter_spec(v) for v in voters],
            rng=random.Random(seed),
            listeners={LISTENER: voter_spec(node_id).listeners[LISTENER]},
            **settings,
        ),
        MemoryLog() if log is None else log,
        quorum_state,
        MemorySnapshotStore(),
    )


def exchange(
    cores: dict[int, KRaftCore], now: int, on_request: Callable[[int, OutboundRequest], None]
) -> None:
    """Deliver every ready message at once, and the messages those cause, for up to ten rounds; a
    message to a node not in ``cores`` fails as a refused connection. ``on_request(src, request)``
    sees each request delivered."""
    for _ in range(10):
        pending = []
        for src, c in cores.items():
            while c.has_ready():
                rd = c.ready()
                pending.extend((src, m) for m in rd.messages)
                c.advance(rd)
        if not pending:
            return
        for src, m in pending:
            dest = cores.get(m.destination)
            if dest is None:
                cores[src].step(
                    RequestFailed(m.destination, m.correlation_id, BROKER_NOT_AVAILABLE, now)
                )
            elif isinstance(m, OutboundRequest):
                on_request(src, m)
                version = m.request.HIGHEST_VERSION
                dest.step(RequestReceived(src, m.correlation_id, version, m.request, now))
            else:
                dest.step(ResponseReceived(src, m.correlation_id, m.api_version, m.response, now))
