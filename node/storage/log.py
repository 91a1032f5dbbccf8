""":class:`FileLog`: the core's ``RaftLog`` on Kafka's segment files.

The partition directory holds ``%020d.log`` segments of v2 record batches back to back, each named by
the base offset of its first batch; a new segment starts when the active one reaches
``segment_bytes``. The batches are also held in memory (a :class:`~kraftwire.node.core.MemoryLog`
mirrors the files and answers every query: the metadata log is small and served often), once each:
their encoded bytes, with the decoded records only until the application has been given them (see
:func:`kraftwire.node.core.batches.keep_encoded`). Appends are written at once and become durable at
:meth:`flush` (fsync of every segment written since, plus the directory after a roll); truncation is
fsynced immediately so cut data can never reappear.

Opening a directory scans every segment: the first batch that is cut short, fails its CRC, has the
wrong base offset or a decreasing epoch ends the log; the file is cut there and later segments are
moved aside (Kafka's recovery cuts and deletes; here the bytes are kept in side files, see
:mod:`.recovery`). A cut of whole batches (a CRC mismatch mid-segment) loses records, which the node
logs as an error with their count. The epoch cache (``leader-epoch-checkpoint``) is rebuilt from the
batches found.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Sequence, TypeVarTuple

from kraftwire.generated import ProtocolError
from kraftwire.node.core import batches as batch_codec
from kraftwire.node.core import MemoryLog
from kraftwire.node.core.api import BOOTSTRAP_SNAPSHOT_ID, LogBatch, SnapshotId

from . import layout, recovery
from .files import FileOps, StorageError, write_atomically

DEFAULT_SEGMENT_BYTES = 1 << 30  # metadata.log.segment.bytes
_HEADER = 61  # v2 batch header size: a shorter remainder is a torn tail
_Args = TypeVarTuple("_Args")


@dataclass
class _Segment:
    base: int
    path: str
    size: int = 0
    positions: list[tuple[int, int]] = field(
        default_factory=list
    )  # (batch base offset, file position)
    handle: BinaryIO | None = None


class FileLog:
    """A ``RaftLog`` on disk. Use :meth:`open`; any ``OSError`` becomes :class:`StorageError` and
    the log refuses further writes (a node must stop: its files no longer match its memory)."""

    def __init__(self, directory: str, ops: FileOps, segment_bytes: int) -> None:
        self.directory = directory
        self.ops = ops
        self.segment_bytes = segment_bytes
        self.repairs: list[str] = []  # torn tails opening cut, one line each (logged as warnings)
        self.losses: list[str] = []  # cuts of whole batches: records lost (logged as errors)
        self._mem = MemoryLog()
        self._segments: list[_Segment] = []
        self._dirty: set[int] = set()  # indexes of segments written since the last fsync
        self._dir_dirty = False
        self._epochs_written: list[tuple[int, int]] | None = None
        self._failed: str | None = None

    @classmethod
    def open(
        cls,
        directory: str,
        snapshot_ids: Sequence[SnapshotId] = (),
        ops: FileOps | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> "FileLog":
        log = cls(directory, ops or FileOps(), segment_bytes)
        try:
            log._load(snapshot_ids)
        except OSError as exc:
            raise StorageError(f"cannot open the log in {directory}: {exc}") from exc
        return log

    # -- queries (answered by the in-memory mirror) -----------------------------------------------------

    def start_offset(self) -> int:
        return self._mem.start_offset()

    def end_offset(self) -> int:
        return self._mem.end_offset()

    def flushed_offset(self) -> int:
        return self._mem.flushed_offset()

    def last_fetched_epoch(self) -> int:
        return self._mem.last_fetched_epoch()

    def read(self, start_offset: int, max_bytes: int) -> Sequence[LogBatch]:
        return self._mem.read(start_offset, max_bytes)

    def batch_at(self, offset: int) -> LogBatch | None:
        return self._mem.batch_at(offset)

    def batches(self) -> Sequence[LogBatch]:
        return self._mem.batches()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        return self._mem.end_offset_for_epoch(epoch)

    def epochs(self) -> Sequence[tuple[int, int]]:
        return self._mem.epochs()

    def segment_paths(self) -> list[str]:
        return [s.path for s in self._segments]

    # -- mutations --------------------------------------------------------------------------------------

    def append(self, batches: Sequence[LogBatch]) -> None:
        self._check_usable()
        for batch in batches:
            if batch.base_offset != self._mem.end_offset():
                raise ValueError(
                    f"append at {batch.base_offset}, log end is {self._mem.end_offset()}"
                )
            raw = batch_codec.encode_batches([batch])
            segment = self._segment_for_append(batch.base_offset)
            position = segment.size
            self._guard(f"append to {segment.path}", self._write, segment, raw)
            segment.positions.append((batch.base_offset, position))
            self._mem.append([batch])

    def flush(self, offset: int) -> None:
        self._check_usable()
        self._guard("flush", self._sync)
        self._mem.flush(offset)

    def truncate_to(self, offset: int) -> None:
        self._check_usable()
        self._mem.truncate_to(offset)
        self._guard(f"truncate to {offset}", self._cut_files_at, self._mem.end_offset())

    def truncate_fully_and_start_at(self, snapshot_id: SnapshotId) -> None:
        self._check_usable()
        self._mem.truncate_fully_and_start_at(snapshot_id)
        self._guard(
            f"restart the log at {snapshot_id.end_offset}", self._restart_at, snapshot_id.end_offset
        )

    def delete_before(self, offset: int) -> None:
        self._check_usable()
        self._mem.delete_before(offset)
        self._guard(f"delete segments below {offset}", self._drop_segments_below, offset)

    def close(self) -> None:
        if self._failed is None:
            try:
                self._sync()
            except OSError:
                pass
        for segment in self._segments:
            if segment.handle is not None:
                segment.handle.close()
                segment.handle = None

    # -- file work -------------------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failed is not None:
            raise StorageError(
                f"the log in {self.directory} failed earlier ({self._failed}); restart the node"
            )

    def _guard(self, what: str, action: Callable[[*_Args], None], *args: *_Args) -> None:
        try:
            action(*args)
        except OSError as exc:
            self._failed = f"{what}: {exc.strerror or exc}"
            raise StorageError(f"{self.directory}: {self._failed}") from exc

    def _segment_for_append(self, base_offset: int) -> _Segment:
        active = self._segments[-1]
        if active.size >= self.segment_bytes and active.positions:
            active = self._new_segment(base_offset)
        return active

    def _new_segment(self, base: int) -> _Segment:
        segment = _Segment(base, os.path.join(self.directory, layout.segment_name(base)))
        segment.handle = self.ops.open_append(segment.path)
        self._segments.append(segment)
        self._dir_dirty = True
        return segment

    def _handle(self, segment: _Segment) -> BinaryIO:
        if segment.handle is None:
            segment.handle = self.ops.open_append(segment.path)
        return segment.handle

    def _write(self, segment: _Segment, raw: bytes) -> None:
        handle = self._handle(segment)
        try:
            self.ops.write(handle, raw)
        except OSError:
            # Take back a partial write so the file ends on a batch boundary, if the disk lets us.
            try:
                self.ops.truncate(handle, segment.size)
            except OSError:
                pass
            raise
        segment.size += len(raw)
        self._dirty.add(self._segments.index(segment))

    def _sync(self) -> None:
        for index in sorted(self._dirty):
            if index < len(self._segments):
                self.ops.fsync(self._handle(self._segments[index]))
        self._dirty.clear()
        if self._dir_dirty:
            self.ops.fsync_dir(self.directory)
            self._dir_dirty = False
        epochs = list(self._mem.epochs())
        if epochs != self._epochs_written:
            path = os.path.join(self.directory, layout.EPOCH_CHECKPOINT)
            write_atomically(self.ops, path, layout.render_epoch_checkpoint(epochs))
            self._epochs_written = epochs

    def _cut_files_at(self, end: int) -> None:
        while len(self._segments) > 1 and self._segments[-1].base >= end:
            self._remove_segment(self._segments.pop())
        segment = self._segments[-1]
        keep = [(base, pos) for base, pos in segment.positions if base < end]
        size = (
            segment.positions[len(keep)][1] if len(keep) < len(segment.positions) else segment.size
        )
        if size != segment.size:
            self.ops.truncate(self._handle(segment), size)
            segment.size = size
        segment.positions = keep
        self._dirty = {i for i in self._dirty if i < len(self._segments)}

    def _restart_at(self, offset: int) -> None:
        for segment in self._segments:
            self._remove_segment(segment)
        self._segments = []
        self._dirty.clear()
        self._new_segment(offset)
        self._sync()

    def _drop_segments_below(self, offset: int) -> None:
        while len(self._segments) > 1 and self._segments[1].base <= offset:
            self._remove_segment(self._segments.pop(0))
            self._dir_dirty = True
        self._dirty = set(range(len(self._segments)))  # indexes moved; an extra fsync is harmless

    def _remove_segment(self, segment: _Segment) -> None:
        if segment.handle is not None:
            segment.handle.close()
            segment.handle = None
        self.ops.unlink(segment.path)
        self._dir_dirty = True

    # -- opening ---------------------------------------------------------------------------------------

    def _load(self, snapshot_ids: Sequence[SnapshotId]) -> None:
        names = sorted(n for n in os.listdir(self.directory) if layout.SEGMENT_RE.match(n))
        if not names:
            self._new_segment(0)
            self._sync()
            return
        snapshots = {sid.end_offset: sid for sid in snapshot_ids if sid != BOOTSTRAP_SNAPSHOT_ID}
        first_base = int(names[0][:20])
        if first_base > 0:
            start_epoch = snapshots[first_base].epoch if first_base in snapshots else 0
            self._mem.truncate_fully_and_start_at(SnapshotId(first_base, start_epoch))
        for index, name in enumerate(names):
            segment = _Segment(int(name[:20]), os.path.join(self.directory, name))
            self._segments.append(segment)
            if not self._scan(segment) or index == len(names) - 1:
                for later in names[index + 1 :]:
                    kept = recovery.keep_segment(self.ops, os.path.join(self.directory, later))
                    self._report(f"segment {later} after the cut moved aside", kept)
                break
        self._dirty = set(range(len(self._segments)))
        end = self._mem.end_offset()
        self._mem.flush(end)
        covered = [offset for offset in snapshots if self._mem.start_offset() < offset <= end]
        if covered:
            self._mem.delete_before(max(covered))
        self._sync()

    def _scan(self, segment: _Segment) -> bool:
        """Read one segment into memory; True if it ended cleanly, else cut it at the first bad batch."""
        with open(segment.path, "rb") as f:
            data = f.read()
        pos = 0
        problem = None
        while pos < len(data):
            problem, batch, size = self._check_batch(data, pos)
            if batch is None:
                break
            segment.positions.append((batch.base_offset, pos))
            # its records were decoded to check them; the log keeps only its bytes
            batch_codec.keep_encoded(batch)
            self._mem.append([batch])
            pos += size
        segment.size = pos
        if problem is None:
            return True
        kept = recovery.keep_tail(self.ops, segment.path, data, pos)  # durable before the cut
        name = os.path.basename(segment.path)
        self._report(f"{name}: cut {len(data) - pos} bytes at position {pos} ({problem})", kept)
        with open(segment.path, "r+b") as f:
            self.ops.truncate(f, pos)
        return False

    def _report(self, what: str, kept: recovery.CutData) -> None:
        """A cut that held whole batches lost records: an error; a torn tail alone, a repair."""
        if kept.batches:
            self.losses.append(f"{what}; lost {kept.summary()}")
        else:
            self.repairs.append(f"{what}; {kept.size} bytes kept in {kept.side_file}")

    def _check_batch(self, data: bytes, pos: int) -> tuple[str | None, LogBatch | None, int]:
        """(why the batch at ``pos`` cannot be kept, the batch when it can, its size)."""
        if len(data) - pos < _HEADER:
            return "torn batch header", None, 0
        length = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
        size = 12 + length
        if length < _HEADER - 12 or pos + size > len(data):
            return f"batch of {size} bytes cut short", None, 0
        try:
            batch = batch_codec.decode_batches(data[pos : pos + size])[0]
        except (ProtocolError, ValueError, IndexError) as exc:
            return f"corrupt batch: {exc}", None, 0
        expected = self._mem.end_offset()
        if batch.base_offset != expected:
            return f"base offset {batch.base_offset}, expected {expected}", None, 0
        if (
            self._mem.end_offset() > self._mem.start_offset()
            and batch.epoch < self._mem.last_fetched_epoch()
        ):
            return f"epoch {batch.epoch} below {self._mem.last_fetched_epoch()}", None, 0
        return None, batch, size
