"""A client's Fetch (replica id -1) in the core (``fetch_client``): committed records only, from the
leader (or a follower with ``follower_fetch``), parked until records commit, the leader changes or
MaxWaitMs passes; each error answer names the leader and epoch with an unknown high watermark.

The answers are the ones the runtime's own client path gave before the core took the client Fetch
over (the same fields, the same rules); tests/runtime/test_client_fetch_core.py asks a real node.
"""

from __future__ import annotations

from typing import Any

from test_core_status import Cluster

from kraftwire.generated.errors import (
    FENCED_LEADER_EPOCH,
    INVALID_REQUEST,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    UNKNOWN_LEADER_EPOCH,
    UNKNOWN_TOPIC_ID,
)
from kraftwire.generated.records import decode_batches
from kraftwire.node.core import KRaftCore, OutboundResponse, RequestReceived, Role
from kraftwire.node.core.api import METADATA_PARTITION, METADATA_TOPIC_ID, ZERO_UUID
from kraftwire.node.runtime.producer import client_fetch_request

CLIENT = -1001  # a client connection's source, as the runtime numbers them
VERSION = 17


class _Cluster(Cluster):
    """The cores' cluster, keeping what they answer the client (no core has its id)."""

    def __init__(self, follower_fetch: bool) -> None:
        super().__init__([1, 2, 3], follower_fetch=follower_fetch)
        self.client_answers: list[Any] = []

    def drain(self) -> None:
        super().drain()
        for _, message in self.network:
            if isinstance(message, OutboundResponse) and message.destination == CLIENT:
                self.client_answers.append(message.response)


def _committed_cluster(values: list[bytes], follower_fetch: bool = False) -> _Cluster:
    cluster = _Cluster(follower_fetch)
    cluster.run(6000)
    for value in values:
        cluster.leader().append([value], cluster.now)
        cluster.run(200)
    return cluster


def _ask(cluster: _Cluster, core: KRaftCore, request: Any, cid: int = 7) -> list[Any]:
    """Step the client's Fetch into ``core``; the responses it sends the client at once."""
    core.step(RequestReceived(CLIENT, cid, VERSION, request, cluster.now))
    return _answers(cluster, core)


def _answers(cluster: _Cluster, core: KRaftCore) -> list[Any]:
    """What ``core`` answered the client since last asked (while the cluster ran, or now)."""
    answers, cluster.client_answers = cluster.client_answers, []
    while core.has_ready():
        ready = core.ready()
        for message in ready.messages:
            if isinstance(message, OutboundResponse) and message.destination == CLIENT:
                answers.append(message.response)
            else:
                cluster.network.append((_id_of(cluster, core), message))
        core.advance(ready)
    return answers


def _id_of(cluster: _Cluster, core: KRaftCore) -> int:
    return next(n for n, c in cluster.cores.items() if c is core)


def _fetch(offset: int, epoch: int, max_wait_ms: int = 0, last_epoch: int | None = None) -> Any:
    last = epoch if last_epoch is None else last_epoch
    return client_fetch_request(VERSION, offset, epoch, last, max_wait_ms=max_wait_ms)


def _parked_at_high_watermark(max_wait_ms: int) -> tuple[_Cluster, KRaftCore, Any]:
    """A cluster whose leader committed one record and parked a client Fetch at its high watermark:
    (cluster, leader, the leader's status when asked)."""
    cluster = _committed_cluster([b"a"])
    leader = cluster.leader()
    status = leader.status()
    assert status.high_watermark is not None
    assert _ask(cluster, leader, _fetch(status.high_watermark, status.epoch, max_wait_ms)) == []
    return cluster, leader, status


def _partition(response: Any) -> Any:
    [topic] = response.responses
    assert topic.topic_id == METADATA_TOPIC_ID
    [partition] = topic.partitions
    assert partition.partition_index == METADATA_PARTITION
    return partition


def _values(partition: Any) -> list[bytes]:
    batches, _ = decode_batches(partition.records or b"")
    return [r.value for b in batches if not b.is_control for r in b.records]


def test_the_leader_serves_committed_records_below_the_high_watermark() -> None:
    cluster = _committed_cluster([b"a", b"b", b"c"])
    leader = cluster.leader()
    status = leader.status()
    [answer] = _ask(cluster, leader, _fetch(0, status.epoch))
    p = _partition(answer)
    assert (p.error_code, p.high_watermark) == (NONE, status.high_watermark)
    assert p.log_start_offset == status.log_start_offset
    assert _values(p) == [b"a", b"b", b"c"]
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (-1, -1)  # not an error
    assert answer.node_endpoints == []  # the leader names no other endpoint


def test_at_the_high_watermark_an_empty_answer_and_above_it_out_of_range() -> None:
    cluster = _committed_cluster([b"a"])
    leader = cluster.leader()
    status = leader.status()
    hw, epoch = status.high_watermark, status.epoch
    assert hw is not None
    [at] = _ask(cluster, leader, _fetch(hw, epoch))
    assert (_partition(at).error_code, _partition(at).records, _partition(at).high_watermark) == (
        NONE,
        b"",
        hw,
    )
    [above] = _ask(cluster, leader, _fetch(hw + 1, epoch))
    p = _partition(above)
    assert (p.error_code, p.high_watermark, p.records) == (OFFSET_OUT_OF_RANGE, -1, None)


def test_records_the_quorum_has_not_committed_are_not_served() -> None:
    cluster = _committed_cluster([b"a"])
    leader = cluster.leader()
    hw = leader.status().high_watermark
    leader.append([b"uncommitted"], cluster.now)
    _answers(cluster, leader)  # flushed on the leader; the followers never hear of it
    cluster.network.clear()
    assert leader.status().log_end_offset > leader.status().high_watermark == hw
    [answer] = _ask(cluster, leader, _fetch(0, leader.status().epoch))
    assert _values(_partition(answer)) == [b"a"]


def test_a_follower_names_the_leader_unless_it_serves_client_fetches() -> None:
    cluster = _committed_cluster([b"a"])
    leader = cluster.leader()
    leader_id, epoch = leader.status().leader_id, leader.status().epoch
    follower = next(c for c in cluster.cores.values() if c is not leader)
    [answer] = _ask(cluster, follower, _fetch(0, epoch))
    p = _partition(answer)
    assert (p.error_code, p.high_watermark, p.records) == (NOT_LEADER_OR_FOLLOWER, -1, None)
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader_id, epoch)
    [endpoint] = answer.node_endpoints
    assert (endpoint.node_id, endpoint.host, endpoint.port) == (
        leader_id,
        "localhost",
        9000 + leader_id,
    )

    serving = _committed_cluster([b"a", b"b"], follower_fetch=True)
    leader = serving.leader()
    follower = next(c for c in serving.cores.values() if c is not leader)
    [answer] = _ask(serving, follower, _fetch(0, follower.status().epoch))
    p = _partition(answer)
    assert (p.error_code, p.high_watermark) == (NONE, follower.status().high_watermark)
    assert _values(p) == [b"a", b"b"]


def test_a_fetch_is_validated_as_every_fetch() -> None:
    cluster = _committed_cluster([b"a"])
    leader = cluster.leader()
    epoch = leader.status().epoch
    cases = [
        (_fetch(0, -1, last_epoch=-1), INVALID_REQUEST),
        (_fetch(0, epoch, last_epoch=epoch + 1), INVALID_REQUEST),
        (_fetch(0, epoch - 1, last_epoch=0), FENCED_LEADER_EPOCH),
        (_fetch(0, epoch + 1), UNKNOWN_LEADER_EPOCH),
    ]
    for request, error in cases:
        [answer] = _ask(cluster, leader, request)
        p = _partition(answer)
        assert (p.error_code, p.high_watermark) == (error, -1), request
        if error != INVALID_REQUEST:
            named = (p.current_leader.leader_id, p.current_leader.leader_epoch)
            assert named == (leader.status().leader_id, epoch)
    other = _fetch(0, epoch)
    other.topics[0].topic_id = ZERO_UUID
    [answer] = _ask(cluster, leader, other)
    assert answer.responses[0].partitions[0].error_code == UNKNOWN_TOPIC_ID


def test_a_fetch_at_the_high_watermark_is_parked_until_a_commit() -> None:
    cluster, leader, status = _parked_at_high_watermark(20_000)
    assert leader.next_deadline_ms() <= cluster.now + 20_000

    leader.append([b"late"], cluster.now)
    answers = _answers(cluster, leader)
    for _ in range(20):  # the followers acknowledge; the commit answers the parked fetch
        if answers:
            break
        cluster.run(50)
        answers = _answers(cluster, leader)
    [answer] = answers
    p = _partition(answer)
    assert p.error_code == NONE and _values(p) == [b"late"]
    assert p.high_watermark == leader.status().high_watermark


def test_a_parked_fetch_is_answered_empty_when_its_max_wait_passes() -> None:
    cluster, leader, status = _parked_at_high_watermark(1000)
    start = cluster.now  # asking does not run the cluster's clock
    answers: list[Any] = []
    while not answers and cluster.now < start + 2000:
        cluster.run(50)
        answers = _answers(cluster, leader)
    assert start + 1000 <= cluster.now < start + 1100
    p = _partition(answers[0])
    assert (p.error_code, p.records, p.high_watermark) == (NONE, b"", status.high_watermark)


def test_a_parked_fetch_is_answered_when_the_leader_resigns() -> None:
    cluster, leader, status = _parked_at_high_watermark(20_000)
    leader.resign(status.epoch, cluster.now)
    [answer] = _answers(cluster, leader)
    assert leader.status().role is not Role.LEADER
    p = _partition(answer)
    assert p.error_code == NOT_LEADER_OR_FOLLOWER
    assert p.current_leader.leader_epoch == leader.status().epoch
