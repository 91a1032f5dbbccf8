"""Record values of the KRaft metadata log and record keys/values of the coordinator logs.

* Metadata log (``__cluster_metadata``), ``AbstractApiMessageSerde``: ``uvarint frame version`` (1),
  ``uvarint record type``, ``uvarint version``, then the ``metadata`` spec's body; trailing bytes are
  an error.
* Coordinator logs (``__consumer_offsets``, ``__share_group_state``, ``__transaction_state``): key =
  ``int16 record type`` + key body at version 0; value = ``int16 version`` + value body at that
  version; a null value is a tombstone.

Message classes come from a generated package (``metadata_record_class(type)``,
``coordinator_key_class(type)``, ``coordinator_value_class(type)``); types the package does not know
are kept as raw bytes (``message`` / ``key`` / ``value`` None, ``body`` / ``key_body`` / ``value_body``
set).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

from ._base import Message, generated_package
from ._json import b64_or_none as _b64
from ._runtime import ByteData, DecodeError, EncodeError, read_uvarint, write_uvarint

__all__ = [
    "CoordinatorRecord",
    "MetadataRecord",
    "MetadataValueView",
    "metadata_value_view",
    "decode_coordinator_record",
    "decode_metadata_record",
    "encode_coordinator_record",
    "encode_metadata_record",
]

METADATA_FRAME_VERSION: Final = 1  # Final: a C constant in the compiled build
_INT16 = struct.Struct(">h")

# A message's JSON view, and what may stand in for ``message.to_json(version)``.
JsonObject = dict[str, Any]
MessageView = Callable[[Message, int], JsonObject]


class MetadataRecord:
    """A metadata-log record value: ``record_type``, ``version`` and the decoded ``message``."""

    __slots__ = ("record_type", "version", "message", "body", "frame_version")

    def __init__(
        self,
        record_type: int,
        version: int,
        message: Message | None,
        body: bytes | None = None,
        frame_version: int = 1,
    ) -> None:
        self.record_type = record_type
        self.version = version
        self.message = message
        self.body = body
        self.frame_version = frame_version

    def to_json(self, message_view: MessageView | None = None) -> JsonObject:
        """``message_view(message, version)``, when given, stands in for ``message.to_json(version)``
        (the Spark decoders pass their faster view of the same dict)."""
        if self.message is not None:
            return _message_json(self.record_type, self.version, self.message, message_view)
        return {"type": self.record_type, "version": self.version, "body": _b64(self.body)}

    def __repr__(self) -> str:
        return f"MetadataRecord(type={self.record_type}, version={self.version}, {self.message!r})"


class CoordinatorRecord:
    """A coordinator record: ``record_type``, ``key``, and ``value`` at ``version`` (None: tombstone)."""

    __slots__ = ("record_type", "key", "version", "value", "key_body", "value_body")

    def __init__(
        self,
        record_type: int,
        key: Message | None,
        version: int | None,
        value: Message | None,
        key_body: bytes | None = None,
        value_body: bytes | None = None,
    ) -> None:
        self.record_type = record_type
        self.key = key
        self.version = version
        self.value = value
        self.key_body = key_body
        self.value_body = value_body

    @property
    def is_tombstone(self) -> bool:
        return self.version is None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"type": self.record_type}
        if self.key is not None:
            out["keyName"] = type(self.key).__name__
            out["key"] = self.key.to_json(0)
        else:
            out["keyBody"] = _b64(self.key_body)
        if self.version is None:
            out["value"] = None
            return out
        out["version"] = self.version
        if self.value is not None:
            out["valueName"] = type(self.value).__name__
            out["value"] = self.value.to_json(self.version)
        else:
            out["valueBody"] = _b64(self.value_body)
        return out

    def __repr__(self) -> str:
        return (
            f"CoordinatorRecord(type={self.record_type}, key={self.key!r}, "
            f"version={self.version}, value={self.value!r})"
        )


def _read_short_uvarint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    value, new_pos = read_uvarint(data, pos)
    if not 0 <= value <= 0x7FFF:
        raise DecodeError(f"metadata record {what} {value} is too large", pos)
    return value, new_pos


def _bytes_of(value: object, what: str) -> bytes:
    """``value``'s bytes, for a record part that must be a buffer (``bytes()`` of an int would give
    that many zero bytes, and of a string raise TypeError)."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise DecodeError(f"{what} must be bytes, not {type(value).__name__}")
    return bytes(value)


def decode_metadata_record(
    value: ByteData | None, *, package: ModuleType | None = None, family: str | None = None
) -> MetadataRecord:
    """Decode a ``__cluster_metadata`` record value.

    ``family`` picks the spec directory whose record types apply when the package has several (the
    bundled one has ``metadata`` and storage's remote-log ``storage``); by default ``metadata``.
    """
    if value is None:
        raise DecodeError("metadata record value is null")
    data = _bytes_of(value, "metadata record value")
    frame_version, pos = _read_short_uvarint(data, 0, "frame version")
    if frame_version != METADATA_FRAME_VERSION:
        raise DecodeError(
            f"unknown metadata record frame version {frame_version} (only 1 is supported)", 0
        )
    record_type, pos = _read_short_uvarint(data, pos, "type")
    version, pos = _read_short_uvarint(data, pos, "version")
    body = data[pos:]
    cls = _metadata_class(generated_package(package), record_type, family)
    if cls is None:
        return MetadataRecord(record_type, version, None, body)
    return MetadataRecord(record_type, version, _decode(cls, body, version, "metadata record"))


def _message_json(
    record_type: int, version: int, message: Message, message_view: MessageView | None
) -> JsonObject:
    """The view of a metadata record whose message decoded (see :meth:`MetadataRecord.to_json`)."""
    data = message.to_json(version) if message_view is None else message_view(message, version)
    return {"type": record_type, "version": version, "name": type(message).__name__, "data": data}


class MetadataValueView:
    """``decode_metadata_record(value, ...).to_json(message_view)`` for the values of one package and
    family, as a callable: the same view and the same errors, without the per-value lookups.

    The JSON views of ``__cluster_metadata`` traffic call this for every record value. The common
    frame (version 1, record type and version below 128: one byte each) is read here, and each
    record type's class is looked up once (a generated package's classes never change); any other
    frame, and any value that is not ``bytes``, goes through :func:`decode_metadata_record` itself.
    :func:`metadata_value_view` shares one view per package and family.
    """

    __slots__ = ("_package", "_family", "_classes")

    def __init__(self, *, package: ModuleType | None = None, family: str | None = None) -> None:
        self._package = generated_package(package)
        self._family = family
        # record type -> class (None: not in the package)
        self._classes: dict[int, type[Message] | None] = {}

    def __call__(self, value: object, message_view: MessageView | None = None) -> JsonObject:
        found = self._common(value)
        if found is None:
            return self._decoded(value, message_view)
        record_type, version, message = found
        return _message_json(record_type, version, message, message_view)

    def json_text(self, value: object, dumps: Callable[[JsonObject], str]) -> str:
        """The JSON text of ``self(value)``'s view, as ``dumps`` writes a dict: the message's own
        text where its compiled class writes one (``to_json_text``), else ``dumps`` of the view."""
        found = self._common(value)
        if found is None:
            return dumps(self._decoded(value, None))
        record_type, version, message = found
        writer = getattr(message, "to_json_text", None)
        written = None if writer is None else writer(version)
        data = dumps(message.to_json(version)) if written is None else written[0]
        # A class name is an identifier: no character in it needs escaping.
        name = type(message).__name__
        return f'{{"type":{record_type},"version":{version},"name":"{name}","data":{data}}}'

    def _common(self, value: object) -> tuple[int, int, Message] | None:
        """``(record type, version, message)`` of a value in the common frame whose record type
        the package has a class for; None for any other value (``_decoded`` reads those)."""
        if type(value) is not bytes or len(value) < 3 or value[0] != METADATA_FRAME_VERSION:
            return None
        record_type = value[1]
        version = value[2]
        if record_type > 0x7F or version > 0x7F:  # a longer varint: not the common frame
            return None
        try:
            cls = self._classes[record_type]
        except KeyError:  # raises what decode_metadata_record raises when the family is missing
            cls = self._classes[record_type] = _metadata_class(
                self._package, record_type, self._family
            )
        if cls is None:
            return None
        return record_type, version, _decode(cls, value[3:], version, "metadata record")

    def _decoded(self, value: object, message_view: MessageView | None) -> JsonObject:
        record = decode_metadata_record(
            value,  # type: ignore[arg-type]  # any object: what is no buffer is refused there
            package=self._package,
            family=self._family,
        )
        return record.to_json(message_view)


# (id of the package given, family) -> (that package, its view). Holding the package keeps it
# alive, so no other object can get its id.
_VIEWS: dict[tuple[int, str | None], tuple[object, MetadataValueView]] = {}


def metadata_value_view(
    package: ModuleType | None = None, family: str | None = None
) -> MetadataValueView:
    """The :class:`MetadataValueView` of ``package`` and ``family``, made on first use."""
    found = _VIEWS.get((id(package), family))
    if found is None:
        view = MetadataValueView(package=package, family=family)
        found = _VIEWS[id(package), family] = (package, view)
    return found[1]


def encode_metadata_record(message: Message, version: int, record_type: int | None = None) -> bytes:
    """Frame ``message`` (a generated metadata-record object) at ``version`` for the metadata log."""
    if record_type is None:
        record_type = _api_key(message)
    out = bytearray()
    write_uvarint(out, METADATA_FRAME_VERSION)
    write_uvarint(out, record_type)
    write_uvarint(out, version)
    out += message.encode(version)
    return bytes(out)


def decode_coordinator_record(
    key: ByteData | None,
    value: ByteData | None,
    *,
    package: ModuleType | None = None,
    family: str | None = None,
) -> CoordinatorRecord:
    """Decode a coordinator-log record from its key and value bytes (value None = tombstone).

    Record types are scoped per coordinator: ``family`` is ``group``, ``share`` or ``transaction``
    (or the spec directory, or the topic: ``__consumer_offsets``, ``__share_group_state``,
    ``__transaction_state``); it may be omitted when the package has a single coordinator family.
    """
    if key is None:
        raise DecodeError("coordinator record key must hold at least the 2-byte record type")
    key = _bytes_of(key, "coordinator record key")
    if len(key) < 2:
        raise DecodeError("coordinator record key must hold at least the 2-byte record type")
    (record_type,) = _INT16.unpack_from(key, 0)
    pkg = generated_package(package)
    key_cls, value_cls = _coordinator_classes(pkg, record_type, family)
    key_msg = None if key_cls is None else _decode(key_cls, key[2:], 0, "coordinator key")
    key_body = key[2:] if key_cls is None else None
    if value is None:
        return CoordinatorRecord(record_type, key_msg, None, None, key_body)
    value = _bytes_of(value, "coordinator record value")
    if len(value) < 2:
        raise DecodeError("coordinator record value must hold at least the 2-byte version")
    (version,) = _INT16.unpack_from(value, 0)
    if value_cls is None:
        return CoordinatorRecord(record_type, key_msg, version, None, key_body, value[2:])
    low, high = value_cls.LOWEST_VERSION, value_cls.HIGHEST_VERSION
    if not low <= version <= high:
        raise DecodeError(
            f"{value_cls.__name__} version {version} is outside its valid versions {low}-{high}"
        )
    value_msg = _decode(value_cls, value[2:], version, "coordinator value")
    return CoordinatorRecord(record_type, key_msg, version, value_msg, key_body)


def encode_coordinator_record(
    key: Message,
    value: Message | None = None,
    version: int | None = None,
    record_type: int | None = None,
) -> tuple[bytes, bytes | None]:
    """``(key bytes, value bytes or None)`` for a coordinator record; ``value=None`` is a tombstone."""
    if record_type is None:
        record_type = _api_key(key)
    key_bytes = _INT16.pack(record_type) + key.encode(0)
    if value is None:
        return key_bytes, None
    if version is None:
        raise EncodeError("a coordinator record value needs its version")
    return key_bytes, _INT16.pack(version) + value.encode(version)


def _decode(cls: type[Message], body: bytes, version: int, what: str) -> Message:
    try:
        return cls.decode(body, version)
    except Exception as exc:  # the package passed in may have its own ProtocolError classes
        raise DecodeError(f"{what} {cls.__name__} v{version}: {exc}") from None


def _api_key(message: Message) -> int:
    key = getattr(type(message), "API_KEY", None)
    if not isinstance(key, int) or key < 0:
        raise EncodeError(f"{type(message).__name__} has no record type; pass record_type")
    return key


def _metadata_class(pkg: ModuleType, record_type: int, family: str | None) -> type[Message] | None:
    found: type[Message] | None
    if family is not None:
        try:
            found = pkg.metadata_record_class(record_type, family)
        except KeyError:
            raise DecodeError(f"the generated package has no metadata family {family!r}") from None
        return found
    try:
        found = pkg.metadata_record_class(record_type)
    except KeyError:  # several families: the KRaft metadata log uses "metadata"
        try:
            found = pkg.metadata_record_class(record_type, "metadata")
        except KeyError:
            raise DecodeError("the generated package has no metadata records") from None
    return found


_COORDINATOR_ALIASES = {
    "group": "group-coordinator",
    "__consumer_offsets": "group-coordinator",
    "share": "share-coordinator",
    "__share_group_state": "share-coordinator",
    "transaction": "transaction-coordinator",
    "__transaction_state": "transaction-coordinator",
}


def _coordinator_classes(
    pkg: ModuleType, record_type: int, family: str | None
) -> tuple[type[Message] | None, type[Message] | None]:
    names = [family] if family is None else [family, _COORDINATOR_ALIASES.get(family, family)]
    problem: object = None
    for name in names:
        try:
            key_class: type[Message] | None = pkg.coordinator_key_class(record_type, name)
            value_class: type[Message] | None = pkg.coordinator_value_class(record_type, name)
        except KeyError as exc:
            problem = exc.args[0] if exc.args else exc
            continue
        return key_class, value_class
    raise DecodeError(f"coordinator record family: {problem}")
