"""Questions asked of the log and the snapshot store (docs/kraft.md §4.6, §8).

:func:`validate_offset_and_epoch` is the leader's judgement of a follower position (Kafka's
``RaftLog.validateOffsetAndEpoch``); :func:`truncation_offset` is the follower's reaction to a
``DivergingEpoch`` (``truncateToEndOffset``); :func:`read_snapshot` reads a frozen snapshot back
(startup, delivery and a finished download).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import batches as _batches
from .api import BOOTSTRAP_SNAPSHOT_ID, RaftLog, SnapshotId, SnapshotLoaded, SnapshotStore

VALID = "valid"
DIVERGING = "diverging"
SNAPSHOT = "snapshot"


class Validation(NamedTuple):
    kind: str
    end_offset: int = -1
    epoch: int = -1


def earliest_snapshot(log: RaftLog, snapshots: SnapshotStore) -> SnapshotId | None:
    """The snapshot at the log start offset (there is one whenever the log start is above 0)."""
    start = log.start_offset()
    for sid in snapshots.ids():
        if sid.end_offset == start and sid != BOOTSTRAP_SNAPSHOT_ID:
            return sid
    return None


def latest_snapshot(snapshots: SnapshotStore) -> SnapshotId | None:
    """The newest snapshot that may be served (never the bootstrap checkpoint)."""
    sid = snapshots.latest()
    return None if sid is None or sid == BOOTSTRAP_SNAPSHOT_ID else sid


def end_offset_for_epoch(log: RaftLog, snapshots: SnapshotStore, epoch: int) -> tuple[int, int]:
    """Epoch-cache lookup with KafkaRaftLog's fallbacks: ``(end_offset, epoch')``."""
    found = log.end_offset_for_epoch(epoch)
    if found is None:
        found = (log.end_offset(), log.last_fetched_epoch())
    earliest = earliest_snapshot(log, snapshots)
    if earliest is not None and found == (earliest.end_offset, epoch):
        return earliest.end_offset, earliest.epoch
    return found


def validate_offset_and_epoch(
    log: RaftLog, snapshots: SnapshotStore, offset: int, epoch: int
) -> Validation:
    start = log.start_offset()
    if start == 0 and offset == 0:
        return Validation(VALID)
    earliest = earliest_snapshot(log, snapshots)
    if earliest is not None and (
        offset < start or (offset == start and epoch != earliest.epoch) or epoch < earliest.epoch
    ):
        latest = latest_snapshot(snapshots) or earliest
        return Validation(SNAPSHOT, latest.end_offset, latest.epoch)
    end, found_epoch = end_offset_for_epoch(log, snapshots, epoch)
    if found_epoch != epoch or end < offset:
        return Validation(DIVERGING, end, found_epoch)
    return Validation(VALID)


def truncation_offset(log: RaftLog, snapshots: SnapshotStore, end_offset: int, epoch: int) -> int:
    """Where a follower truncates given the leader's DivergingEpoch ``(end_offset, epoch)``."""
    if epoch == 0:
        return min(end_offset, log.end_offset())
    local_end, local_epoch = end_offset_for_epoch(log, snapshots, epoch)
    if local_epoch == epoch:
        return min(local_end, end_offset)
    return local_end


class SnapshotContents(NamedTuple):
    snapshot_id: SnapshotId
    records: tuple[bytes, ...]
    control_records: tuple[Any, ...]
    last_contained_timestamp: int

    def notification(self) -> SnapshotLoaded:
        return SnapshotLoaded(self.snapshot_id, self.records, self.last_contained_timestamp)


def read_snapshot(snapshots: SnapshotStore, sid: SnapshotId) -> SnapshotContents:
    """A frozen snapshot's data records, its control records (voters, kraft.version) and timestamp."""
    size = snapshots.size(sid)
    data = snapshots.read(sid, 0, size)
    records: list[bytes] = []
    control: list[Any] = []
    ts = -1
    for b in _batches.decode_batches(data):
        if not b.is_control:
            records.extend(b.records)
            continue
        for r in b.records:
            name = type(r).__name__
            if name == "SnapshotHeaderRecord":
                ts = r.last_contained_log_timestamp
            elif name != "SnapshotFooterRecord":
                control.append(r)
    return SnapshotContents(sid, tuple(records), tuple(control), ts)
