"""Telling a Kafka metadata log (``__cluster_metadata`` of Kafka's controllers) from a kraftwire one.

Kafka's controllers replay every data record of their log as a metadata record (value: frame version,
record type, record version as unsigned varints, then the record), and stop on one they cannot read.
A log is a **Kafka metadata log** when a data record of it is a ``FeatureLevelRecord`` (frame version 1,
type 12, version 0) whose Name is ``metadata.version``: Kafka's ``StorageTool format`` writes one into
the bootstrap checkpoint, and its active controller writes one at the start of the log and of every
snapshot (the spec's note: "New metadata logs and snapshots begin with a FeatureLevelRecord").

:class:`KafkaMetadataLogDetector` looks at the bootstrap checkpoint, the latest snapshot and the log's
data batches, remembering how far it read; once it has seen the record the answer stays yes.
"""

from __future__ import annotations

import operator
from typing import Iterable, Protocol, Sequence

from kraftwire.generated import ProtocolError
from kraftwire.node.core import batches as batch_codec
from kraftwire.node.core.api import LogBatch, SnapshotId

from .snapshots import FileSnapshotStore


class _Log(Protocol):
    def start_offset(self) -> int: ...
    def end_offset(self) -> int: ...
    def read(self, start_offset: int, max_bytes: int) -> Sequence[LogBatch]: ...


METADATA_VERSION = "metadata.version"
FEATURE_LEVEL_RECORD_TYPE = 12
_PREFIX = bytes([1, FEATURE_LEVEL_RECORD_TYPE, 0])  # frame version 1, FeatureLevelRecord, version 0
_NAME = METADATA_VERSION.encode()
# The Name as a compact string: its length + 1 as one varint byte, then the bytes.
_METADATA_VERSION_HEAD = _PREFIX + bytes([len(_NAME) + 1]) + _NAME
_ALL = 1 << 62  # read's byte limit: no limit


def is_metadata_version_record(value: object) -> bool:
    """Whether a data record's value is Kafka's ``FeatureLevelRecord`` for metadata.version."""
    # startswith, not a sliced copy compared: every record a node appends or learns of comes here
    return isinstance(value, (bytes, bytearray)) and value.startswith(_METADATA_VERSION_HEAD)


_STARTS_AS_METADATA_VERSION = operator.methodcaller("startswith", _METADATA_VERSION_HEAD)


def holds_metadata_version_record(values: Iterable[object]) -> bool:
    """Whether one of ``values`` (data records' values) is that record. Every committed batch comes
    here: the values are joined and searched for the record's head in C first (a tenth of a call a
    value; a batch without it anywhere holds no value that starts with it), and only a batch that
    has it somewhere is looked at value by value."""
    values = values if isinstance(values, (tuple, list)) else tuple(values)
    try:
        if _METADATA_VERSION_HEAD not in b"".join(values):  # type: ignore[arg-type]
            return False
        return any(map(_STARTS_AS_METADATA_VERSION, values))
    except (AttributeError, TypeError):  # a value that is not bytes: judged one by one
        return any(map(is_metadata_version_record, values))


def feature_level_record(name: str, level: int) -> bytes:
    """The value of a ``FeatureLevelRecord`` (version 0) as Kafka's metadata serde writes it."""
    encoded = name.encode()
    if len(encoded) + 1 >= 0x80 or not 0 <= level < 1 << 15:
        raise ValueError(f"feature {name!r} level {level}: out of range")
    return _PREFIX + bytes([len(encoded) + 1]) + encoded + level.to_bytes(2, "big") + b"\x00"


def holds_metadata_version(batches: Iterable[LogBatch]) -> bool:
    return any(not b.is_control and holds_metadata_version_record(b.records) for b in batches)


class KafkaMetadataLogDetector:
    """Whether a node's quorum log is a Kafka metadata log (see the module docstring)."""

    def __init__(self) -> None:
        self.found = False
        self._snapshots_read: set[SnapshotId] = set()
        self._log_read_to = 0

    def check(self, snapshots: FileSnapshotStore, log: _Log) -> bool:
        """Look at what was not read yet: snapshots (the bootstrap checkpoint among them) and the
        log's batches from where the last call stopped."""
        if self.found:
            return True
        for sid in snapshots.ids():
            if sid not in self._snapshots_read:
                self._snapshots_read.add(sid)
                if self._snapshot_holds(snapshots, sid):
                    self.found = True
                    return True
        end = log.end_offset()
        # A truncation may have replaced what was read: read again from the end that is left.
        start = min(max(self._log_read_to, log.start_offset()), end)
        if start < end:
            self.found = holds_metadata_version(log.read(start, _ALL))
        self._log_read_to = end
        return self.found

    @staticmethod
    def _snapshot_holds(snapshots: FileSnapshotStore, sid: SnapshotId) -> bool:
        try:
            data = snapshots.read(sid, 0, snapshots.size(sid))
            return holds_metadata_version(batch_codec.decode_batches(data))
        except (OSError, ValueError, ProtocolError):
            return False  # unreadable here: the node's own loading reports it
