"""Builders for the responses the core sends, shaped for the request's version (Kafka's RaftUtil).

Partition-level answers always carry our current leader id and epoch; ``NodeEndpoints`` is filled only
on versions that have it (Vote/Begin/EndQuorumEpoch/FetchSnapshot v1+, Fetch v17+) and only when the
leader is known and has an endpoint on our listener. Top-level error answers have no topics.

Whatever Kafka's handler leaves unset keeps the spec's default, as Kafka's generated classes do: a string
without a default is "" (never null) and a number without one is 0 (never -1). So a Fetch error answer
has HighWatermark -1 (Kafka passes no HW), a FetchSnapshot error answer SnapshotId (0, 0), and a
DescribeQuorum error answer LeaderId, LeaderEpoch and HighWatermark 0. tests/node/test_kafka_answers.py
holds each builder to Kafka's answer.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Sequence, TypeVar

from kraftwire.generated import (
    add_raft_voter_response as _add,
    api_versions_response as _av,
    begin_quorum_epoch_response as _bqe,
    describe_quorum_response as _dq,
    end_quorum_epoch_response as _eqe,
    fetch_response as _fetch,
    fetch_snapshot_response as _fs,
    read_offset_response as _ro,
    remove_raft_voter_response as _rem,
    update_raft_voter_response as _upd,
    vote_response as _vote,
)
from kraftwire.generated import errors

from .api import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    ZERO_UUID,
    Endpoint,
    ReplicaStatus,
    SnapshotId,
)

LeaderEndpoint = tuple[int, Endpoint] | None
"""(leader id, its endpoint on our listener), when known."""

# The APIs a KRaft controller answers here (key, min, max) and the kraft.version feature range.
SUPPORTED_APIS = (
    (1, 4, 18),
    (18, 0, 5),
    (52, 0, 2),
    (53, 0, 1),
    (54, 0, 1),
    (55, 0, 2),
    (59, 0, 1),
    (80, 0, 1),
    (81, 0, 0),
    (82, 0, 0),
)


def _nid(leader_id: int | None) -> int:
    return -1 if leader_id is None else leader_id


# The API's NodeEndpoint class (each response module has its own); list[Any] for that reason.
def _endpoints(module: ModuleType, ep: LeaderEndpoint, version: int, min_version: int) -> list[Any]:
    if ep is None or version < min_version:
        return []
    node_id, e = ep
    return [module.NodeEndpoint(node_id=node_id, host=e.host, port=e.port)]


def vote_response(
    version: int,
    error: int,
    perr: int = 0,
    leader_id: int | None = None,
    epoch: int = -1,
    granted: bool = False,
    ep: LeaderEndpoint = None,
) -> _vote.VoteResponse:
    if error != errors.NONE:
        return _vote.VoteResponse(error_code=error)
    return _vote.VoteResponse(
        error_code=error,
        topics=[
            _vote.TopicData(
                topic_name=METADATA_TOPIC,
                partitions=[
                    _vote.PartitionData(
                        partition_index=METADATA_PARTITION,
                        error_code=perr,
                        leader_id=_nid(leader_id),
                        leader_epoch=epoch,
                        vote_granted=granted,
                    )
                ],
            )
        ],
        node_endpoints=_endpoints(_vote, ep, version, 1),
    )


_Answer = TypeVar("_Answer")


def _quorum_epoch_response(
    module: ModuleType,
    cls: Callable[..., _Answer],
    version: int,
    error: int,
    perr: int,
    leader_id: int | None,
    epoch: int,
    ep: LeaderEndpoint,
) -> _Answer:
    if error != errors.NONE:
        return cls(error_code=error)
    return cls(
        error_code=error,
        topics=[
            module.TopicData(
                topic_name=METADATA_TOPIC,
                partitions=[
                    module.PartitionData(
                        partition_index=METADATA_PARTITION,
                        error_code=perr,
                        leader_id=_nid(leader_id),
                        leader_epoch=epoch,
                    )
                ],
            )
        ],
        node_endpoints=_endpoints(module, ep, version, 1),
    )


def begin_quorum_epoch_response(
    version: int,
    error: int,
    perr: int = 0,
    leader_id: int | None = None,
    epoch: int = -1,
    ep: LeaderEndpoint = None,
) -> _bqe.BeginQuorumEpochResponse:
    return _quorum_epoch_response(
        _bqe, _bqe.BeginQuorumEpochResponse, version, error, perr, leader_id, epoch, ep
    )


def end_quorum_epoch_response(
    version: int,
    error: int,
    perr: int = 0,
    leader_id: int | None = None,
    epoch: int = -1,
    ep: LeaderEndpoint = None,
) -> _eqe.EndQuorumEpochResponse:
    return _quorum_epoch_response(
        _eqe, _eqe.EndQuorumEpochResponse, version, error, perr, leader_id, epoch, ep
    )


def fetch_response(
    version: int,
    error: int,
    perr: int = 0,
    leader_id: int | None = None,
    epoch: int = -1,
    high_watermark: int | None = None,
    log_start_offset: int = -1,
    records: bytes | None = None,
    diverging: tuple[int, int] | None = None,
    snapshot_id: SnapshotId | None = None,
    ep: LeaderEndpoint = None,
) -> _fetch.FetchResponse:
    """``diverging`` is (epoch, end_offset)."""
    if error != errors.NONE:
        return _fetch.FetchResponse(error_code=error)
    part = _fetch.PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=perr,
        high_watermark=-1 if high_watermark is None else high_watermark,
        log_start_offset=log_start_offset,
        current_leader=_fetch.LeaderIdAndEpoch(leader_id=_nid(leader_id), leader_epoch=epoch),
        records=records if records is not None else b"",
    )
    if diverging is not None:
        part.diverging_epoch = _fetch.EpochEndOffset(epoch=diverging[0], end_offset=diverging[1])
    if snapshot_id is not None:
        part.snapshot_id = _fetch.SnapshotId(
            end_offset=snapshot_id.end_offset, epoch=snapshot_id.epoch
        )
    eps = []
    if ep is not None and version >= 17:
        eps = [_fetch.NodeEndpoint(node_id=ep[0], host=ep[1].host, port=ep[1].port)]
    return _fetch.FetchResponse(
        error_code=error,
        responses=[
            _fetch.FetchableTopicResponse(
                topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID, partitions=[part]
            )
        ],
        node_endpoints=eps,
    )


def fetch_snapshot_response(
    version: int,
    error: int,
    perr: int = 0,
    leader_id: int | None = None,
    epoch: int = -1,
    snapshot_id: SnapshotId | None = None,
    size: int = 0,
    position: int = 0,
    data: bytes = b"",
    ep: LeaderEndpoint = None,
) -> _fs.FetchSnapshotResponse:
    """A chunk of ``snapshot_id``, or (``snapshot_id`` None) a partition-level error, which names the
    current leader and nothing else."""
    if error != errors.NONE:
        return _fs.FetchSnapshotResponse(error_code=error)
    part = _fs.PartitionSnapshot(
        index=METADATA_PARTITION,
        error_code=perr,
        current_leader=_fs.LeaderIdAndEpoch(leader_id=_nid(leader_id), leader_epoch=epoch),
        size=size,
        position=position,
        unaligned_records=data,
    )
    if snapshot_id is not None:
        part.snapshot_id = _fs.SnapshotId(
            end_offset=snapshot_id.end_offset, epoch=snapshot_id.epoch
        )
    return _fs.FetchSnapshotResponse(
        error_code=error,
        topics=[_fs.TopicSnapshot(name=METADATA_TOPIC, partitions=[part])],
        node_endpoints=_endpoints(_fs, ep, version, 1),
    )


def fetch_snapshot_unknown_partition(
    version: int, topic: str, partition: int, ep: LeaderEndpoint
) -> _fs.FetchSnapshotResponse:
    """UNKNOWN_TOPIC_OR_PARTITION for the topic and partition asked for; Kafka names no leader in it
    (but still lists the leader's endpoint)."""
    part = _fs.PartitionSnapshot(
        index=partition, error_code=errors.UNKNOWN_TOPIC_OR_PARTITION, unaligned_records=b""
    )
    return _fs.FetchSnapshotResponse(
        topics=[_fs.TopicSnapshot(name=topic, partitions=[part])],
        node_endpoints=_endpoints(_fs, ep, version, 1),
    )


def replica_state(progress: ReplicaStatus) -> _dq.ReplicaState:
    """DescribeQuorum's ``ReplicaState`` for one replica's progress."""
    key = progress.key
    return _dq.ReplicaState(
        replica_id=key.id,
        replica_directory_id=key.directory_id or ZERO_UUID,
        log_end_offset=-1 if progress.log_end_offset is None else progress.log_end_offset,
        last_fetch_timestamp=progress.last_fetch_ms,
        last_caught_up_timestamp=progress.last_caught_up_ms,
    )


def describe_quorum_error(perr: int, asked: Sequence[tuple[str, Sequence[int]]]) -> _dq.DescribeQuorumResponse:
    """A partition-level error for each (topic, partitions) in ``asked``: the error code and its default
    message, every other field left at its default (LeaderId, LeaderEpoch, HighWatermark 0)."""
    return _dq.DescribeQuorumResponse(
        topics=[
            _dq.TopicData(
                topic_name=name,
                partitions=[
                    _dq.PartitionData(
                        partition_index=index, error_code=perr, error_message=errors.message(perr)
                    )
                    for index in indexes
                ],
            )
            for name, indexes in asked
        ]
    )


def describe_quorum_response(
    version: int,
    leader_id: int | None,
    epoch: int,
    high_watermark: int | None,
    voters: Sequence[_dq.ReplicaState],
    observers: Sequence[_dq.ReplicaState],
    nodes: Sequence[tuple[int, dict[str, Endpoint]]],
) -> _dq.DescribeQuorumResponse:
    """The leader's answer (its error messages stay "")."""
    part = _dq.PartitionData(
        partition_index=METADATA_PARTITION,
        leader_id=_nid(leader_id),
        leader_epoch=epoch,
        high_watermark=-1 if high_watermark is None else high_watermark,
        current_voters=list(voters),
        observers=list(observers),
    )
    node_list = []
    if version >= 2:
        node_list = [
            _dq.Node(
                node_id=nid,
                listeners=[
                    _dq.Listener(name=n, host=e.host, port=e.port) for n, e in listeners.items()
                ],
            )
            for nid, listeners in nodes
        ]
    return _dq.DescribeQuorumResponse(
        topics=[_dq.TopicData(topic_name=METADATA_TOPIC, partitions=[part])],
        nodes=node_list,
    )


def _change_message(error: int, message: str | None) -> str | None:
    """As Kafka 4.4.0's ``RaftUtil.addVoterResponse``/``removeVoterResponse``: the text given, else the
    error's default message for an error and null for success. (Kafka 4.0.x filled in the default for
    success too, ``Errors.NONE.message()`` = "NONE"; 4.4.0 leaves it null.) The leader-only check is
    answered with "" (:data:`NO_MESSAGE`)."""
    if message is None and error == errors.NONE:
        return None
    return errors.message(error) if message is None else message


NO_MESSAGE = ""
"""The ErrorMessage of a voter change refused by the leader-only check, which Kafka leaves unset."""


def add_raft_voter_response(error: int, message: str | None = None) -> _add.AddRaftVoterResponse:
    return _add.AddRaftVoterResponse(
        error_code=error, error_message=_change_message(error, message)
    )


def remove_raft_voter_response(error: int, message: str | None = None) -> _rem.RemoveRaftVoterResponse:
    return _rem.RemoveRaftVoterResponse(
        error_code=error, error_message=_change_message(error, message)
    )


def update_raft_voter_response(
    error: int, leader_id: int | None, epoch: int, ep: LeaderEndpoint
) -> _upd.UpdateRaftVoterResponse:
    """Host and Port stay "" and 0 unless the leader's endpoint is known."""
    current = _upd.CurrentLeader(leader_id=_nid(leader_id), leader_epoch=epoch)
    if ep is not None:
        current.host, current.port = ep[1].host, ep[1].port
    return _upd.UpdateRaftVoterResponse(error_code=error, current_leader=current)


def api_versions_response(version: int, kraft_range: tuple[int, int]) -> _av.ApiVersionsResponse:
    features = []
    # Answers to v0-v3 leave out features whose minimum is 0 (KAFKA-17011), so v4+ is needed to see it.
    if version >= 3 and (kraft_range[0] > 0 or version >= 4):
        features = [
            _av.SupportedFeatureKey(
                name="kraft.version", min_version=kraft_range[0], max_version=kraft_range[1]
            )
        ]
    return _av.ApiVersionsResponse(
        error_code=errors.NONE,
        api_keys=[
            _av.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, lo, hi in SUPPORTED_APIS
        ],
        supported_features=features,
    )


def read_offset_response(
    error: int,
    perr: int = 0,
    offset: int | None = None,
    leader_id: int | None = None,
    epoch: int = -1,
    ep: LeaderEndpoint = None,
) -> _ro.ReadOffsetResponse:
    """ReadOffset's answer (version 0 is the only one): the confirmed offset, or an error naming the
    leader as Fetch does (CurrentLeader, and NodeEndpoints for it)."""
    if error != errors.NONE:
        return _ro.ReadOffsetResponse(error_code=error)
    part = _ro.PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=perr,
        applied_offset=-1 if offset is None else offset,
        current_leader=_ro.LeaderIdAndEpoch(leader_id=_nid(leader_id), leader_epoch=epoch),
    )
    eps = [] if ep is None else [_ro.NodeEndpoint(node_id=ep[0], host=ep[1].host, port=ep[1].port)]
    topic = _ro.TopicData(topic_name=METADATA_TOPIC, partitions=[part])
    return _ro.ReadOffsetResponse(error_code=error, topics=[topic], node_endpoints=eps)
