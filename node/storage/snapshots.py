""":class:`FileSnapshotStore`: ``%020d-%010d.checkpoint`` files in the partition directory (KIP-630).

A snapshot is written (or downloaded) into ``<name>-<random>.checkpoint.part``, fsynced, renamed into
place and the directory fsynced: a ``.checkpoint`` file is always complete. Opening the store removes
leftover ``.part`` and ``.deleted`` files, as Kafka's recovery does.
"""

from __future__ import annotations

import os
import uuid
from typing import BinaryIO, Callable, Sequence, TypeVar, TypeVarTuple

from kraftwire.node.core.api import SnapshotId

from . import layout
from .files import FileOps, StorageError

_Result = TypeVar("_Result")
_Args = TypeVarTuple("_Args")


class FileSnapshotStore:
    def __init__(self, directory: str, ops: FileOps | None = None) -> None:
        self.directory = directory
        self.ops = ops or FileOps()
        self._ids: list[SnapshotId] = []
        self._partial: tuple[SnapshotId, str, BinaryIO, int] | None = None  # id, path, handle, size
        for name in os.listdir(directory):
            match = layout.SNAPSHOT_RE.match(name)
            if match:
                self._ids.append(SnapshotId(int(match[1]), int(match[2])))
            elif name.endswith(".checkpoint.part") or name.endswith(".checkpoint.deleted"):
                os.unlink(os.path.join(directory, name))
        self._ids.sort()

    def path(self, snapshot_id: SnapshotId) -> str:
        return os.path.join(self.directory, layout.snapshot_name(snapshot_id))

    def ids(self) -> Sequence[SnapshotId]:
        return list(self._ids)

    def latest(self) -> SnapshotId | None:
        return self._ids[-1] if self._ids else None

    def size(self, snapshot_id: SnapshotId) -> int:
        return os.path.getsize(self.path(snapshot_id))

    def read(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        with open(self.path(snapshot_id), "rb") as f:
            f.seek(position)
            return f.read(max_bytes)

    def write(self, snapshot_id: SnapshotId, data: bytes) -> None:
        self.begin_partial(snapshot_id)
        self.append_partial(snapshot_id, data)
        self.freeze_partial(snapshot_id)

    def begin_partial(self, snapshot_id: SnapshotId) -> None:
        if self._partial is not None:
            self.abort_partial(self._partial[0])
        name = layout.snapshot_name(snapshot_id)[: -len(".checkpoint")]
        path = os.path.join(self.directory, f"{name}-{uuid.uuid4().hex}.checkpoint.part")
        handle = self._guard(path, self.ops.open_append, path)
        self._partial = (snapshot_id, path, handle, 0)

    def append_partial(self, snapshot_id: SnapshotId, data: bytes) -> int:
        sid, path, handle, size = self._current(snapshot_id)
        self._guard(path, self.ops.write, handle, data)
        self._partial = (sid, path, handle, size + len(data))
        return size + len(data)

    def partial_size(self, snapshot_id: SnapshotId) -> int | None:
        if self._partial is None or self._partial[0] != snapshot_id:
            return None
        return self._partial[3]

    def freeze_partial(self, snapshot_id: SnapshotId) -> None:
        sid, path, handle, _ = self._current(snapshot_id)
        self._guard(path, self.ops.fsync, handle)
        handle.close()
        self._guard(path, self.ops.rename, path, self.path(sid))
        self._guard(self.directory, self.ops.fsync_dir, self.directory)
        self._partial = None
        if sid not in self._ids:
            self._ids.append(sid)
            self._ids.sort()

    def abort_partial(self, snapshot_id: SnapshotId) -> None:
        if self._partial is None or self._partial[0] != snapshot_id:
            return
        _, path, handle, _ = self._partial
        handle.close()
        self._partial = None
        try:
            self.ops.unlink(path)
        except OSError:
            pass

    def delete(self, snapshot_id: SnapshotId) -> None:
        if snapshot_id in self._ids:
            self._ids.remove(snapshot_id)
            self._guard(self.path(snapshot_id), self.ops.unlink, self.path(snapshot_id))

    def close(self) -> None:
        if self._partial is not None:
            self.abort_partial(self._partial[0])

    def _current(self, snapshot_id: SnapshotId) -> tuple[SnapshotId, str, BinaryIO, int]:
        if self._partial is None or self._partial[0] != snapshot_id:
            raise ValueError(f"no download of {snapshot_id} in progress")
        return self._partial

    def _guard(self, path: str, action: Callable[[*_Args], _Result], *args: *_Args) -> _Result:
        try:
            return action(*args)
        except OSError as exc:
            raise StorageError(f"{path}: {exc.strerror or exc}") from exc
