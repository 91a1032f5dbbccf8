"""Record batch v2 (magic 2): the wire layout and the writer.

Layout (big-endian): baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
crc uint32 (CRC-32C over attributes..end), attributes int16, lastOffsetDelta int32, baseTimestamp int64,
maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32, recordCount int32, then
the records, compressed as a whole when attributes bits 0-2 say so. Each record is: length varint,
attributes int8, timestampDelta varlong, offsetDelta varint, key (varint length, -1 = null), value
(likewise), header count varint, headers (varint key length + UTF-8 key, varint value length + value).
Record varints are signed (zig-zag). The reader is ``_v2_read.py``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from ._compression import ATTR_CODEC_MASK, compress
from ._crc32c import crc32c
from ._runtime import ByteData, EncodeError

__all__ = ["CRC_START", "V2_HEADER", "V2_HEADER_SIZE", "write_v2_batch", "write_value_batch"]

V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_HEADER_SIZE = V2_HEADER.size  # 61
CRC_START = 21  # attributes: the first byte covered by the CRC
_CRC = struct.Struct(">I")
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _write_varint(out: bytearray, value: int) -> None:
    """Signed zig-zag varint/varlong (the caller keeps values within int64)."""
    value = (value << 1) ^ (value >> 63)
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


# A record as write_v2_batch takes it: a Record, or a tuple of the same fields, whose header keys
# may also be bytes.
RecordFields = tuple[
    int, int, ByteData | None, ByteData | None, Sequence[tuple[str | bytes, ByteData | None]], int
]


def _write_record(
    out: bytearray,
    attributes: int,
    ts_delta: int,
    offset_delta: int,
    key: ByteData | None,
    value: ByteData | None,
    headers: Sequence[tuple[str | bytes, ByteData | None]],
) -> None:
    body = bytearray()
    body.append(attributes & 0xFF)
    _write_varint(body, ts_delta)
    _write_varint(body, offset_delta)
    if key is None:
        body.append(1)  # zig-zag -1
    else:
        _write_varint(body, len(key))
        body += key
    if value is None:
        body.append(1)
    else:
        _write_varint(body, len(value))
        body += value
    _write_varint(body, len(headers))
    for header_key, header_value in headers:
        if isinstance(header_key, str):
            header_key = header_key.encode("utf-8", "surrogateescape")
        _write_varint(body, len(header_key))
        body += header_key
        if header_value is None:
            body.append(1)
        else:
            _write_varint(body, len(header_value))
            body += header_value
    _write_varint(out, len(body))
    out += body


def write_v2_batch(
    records: Sequence[RecordFields],
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    compression_level: int | None = None,
) -> bytes:
    """Write one v2 batch. ``records`` are ``Record`` tuples (absolute offsets and timestamps)."""
    body = bytearray()
    for index, record in enumerate(records):
        offset, timestamp, key, value, headers, record_attributes = record
        ts_delta = timestamp - base_timestamp
        offset_delta = offset - base_offset
        if not (_INT64_MIN <= ts_delta <= _INT64_MAX and _INT32_MIN <= offset_delta <= _INT32_MAX):
            raise EncodeError(
                f"record {index}: offset {offset} / timestamp {timestamp} too far from the batch's "
                f"base offset {base_offset} / base timestamp {base_timestamp}"
            )
        try:
            _write_record(
                body,
                record_attributes,
                ts_delta,
                offset_delta,
                # memoryview only checks that other buffers are bytes-like; bytes need no wrapper
                key if key is None or key.__class__ is bytes else memoryview(key),
                value if value is None or value.__class__ is bytes else memoryview(value),
                headers or (),
            )
        except (TypeError, ValueError) as exc:
            raise EncodeError(f"record {index}: {exc}") from None
    codec = attributes & ATTR_CODEC_MASK
    payload = compress(codec, bytes(body), compression_level) if codec else body
    return _framed(
        payload,
        base_offset,
        partition_leader_epoch,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )


def _framed(
    payload: ByteData,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    count: int,
) -> bytes:
    """The batch of ``payload`` (its records, compressed or not) under a v2 header of these fields;
    the length, magic and CRC (over everything after it) are filled in here."""
    out = bytearray(V2_HEADER_SIZE)
    out += payload
    try:
        V2_HEADER.pack_into(
            out, 0, base_offset, len(out) - 12, partition_leader_epoch, 2, 0, attributes,
            last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
            base_sequence, count,
        )  # fmt: skip
    except struct.error as exc:
        raise EncodeError(f"record batch header field out of range: {exc}") from None
    _CRC.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def _zigzag_bytes(value: int) -> bytes:
    out = bytearray()
    _write_varint(out, value)
    return bytes(out)


# The zig-zag varints of small non-negative ints (offset deltas and lengths), written once.
_SMALL_VARINTS = [_zigzag_bytes(value) for value in range(1 << 13)]
_NO_KEY = b"\x01"  # a null key: zig-zag -1
_RECORD_HEAD = b"\x00\x00"  # attributes 0, timestamp delta 0
_NO_HEADERS = b"\x00"


def _record_head(delta: int, length: int) -> bytes:
    """Record ``delta``'s bytes before its value: size, attributes, timestamp and offset deltas, a
    null key, the value's length."""
    small = _SMALL_VARINTS
    offset_bytes = small[delta] if delta < 8192 else _zigzag_bytes(delta)
    length_bytes = small[length] if length < 8192 else _zigzag_bytes(length)
    size = 4 + len(offset_bytes) + len(length_bytes) + length
    size_bytes = small[size] if size < 8192 else _zigzag_bytes(size)
    return size_bytes + _RECORD_HEAD + offset_bytes + _NO_KEY + length_bytes


# Values of one length (a leader's records often are): the heads of records 1, 2, ... each after
# the header count (0) that ends the record before it, kept for the last few lengths seen. Up to
# 32,768 records a batch (about 1.5 MiB of heads a length): a Raft leader's batch at 135,000
# records/s and a 25 ms linger holds 3,400, and one that waited out an fsync as well holds more
# (with 8,192, one batch in ten went to the general writer and reader, 30x slower a record).
_HEADS_KEPT, _HEADS_MAX = 4, 1 << 15
_heads_by_length: dict[int, list[bytes]] = {}
# Where each value of such a batch lies in it (after the header and each record's head), kept with
# the heads: the reader slices the values out without adding up their places each batch.
_slices_by_length: dict[int, list[slice]] = {}


def _heads(length: int, count: int) -> list[bytes]:
    heads = _heads_by_length.get(length)
    if heads is None:
        if len(_heads_by_length) >= _HEADS_KEPT:
            _heads_by_length.clear()
            _slices_by_length.clear()
        heads = _heads_by_length[length] = [_record_head(0, length)]
    for delta in range(len(heads), count):
        heads.append(_NO_HEADERS + _record_head(delta, length))
    return heads


def _value_slices(length: int, heads: list[bytes], count: int) -> list[slice]:
    """Where values 0 to ``count - 1`` of a value batch of ``length``-byte values lie in it."""
    slices = _slices_by_length.setdefault(length, [])
    end = slices[-1].stop if slices else V2_HEADER_SIZE
    for head in heads[len(slices) : count]:
        start = end + len(head)
        end = start + length
        slices.append(slice(start, end))
    return slices[:count]


def write_value_batch(
    values: Sequence[ByteData],
    *,
    base_offset: int,
    partition_leader_epoch: int,
    timestamp: int,
) -> bytes:
    """An uncompressed v2 batch of ``values`` as records without key or headers, all stamped
    ``timestamp``, record ``i`` at offset ``base_offset + i``: the batch a Raft leader appends.

    The same bytes as :func:`write_v2_batch` gives for those records, from cached pieces instead of
    field by field (the leader's per-record cost): values of one length are interleaved with the
    cached heads of their records in two slice assignments, others are written a record at a time.
    """
    count = len(values)
    parts: list[ByteData]
    lengths = set(map(len, values))
    if len(lengths) == 1 and count <= _HEADS_MAX:
        parts = [_NO_HEADERS] * (2 * count + 1)
        parts[0:-1:2] = _heads(lengths.pop(), count)[:count]
        parts[1::2] = values
    else:
        parts = []
        for delta, value in enumerate(values):
            parts += (_record_head(delta, len(value)), value, _NO_HEADERS)
    return _framed(
        b"".join(parts), base_offset, partition_leader_epoch, 0, count - 1, timestamp, timestamp,
        -1, -1, -1, count,
    )  # fmt: skip


# A value-only batch's first record starts: size varint, attributes 0, timestamp delta 0, offset
# delta 0, null key; then the value's length.
_FIRST_RECORD_FIELDS = b"\x00\x00\x00\x01"


def read_value_batch(batch: bytes) -> tuple[int, int, int, list[bytes]] | None:
    """(base offset, leader epoch, timestamp, values) of ``batch``, one whole v2 batch, when it is
    byte for byte what :func:`write_value_batch` writes for values of one length, else None (the
    general reader decodes it then). Its CRC is checked; the values are sliced where the cached
    record heads put them, and the records are rebuilt from those heads and values and compared
    with what arrived, so nothing is taken on trust."""
    if len(batch) <= V2_HEADER_SIZE:
        return None
    (base_offset, length, epoch, magic, crc, attributes, last_delta, timestamp, max_timestamp,
     producer_id, producer_epoch, sequence, count) = V2_HEADER.unpack_from(batch, 0)  # fmt: skip
    if (magic, attributes, producer_id, producer_epoch, sequence) != (2, 0, -1, -1, -1):
        return None
    if not 0 < count <= _HEADS_MAX or last_delta != count - 1 or max_timestamp != timestamp:
        return None
    if length != len(batch) - 12 or crc32c(memoryview(batch)[CRC_START:]) != crc:
        return None
    value_length = _first_value_length(batch)
    if value_length is None:
        return None
    heads = _heads(value_length, count)
    slices = _value_slices(value_length, heads, count)
    if slices[-1].stop + 1 != len(batch):  # the last value, then its record's header count
        return None
    values = list(map(batch.__getitem__, slices))
    parts: list[bytes] = [_NO_HEADERS] * (2 * count + 1)
    parts[0:-1:2] = heads[:count]
    parts[1::2] = values
    if not batch.endswith(b"".join(parts)):  # its length was checked above
        return None
    return base_offset, epoch, timestamp, values


def _first_value_length(batch: bytes) -> int | None:
    """The value length the first record's head gives, if it starts as a value-only record's."""
    pos = V2_HEADER_SIZE
    while pos < len(batch) and batch[pos] & 0x80:  # the record's size varint
        pos += 1
    pos += 1
    if batch[pos : pos + 4] != _FIRST_RECORD_FIELDS:
        return None
    pos += 4
    value, shift = 0, 0
    while pos < len(batch) and shift < 35:
        byte = batch[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return None if value & 1 else value >> 1  # zig-zag: odd is negative, a null value
        pos, shift = pos + 1, shift + 7
    return None
