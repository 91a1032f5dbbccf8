"""Builders for the requests the core sends, plus :func:`metadata_partition`, which finds the one
partition every KRaft request must name. This module and :mod:`.responses` build the wire messages;
control records are built where they are written (:mod:`.voters`, :mod:`.leader_ops`,
:mod:`.snapshots`, :mod:`.kraft_upgrade`).

Every request is built for the newest version the core speaks; fields of older versions that Kafka
fills for compatibility (EndQuorumEpoch v0 ``PreferredSuccessors``) are filled too, so the driver can
encode at any negotiated version at or above :attr:`OutboundRequest.min_version`.
"""

from __future__ import annotations

import uuid
from typing import Any, Mapping, Sequence, TypeVar

from kraftwire.generated import (
    add_raft_voter_request as _add,
    api_versions_request as _av,
    begin_quorum_epoch_request as _bqe,
    end_quorum_epoch_request as _eqe,
    fetch_request as _fetch,
    fetch_snapshot_request as _fs,
    read_offset_request as _ro,
    remove_raft_voter_request as _rem,
    update_raft_voter_request as _upd,
    vote_request as _vote,
)

from .api import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    ZERO_UUID,
    Endpoint,
    PeerRefused,
    ReplicaKey,
    SnapshotId,
    WireMessage,
)

FETCH_HW_UNSUPPORTED = (1 << 63) - 1
"""Fetch v18 ``HighWatermark`` default (Long.MAX_VALUE): "the feature is not supported"."""

_M = TypeVar("_M", bound=WireMessage)


def as_message(message: WireMessage, cls: type[_M]) -> _M:
    """``message`` as ``cls``, the class of the API its key routed it to. A message of another
    class (a driver that decoded it as another API) is refused like a broken peer's."""
    if not isinstance(message, cls):
        raise PeerRefused(f"expected a {cls.__name__}, got a {type(message).__name__}")
    return message


def dir_or_zero(key: ReplicaKey | None) -> uuid.UUID:
    return ZERO_UUID if key is None or key.directory_id is None else key.directory_id


def key_of(node_id: int, directory_id: uuid.UUID) -> ReplicaKey:
    return ReplicaKey(node_id, None if directory_id == ZERO_UUID else directory_id)


def single_partition(topics: Sequence[Any]) -> tuple[Any, Any] | None:
    """``(topic, partition)`` when ``topics`` holds exactly one topic with exactly one partition."""
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        return None
    return topics[0], topics[0].partitions[0]


def metadata_partition(
    topics: Sequence[Any],
    topic_field: str = "topic_name",
    index_field: str = "partition_index",
    topic: object = METADATA_TOPIC,
) -> Any | None:
    """The partition of a request that names exactly one topic with one partition, and that partition is
    ``__cluster_metadata``-0; else ``None``. The field names differ between APIs (Fetch names its topic
    ``topic``, or by id ``topic_id`` from v13; FetchSnapshot ``name``), so they are passed in."""
    found = single_partition(topics)
    if found is None:
        return None
    t, p = found
    if getattr(t, topic_field) != topic or getattr(p, index_field) != METADATA_PARTITION:
        return None
    return p


# -- request builders ------------------------------------------------------------------------------


def vote_request(
    cluster_id: str,
    voter: ReplicaKey,
    epoch: int,
    candidate: ReplicaKey,
    last_epoch: int,
    last_offset: int,
    pre_vote: bool,
) -> _vote.VoteRequest:
    return _vote.VoteRequest(
        cluster_id=cluster_id,
        voter_id=voter.id,
        topics=[
            _vote.TopicData(
                topic_name=METADATA_TOPIC,
                partitions=[
                    _vote.PartitionData(
                        partition_index=METADATA_PARTITION,
                        replica_epoch=epoch,
                        replica_id=candidate.id,
                        replica_directory_id=dir_or_zero(candidate),
                        voter_directory_id=dir_or_zero(voter),
                        last_offset_epoch=last_epoch,
                        last_offset=last_offset,
                        pre_vote=pre_vote,
                    )
                ],
            )
        ],
    )


def begin_quorum_epoch_request(
    cluster_id: str, voter: ReplicaKey, leader_id: int, epoch: int, endpoints: Mapping[str, Endpoint]
) -> _bqe.BeginQuorumEpochRequest:
    return _bqe.BeginQuorumEpochRequest(
        cluster_id=cluster_id,
        voter_id=voter.id,
        topics=[
            _bqe.TopicData(
                topic_name=METADATA_TOPIC,
                partitions=[
                    _bqe.PartitionData(
                        partition_index=METADATA_PARTITION,
                        voter_directory_id=dir_or_zero(voter),
                        leader_id=leader_id,
                        leader_epoch=epoch,
                    )
                ],
            )
        ],
        leader_endpoints=[
            _bqe.LeaderEndpoint(name=n, host=e.host, port=e.port) for n, e in endpoints.items()
        ],
    )


def end_quorum_epoch_request(
    cluster_id: str,
    leader_id: int,
    epoch: int,
    successors: Sequence[ReplicaKey],
    endpoints: Mapping[str, Endpoint],
) -> _eqe.EndQuorumEpochRequest:
    return _eqe.EndQuorumEpochRequest(
        cluster_id=cluster_id,
        topics=[
            _eqe.TopicData(
                topic_name=METADATA_TOPIC,
                partitions=[
                    _eqe.PartitionData(
                        partition_index=METADATA_PARTITION,
                        leader_id=leader_id,
                        leader_epoch=epoch,
                        preferred_successors=[k.id for k in successors],
                        preferred_candidates=[
                            _eqe.ReplicaInfo(candidate_id=k.id, candidate_directory_id=dir_or_zero(k))
                            for k in successors
                        ],
                    )
                ],
            )
        ],
        leader_endpoints=[
            _eqe.LeaderEndpoint(name=n, host=e.host, port=e.port) for n, e in endpoints.items()
        ],
    )


def fetch_request(
    cluster_id: str,
    replica: ReplicaKey | None,
    epoch: int,
    fetch_offset: int,
    last_fetched_epoch: int,
    max_wait_ms: int,
    max_bytes: int,
    high_watermark: int | None,
) -> _fetch.FetchRequest:
    return _fetch.FetchRequest(
        cluster_id=cluster_id,
        replica_state=_fetch.ReplicaState(replica_id=-1 if replica is None else replica.id, replica_epoch=-1),
        max_wait_ms=max_wait_ms,
        min_bytes=0,
        max_bytes=max_bytes,
        topics=[
            _fetch.FetchTopic(
                topic=METADATA_TOPIC,
                topic_id=METADATA_TOPIC_ID,
                partitions=[
                    _fetch.FetchPartition(
                        partition=METADATA_PARTITION,
                        current_leader_epoch=epoch,
                        fetch_offset=fetch_offset,
                        last_fetched_epoch=last_fetched_epoch,
                        log_start_offset=-1,
                        partition_max_bytes=max_bytes,
                        replica_directory_id=dir_or_zero(replica),
                        high_watermark=-1 if high_watermark is None else high_watermark,
                    )
                ],
            )
        ],
    )


def fetch_snapshot_request(
    cluster_id: str,
    replica: ReplicaKey | None,
    epoch: int,
    snapshot_id: SnapshotId,
    position: int,
    max_bytes: int,
) -> _fs.FetchSnapshotRequest:
    return _fs.FetchSnapshotRequest(
        cluster_id=cluster_id,
        replica_id=-1 if replica is None else replica.id,
        max_bytes=max_bytes,
        topics=[
            _fs.TopicSnapshot(
                name=METADATA_TOPIC,
                partitions=[
                    _fs.PartitionSnapshot(
                        partition=METADATA_PARTITION,
                        current_leader_epoch=epoch,
                        snapshot_id=_fs.SnapshotId(end_offset=snapshot_id.end_offset, epoch=snapshot_id.epoch),
                        position=position,
                        replica_directory_id=dir_or_zero(replica),
                    )
                ],
            )
        ],
    )


def read_offset_request(
    cluster_id: str | None = None, replica: ReplicaKey | None = None, epoch: int = -1
) -> _ro.ReadOffsetRequest:
    """A ReadOffset for ``__cluster_metadata``-0. A replica says who asks and in which epoch (a voter's
    counts as its ack); a client leaves ``replica`` None and ``epoch`` -1."""
    partition = _ro.PartitionData(
        partition_index=METADATA_PARTITION,
        current_leader_epoch=epoch,
        replica_directory_id=dir_or_zero(replica),
    )
    topic = _ro.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])
    replica_id = -1 if replica is None else replica.id
    return _ro.ReadOffsetRequest(cluster_id=cluster_id, replica_id=replica_id, topics=[topic])


def api_versions_request() -> _av.ApiVersionsRequest:
    return _av.ApiVersionsRequest(client_software_name="kraftwire", client_software_version="0.1.0")


def update_raft_voter_request(
    cluster_id: str,
    epoch: int,
    key: ReplicaKey,
    listeners: Mapping[str, Endpoint],
    kraft_range: tuple[int, int],
) -> _upd.UpdateRaftVoterRequest:
    return _upd.UpdateRaftVoterRequest(
        cluster_id=cluster_id,
        current_leader_epoch=epoch,
        voter_id=key.id,
        voter_directory_id=dir_or_zero(key),
        listeners=[_upd.Listener(name=n, host=e.host, port=e.port) for n, e in listeners.items()],
        k_raft_version_feature=_upd.KRaftVersionFeature(
            min_supported_version=kraft_range[0], max_supported_version=kraft_range[1]
        ),
    )


def add_raft_voter_request(
    cluster_id: str, key: ReplicaKey, listeners: Mapping[str, Endpoint], timeout_ms: int, ack: bool
) -> _add.AddRaftVoterRequest:
    return _add.AddRaftVoterRequest(
        cluster_id=cluster_id,
        timeout_ms=timeout_ms,
        voter_id=key.id,
        voter_directory_id=dir_or_zero(key),
        listeners=[_add.Listener(name=n, host=e.host, port=e.port) for n, e in listeners.items()],
        ack_when_committed=ack,
    )


def remove_raft_voter_request(cluster_id: str, key: ReplicaKey) -> _rem.RemoveRaftVoterRequest:
    return _rem.RemoveRaftVoterRequest(
        cluster_id=cluster_id, voter_id=key.id, voter_directory_id=dir_or_zero(key)
    )
