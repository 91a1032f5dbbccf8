"""File storage for a KRaft node, laid out as Kafka lays out a metadata log directory.

:class:`FileLog`, :class:`FileQuorumStateStore` and :class:`FileSnapshotStore` implement the core's
``RaftLog``, ``QuorumStateStore`` and ``SnapshotStore``; :func:`format_directory` and
:func:`open_directory` handle a whole ``metadata.log.dir``.
"""

from .directory import Bootstrap, NodeStorage, format_directory, open_directory, voters_record
from .files import DirectoryLock, FileOps, StorageError
from .layout import MetaProperties, random_uuid, uuid_from_str, uuid_to_str
from .log import FileLog
from .quorum_state import FileQuorumStateStore
from .snapshots import FileSnapshotStore

__all__ = [
    "Bootstrap",
    "DirectoryLock",
    "FileLog",
    "FileOps",
    "FileQuorumStateStore",
    "FileSnapshotStore",
    "MetaProperties",
    "NodeStorage",
    "StorageError",
    "format_directory",
    "open_directory",
    "random_uuid",
    "uuid_from_str",
    "uuid_to_str",
    "voters_record",
]
