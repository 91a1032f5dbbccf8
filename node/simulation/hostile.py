"""A hostile peer (issue 26): a party on the simulated network that is no member of the quorum and lies.

It sends, over the real wire codecs, what a non-member can send a controller port: Vote and PreVote at
any epoch (2^31-1 included) for candidates that are not voters, BeginQuorumEpoch and EndQuorumEpoch
naming itself, the target or a second leader of the target's epoch, Fetch and FetchSnapshot at
2^31-1, and replays of the announcements and votes of epochs gone by. Every one of these a node can
tell from the truth, so none may move a leader, end a process or take an epoch out of int32.

With ``spoof`` it also claims a voter's identity (a Vote for a voter at the next epoch, a
BeginQuorumEpoch naming a voter leader of the next epoch): without authentication a node cannot tell
that from the voter itself, so these may move the quorum along (TLS on the controller listener is the
answer); the scenario only requires a leader back within a few election timeouts once it stops.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any, Callable, Mapping, Protocol

from kraftwire.node.core.api import Endpoint, ReplicaKey, SnapshotId
from kraftwire.node.core.messages import (
    begin_quorum_epoch_request,
    end_quorum_epoch_request,
    fetch_request,
    fetch_snapshot_request,
    vote_request,
)

from .host import Cluster, Failure, Host
from .network import HOSTILE_ID, LISTENER, endpoint_of
from .wire import Envelope

INT32_MAX = (1 << 31) - 1
LIES_EVERY_MS = (2, 30)


class HostileHost(Host, Cluster, Protocol):
    @property
    def rng(self) -> random.Random: ...

    @property
    def cluster_id(self) -> str: ...


class HostilePeer:
    """Sends one lie every few milliseconds to a random running node while active; answers are only
    counted (by error code)."""

    def __init__(self, host: HostileHost) -> None:
        self.host = host
        self.id = HOSTILE_ID
        self.inc = 1
        self.running = True
        self.versions: dict[int, int] = {}
        self.rng = random.Random(host.rng.random())
        self.sent: Counter[str] = Counter()
        self.answers: Counter[int] = Counter()
        self.seen: list[tuple[int, int]] = []  # (leader, epoch) announcements seen, for replays
        self.spoof = False
        self._until = -1
        self._cid = 0

    # -- the party's side of the network ---------------------------------------------------------------

    def receive(self, env: Envelope) -> None:
        body = self.host.codec.unpack_response(env)
        topics = getattr(body, "topics", None) or getattr(body, "responses", None) or []
        parts = topics[0].partitions if topics else []
        self.answers[parts[0].error_code if parts else body.error_code] += 1

    def request_failed(self, failure: Failure) -> None:
        pass

    # -- lying -----------------------------------------------------------------------------------------

    def start(self, duration_ms: int, spoof: bool = False) -> None:
        self.spoof = spoof
        self._until = self.host.queue.now + duration_ms
        self.host.queue.after(1, self._lie)

    def active(self) -> bool:
        return self.host.queue.now < self._until

    def _lie(self, _: Any = None) -> None:
        if not self.active():
            return
        targets = [n for n in self.host.running if n.core is not None]
        if targets:
            target = self.rng.choice(targets)
            status = target.core.status()  # type: ignore[union-attr]
            if status.leader_id is not None and (status.leader_id, status.epoch) not in self.seen:
                self.seen.append((status.leader_id, status.epoch))
            lies = LIES + (SPOOFS if self.spoof else ())
            name, lie = self.rng.choice(lies)
            request = lie(self, target.key, status)
            if request is not None:
                self._cid += 1
                self.sent[name] += 1
                self.host.send_request(self, target.id, self._cid, request, 0)
        self.host.queue.after(self.rng.randint(*LIES_EVERY_MS), self._lie)

    # -- helpers for the lies --------------------------------------------------------------------------

    def epoch_near(self, epoch: int) -> int:
        return self.rng.choice((epoch, epoch + 1, epoch + 5, INT32_MAX - 1, INT32_MAX))

    def stranger(self) -> ReplicaKey:
        """A replica that is no voter: this peer or another id no node uses."""
        node_id = self.rng.choice((HOSTILE_ID, self.rng.randint(50, 98)))
        return ReplicaKey(node_id, uuid.UUID(int=self.rng.getrandbits(128) | 1))

    def voter(self, status: Any, but: tuple[int | None, ...] = ()) -> ReplicaKey | None:
        keys = [spec.key for spec in status.voters if spec.key.id not in but]
        return self.rng.choice(keys) if keys else None

    def endpoints(self, node_id: int) -> Mapping[str, Endpoint]:
        return {LISTENER: endpoint_of(node_id)}


Lie = Callable[[HostilePeer, ReplicaKey, Any], Any]


def _vote(peer: HostilePeer, to: ReplicaKey, candidate: ReplicaKey, epoch: int) -> Any:
    pre_vote = peer.rng.random() < 0.5
    last_epoch = max(0, epoch - 1)
    cid = peer.host.cluster_id
    return vote_request(cid, to, epoch, candidate, last_epoch, 1 << 40, pre_vote)


def _stranger_votes(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    return _vote(peer, to, peer.stranger(), peer.epoch_near(st.epoch))


def _voter_votes_at_the_limit(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    candidate = peer.voter(st, but=(to.id,))
    return None if candidate is None else _vote(peer, to, candidate, INT32_MAX)


def _stranger_leads(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    leader = peer.stranger().id
    epoch = peer.epoch_near(st.epoch)
    if peer.rng.random() < 0.5:
        return begin_quorum_epoch_request(
            peer.host.cluster_id, to, leader, epoch, peer.endpoints(leader)
        )
    return end_quorum_epoch_request(peer.host.cluster_id, leader, epoch, [to], {})


def _voter_leads_at_the_limit(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    leader = peer.voter(st, but=(to.id,))
    if leader is None:
        return None
    cid = peer.host.cluster_id
    return begin_quorum_epoch_request(cid, to, leader.id, INT32_MAX, peer.endpoints(leader.id))


def _target_named_leader(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    epoch = st.epoch + peer.rng.randint(0, 3)
    return begin_quorum_epoch_request(peer.host.cluster_id, to, to.id, epoch, peer.endpoints(to.id))


def _second_leader(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    """Another voter named leader of the target's epoch, whose leader the target knows."""
    rival = peer.voter(st, but=(to.id, st.leader_id))
    if st.leader_id is None or rival is None:
        return None
    cid = peer.host.cluster_id
    return begin_quorum_epoch_request(cid, to, rival.id, st.epoch, peer.endpoints(rival.id))


def _fetch_at_the_limit(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    if peer.rng.random() < 0.5:
        return fetch_request(peer.host.cluster_id, peer.stranger(), INT32_MAX, 0, 0, 0, 4096, None)
    sid = SnapshotId(peer.rng.randint(1, 100), max(0, st.epoch - 1))
    return fetch_snapshot_request(peer.host.cluster_id, peer.stranger(), INT32_MAX, sid, 0, 4096)


def _replay(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    """An announcement or a vote of an epoch gone by, as its leader sent it then."""
    old = [(leader, epoch) for leader, epoch in peer.seen if epoch < st.epoch and leader != to.id]
    if not old:
        return None
    leader, epoch = peer.rng.choice(old)
    if peer.rng.random() < 0.5:
        return begin_quorum_epoch_request(
            peer.host.cluster_id, to, leader, epoch, peer.endpoints(leader)
        )
    key = next((s.key for s in st.voters if s.key.id == leader), None)
    return None if key is None else _vote(peer, to, key, epoch)


def _spoofed_vote(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    candidate = peer.voter(st, but=(to.id,))
    return None if candidate is None else _vote(peer, to, candidate, st.epoch + 1)


def _spoofed_leader(peer: HostilePeer, to: ReplicaKey, st: Any) -> Any:
    leader = peer.voter(st, but=(to.id,))
    if leader is None:
        return None
    cid = peer.host.cluster_id
    return begin_quorum_epoch_request(cid, to, leader.id, st.epoch + 1, peer.endpoints(leader.id))


LIES: tuple[tuple[str, Lie], ...] = (
    ("stranger-vote", _stranger_votes),
    ("voter-vote-at-2^31-1", _voter_votes_at_the_limit),
    ("stranger-leader", _stranger_leads),
    ("voter-leader-at-2^31-1", _voter_leads_at_the_limit),
    ("target-named-leader", _target_named_leader),
    ("second-leader", _second_leader),
    ("fetch-at-2^31-1", _fetch_at_the_limit),
    ("replay", _replay),
)
"""Lies a node can tell from the truth: none may change anything."""

SPOOFS: tuple[tuple[str, Lie], ...] = (
    ("spoofed-vote", _spoofed_vote),
    ("spoofed-leader", _spoofed_leader),
)
"""Claims in a voter's name (no authentication): they may move the quorum along."""
