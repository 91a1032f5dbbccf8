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

from ._batch import Record, RecordBatch
from ._json import b64_or_none as _b64
from ._runtime import DecodeError, ProtocolError

__all__ = ["batch_from_json", "batch_to_json", "batches_to_json", "record_to_json"]

_HEADER_FIELDS = (
    ("baseOffset", "base_offset"),
    ("batchLength", "batch_length"),
    ("partitionLeaderEpoch", "partition_leader_epoch"),
    ("magic", "magic"),
    ("crc", "crc"),
    ("attributes", "attributes"),
    ("lastOffsetDelta", "last_offset_delta"),
    ("baseTimestamp", "base_timestamp"),
    ("maxTimestamp", "max_timestamp"),
    ("producerId", "producer_id"),
    ("producerEpoch", "producer_epoch"),
    ("baseSequence", "base_sequence"),
    ("recordCount", "record_count"),
)


def _unb64(text) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise DecodeError(f"expected a base64 string or null, got {type(text).__name__}")
    return base64.b64decode(text, validate=True)


def record_to_json(record: Record) -> dict:
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "attributes": record.attributes,
        "key": _b64(record.key),
        "value": _b64(record.value),
        "headers": [{"key": key, "value": _b64(value)} for key, value in record.headers],
    }


def _decoded_member(batch, record, values, package, family) -> tuple[str, object]:
    """The decoded control/metadata/coordinator view of one record, or an error text."""
    from ._control import decode_control_record
    from ._logrecords import decode_coordinator_record, decode_metadata_record

    try:
        if batch.is_control:
            control = decode_control_record(record.key, record.value, package=package)
            return "control", control.to_json()
        if values == "metadata":
            metadata = decode_metadata_record(record.value, package=package, family=family)
            return "metadata", metadata.to_json()
        if values == "coordinator":
            coordinator = decode_coordinator_record(
                record.key, record.value, package=package, family=family
            )
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
    package=None,
) -> dict:
    """The JSON view of ``batch``.

    ``decode_control`` adds each control record's decoded key/value; ``values`` (None, "metadata" or
    "coordinator") decodes data records as metadata-log or coordinator records (``family`` as in
    :func:`decode_coordinator_record`). A record that does not decode gets a ``decodeError`` member
    instead of failing the whole view.
    """
    if values not in (None, "metadata", "coordinator"):
        raise ValueError(f"values must be None, 'metadata' or 'coordinator', not {values!r}")
    out = {json_name: getattr(batch, name) for json_name, name in _HEADER_FIELDS}
    out["compression"] = batch.compression
    out["timestampType"] = batch.timestamp_type
    out["isTransactional"] = batch.is_transactional
    out["isControl"] = batch.is_control
    if batch.has_delete_horizon:
        out["deleteHorizonMs"] = batch.delete_horizon_ms
    records = []
    decode = (decode_control and batch.is_control) or (values and not batch.is_control)
    for record in batch.records:
        item = record_to_json(record)
        if decode:
            name, member = _decoded_member(batch, record, values, package, family)
            if name:
                item[name] = member
        records.append(item)
    out["records"] = records
    return out


def batches_to_json(data, *, max_decompressed_bytes: int | None = None, **options) -> dict:
    """``{"batches": [...], "partialTail": base64}`` for a records buffer (see :func:`batch_to_json`)."""
    from .records import decode_batches

    limit = (
        {} if max_decompressed_bytes is None else {"max_decompressed_bytes": max_decompressed_bytes}
    )
    batches, tail = decode_batches(data, **limit)
    return {
        "batches": [batch_to_json(batch, **options) for batch in batches],
        "partialTail": _b64(tail),
    }


def batch_from_json(obj: dict) -> RecordBatch:
    """A RecordBatch from its JSON view (``batch.encode()`` then writes it back)."""
    try:
        fields = {name: int(obj[json_name]) for json_name, name in _HEADER_FIELDS}
        records = [
            Record(
                int(item["offset"]),
                int(item["timestamp"]),
                _unb64(item["key"]),
                _unb64(item["value"]),
                [(h["key"], _unb64(h["value"])) for h in item.get("headers", ())],
                int(item.get("attributes", 0)),
            )
            for item in obj["records"]
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise DecodeError(f"invalid record batch JSON: {type(exc).__name__}: {exc}") from None
    return RecordBatch(records=records, **fields)
