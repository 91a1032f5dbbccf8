"""Legacy message sets (magic 0 and 1), read-only, so that old captures and logs still decode.

Each entry is ``offset int64, size int32`` followed by a message: ``crc uint32`` (CRC-32 of the rest),
``magic int8``, ``attributes int8`` (bits 0-2 codec: gzip 1, snappy 2, lz4 3; bit 3 LogAppendTime on
magic 1), ``timestamp int64`` (magic 1 only), ``key bytes``, ``value bytes`` (int32 lengths, -1 = null).

A compressed message ("wrapper") holds a whole message set in its value. Under a magic-1 wrapper the
inner offsets are relative (0..n-1) and the wrapper carries the absolute offset of the last one; under
magic 0 they are absolute. Each top-level message becomes one :class:`RecordBatch`.
"""

from __future__ import annotations

import struct
import zlib

from ._batch import ATTR_LOG_APPEND_TIME, Record, RecordBatch
from ._compression import ATTR_CODEC_MASK, decompress
from ._runtime import DecodeError

__all__ = ["decode_legacy_entry", "LEGACY_MIN_SIZE"]

_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
LEGACY_MIN_SIZE = 14  # crc, magic, attributes, key length, value length
_new_record = tuple.__new__


def decode_legacy_entry(buf: bytes, pos: int, size: int, limit: int) -> RecordBatch:
    """Decode the message at ``buf[pos:pos + size]`` (offset and size fields included)."""
    offset, message_size, crc, magic, attributes = _ENTRY.unpack_from(buf, pos)
    where = f"message at offset {offset}"
    try:
        timestamp, key, value = _read_message(buf, pos + 12, pos + size, magic)
    except DecodeError as exc:
        raise DecodeError(f"{where}: {exc}", pos) from None
    codec = attributes & ATTR_CODEC_MASK
    records: list[Record] = []
    if codec == 0:
        records.append(_new_record(Record, (offset, timestamp, key, value, [], attributes)))
        base = offset
    else:
        if value is None:
            raise DecodeError(f"{where}: compressed message with a null value", pos)
        try:
            inner = decompress(codec, value, limit, broken_lz4_checksum=magic == 0)
            records = _read_inner(inner, magic, offset, timestamp, attributes)
        except DecodeError as exc:
            raise DecodeError(f"{where}: {exc}", pos) from None
        if not records:
            raise DecodeError(f"{where}: compressed message set holds no messages", pos)
        base = records[0].offset
    return RecordBatch(
        base_offset=base,
        batch_length=message_size,
        partition_leader_epoch=-1,
        magic=magic,
        crc=crc,
        attributes=attributes,
        last_offset_delta=offset - base,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        record_count=len(records),
        records=records,
    )


def _read_message(
    buf: bytes, pos: int, end: int, magic: int
) -> tuple[int, bytes | None, bytes | None]:
    """Check the CRC and read (timestamp, key, value) of the message starting at its crc field."""
    (crc,) = struct.unpack_from(">I", buf, pos)
    actual = zlib.crc32(memoryview(buf)[pos + 4 : end]) & 0xFFFFFFFF
    if actual != crc:
        raise DecodeError(f"CRC-32 mismatch (stored {crc:#010x}, computed {actual:#010x})")
    pos += 6
    timestamp = -1
    if magic == 1:
        if pos + 8 > end:
            raise DecodeError("truncated timestamp")
        (timestamp,) = _INT64.unpack_from(buf, pos)
        pos += 8
    elif magic != 0:
        raise DecodeError(f"unexpected magic {magic} in a legacy message set")
    key, pos = _read_bytes(buf, pos, end, "key")
    value, pos = _read_bytes(buf, pos, end, "value")
    if pos != end:
        raise DecodeError(f"{end - pos} bytes remain after the message's value")
    return timestamp, key, value


def _read_bytes(buf: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise DecodeError(f"truncated {what} length")
    (length,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if length < 0:
        return None, pos
    if pos + length > end:
        raise DecodeError(f"{what} of {length} bytes runs past the end of the message")
    return bytes(buf[pos : pos + length]), pos + length


def _read_inner(
    data: bytes, wrapper_magic: int, wrapper_offset: int, wrapper_ts: int, wrapper_attrs: int
) -> list[Record]:
    """The messages inside a compressed wrapper, with absolute offsets and effective timestamps."""
    entries: list[tuple[int, int, bytes | None, bytes | None, int]] = []
    pos = 0
    end = len(data)
    while pos + 12 <= end:
        offset, size = struct.unpack_from(">qi", data, pos)
        if size < LEGACY_MIN_SIZE:
            raise DecodeError(f"inner message of {size} bytes is smaller than the minimum")
        if pos + 12 + size > end:
            break  # like Java's reader: a trailing partial inner message is ignored
        magic, attributes = data[pos + 16], data[pos + 17]
        if attributes & ATTR_CODEC_MASK:
            raise DecodeError("compressed message nested inside a compressed message")
        timestamp, key, value = _read_message(data, pos + 12, pos + 12 + size, magic)
        if wrapper_magic == 1 and wrapper_attrs & ATTR_LOG_APPEND_TIME:
            timestamp = wrapper_ts
        entries.append((offset, timestamp, key, value, attributes))
        pos += 12 + size
    shift = 0
    if entries and wrapper_magic >= 1:
        # A producer's wrapper has offset 0 (the broker assigns offsets): like Java, only shift when
        # the wrapper's offset yields a non-negative base.
        shift = max(wrapper_offset - entries[-1][0], 0)
    return [
        _new_record(Record, (offset + shift, timestamp, key, value, [], attributes))
        for offset, timestamp, key, value, attributes in entries
    ]
