"""In-memory storage: :class:`MemoryLog`, :class:`MemoryQuorumStateStore`, :class:`MemorySnapshotStore`.

They implement the Protocols of :mod:`.api` and survive a simulated crash: :meth:`MemoryLog.crash`
drops the unflushed suffix when asked (losing unflushed data), and a snapshot download in progress is
lost (:meth:`MemorySnapshotStore.crash`). Writes to the quorum-state store are durable at once.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from .api import ElectionState, LogBatch, SnapshotId


class MemoryLog:
    """Whole batches in a list, an epoch cache, a log start offset and a flushed prefix."""

    def __init__(self) -> None:
        self._batches: list[LogBatch] = []
        self._bases: list[int] = []
        self._start = 0
        self._start_epoch = 0  # epoch of the snapshot at the log start (for an empty log)
        self._flushed = 0
        self._epochs: list[tuple[int, int]] = []  # (epoch, start offset), ascending

    # -- queries -------------------------------------------------------------------------------------

    def start_offset(self) -> int:
        return self._start

    def end_offset(self) -> int:
        return self._batches[-1].next_offset if self._batches else self._start

    def flushed_offset(self) -> int:
        return min(self._flushed, self.end_offset())

    def last_fetched_epoch(self) -> int:
        return self._batches[-1].epoch if self._batches else self._start_epoch

    def batches(self) -> Sequence[LogBatch]:
        return list(self._batches)

    def epochs(self) -> Sequence[tuple[int, int]]:
        return list(self._epochs)

    def _index(self, offset: int) -> int:
        """Index of the batch containing ``offset``, or -1."""
        i = bisect_right(self._bases, offset) - 1
        if i >= 0 and self._batches[i].last_offset >= offset:
            return i
        return -1

    def batch_at(self, offset: int) -> LogBatch | None:
        i = self._index(offset)
        return self._batches[i] if i >= 0 else None

    def read(self, start_offset: int, max_bytes: int) -> Sequence[LogBatch]:
        i = self._index(start_offset)
        if i < 0:
            return []
        out = [self._batches[i]]
        size = out[0].size_in_bytes()
        for b in self._batches[i + 1 :]:
            size += b.size_in_bytes()
            if size > max_bytes:
                break
            out.append(b)
        return out

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        eps = self._epochs
        if not eps or epoch > eps[-1][0]:
            return None
        if epoch < eps[0][0]:
            return eps[0][1], epoch
        i = bisect_right([e for e, _ in eps], epoch) - 1
        end = eps[i + 1][1] if i + 1 < len(eps) else self.end_offset()
        return end, eps[i][0]

    # -- mutations -----------------------------------------------------------------------------------

    def append(self, batches: Sequence[LogBatch]) -> None:
        for b in batches:
            if b.base_offset != self.end_offset():
                raise ValueError(f"append at {b.base_offset}, log end is {self.end_offset()}")
            if self._epochs and b.epoch < self._epochs[-1][0]:
                raise ValueError(f"batch epoch {b.epoch} below {self._epochs[-1][0]}")
            if not self._epochs or b.epoch > self._epochs[-1][0]:
                self._epochs.append((b.epoch, b.base_offset))
            self._batches.append(b)
            self._bases.append(b.base_offset)

    def truncate_to(self, offset: int) -> None:
        while self._batches and self._batches[-1].last_offset >= offset:
            self._batches.pop()
            self._bases.pop()
        end = self.end_offset()
        while self._epochs and self._epochs[-1][1] >= end:
            self._epochs.pop()
        if not self._batches:
            self._epochs = []
        self._flushed = min(self._flushed, end)

    def truncate_fully_and_start_at(self, snapshot_id: SnapshotId) -> None:
        self._batches = []
        self._bases = []
        self._epochs = []
        self._start = snapshot_id.end_offset
        self._start_epoch = snapshot_id.epoch
        self._flushed = self._start

    def delete_before(self, offset: int) -> None:
        if offset <= self._start:
            return
        last_epoch = self.batch_at(offset - 1)
        if last_epoch is not None:
            self._start_epoch = last_epoch.epoch
        # drop batches wholly below ``offset``
        keep = [b for b in self._batches if b.base_offset >= offset]
        self._batches = keep
        self._bases = [b.base_offset for b in keep]
        self._start = offset
        eps = self._epochs
        while len(eps) > 1 and eps[1][1] <= offset:
            eps.pop(0)
        if eps:
            eps[0] = (eps[0][0], max(eps[0][1], offset))
        if not keep:
            self._epochs = []
        self._flushed = max(self._flushed, offset)

    def flush(self, offset: int) -> None:
        self._flushed = max(self._flushed, min(offset, self.end_offset()))

    def crash(self, lose_unflushed: bool) -> None:
        """Simulate a process crash; with ``lose_unflushed`` the unflushed suffix is gone."""
        if lose_unflushed and self._flushed < self.end_offset():
            self.truncate_to(self._flushed)


class MemoryQuorumStateStore:
    def __init__(self) -> None:
        self.state: ElectionState | None = None

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state

    def clear(self) -> None:
        self.state = None


class MemorySnapshotStore:
    def __init__(self) -> None:
        self._frozen: dict[SnapshotId, bytes] = {}
        self._partial: tuple[SnapshotId, bytearray] | None = None
        self._latest: SnapshotId | None = None  # asked for on every Fetch served

    def ids(self) -> Sequence[SnapshotId]:
        return sorted(self._frozen)

    def latest(self) -> SnapshotId | None:
        return self._latest

    def size(self, snapshot_id: SnapshotId) -> int:
        return len(self._frozen[snapshot_id])

    def read(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        return self._frozen[snapshot_id][position : position + max_bytes]

    def write(self, snapshot_id: SnapshotId, data: bytes) -> None:
        self._frozen[snapshot_id] = bytes(data)
        self._latest = max(self._frozen)

    def begin_partial(self, snapshot_id: SnapshotId) -> None:
        self._partial = (snapshot_id, bytearray())

    def append_partial(self, snapshot_id: SnapshotId, data: bytes) -> int:
        if self._partial is None or self._partial[0] != snapshot_id:
            raise ValueError(f"no download of {snapshot_id} in progress")
        self._partial[1].extend(data)
        return len(self._partial[1])

    def partial_size(self, snapshot_id: SnapshotId) -> int | None:
        if self._partial is None or self._partial[0] != snapshot_id:
            return None
        return len(self._partial[1])

    def freeze_partial(self, snapshot_id: SnapshotId) -> None:
        if self._partial is None or self._partial[0] != snapshot_id:
            raise ValueError(f"no download of {snapshot_id} in progress")
        self._frozen[snapshot_id] = bytes(self._partial[1])
        self._partial = None
        self._latest = max(self._frozen)

    def abort_partial(self, snapshot_id: SnapshotId) -> None:
        if self._partial is not None and self._partial[0] == snapshot_id:
            self._partial = None

    def delete(self, snapshot_id: SnapshotId) -> None:
        self._frozen.pop(snapshot_id, None)
        self._latest = max(self._frozen) if self._frozen else None

    def crash(self) -> None:
        self._partial = None
