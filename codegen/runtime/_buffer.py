"""A records buffer (the ``records`` of Fetch, Produce and FetchSnapshot, a log segment, a snapshot):
locate its batches, decode them, build a v2 batch, restamp one.

Batches are back-to-back: v2 batches and legacy magic 0/1 message sets, told apart by the magic byte.
A trailing partial batch is never an error.
"""

from __future__ import annotations

import struct
import time
from typing import Iterable, Iterator, Sequence

from ._batch import ATTR_CONTROL, ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL, Record, RecordBatch
from ._compression import DEFAULT_MAX_DECOMPRESSED_BYTES, codec_id
from ._legacy import LEGACY_MIN_SIZE, decode_legacy_entry
from ._runtime import ByteData, DecodeError, EncodeError
from ._v2_read import decode_v2_batch
from ._v2_write import V2_HEADER_SIZE, read_value_batch, write_v2_batch, write_value_batch

__all__ = [
    "batch_spans",
    "decode_batches",
    "encode_batch",
    "encode_value_batch",
    "iter_batches",
    "read_value_batch",
    "restamp",
]

_new_record = tuple.__new__  # Record(...) without NamedTuple's Python-level __new__
_INT32 = struct.Struct(">i")
_V2_MIN_LENGTH = V2_HEADER_SIZE - 12


# -- reading -----------------------------------------------------------------------------------------


def batch_spans(data: ByteData) -> tuple[list[tuple[int, int, int]], int]:
    """Locate the complete batches in ``data`` without decoding them.

    Returns ``([(start, end, magic), ...], tail_start)``: ``data[tail_start:]`` is a trailing partial
    batch (empty when the buffer ends on a batch boundary). A length or magic that cannot be valid is a
    DecodeError, as in Kafka's reader.
    """
    spans = []
    pos = 0
    end = len(data)
    while end - pos >= 12:
        (length,) = _INT32.unpack_from(data, pos + 8)
        if length < LEGACY_MIN_SIZE:
            raise DecodeError(f"batch length {length} is smaller than any record batch", pos + 8)
        if end - pos < 17:
            break
        magic = data[pos + 16]
        if magic > 2:
            raise DecodeError(f"invalid magic {magic}", pos + 16)
        if magic == 2 and length < _V2_MIN_LENGTH:
            raise DecodeError(
                f"batch length {length} is smaller than the v2 batch header ({_V2_MIN_LENGTH})",
                pos + 8,
            )
        stop = pos + 12 + length
        if stop > end:
            break
        spans.append((pos, stop, magic))
        pos = stop
    return spans, pos


def iter_batches(
    data: ByteData, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> Iterator[RecordBatch]:
    """Yield the complete batches of ``data`` in order; a partial last batch is skipped silently."""
    if not isinstance(data, bytes):
        data = bytes(data)
    spans, _ = batch_spans(data)
    yield from _decode_spans(data, spans, max_decompressed_bytes)


def decode_batches(
    data: ByteData, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> tuple[list[RecordBatch], bytes]:
    """Decode every complete batch of ``data``; returns ``(batches, partial_tail_bytes)``.

    ``None`` (a null records field) decodes as no batches. A batch whose records would expand beyond
    ``max_decompressed_bytes`` raises DecodeError, as does any corrupt batch (bad CRC, truncated or
    inconsistent records).
    """
    if data is None:
        return [], b""
    if not isinstance(data, bytes):
        data = bytes(data)
    spans, tail = batch_spans(data)
    return list(_decode_spans(data, spans, max_decompressed_bytes)), data[tail:]


def _decode_spans(
    data: bytes, spans: list[tuple[int, int, int]], max_decompressed_bytes: int
) -> Iterator[RecordBatch]:
    for start, stop, magic in spans:
        if magic == 2:
            yield decode_v2_batch(data, start, stop - start, max_decompressed_bytes)
        else:
            yield decode_legacy_entry(data, start, stop - start, max_decompressed_bytes)


# -- writing -----------------------------------------------------------------------------------------


def restamp(
    data: ByteData, *, base_offset: int | None = None, leader_epoch: int | None = None
) -> bytes:
    """Rewrite the base offset and/or partition leader epoch of one v2 batch, as a leader does when it
    appends a batch. Neither field is covered by the CRC, so nothing else changes."""
    out = bytearray(data)
    if len(out) < V2_HEADER_SIZE or out[16] != 2:
        raise EncodeError("restamp needs one complete v2 record batch")
    try:
        if base_offset is not None:
            struct.pack_into(">q", out, 0, base_offset)
        if leader_epoch is not None:
            struct.pack_into(">i", out, 12, leader_epoch)
    except struct.error as exc:
        raise EncodeError(f"restamp: {exc}") from None
    return bytes(out)


_TIMESTAMP_TYPES = {"CreateTime": 0, "LogAppendTime": ATTR_LOG_APPEND_TIME}

# What encode_batch takes for one record: (key, value, headers, timestamp or None for "now").
RecordInput = tuple[
    ByteData | None,
    ByteData | None,
    Iterable[tuple[str | bytes, ByteData | None]] | None,
    int | None,
]


def encode_batch(
    records: Iterable[RecordInput],
    *,
    base_offset: int = 0,
    leader_epoch: int = 0,
    compression: int | str = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    timestamp_type: str = "CreateTime",
    log_append_time: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Build one v2 batch, as a leader appends it: record ``i`` gets offset ``base_offset + i``.

    Each record is ``(key, value, headers, timestamp)``: ``key``/``value`` are bytes or None,
    ``headers`` a list of ``(str, bytes | None)`` pairs (or None), ``timestamp`` epoch milliseconds or
    None for "now". The base timestamp is the first record's, the max timestamp the largest (or
    ``log_append_time`` with ``timestamp_type="LogAppendTime"``). ``compression`` is a codec name or id.
    """
    now = None
    rows: list[Record] = []
    for index, item in enumerate(records):
        try:
            key, value, headers, timestamp = item
        except (TypeError, ValueError):
            raise EncodeError(
                f"record {index} must be (key, value, headers, timestamp), got {item!r:.80}"
            ) from None
        if timestamp is None:
            if now is None:
                now = int(time.time() * 1000)
            timestamp = now
        _check_bytes(index, "key", key)
        _check_bytes(index, "value", value)
        rows.append(
            _new_record(
                Record, (base_offset + index, timestamp, key, value, list(headers or ()), 0)
            )
        )
    if not rows:
        raise EncodeError("a record batch needs at least one record")
    if timestamp_type not in _TIMESTAMP_TYPES:
        raise EncodeError(
            f"timestamp_type must be CreateTime or LogAppendTime, not {timestamp_type!r}"
        )
    attributes = codec_id(compression) | _TIMESTAMP_TYPES[timestamp_type]
    if transactional:
        attributes |= ATTR_TRANSACTIONAL
    if control:
        attributes |= ATTR_CONTROL
    base_timestamp = rows[0].timestamp
    max_timestamp = max(row.timestamp for row in rows)
    if timestamp_type == "LogAppendTime" and log_append_time is not None:
        max_timestamp = log_append_time
    return write_v2_batch(
        rows,
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        attributes=attributes,
        last_offset_delta=len(rows) - 1,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        compression_level=compression_level,
    )


def encode_value_batch(
    values: Sequence[bytes | bytearray],
    *,
    timestamp: int,
    base_offset: int = 0,
    leader_epoch: int = 0,
) -> bytes:
    """The batch ``encode_batch([(None, value, None, timestamp) for value in values], ...)`` builds,
    byte for byte, at a fraction of its cost per record: values only (no key, no headers), one
    timestamp, no compression, as a Raft leader appends them. Each value is bytes, bytearray or a
    one-dimensional memoryview of bytes."""
    if not values:
        raise EncodeError("a record batch needs at least one record")
    if not _BYTE_TYPES.issuperset(map(type, values)):
        for index, value in enumerate(values):
            if type(value) not in _BYTE_TYPES and not _byte_view(value):
                raise EncodeError(
                    f"record {index}: value must be bytes, bytearray or a memoryview of bytes, "
                    f"got {type(value).__name__}"
                )
    return write_value_batch(
        values, base_offset=base_offset, partition_leader_epoch=leader_epoch, timestamp=timestamp
    )


_BYTE_TYPES = frozenset((bytes, bytearray))


def _byte_view(value: object) -> bool:
    """A memoryview whose length is its size in bytes (one dimension of single bytes)."""
    return isinstance(value, memoryview) and value.ndim == 1 and value.itemsize == 1


def _check_bytes(index: int, what: str, value: object) -> None:
    if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
        raise EncodeError(
            f"record {index}: {what} must be bytes or None, got {type(value).__name__}"
        )
