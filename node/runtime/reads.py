"""Linearizable reads in the runtime (issue #13): ``KRaftNode.read`` and ReadOffset from clients.

Two consistencies, both answered with an offset (exclusive) up to which the application's state is
known to be fresh once its listener has been given the batches below it:

* ``"linearizable"``: the core's ``read_index`` learns the leader's confirmed high watermark (at once
  on the leader after its quorum round, by a ReadOffset to the leader elsewhere) and notifies
  ``ReadReady`` only once every committed batch below it has been delivered. The node hands
  notifications to the listener in order, on the loop, so when the read resolves the listener has
  handled every one of those batches: state read then reflects every write acknowledged before the
  read began. A read that cannot be confirmed in time fails with :class:`ReadTimeoutError`.
* ``"stale"``: at once, the offset after the last batch handed to the listener. It may lag the leader
  by any amount (a partitioned follower keeps answering with its old offset).

ReadOffset on the wire has two callers. Another replica's raft client (client id ``raft-client-<id>``,
as Kafka's raft client and ours name themselves) asks the leader: that request goes to the core, which
answers after the quorum round, or NOT_LEADER_OR_FOLLOWER at once on a non-leader, so the asking
replica moves on to the leader it names. Anyone else is a client that wants to read *from this node*:
the node validates the request as the core does (cluster id, ``__cluster_metadata``-0), performs a
linearizable read of its own and answers with its offset, so the client can then fetch from this very
node up to that offset. Failures answer REQUEST_TIMED_OUT (no confirmation in time),
NOT_LEADER_OR_FOLLOWER (the node is stopping) or BROKER_NOT_AVAILABLE (more than ``MAX_WAITING_READS``
reads waiting), each naming the leader this node knows.

Reads are confirmed in groups, one group in flight per node (:class:`ReadTracker`), so that the
leader's cost per read falls as readers are added and followers can take reads off it.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any, Callable

from kraftwire.generated import api_keys
from kraftwire.generated import read_offset_response as _ro
from kraftwire.generated.errors import (
    BROKER_NOT_AVAILABLE,
    INCONSISTENT_CLUSTER_ID,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    REQUEST_TIMED_OUT,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from kraftwire.node.core.api import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    CommittedBatch,
    LeaderAndEpoch,
    ReadFailed,
    ReadReady,
    SnapshotLoaded,
)

from .errors import NodeFailed
from .node_view import QuorumView, ReadTarget

CONSISTENCIES = ("linearizable", "stale")
MAX_WAITING_READS = 10_000  # per node; one more is refused at once (each also waits a bounded time)
RAFT_CLIENT_PREFIX = "raft-client-"


class ReadError(Exception):
    """A linearizable read failed; ``error_code`` is the Kafka error, ``leader`` the leader this node
    knew when it gave up."""

    def __init__(self, message: str, error_code: int, leader: LeaderAndEpoch) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.leader = leader


class ReadTimeoutError(ReadError):
    """No leader confirmed the read within its timeout (no leader, a partition, an election)."""


def default_timeout_ms(fetch_timeout_ms: int, request_timeout_ms: int) -> int:
    """Long enough to survive one lost ReadOffset (re-asked after the request timeout), short enough
    to give up about when a follower would itself notice that the leader is gone."""
    return fetch_timeout_ms + request_timeout_ms


@dataclass
class _Waiting:
    future: asyncio.Future[int]
    timeout_ms: int
    deadline: float  # loop time


class ReadTracker:
    """The node's linearizable reads, in groups, and the offset its listener has been given so far.

    At most one group is confirmed at a time, by one ``read_index`` of the core; reads that arrive
    meanwhile form the next group, started as soon as the current one is answered. One confirmation
    then serves every read that began before it was asked for (each read of a group began before the
    group's ``read_index``, so the offset it gets covers every write acknowledged before it began), and
    a follower sends the leader one ReadOffset per round trip however many reads arrive: the leader's
    cost per read shrinks as readers are added, which is what lets followers take reads off it.
    ``ask`` schedules a call of :meth:`start_group` on the node's loop, where the core may be stepped.
    """

    def __init__(self, leader: Callable[[], LeaderAndEpoch], ask: Callable[[], None]) -> None:
        self.leader = leader  # the leader this node knows now, for the errors
        self.ask = ask  # schedule a call of :meth:`start_group` on the node's loop
        self.applied = 0  # every batch below this offset has been handed to the listener
        self._ids = itertools.count(1)
        self._next: list[_Waiting] = []
        self._flying: tuple[int, list[_Waiting]] | None = None
        self._asked = False

    def join(self, timeout_ms: int) -> asyncio.Future[int]:
        """A future of the offset for a read beginning now (the caller bounds its wait)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        flying = len(self._flying[1]) if self._flying else 0
        if flying + len(self._next) >= MAX_WAITING_READS:
            future.set_exception(_read_error(BROKER_NOT_AVAILABLE, timeout_ms, self.leader()))
            return future
        self._next.append(_Waiting(future, timeout_ms, loop.time() + timeout_ms / 1000))
        if self._flying is None and not self._asked:
            self._asked = True
            self.ask()
        return future

    def start_group(self) -> tuple[int, int] | None:
        """(read id, timeout in ms) for the core's ``read_index`` of the waiting reads, or None."""
        self._asked = False
        group = [w for w in self._next if not w.future.done()]
        self._next = []
        if self._flying is not None or not group:
            self._next = group
            return None
        read_id = next(self._ids)
        self._flying = (read_id, group)
        now = asyncio.get_running_loop().time()
        return read_id, max(1, int(1000 * (max(w.deadline for w in group) - now)))

    def on_notification(self, note: Any) -> None:
        """Follow one core notification (the node calls it on its loop, in order)."""
        kind = type(note)
        if kind is CommittedBatch:
            self.applied = note.last_offset + 1
        elif kind is SnapshotLoaded:
            self.applied = note.snapshot_id.end_offset
        elif kind in (ReadReady, ReadFailed) and self._flying and self._flying[0] == note.read_id:
            group, self._flying = self._flying[1], None
            for waiting in group:
                if waiting.future.done():
                    continue
                if kind is ReadReady:
                    waiting.future.set_result(note.offset)
                else:
                    error = _read_error(note.error_code, waiting.timeout_ms, self.leader())
                    waiting.future.set_exception(error)
            if self._next and not self._asked:
                self._asked = True
                self.ask()

    def timed_out(self, timeout_ms: int) -> ReadTimeoutError:
        return _timeout_error(timeout_ms, self.leader())

    def fail_all(self, error: Exception) -> None:
        group = self._flying[1] if self._flying else []
        waiting, self._next, self._flying = [*group, *self._next], [], None
        for w in waiting:
            if not w.future.done():
                w.future.set_exception(error)
                w.future.exception()  # a caller that gave up must not leave it unretrieved


def _read_error(error_code: int, timeout_ms: int, leader: LeaderAndEpoch) -> ReadError:
    if error_code == REQUEST_TIMED_OUT:
        return _timeout_error(timeout_ms, leader)
    known = _known(leader)
    if error_code == BROKER_NOT_AVAILABLE:
        return ReadError(f"too many linearizable reads waiting ({known})", error_code, leader)
    return ReadError(
        f"linearizable read failed with error {error_code} ({known})", error_code, leader
    )


def _timeout_error(timeout_ms: int, leader: LeaderAndEpoch) -> ReadTimeoutError:
    return ReadTimeoutError(
        f"linearizable read not confirmed by a leader within {timeout_ms} ms ({_known(leader)})",
        REQUEST_TIMED_OUT,
        leader,
    )


def _known(leader: LeaderAndEpoch) -> str:
    return f"leader {leader.leader_id}, epoch {leader.epoch}"


# -- ReadOffset from clients -----------------------------------------------------------------------


def is_client_read(api_key: int, client_id: str | None) -> bool:
    """A ReadOffset this node answers itself (see the module doc), not one for the core."""
    return api_key == api_keys.READ_OFFSET and not (client_id or "").startswith(RAFT_CLIENT_PREFIX)


async def handle_client_read(node: ReadTarget, request: Any) -> Any:
    """The ReadOffsetResponse for a client: this node's linearizable read offset, or an error."""
    if request.cluster_id is not None and request.cluster_id != node.cluster_id():
        return _ro.ReadOffsetResponse(error_code=INCONSISTENT_CLUSTER_ID)
    topics = request.topics
    if not (
        len(topics) == 1
        and topics[0].topic_name == METADATA_TOPIC
        and len(topics[0].partitions) == 1
        and topics[0].partitions[0].partition_index == METADATA_PARTITION
    ):
        return _answer(node, UNKNOWN_TOPIC_OR_PARTITION)
    try:
        offset = await node.read("linearizable")
    except ReadError as exc:
        return _answer(node, exc.error_code)
    except NodeFailed:
        return _answer(node, NOT_LEADER_OR_FOLLOWER)
    return _answer(node, NONE, offset)


def _answer(node: QuorumView, error: int, offset: int = -1) -> Any:
    status = node.status()
    leader_id = -1 if status.leader_id is None else status.leader_id
    endpoints = []
    endpoint = None if error == NONE else node.leader_endpoint()
    if endpoint is not None:
        endpoints.append(
            _ro.NodeEndpoint(node_id=leader_id, host=endpoint.host, port=endpoint.port)
        )
    partition = _ro.PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=error,
        applied_offset=offset,
        current_leader=_ro.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=status.epoch),
    )
    topic = _ro.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])
    return _ro.ReadOffsetResponse(error_code=NONE, topics=[topic], node_endpoints=endpoints)
