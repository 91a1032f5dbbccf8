"""Storage interfaces of the core (part of the :mod:`.api` contract, re-exported there).

In-memory implementations: :mod:`.memory`. File-backed ones belong to the node runtime.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from .values import ElectionState, LogBatch, SnapshotId

__all__ = ["RaftLog", "QuorumStateStore", "SnapshotStore"]


# ---------------------------------------------------------------------------------------------------


@runtime_checkable
class RaftLog(Protocol):
    """The metadata log: whole batches, an epoch cache, and a flushed prefix.

    Appends land in an unflushed buffer and become durable at :meth:`flush`. A crash may lose any
    suffix above :meth:`flushed_offset` (the simulator models this). The epoch cache maps each epoch
    to the offset of its first batch (Kafka's ``leader-epoch-checkpoint``).
    """

    def start_offset(self) -> int:
        """Log start offset: the first offset still held (a snapshot sits there when > 0)."""

    def end_offset(self) -> int:
        """Log end offset (LEO): next offset to be appended."""

    def flushed_offset(self) -> int:
        """Everything below this offset is durable."""

    def last_fetched_epoch(self) -> int:
        """Epoch of the last batch; the start snapshot's epoch for an empty log; else 0."""

    def append(self, batches: Sequence[LogBatch]) -> None:
        """Append whole batches; the first base offset must equal :meth:`end_offset`."""

    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or above ``offset`` (which must be a batch boundary) and the epoch
        cache entries beyond it."""

    def truncate_fully_and_start_at(self, snapshot_id: SnapshotId) -> None:
        """Drop everything; log start = LEO = ``snapshot_id.end_offset``; the last fetched epoch
        becomes ``snapshot_id.epoch``. Used after a snapshot download."""

    def delete_before(self, offset: int) -> None:
        """Raise the log start to ``offset`` (a snapshot exists there), dropping whole batches below."""

    def flush(self, offset: int) -> None:
        """Make the log durable up to ``offset`` (exclusive)."""

    def read(self, start_offset: int, max_bytes: int) -> Sequence[LogBatch]:
        """Whole batches from the one containing ``start_offset``, up to ``max_bytes`` (at least one
        batch when any exists)."""

    def batch_at(self, offset: int) -> LogBatch | None:
        """The batch containing ``offset``, if held."""

    def batches(self) -> Sequence[LogBatch]:
        """All held batches in order (used on startup and after truncation to re-read control records)."""

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        """Epoch-cache lookup (docs/kraft.md §4.6): ``(end_offset, epoch')`` where epoch' is the largest
        known epoch ≤ ``epoch`` and end_offset the start of the next higher epoch (LEO for the latest).
        For an epoch below every known epoch: ``(start of the first epoch, epoch)``. ``None`` when the
        epoch is above every known epoch or the cache is empty."""

    def epochs(self) -> Sequence[tuple[int, int]]:
        """The epoch cache as ``(epoch, start_offset)`` pairs, ascending."""


@runtime_checkable
class QuorumStateStore(Protocol):
    """The ``quorum-state`` file. :meth:`write` must be durable (fsync + atomic rename) on return."""

    def read(self) -> ElectionState | None:
        """The last written state, or ``None`` if there is none (a fresh or lost disk)."""

    def write(self, state: ElectionState) -> None: ...

    def clear(self) -> None: ...


@runtime_checkable
class SnapshotStore(Protocol):
    """Frozen snapshots (``%020d-%010d.checkpoint``) plus at most one in-progress download.

    Snapshot contents are record-batch bytes (header batch, data batches, footer batch).
    """

    def ids(self) -> Sequence[SnapshotId]:
        """Frozen snapshot ids, ascending."""

    def latest(self) -> SnapshotId | None: ...

    def size(self, snapshot_id: SnapshotId) -> int: ...

    def read(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes: ...

    def write(self, snapshot_id: SnapshotId, data: bytes) -> None:
        """Write a complete snapshot and freeze it (durable on return)."""

    def begin_partial(self, snapshot_id: SnapshotId) -> None:
        """Start a download (``.checkpoint.part``), replacing any previous partial one."""

    def append_partial(self, snapshot_id: SnapshotId, data: bytes) -> int:
        """Append bytes to the download; returns the bytes written so far."""

    def partial_size(self, snapshot_id: SnapshotId) -> int | None:
        """Bytes downloaded so far, or ``None`` if no such download is in progress."""

    def freeze_partial(self, snapshot_id: SnapshotId) -> None:
        """fsync and rename the download into place."""

    def abort_partial(self, snapshot_id: SnapshotId) -> None: ...

    def delete(self, snapshot_id: SnapshotId) -> None: ...
