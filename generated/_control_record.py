"""Control records: the records of a batch whose control bit is set (building and decoding one; the
batches that hold them are written by :mod:`._control`, above the batch layer).

Key: ``int16 key version`` (0) + ``ControlRecordTypeSchema`` v0 (``int16 type``); Kafka reads a key
version above 0 as version 0 and rejects a negative one. Value by type:

* 0 ABORT, 1 COMMIT: ``int16 version`` + ``EndTxnMarker`` v0 (``int32 CoordinatorEpoch``);
* 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS: the generated
  message (``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``,
  ``KRaftVersionRecord``, ``VotersRecord``) at version 0, the version Kafka reads and writes;
* any other type: kept as raw bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ._base import Message, generated_package
from ._json import b64_or_none
from ._runtime import ByteData, DecodeError, EncodeError

__all__ = ["CONTROL_TYPE_NAMES", "ControlRecord", "control_record", "decode_control_record"]

ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = range(
    7
)
CONTROL_TYPE_NAMES = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}
_VALUE_CLASS_NAMES = {
    ABORT: "EndTxnMarker",
    COMMIT: "EndTxnMarker",
    LEADER_CHANGE: "LeaderChangeMessage",
    SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    KRAFT_VERSION: "KRaftVersionRecord",
    KRAFT_VOTERS: "VotersRecord",
}
_KEY = struct.Struct(">hh")
_VERSION = struct.Struct(">h")


def _value_class(package: ModuleType | None, type_: int) -> type[Message]:
    cls: type[Message] = generated_package(package).lookup(_VALUE_CLASS_NAMES[type_])
    return cls


class ControlRecord:
    """A decoded control record: ``type``, ``key_version`` and ``value``.

    ``value`` is the generated message object for known types (an ``EndTxnMarker`` for ABORT/COMMIT,
    whose version prefix is ``value_version``) and the raw value bytes for unknown types.
    """

    __slots__ = ("type", "value", "key_version", "value_version")

    def __init__(
        self,
        type: int,
        value: Message | bytes | None,
        *,
        key_version: int = 0,
        value_version: int = 0,
    ) -> None:
        self.type = type
        self.value = value
        self.key_version = key_version
        self.value_version = value_version

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.type, "UNKNOWN")

    @property
    def is_known(self) -> bool:
        return self.type in CONTROL_TYPE_NAMES

    def key_bytes(self) -> bytes:
        return _KEY.pack(self.key_version, self.type)

    def value_bytes(self) -> bytes:
        if not self.is_known:
            if not isinstance(self.value, (bytes, bytearray, memoryview)):
                raise EncodeError(
                    f"control record type {self.type} is unknown: value must be bytes"
                )
            return bytes(self.value)
        if self.type in (ABORT, COMMIT):
            return _VERSION.pack(self.value_version) + self._message().encode(0)
        return self._message().encode(0)

    def _message(self) -> Message:
        """The value of a known type: its generated message (an EncodeError for anything else)."""
        if self.value is None or isinstance(self.value, (bytes, bytearray, memoryview)):
            raise EncodeError(f"a {self.type_name} control record's value must be its message")
        return self.value

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "keyVersion": self.key_version,
            "type": self.type,
            "typeName": self.type_name,
        }
        if not self.is_known:
            out["value"] = None if self.value is None else b64_or_none(self.value_bytes())
            return out
        if self.type in (ABORT, COMMIT):
            out["valueVersion"] = self.value_version
        out["value"] = self._message().to_json(0)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ControlRecord):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __repr__(self) -> str:
        return f"ControlRecord({self.type_name}, {self.value!r})"


def decode_control_record(
    key: ByteData | None, value: ByteData | None, *, package: ModuleType | None = None
) -> ControlRecord:
    """Decode a control record's key and value (``record.key``, ``record.value``)."""
    if key is None or len(key) < 4:
        size = "null" if key is None else f"{len(key)} bytes"
        raise DecodeError(f"control record key must have at least 4 bytes, found {size}")
    key_version, type_ = _KEY.unpack_from(key, 0)
    if key_version < 0:
        raise DecodeError(f"negative control record key version {key_version}")
    if type_ not in CONTROL_TYPE_NAMES:
        return ControlRecord(
            type_, None if value is None else bytes(value), key_version=key_version
        )
    name = CONTROL_TYPE_NAMES[type_]
    if value is None:
        raise DecodeError(f"{name} control record has a null value")
    cls = _value_class(package, type_)
    value_version = 0
    try:
        if type_ in (ABORT, COMMIT):
            if len(value) < 6:
                raise DecodeError(
                    f"{name} marker value must have at least 6 bytes, found {len(value)}"
                )
            (value_version,) = _VERSION.unpack_from(value, 0)
            if value_version < 0:
                raise DecodeError(f"negative {name} marker version {value_version}")
            message, _ = cls.read(bytes(value[2:6]), 0, 0)
        else:
            # Like Kafka's ControlRecordUtils, read version 0 and ignore anything after the message.
            message, _ = cls.read(bytes(value), 0, 0)
    except Exception as exc:  # also the ProtocolError classes of another generated package
        raise DecodeError(f"{name} control record: {exc}") from None
    return ControlRecord(type_, message, key_version=key_version, value_version=value_version)


def control_record(
    type_: int, value: Message | bytes | int | None = None, *, package: ModuleType | None = None
) -> ControlRecord:
    """Build a ControlRecord. ``value`` may be the message, or for ABORT/COMMIT the coordinator epoch
    (an int); for a SNAPSHOT_FOOTER it may be omitted."""
    if type_ in (ABORT, COMMIT) and (value is None or isinstance(value, int)):
        marker: Callable[..., Message] = _value_class(package, type_)
        return ControlRecord(type_, marker(coordinator_epoch=value or 0))
    if type_ == SNAPSHOT_FOOTER and value is None:
        return ControlRecord(type_, _value_class(package, type_)())
    if value is None:
        raise EncodeError(f"control record type {type_} needs a value")
    if isinstance(value, int):
        raise EncodeError(f"control record type {type_}: only ABORT and COMMIT take an int value")
    return ControlRecord(type_, value)
