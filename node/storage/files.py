"""The file primitives the storage layer needs, behind one small object so a test can inject faults.

:class:`FileOps` wraps the few system calls used (open for append, write, fsync, truncate, rename,
unlink, directory fsync). A fault-injecting subclass (see the tests) raises ``OSError(ENOSPC)`` from
``write`` to model a full disk; the stores turn any ``OSError`` into :class:`StorageError` and refuse
further writes, so a node stops cleanly instead of carrying on with a log it cannot trust.
"""

from __future__ import annotations

import errno
import fcntl
import os
from typing import BinaryIO


class StorageError(Exception):
    """A storage operation failed (disk full, I/O error, corrupt or foreign files). Names the path."""


class FileOps:
    """Real file operations. Every method may raise ``OSError``."""

    def open_append(self, path: str) -> BinaryIO:
        return open(path, "ab", buffering=0)

    def write(self, f: BinaryIO, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = f.write(view)
            if not written:
                raise OSError(errno.EIO, "short write", f.name)
            view = view[written:]

    def fsync(self, f: BinaryIO) -> None:
        os.fsync(f.fileno())

    def truncate(self, f: BinaryIO, size: int) -> None:
        f.truncate(size)
        os.fsync(f.fileno())

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomically(ops: FileOps, path: str, data: bytes) -> None:
    """Write ``path`` as a whole: temp file, fsync, rename over, fsync the directory."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb", buffering=0) as f:
            ops.write(f, data)
            ops.fsync(f)
        ops.rename(tmp, path)
        ops.fsync_dir(os.path.dirname(path) or ".")
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from exc


class DirectoryLock:
    """An exclusive ``flock`` on ``<dir>/.lock``: a second process on the same directory is refused.

    The kernel drops the lock when the process dies, so a kill -9 leaves nothing to clean up.
    """

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StorageError(
                f"{os.path.dirname(self.path)} is in use by another process (lock {self.path})"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
