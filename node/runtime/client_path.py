"""The client write path: Produce to ``__cluster_metadata-0`` on the leader. (A client's Fetch,
replica id -1, goes to the core like any Fetch: ``kraftwire.node.core.fetch_client``.)

Produce: acks=-1 is answered once the records are committed, acks=1 once the leader has taken them
(they sit in its log or accumulator), acks=0 never. A non-leader answers NOT_LEADER_OR_FOLLOWER with
the current leader (and from v10 its endpoint) so a client can go there.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kraftwire.generated import ProtocolError
from kraftwire.generated import produce_response as _pr
from kraftwire.generated.errors import (
    CORRUPT_MESSAGE,
    INVALID_REQUEST,
    INVALID_REQUIRED_ACKS,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    POLICY_VIOLATION,
    REQUEST_TIMED_OUT,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from kraftwire.node.core import batches as batch_codec
from kraftwire.node.core.api import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
)

from .node_view import ProduceTarget, QuorumView

KAFKA_METADATA_LOG_REFUSAL = (
    "kraftwire does not write into a Kafka metadata log: this quorum's log holds a metadata.version"
    " FeatureLevelRecord, and Kafka's controllers would stop at a record they cannot replay"
)


def _is_metadata_topic(topic: Any, version: int) -> bool:
    named: bool = (
        topic.topic_id == METADATA_TOPIC_ID if version >= 13 else topic.name == METADATA_TOPIC
    )
    return named


async def handle_produce(node: ProduceTarget, version: int, request: Any) -> Any | None:
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
    node: QuorumView,
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
    if endpoint is not None and status.leader_id is not None:
        nodes = [_pr.NodeEndpoint(node_id=status.leader_id, host=endpoint.host, port=endpoint.port)]
    return _pr.ProduceResponse(responses=responses, node_endpoints=nodes)
