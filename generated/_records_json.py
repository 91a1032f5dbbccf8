"""JSON view of record batches (for the CLI, dump tools and the Spark decoders).

A batch is an object with every header field (camelCase, as in Kafka's ``DumpLogSegments``) plus the
derived ``compression``, ``timestampType``, ``isTransactional``, ``isControl`` and ``records``. A record
has ``offset``, ``timestamp``, ``attributes``, ``key`` and ``value`` (standard base64, or null) and
``headers`` (``[{"key": str, "value": base64 | null}]``). Control records get a ``control`` member
(see :meth:`ControlRecord.to_json`); with ``values="metadata"`` or ``"coordinator"`` data records get
a ``metadata`` / ``coordinator`` member decoded with the generated package.
:func:`batch_from_json` reads the view back (the derived members are ignored).
"""

from __future__ import annotations

import base64
from types import ModuleType
from typing import Any

from ._batch import Header, Record, RecordBatch
from ._buffer import decode_batches
from ._compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from ._control import decode_control_record
from ._json import b64_or_none as _b64
from ._logrecords import JsonObject, MessageView, decode_coordinator_record
from ._runtime import DecodeError, ProtocolError
from ._view_reader import metadata_value_view, read_batch_views

__all__ = ["batch_from_json", "batch_to_json", "batches_to_json", "record_to_json"]

# (JSON key, attribute, lowest value, highest value) of each header field, by its wire type.
_INT8 = (-(1 << 7), (1 << 7) - 1)
_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_HEADER_FIELDS = (
    ("baseOffset", "base_offset", _INT64),
    ("batchLength", "batch_length", _INT32),
    ("partitionLeaderEpoch", "partition_leader_epoch", _INT32),
    ("magic", "magic", _INT8),
    ("crc", "crc", (0, (1 << 32) - 1)),
    ("attributes", "attributes", _INT16),
    ("lastOffsetDelta", "last_offset_delta", _INT32),
    ("baseTimestamp", "base_timestamp", _INT64),
    ("maxTimestamp", "max_timestamp", _INT64),
    ("producerId", "producer_id", _INT64),
    ("producerEpoch", "producer_epoch", _INT16),
    ("baseSequence", "base_sequence", _INT32),
    ("recordCount", "record_count", _INT32),
)
_RECORD_ATTRIBUTES = (0, 255)  # the byte as the reader returns it
_VALUES = (None, "metadata", "coordinator")  # what batch_to_json can decode data records as


class _BadValue(Exception):
    """A JSON value that cannot be part of a batch; ``path`` names where it is."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


def _member(obj: object, key: str, path: str, default: object = None) -> object:
    if not isinstance(obj, dict):
        raise _BadValue(path or "batch", f"expected an object, got {_json_type(obj)}")
    if key not in obj:
        if default is not None:
            return default
        raise _BadValue(f"{path}.{key}" if path else key, "missing")
    return obj[key]


def _int(
    obj: object, key: str, path: str, bounds: tuple[int, int], default: int | None = None
) -> int:
    value = _member(obj, key, path, default)
    where = f"{path}.{key}" if path else key
    # JSON numbers with a fraction, an exponent beyond float range (inf) or NaN are floats: refused.
    if not isinstance(value, int) or isinstance(value, bool):
        raise _BadValue(where, f"expected an integer, got {_json_type(value)} {_preview(value)}")
    low, high = bounds
    if not low <= value <= high:
        raise _BadValue(where, f"{value} is outside {low}..{high}")
    return value


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise _BadValue(where, f"expected an array, got {_json_type(value)}")
    return value


def _unb64(value: object, where: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _BadValue(where, f"expected a base64 string or null, got {_json_type(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError as exc:
        raise _BadValue(where, f"invalid base64: {exc}") from None


def _header_key(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _BadValue(where, f"expected a string, got {_json_type(value)}")
    try:  # keys that were not UTF-8 on the wire come back as surrogateescape text
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise _BadValue(
            where, f"not valid Unicode text ({exc.reason} at index {exc.start})"
        ) from None
    return value


def _preview(value: object, limit: int = 40) -> str:
    """At most ``limit`` characters of ``value``'s repr, without formatting the whole of it first: a
    container is named by its size (a deeply nested one would raise RecursionError, a huge one be
    formatted in full before the cut), any other object but a number, string or bytes by its type.
    """
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return f"({type(value).__name__} of {len(value)})"
    if isinstance(value, (str, bytes, bytearray)):
        return repr(value[: limit + 1])[:limit]
    if value is None or isinstance(value, (bool, float)):
        return repr(value)[:limit]
    if isinstance(value, int):
        return repr(value)[:limit] if value.bit_length() <= 128 else "(a very large integer)"
    return f"({type(value).__name__})"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    names = {int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def record_to_json(record: Record) -> JsonObject:
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "attributes": record.attributes,
        "key": _b64(record.key),
        "value": _b64(record.value),
        "headers": [{"key": key, "value": _b64(value)} for key, value in record.headers],
    }


def _decoded_member(
    is_control: bool,
    key: bytes | None,
    value: bytes | None,
    values: str | None,
    package: ModuleType | None,
    family: str | None,
    message_view: MessageView | None = None,
) -> tuple[str, object]:
    """The decoded control/metadata/coordinator view of one record, or an error text."""
    try:
        if is_control:
            control = decode_control_record(key, value, package=package)
            return "control", control.to_json()
        if values == "metadata":  # as decode_metadata_record(...).to_json(message_view)
            return "metadata", metadata_value_view(package, family)(value, message_view)
        if values == "coordinator":
            coordinator = decode_coordinator_record(key, value, package=package, family=family)
            return "coordinator", coordinator.to_json()
    except ProtocolError as exc:
        return "decodeError", str(exc)
    return "", None


def batch_to_json(
    batch: RecordBatch,
    *,
    decode_control: bool = True,
    values: str | None = None,
    family: str | None = None,
    package: ModuleType | None = None,
    message_view: MessageView | None = None,
) -> JsonObject:
    """The JSON view of ``batch``.

    ``decode_control`` adds each control record's decoded key/value; ``values`` (None, "metadata" or
    "coordinator") decodes data records as metadata-log or coordinator records (``family`` as in
    :func:`decode_coordinator_record`). A record that does not decode gets a ``decodeError`` member
    instead of failing the whole view. ``message_view(message, version)`` may stand in for the
    metadata records' ``message.to_json(version)``.
    """
    if values not in _VALUES:
        raise ValueError(
            f"values must be None, 'metadata' or 'coordinator', not {_preview(values)}"
        )
    out: JsonObject = {json_name: getattr(batch, name) for json_name, name, _ in _HEADER_FIELDS}
    out["compression"] = batch.compression
    out["timestampType"] = batch.timestamp_type
    out["isTransactional"] = batch.is_transactional
    out["isControl"] = batch.is_control
    if batch.has_delete_horizon:
        out["deleteHorizonMs"] = batch.delete_horizon_ms
    records: list[JsonObject] = []
    decode = (decode_control and batch.is_control) or (values and not batch.is_control)
    for record in batch.records:
        item = record_to_json(record)
        if decode:
            name, member = _decoded_member(
                batch.is_control, record.key, record.value, values, package, family, message_view
            )
            if name:
                item[name] = member
        records.append(item)
    out["records"] = records
    return out


def batches_to_json(
    data: bytes | bytearray | memoryview | None,
    *,
    max_decompressed_bytes: object = None,
    decode_control: object = True,
    values: object = None,
    family: object = None,
    package: ModuleType | None = None,
    message_view: MessageView | None = None,
) -> JsonObject:
    """``{"batches": [...], "partialTail": base64}`` for a records buffer (see :func:`batch_to_json`).

    Buffers of v2 batches are read straight into the view (``_v2_view``); anything else, and any
    buffer with a problem, goes through :func:`decode_batches`, which raises its own error for it.
    With ``kraftwire codegen --native`` this function, the reader and the metadata value views are
    compiled (see ``_view_reader``). The options are typed ``object`` and checked by
    :func:`_checked_options`, so that a bad one gets the same named error from the compiled build.
    """
    limit, decode_control, values, family = _checked_options(
        max_decompressed_bytes, decode_control, values, family
    )
    if data is None:
        data = b""
    elif type(data) is not bytes:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"records data must be bytes-like or None, not {_json_type(data)}")
        data = bytes(data)
    read = read_batch_views(data, limit, decode_control, values is not None)
    if read is not None:
        views, tail, pending = read
        # Decoded only now, after every batch has been read, as the object path does.
        for item, is_control, key, value in pending:
            name, member = _decoded_member(
                is_control, key, value, values, package, family, message_view
            )
            if name:
                item[name] = member
        return {"batches": views, "partialTail": _b64(data[tail:]) if tail < len(data) else ""}
    batches, tail_bytes = decode_batches(data, max_decompressed_bytes=limit)
    views = [
        batch_to_json(
            batch,
            decode_control=decode_control,
            values=values,
            family=family,
            package=package,
            message_view=message_view,
        )
        for batch in batches
    ]
    return {"batches": views, "partialTail": _b64(tail_bytes)}


def _checked_options(
    max_decompressed_bytes: object, decode_control: object, values: object, family: object
) -> tuple[int, bool, str | None, str | None]:
    """:func:`batches_to_json`'s options as their types, or a TypeError/ValueError naming the one
    that is wrong (checked before the buffer is read, so also for an empty one)."""
    if max_decompressed_bytes is None:
        max_decompressed_bytes = DEFAULT_MAX_DECOMPRESSED_BYTES
    if not isinstance(max_decompressed_bytes, int) or isinstance(max_decompressed_bytes, bool):
        raise TypeError(
            f"max_decompressed_bytes must be an integer or None, not {_preview(max_decompressed_bytes)}"
        )
    if not isinstance(decode_control, bool):
        raise TypeError(f"decode_control must be True or False, not {_preview(decode_control)}")
    if values is not None and (not isinstance(values, str) or values not in _VALUES):
        raise ValueError(
            f"values must be None, 'metadata' or 'coordinator', not {_preview(values)}"
        )
    if family is not None and not isinstance(family, str):
        raise TypeError(f"family must be a string or None, not {_preview(family)}")
    return max_decompressed_bytes, decode_control, values, family


def batch_from_json(obj: dict[str, Any]) -> RecordBatch:
    """A RecordBatch from its JSON view (``batch.encode()`` then writes it back).

    A value that cannot be written (a missing member, a float, a number out of its field's range, bad
    base64, text that is not valid Unicode) is a DecodeError naming the field, e.g.
    ``records[3].timestamp``.
    """
    try:
        fields = {name: _int(obj, key, "", bounds) for key, name, bounds in _HEADER_FIELDS}
        items = _list(_member(obj, "records", ""), "records")
        records = [_record_from_json(item, f"records[{index}]") for index, item in enumerate(items)]
    except _BadValue as exc:
        raise DecodeError(f"invalid record batch JSON: {exc}") from None
    return RecordBatch(records=records, **fields)


def _record_from_json(item: object, path: str) -> Record:
    headers: list[Header] = []
    header_items = _list(_member(item, "headers", path, default=[]), f"{path}.headers")
    for index, header in enumerate(header_items):
        where = f"{path}.headers[{index}]"
        key = _header_key(_member(header, "key", where), f"{where}.key")
        headers.append((key, _unb64(_member(header, "value", where), f"{where}.value")))
    return Record(
        _int(item, "offset", path, _INT64),
        _int(item, "timestamp", path, _INT64),
        _unb64(_member(item, "key", path), f"{path}.key"),
        _unb64(_member(item, "value", path), f"{path}.value"),
        headers,
        _int(item, "attributes", path, _RECORD_ATTRIBUTES, default=0),
    )
