"""The operator: adds and removes voters the way ``kafka-metadata-quorum add-controller`` /
``remove-controller`` do, over the simulated network and the real wire codecs.

For each change it asks a random running voter for the quorum (DescribeQuorum names the leader even
when sent to a non-leader), then sends AddRaftVoter / RemoveRaftVoter to that leader. Any error,
failure or timeout starts over after a backoff (an add is refused with REQUEST_TIMED_OUT until the new
voter has caught up as an observer). ``DUPLICATE_VOTER`` for an add and ``VOTER_NOT_FOUND`` for a
remove mean an earlier attempt already succeeded (its response was lost).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Protocol

from kraftwire.generated import describe_quorum_request as _dq
from kraftwire.generated import api_keys, errors
from kraftwire.node.core.api import METADATA_PARTITION, METADATA_TOPIC, ReplicaKey, WireMessage
from kraftwire.node.core.messages import add_raft_voter_request, remove_raft_voter_request

from .host import Failure, Host
from .network import ADMIN_ID, LISTENER, endpoint_of
from .wire import Envelope

RETRY_BACKOFF_MS = 500
REQUEST_TIMEOUT_MS = 5000
MAX_ATTEMPTS = 40


class AdminHost(Host, Protocol):
    """What the operator asks of the simulation besides the network."""

    @property
    def rng(self) -> random.Random: ...

    @property
    def cluster_id(self) -> str: ...

    def running_voters(self) -> list[int]:
        """The ids of the running nodes that consider themselves voters, in id order."""
        ...

    def replica_key(self, node_id: int) -> ReplicaKey | None:
        """Node ``node_id``'s current key (``None``: no such node)."""
        ...


@dataclass
class VoterChange:
    kind: str  # "add" | "remove"
    node_id: int
    key: ReplicaKey | None = (
        None  # fixed at submission for a removal; the node's current key for an add
    )
    attempts: int = 0
    result: str | None = None  # error name of the final answer, or "gave up"


class AdminClient:
    """A client endpoint on the simulated network (always reachable, never crashes)."""

    def __init__(self, host: AdminHost) -> None:
        self.host = host
        self.id = ADMIN_ID
        self.inc = 1
        self.running = True
        self.versions: dict[int, int] = {}
        self.queue: list[VoterChange] = []
        self.current: VoterChange | None = None
        self._cid = 0
        self._in_flight: tuple[int, int] | None = None  # (api key, correlation id)

    def submit(self, change: VoterChange) -> VoterChange:
        self.queue.append(change)
        self._pump()
        return change

    def idle(self) -> bool:
        return self.current is None and not self.queue

    # -- the state machine -----------------------------------------------------------------------------

    def _pump(self) -> None:
        if self.current is None and self.queue:
            self.current = self.queue.pop(0)
            self._describe()

    def _retry(self, _: Any = None) -> None:
        change = self.current
        if change is None:
            return
        change.attempts += 1
        if change.attempts >= MAX_ATTEMPTS:
            return self._finish("gave up")
        self._describe()

    def _later(self) -> None:
        self._in_flight = None
        self.host.queue.after(RETRY_BACKOFF_MS, self._retry)

    def _send(self, dest: int, request: Any) -> None:
        self._cid += 1
        self._in_flight = (request.API_KEY, self._cid)
        self.host.send_request(self, dest, self._cid, request, 0)
        self.host.queue.after(REQUEST_TIMEOUT_MS, self._timeout, self._cid)

    def _timeout(self, cid: int) -> None:
        if self._in_flight is not None and self._in_flight[1] == cid:
            self._later()

    def _describe(self) -> None:
        voters = self.host.running_voters()
        if not voters:
            return self._later()
        target = voters[self.host.rng.randrange(len(voters))]
        request = _dq.DescribeQuorumRequest(
            topics=[
                _dq.TopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[_dq.PartitionData(partition_index=METADATA_PARTITION)],
                )
            ]
        )
        self._send(target, request)

    def _change(self, leader: int) -> None:
        change = self._current()
        cluster_id = self.host.cluster_id
        request: WireMessage
        if change.kind == "add":
            key = self.host.replica_key(change.node_id)
            assert key is not None, f"no node {change.node_id} to add"
            change.key = key
            listeners = {LISTENER: endpoint_of(change.node_id)}
            request = add_raft_voter_request(cluster_id, key, listeners, 30_000, ack=True)
        else:
            assert change.key is not None
            request = remove_raft_voter_request(cluster_id, change.key)
        self._send(leader, request)

    def _finish(self, result: str) -> None:
        change = self._current()
        change.result = result
        self.host.trace.note(
            self.host.queue.now, "admin", "admin", change.kind, f"n{change.node_id}", "->", result
        )
        self.current = None
        self._in_flight = None
        self._pump()

    # -- network endpoint ------------------------------------------------------------------------------

    def receive(self, env: Envelope) -> None:
        if env.is_request or self._in_flight != (env.api_key, env.correlation_id):
            return
        self._in_flight = None
        body = self.host.codec.unpack_response(env)
        self.host.trace.add((self.host.queue.now, "recv", self.id, env.src, env.version, body))
        if env.api_key == api_keys.DESCRIBE_QUORUM:
            topics = body.topics
            leader = topics[0].partitions[0].leader_id if topics and topics[0].partitions else -1
            if leader < 0 or self.host.replica_key(leader) is None:
                return self._later()
            return self._change(leader)
        code = body.error_code
        kind = self._current().kind
        if (
            code == errors.NONE
            or (kind == "add" and code == errors.DUPLICATE_VOTER)
            or (kind == "remove" and code == errors.VOTER_NOT_FOUND)
        ):
            return self._finish(errors.name(code))
        self._later()

    def request_failed(self, failure: Failure) -> None:
        _, cid, api_key, _ = failure
        if self._in_flight == (api_key, cid):
            self._later()

    def _current(self) -> VoterChange:
        assert self.current is not None, "no voter change in progress"
        return self.current
