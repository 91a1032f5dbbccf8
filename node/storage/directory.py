"""A whole metadata log directory: formatting it (``kraftwire storage format``) and opening it for a node.

:func:`format_directory` writes ``meta.properties``, the partition directory with
``partition.metadata`` and the bootstrap checkpoint ``00000000000000000000-0000000000.checkpoint``
(header, plus ``KRaftVersionRecord`` and ``VotersRecord`` for a dynamic quorum, then footer). It refuses
a directory that is already formatted: no tool overwrites what it did not create.

:func:`open_directory` takes the directory lock, reads ``meta.properties`` and opens the three stores;
:meth:`NodeStorage.bootstrap` reads the voters back from the bootstrap checkpoint.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Sequence

from kraftwire.generated import lookup
from kraftwire.generated import voters_record as _vr
from kraftwire.node.core import batches as batch_codec
from kraftwire.node.core.api import (
    BOOTSTRAP_SNAPSHOT_ID,
    ZERO_UUID,
    Endpoint,
    LogBatch,
    ReplicaKey,
    VoterSpec,
)

from . import layout
from .files import DirectoryLock, FileOps, StorageError, write_atomically
from .log import DEFAULT_SEGMENT_BYTES, FileLog
from .quorum_state import FileQuorumStateStore
from .recovery import CutData, kept_cuts
from .snapshots import FileSnapshotStore


@dataclass(frozen=True)
class Bootstrap:
    """What the bootstrap checkpoint says: kraft.version and the initial voters (empty when static)."""

    kraft_version: int
    voters: tuple[VoterSpec, ...] = ()


def bootstrap_batches(
    kraft_version: int,
    voters: Sequence[VoterSpec],
    now_ms: int,
    data_records: Sequence[bytes] = (),
) -> bytes:
    """Header (+ kraft.version and voters), one data batch of ``data_records`` when there are any
    (Kafka's StorageTool puts its FeatureLevelRecords there), then the footer."""
    header: list[Any] = [
        lookup("SnapshotHeaderRecord")(version=0, last_contained_log_timestamp=now_ms)
    ]
    if kraft_version >= 1:
        header.append(lookup("KRaftVersionRecord")(version=0, k_raft_version=kraft_version))
        if voters:
            header.append(voters_record(voters))
    footer = (lookup("SnapshotFooterRecord")(version=0),)
    batches = [LogBatch(0, 0, tuple(header), True, now_ms)]
    if data_records:
        batches.append(LogBatch(len(header), 0, tuple(data_records), False, now_ms))
    batches.append(LogBatch(batches[-1].next_offset, 0, footer, True, now_ms))
    return batch_codec.encode_batches(batches)


def voters_record(voters: Sequence[VoterSpec]) -> Any:
    return _vr.VotersRecord(
        version=0,
        voters=[
            _vr.Voter(
                voter_id=v.key.id,
                voter_directory_id=v.key.directory_id or ZERO_UUID,
                endpoints=[
                    _vr.Endpoint(name=n, host=e.host, port=e.port) for n, e in v.listeners.items()
                ],
                k_raft_version_feature=_vr.KRaftVersionFeature(
                    min_supported_version=v.kraft_version_range[0],
                    max_supported_version=v.kraft_version_range[1],
                ),
            )
            for v in voters
        ],
    )


def voters_from_record(record: Any) -> tuple[VoterSpec, ...]:
    return tuple(
        VoterSpec(
            ReplicaKey(
                v.voter_id, None if v.voter_directory_id == ZERO_UUID else v.voter_directory_id
            ),
            {e.name: Endpoint(e.host, e.port) for e in v.endpoints},
            (
                v.k_raft_version_feature.min_supported_version,
                v.k_raft_version_feature.max_supported_version,
            ),
        )
        for v in record.voters
    )


def format_directory(
    log_dir: str,
    cluster_id: str,
    node_id: int,
    kraft_version: int,
    voters: Sequence[VoterSpec] = (),
    directory_id: uuid.UUID | None = None,
    ops: FileOps | None = None,
    data_records: Sequence[bytes] = (),
) -> layout.MetaProperties:
    """Format ``log_dir``; ``StorageError`` if it already holds a formatted or non-empty partition.
    ``data_records`` go into the bootstrap checkpoint (``--feature``: Kafka's FeatureLevelRecords).
    """
    ops = ops or FileOps()
    meta = layout.MetaProperties(cluster_id, node_id, directory_id or layout.random_uuid())
    if os.path.exists(os.path.join(log_dir, layout.META_PROPERTIES)):
        raise StorageError(f"{log_dir} is already formatted ({layout.META_PROPERTIES} exists)")
    part = layout.partition_dir(log_dir)
    if os.path.isdir(part) and os.listdir(part):
        raise StorageError(f"{part} already exists and is not empty")
    try:
        os.makedirs(part, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {part}: {exc.strerror}") from exc
    write_atomically(
        ops, os.path.join(part, layout.PARTITION_METADATA), layout.PARTITION_METADATA_TEXT
    )
    data = bootstrap_batches(kraft_version, voters, int(time.time() * 1000), data_records)
    FileSnapshotStore(part, ops).write(BOOTSTRAP_SNAPSHOT_ID, data)
    write_atomically(ops, os.path.join(log_dir, layout.META_PROPERTIES), meta.render())
    return meta


@dataclass
class NodeStorage:
    """An opened (and locked) metadata log directory."""

    log_dir: str
    meta: layout.MetaProperties
    log: FileLog
    quorum_state: FileQuorumStateStore
    snapshots: FileSnapshotStore
    lock: DirectoryLock
    repairs: list[str] = field(default_factory=list)  # torn tails recovery cut
    losses: list[str] = field(default_factory=list)  # whole batches recovery cut: records lost
    kept_cuts: list[CutData] = field(default_factory=list)  # every side file of cut bytes

    def bootstrap(self) -> Bootstrap:
        """The bootstrap checkpoint's kraft.version and voters (kraft.version 0 when it is absent)."""
        if BOOTSTRAP_SNAPSHOT_ID not in self.snapshots.ids():
            return Bootstrap(0)
        sid = BOOTSTRAP_SNAPSHOT_ID
        try:
            found = batch_codec.decode_batches(
                self.snapshots.read(sid, 0, self.snapshots.size(sid))
            )
        except Exception as exc:  # a corrupt checkpoint: name it rather than crash later
            raise StorageError(f"{self.snapshots.path(sid)}: {exc}") from None
        kraft_version = 0
        voters: tuple[VoterSpec, ...] = ()
        for batch in found:
            for record in batch.records if batch.is_control else ():
                name = type(record).__name__
                if name == "KRaftVersionRecord":
                    kraft_version = record.k_raft_version
                elif name == "VotersRecord":
                    voters = voters_from_record(record)
        return Bootstrap(kraft_version, voters)

    def close(self) -> None:
        self.log.close()
        self.snapshots.close()
        self.lock.release()


def open_directory(
    log_dir: str, ops: FileOps | None = None, segment_bytes: int = DEFAULT_SEGMENT_BYTES
) -> NodeStorage:
    """Lock and open ``log_dir`` (formatted by :func:`format_directory` or Kafka's tool)."""
    ops = ops or FileOps()
    meta = layout.read_meta_properties(log_dir)
    lock = DirectoryLock(log_dir)
    lock.acquire()
    try:
        part = layout.partition_dir(log_dir)
        os.makedirs(part, exist_ok=True)
        snapshots = FileSnapshotStore(part, ops)
        log = FileLog.open(part, snapshots.ids(), ops, segment_bytes)
        store = FileQuorumStateStore(part, ops)
        cuts = kept_cuts(part)
    except BaseException:
        lock.release()
        raise
    return NodeStorage(
        log_dir, meta, log, store, snapshots, lock, list(log.repairs), list(log.losses), cuts
    )
