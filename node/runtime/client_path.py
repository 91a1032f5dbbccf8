"""The client write and read path: Produce to ``__cluster_metadata-0`` on the leader, and Fetch by a
non-replica client (replica id -1), which sees committed records only.

A client Fetch is validated as Kafka's KafkaRaftClient validates every Fetch (a Kafka controller
answers a replica -1 Fetch through the same code): a negative MaxWaitMs, FetchOffset or LastFetchedEpoch,
or a LastFetchedEpoch above CurrentLeaderEpoch, is INVALID_REQUEST; a CurrentLeaderEpoch below ours is
FENCED_LEADER_EPOCH, above ours UNKNOWN_LEADER_EPOCH, both naming the current leader and epoch.

A client Fetch that finds no new committed records waits (up to MaxWaitMs) for some to commit.

Produce: acks=-1 is answered once the records are committed, acks=1 once the leader has taken them
(they sit in its log or accumulator), acks=0 never. A non-leader answers NOT_LEADER_OR_FOLLOWER with
the current leader (and from v10 its endpoint) so a client can go there.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from kraftwire.generated import ProtocolError
from kraftwire.generated import fetch_response as _fr
from kraftwire.generated import produce_response as _pr
from kraftwire.generated.errors import (
    CORRUPT_MESSAGE,
    FENCED_LEADER_EPOCH,
    INVALID_REQUEST,
    INVALID_REQUIRED_ACKS,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    POLICY_VIOLATION,
    REQUEST_TIMED_OUT,
    UNKNOWN_LEADER_EPOCH,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from kraftwire.node import batches as batch_codec
from kraftwire.node.core.api import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    QuorumStatus,
    Role,
)

if TYPE_CHECKING:
    from .node import KRaftNode

KAFKA_METADATA_LOG_REFUSAL = (
    "kraftwire does not write into a Kafka metadata log: this quorum's log holds a metadata.version"
    " FeatureLevelRecord, and Kafka's controllers would stop at a record they cannot replay"
)


def _is_metadata_topic(topic: Any, version: int) -> bool:
    named: bool = (
        topic.topic_id == METADATA_TOPIC_ID if version >= 13 else topic.name == METADATA_TOPIC
    )
    return named


async def handle_produce(node: "KRaftNode", version: int, request: Any) -> Any | None:
    """The ProduceResponse to send, or None (acks=0)."""
    partitions = [(t, p) for t in request.topic_data for p in t.partition_data]

    def answer(error: int, base_offset: int = -1, message: str | None = None) -> Any | None:
        """The ProduceResponse with ``error`` for every partition; no answer at all for acks=0."""
        if request.acks == 0:
            return None
        return _produce_answer(node, version, partitions, error, base_offset, message)

    if request.acks not in (-1, 0, 1):
        return answer(INVALID_REQUIRED_ACKS)
    if request.transactional_id is not None or len(partitions) != 1:
        return answer(INVALID_REQUEST)
    topic, partition = partitions[0]
    if not _is_metadata_topic(topic, version) or partition.index != METADATA_PARTITION:
        return answer(UNKNOWN_TOPIC_ID if version >= 13 else UNKNOWN_TOPIC_OR_PARTITION)
    records = _data_records(partition.records)
    if not records:
        return answer(CORRUPT_MESSAGE)
    if node.is_kafka_metadata_log():
        return answer(POLICY_VIOLATION, message=KAFKA_METADATA_LOG_REFUSAL)
    appended, committed = node.submit(records)
    try:
        result = await appended
        if request.acks == -1:
            await asyncio.wait_for(asyncio.shield(committed), max(request.timeout_ms, 1) / 1000)
    except asyncio.TimeoutError:
        return answer(REQUEST_TIMED_OUT)
    except Exception:  # not the leader, lost to a new leader, the node stopping: the client retries
        return answer(NOT_LEADER_OR_FOLLOWER)
    return answer(NONE, result.last_offset - len(records) + 1)


def _data_records(raw: bytes | None) -> tuple[bytes, ...]:
    """The data records of a Produce's batches; none when the batches cannot be read."""
    try:
        batches = batch_codec.decode_batches(raw or b"")
    except (ProtocolError, ValueError):
        return ()
    return tuple(r for b in batches if not b.is_control for r in b.records)


def _produce_answer(
    node: "KRaftNode",
    version: int,
    partitions: list[tuple[Any, Any]],
    error: int,
    base_offset: int = -1,
    message: str | None = None,
) -> Any:
    status = node.status()
    leader_known = error == NOT_LEADER_OR_FOLLOWER and status.leader_id is not None
    endpoint = node.leader_endpoint() if leader_known else None
    topics: dict[Any, list[Any]] = {}
    for topic, partition in partitions:
        answer = _pr.PartitionProduceResponse(
            index=partition.index,
            error_code=error,
            base_offset=base_offset,
            log_start_offset=status.log_start_offset,
            error_message=message,
        )
        if error == NOT_LEADER_OR_FOLLOWER:
            answer.current_leader = _pr.LeaderIdAndEpoch(
                leader_id=-1 if status.leader_id is None else status.leader_id,
                leader_epoch=status.epoch,
            )
        topics.setdefault(topic.topic_id if version >= 13 else topic.name, []).append(answer)
    responses = [
        (
            _pr.TopicProduceResponse(topic_id=key, partition_responses=answers)
            if version >= 13
            else _pr.TopicProduceResponse(name=key, partition_responses=answers)
        )
        for key, answers in topics.items()
    ]
    nodes = []
    if endpoint is not None:
        nodes = [_pr.NodeEndpoint(node_id=status.leader_id, host=endpoint.host, port=endpoint.port)]
    return _pr.ProduceResponse(responses=responses, node_endpoints=nodes)


async def handle_client_fetch(node: "KRaftNode", version: int, request: Any) -> Any:
    """A Fetch from a non-replica client: committed batches only, from the leader (or a follower
    with kraftwire.follower.fetch.enable). As Kafka's broker does, a fetch that finds fewer than
    MinBytes of committed records (and no error) is held until more commit, leadership changes or
    MaxWaitMs passes, then answered with what there is."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0, request.max_wait_ms) / 1000
    while True:
        response = _client_fetch_response(node, version, request)
        remaining = deadline - loop.time()
        if remaining <= 0 or not _worth_waiting(response, request.min_bytes):
            return response
        await node.wait_for_commit(remaining)


def _worth_waiting(response: Any, min_bytes: int) -> bool:
    partitions = [p for topic in response.responses for p in topic.partitions]
    if any(p.error_code != NONE for p in partitions):
        return False
    return sum(len(p.records or b"") for p in partitions) < min_bytes


def _client_fetch_response(node: "KRaftNode", version: int, request: Any) -> Any:
    status = node.status()
    topics = []
    for topic in request.topics:
        answers = []
        for p in topic.partitions:
            answers.append(_client_partition(node, status, version, topic, p, request))
        topics.append(
            _fr.FetchableTopicResponse(topic_id=topic.topic_id, partitions=answers)
            if version >= 13
            else _fr.FetchableTopicResponse(topic=topic.topic, partitions=answers)
        )
    nodes = []
    endpoint = node.leader_endpoint() if status.role is not Role.LEADER else None
    if endpoint is not None and version >= 16:
        nodes = [_fr.NodeEndpoint(node_id=status.leader_id, host=endpoint.host, port=endpoint.port)]
    return _fr.FetchResponse(responses=topics, node_endpoints=nodes)


def _client_partition(
    node: "KRaftNode", status: QuorumStatus, version: int, topic: Any, p: Any, request: Any
) -> Any:
    def answer(error: int, records: bytes | None = None) -> Any:
        out = _fr.PartitionData(
            partition_index=p.partition,
            error_code=error,
            # Kafka's raft client leaves the high watermark unknown (-1) in every error answer,
            # to a client (replica -1) as to a replica (seen on the wire, issue #10 interop).
            high_watermark=(
                -1 if error != NONE or status.high_watermark is None else status.high_watermark
            ),
            log_start_offset=status.log_start_offset,
            records=records,
        )
        if error in (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH):
            out.current_leader = _fr.LeaderIdAndEpoch(
                leader_id=-1 if status.leader_id is None else status.leader_id,
                leader_epoch=status.epoch,
            )
        return out

    if not _is_metadata_topic_fetch(topic, version) or p.partition != METADATA_PARTITION:
        return answer(UNKNOWN_TOPIC_ID if version >= 13 else UNKNOWN_TOPIC_OR_PARTITION)
    if (
        request.max_wait_ms < 0
        or p.fetch_offset < 0
        or p.last_fetched_epoch < 0
        or p.last_fetched_epoch > p.current_leader_epoch
    ):
        return answer(INVALID_REQUEST)
    if p.current_leader_epoch != status.epoch:
        return answer(
            FENCED_LEADER_EPOCH if p.current_leader_epoch < status.epoch else UNKNOWN_LEADER_EPOCH
        )
    # With kraftwire.follower.fetch.enable a follower serves what it knows is committed too: a reader
    # that got its read offset from this node (ReadOffset, issue #13) reads on here up to it.
    serving = (Role.LEADER, Role.FOLLOWER) if node.config.follower_fetch else (Role.LEADER,)
    if status.role not in serving or status.high_watermark is None:
        return answer(NOT_LEADER_OR_FOLLOWER)
    log = node.running_storage().log
    if p.fetch_offset < log.start_offset() or p.fetch_offset > status.high_watermark:
        return answer(OFFSET_OUT_OF_RANGE)
    limit = max(1, min(request.max_bytes, p.partition_max_bytes))
    committed = [
        b for b in log.read(p.fetch_offset, limit) if b.last_offset < status.high_watermark
    ]
    return answer(NONE, batch_codec.encode_batches(committed) if committed else b"")


def _is_metadata_topic_fetch(topic: Any, version: int) -> bool:
    named: bool = (
        topic.topic_id == METADATA_TOPIC_ID if version >= 13 else topic.topic == METADATA_TOPIC
    )
    return named


def is_client_fetch(version: int, request: Any) -> bool:
    replica: int = request.replica_state.replica_id if version >= 15 else request.replica_id
    return replica < 0
