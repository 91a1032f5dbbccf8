"""Snapshots of a node that runs without an application, on Kafka's two triggers.

A node with no state machine still has one that any application can rebuild from: the committed data
records in order. So its snapshot at end offset E holds the previous snapshot's data records followed
by the log's data records up to E (control records left out; the core writes the header, the
kraft.version and voters records and the footer, under Kafka's file name ``%020d-%010d.checkpoint``).
Replayed in order it gives what replaying the log gives, which is also how Kafka's ``MetadataLoader``
loads a snapshot (every record of every batch into one ``MetadataDelta``, then ``finishSnapshot``).
In a Kafka metadata log (see ``kafka_metadata.py``) the metadata transactions (KIP-868) are resolved
first, as Kafka's log replay resolves them: the Begin/End/Abort markers are left out (Kafka 4.4.0's
snapshot loader stops at one) and so are the records of an aborted transaction; while a transaction is
open at the end offset, the snapshot waits for a later commit.

Triggers, with Kafka's names: ``metadata.log.max.record.bytes.between.snapshots`` (bytes of committed
data records since the last snapshot) and ``metadata.log.max.snapshot.interval.ms`` (time since the last
snapshot, with at least one committed data record since; 0 is off). Unlike Kafka's, each is off unless
set in the node's file: Kafka's snapshot is its compact metadata image, this one the whole history,
which grows without bound and is written on the node's loop (200,000 records of 100 bytes took 2.6 s,
longer than the default fetch timeout), so Kafka's defaults (20 MiB, 1 hour) would slow every node.
Creating one moves the log start there: the core deletes the segments wholly below it and older
snapshots, and followers that fall behind fetch the snapshot (FetchSnapshot).

A node with an application (a :class:`Listener`) leaves snapshots to it (``KRaftNode.create_snapshot``).
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from kraftwire.node.core import KRaftCore
from kraftwire.node.core.api import (
    BOOTSTRAP_SNAPSHOT_ID,
    CommittedBatch,
    CreateSnapshot,
    SnapshotLoaded,
)
from kraftwire.node.core.log_ops import read_snapshot
from kraftwire.node.storage import NodeStorage

from .config import NodeConfig

log = logging.getLogger("kraftwire.node")

_BEGIN, _END, _ABORT = 23, 24, 25  # Kafka's metadata transaction record types (KIP-868)
_ALL = 1 << 62


def transaction_marker(value: bytes) -> int | None:
    """The metadata transaction record type of a Kafka metadata record value (frame version 1), if
    it is one."""
    if len(value) >= 2 and value[0] == 1 and value[1] in (_BEGIN, _END, _ABORT):
        return value[1]
    return None


def resolve_transactions(records: Iterable[bytes]) -> list[bytes] | None:
    """A Kafka metadata log's records as a snapshot must hold them: the transaction markers left out
    (Kafka 4.4.0's loader stops at one in a snapshot: "Unknown metadata record type
    BEGIN_TRANSACTION_RECORD"), the records of an aborted transaction too (its log replay drops them).
    None while a transaction is still open at the end."""
    out: list[bytes] = []
    pending: list[bytes] | None = None  # the records of the open transaction
    for record in records:
        marker = transaction_marker(record)
        if marker == _BEGIN:
            pending = [] if pending is None else pending
        elif marker == _END:
            out.extend(pending or ())
            pending = None
        elif marker == _ABORT:
            pending = None
        elif pending is not None:
            pending.append(record)
        else:
            out.append(record)
    return None if pending is not None else out


class AutoSnapshots:
    def __init__(
        self, node_id: int, max_bytes_between: int | None, max_interval_ms: int | None, now_ms: int
    ) -> None:
        self.node_id = node_id
        self.max_bytes_between = max_bytes_between
        self.max_interval_ms = max_interval_ms
        self.bytes_since = 0
        self.records_since = 0
        self.last_snapshot_ms = now_ms
        self.committed_end: int | None = None  # the end offset of the last committed batch
        self.last_timestamp = -1

    def on_notification(self, note: Any, now_ms: int) -> None:
        if type(note) is CommittedBatch:
            self.committed_end = note.last_offset + 1
            if note.records:
                self.bytes_since += sum(map(len, note.records))
                self.records_since += len(note.records)
                self.last_timestamp = note.append_time_ms
        elif type(note) is SnapshotLoaded:
            self._reset(now_ms)

    @classmethod
    def for_node(cls, config: NodeConfig, now_ms: int) -> "AutoSnapshots":
        return cls(
            config.node_id,
            config.snapshot_max_bytes_between,
            config.snapshot_max_interval_ms,
            now_ms,
        )

    def due(self, now_ms: int) -> bool:
        if self.committed_end is None or self.records_since == 0:
            return False
        if self.max_bytes_between is not None and self.bytes_since >= self.max_bytes_between:
            return True
        interval = self.max_interval_ms or 0  # unset or 0: off
        return interval > 0 and now_ms - self.last_snapshot_ms >= interval

    def maybe_snapshot(
        self, core: KRaftCore, storage: NodeStorage, now_ms: int, kafka_metadata: bool
    ) -> bool:
        """Snapshot at the last committed batch if a trigger fired; whether one was written.
        ``kafka_metadata``: the log is a Kafka metadata log (its transactions are resolved)."""
        if not self.due(now_ms):
            return False
        end = self.committed_end
        assert end is not None  # due() checked
        hw = core.high_watermark
        if hw is None or end > hw:
            # A leader newly elected knows its high watermark only once an entry of its epoch
            # commits; what it committed as a follower waits until then.
            return False
        records = snapshot_records(storage, end)
        if records is not None and kafka_metadata:
            records = resolve_transactions(records)
        if records is None:
            return False
        sid = core.step(CreateSnapshot(end, tuple(records), now_ms, self.last_timestamp))
        if sid is not None:
            log.info("node %s: snapshot %s of %d records", self.node_id, sid, len(records))
        self._reset(now_ms)
        return sid is not None

    def _reset(self, now_ms: int) -> None:
        self.bytes_since = self.records_since = 0
        self.last_snapshot_ms = now_ms


def snapshot_records(storage: NodeStorage, end: int) -> list[bytes] | None:
    """The data records a snapshot at ``end`` holds: the snapshot at the log start (if the log
    starts after 0), then the log's data records below ``end``. None if the log does not reach
    ``end`` or no snapshot covers its start."""
    log_ = storage.log
    start = log_.start_offset()
    if end <= start or end > log_.end_offset():
        return None
    records: list[bytes] = []
    if start > 0:
        base = [s for s in storage.snapshots.ids() if s.end_offset == start]
        base = [s for s in base if s != BOOTSTRAP_SNAPSHOT_ID]
        if not base:
            return None
        records.extend(read_snapshot(storage.snapshots, base[-1]).records)
    for batch in log_.read(start, _ALL):
        if batch.base_offset >= end:
            break
        if batch.next_offset > end:
            return None  # end is not a batch boundary
        if not batch.is_control:
            records.extend(batch.records)
    return records
