"""Record batch v2 (magic 2) on the wire: the reader and the writer.

Layout (big-endian): baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
crc uint32 (CRC-32C over attributes..end), attributes int16, lastOffsetDelta int32, baseTimestamp int64,
maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32, recordCount int32, then
the records, compressed as a whole when attributes bits 0-2 say so. Each record is: length varint,
attributes int8, timestampDelta varlong, offsetDelta varint, key (varint length, -1 = null), value
(likewise), header count varint, headers (varint key length + UTF-8 key, varint value length + value).
Record varints are signed (zig-zag).
"""

from __future__ import annotations

import struct

from ._batch import ATTR_CODEC_MASK, Record, RecordBatch
from ._compression import compress, decompress
from ._crc32c import crc32c
from ._runtime import DecodeError, EncodeError

__all__ = ["decode_v2_batch", "write_v2_batch", "V2_HEADER_SIZE"]

_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_HEADER_SIZE = _HEADER.size  # 61
_CRC_START = 21  # attributes: the first byte covered by the CRC
_MIN_RECORD_SIZE = 7  # length, attributes, timestamp/offset deltas, key, value, header count
_new_record = tuple.__new__
# Zig-zag decoding tables for one- and two-byte varints (the two-byte one indexed by the 14 bits).
_ZIGZAG = tuple((u >> 1) ^ -(u & 1) for u in range(128))
_ZIGZAG2 = tuple((u >> 1) ^ -(u & 1) for u in range(1 << 14))
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


# -- varints -----------------------------------------------------------------------------------------


def _read_varint(buf, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Signed zig-zag varint (max_bytes 5) or varlong (10)."""
    value = 0
    shift = 0
    start = pos
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if pos - start >= max_bytes:
            raise DecodeError("varint is too long", start)


def _write_varint(out: bytearray, value: int) -> None:
    """Signed zig-zag varint/varlong (the caller keeps values within int64)."""
    value = (value << 1) ^ (value >> 63)
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


# -- reading -----------------------------------------------------------------------------------------


def decode_v2_batch(buf: bytes, pos: int, size: int, limit: int) -> RecordBatch:
    """Decode the v2 batch of ``size`` bytes (offset/length fields included) at ``buf[pos:]``."""
    end = pos + size
    (
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _HEADER.unpack_from(buf, pos)
    where = f"batch at offset {base_offset}"
    actual = crc32c(memoryview(buf)[pos + _CRC_START : end])
    if actual != crc:
        raise DecodeError(
            f"{where}: CRC-32C mismatch (stored {crc:#010x}, computed {actual:#010x})", pos
        )
    if count < 0:
        raise DecodeError(f"{where}: negative record count {count}", pos)
    codec = attributes & ATTR_CODEC_MASK
    start = pos + V2_HEADER_SIZE
    if codec:
        try:
            data = decompress(codec, memoryview(buf)[start:end], limit)
        except DecodeError as exc:
            raise DecodeError(f"{where}: {exc}", pos) from None
        first, stop = 0, len(data)
    else:
        data, first, stop = buf, start, end
    if count > (stop - first) // _MIN_RECORD_SIZE:
        raise DecodeError(
            f"{where}: record count {count} is larger than {stop - first} bytes of records allow",
            pos,
        )
    try:
        records = _read_records(data, first, stop, count, base_offset, base_timestamp)
    except DecodeError as exc:
        raise DecodeError(f"{where}: {exc}", pos) from None
    except IndexError:
        raise DecodeError(f"{where}: record runs past the end of the batch", pos) from None
    return RecordBatch(
        base_offset=base_offset,
        batch_length=batch_length,
        partition_leader_epoch=leader_epoch,
        magic=magic,
        crc=crc,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=count,
        records=records,
    )


def _read_records(buf, pos, end, count, base_offset, base_timestamp) -> list:
    # The hot loop: varints of one and two bytes (the common case) are decoded inline. The repetition is
    # deliberate: a helper call per varint makes decoding about 40% slower (bench/records.py).
    records: list[Record] = []
    append = records.append
    varint = _read_varint
    new = _new_record
    zigzag = _ZIGZAG
    zigzag2 = _ZIGZAG2
    for index in range(count):
        b = buf[pos]
        if b < 128:
            length = zigzag[b]
            pos += 1
        elif (c := buf[pos + 1]) < 128:
            length = zigzag2[(b & 127) | c << 7]
            pos += 2
        else:
            length, pos = varint(buf, pos)
        record_end = pos + length
        if record_end > end or length < 6:
            if pos > end:
                raise DecodeError(f"the batch declares {count} records but holds only {index}")
            raise DecodeError(f"record {index} has an invalid length {length}")
        attributes = buf[pos]
        b = buf[pos + 1]
        if b < 128:
            ts_delta = zigzag[b]
            pos += 2
        elif (c := buf[pos + 2]) < 128:
            ts_delta = zigzag2[(b & 127) | c << 7]
            pos += 3
        else:
            ts_delta, pos = varint(buf, pos + 1, 10)
        b = buf[pos]
        if b < 128:
            offset_delta = zigzag[b]
            pos += 1
        elif (c := buf[pos + 1]) < 128:
            offset_delta = zigzag2[(b & 127) | c << 7]
            pos += 2
        else:
            offset_delta, pos = varint(buf, pos)
        b = buf[pos]
        if b < 128:
            size = zigzag[b]
            pos += 1
        elif (c := buf[pos + 1]) < 128:
            size = zigzag2[(b & 127) | c << 7]
            pos += 2
        else:
            size, pos = varint(buf, pos)
        if size < 0:
            key = None
        else:
            key = buf[pos : pos + size]
            pos += size
        b = buf[pos]
        if b < 128:
            size = zigzag[b]
            pos += 1
        elif (c := buf[pos + 1]) < 128:
            size = zigzag2[(b & 127) | c << 7]
            pos += 2
        else:
            size, pos = varint(buf, pos)
        if size < 0:
            value = None
        else:
            value = buf[pos : pos + size]
            pos += size
        if buf[pos] == 0:
            headers: list[tuple[str, bytes | None]] = []
            pos += 1
        else:
            headers, pos = _read_headers(buf, pos, record_end)
        if pos != record_end:
            raise DecodeError(
                f"record {index}: length says {length} bytes but the fields use "
                f"{length + pos - record_end}"
            )
        append(
            new(
                Record,
                (
                    base_offset + offset_delta,
                    base_timestamp + ts_delta,
                    key,
                    value,
                    headers,
                    attributes,
                ),
            )
        )
    if pos != end:
        raise DecodeError(f"{end - pos} bytes remain after the {count} records the batch declares")
    return records


def _read_headers(buf, pos: int, record_end: int) -> tuple[list, int]:
    count, pos = _read_varint(buf, pos)
    if count < 0 or count > (record_end - pos) // 2:
        raise DecodeError(f"invalid header count {count}")
    headers = []
    for _ in range(count):
        size, pos = _read_varint(buf, pos)
        if size < 0 or pos + size > record_end:
            raise DecodeError(f"invalid header key length {size}")
        key = bytes(buf[pos : pos + size]).decode("utf-8", "surrogateescape")
        pos += size
        size, pos = _read_varint(buf, pos)
        if size < 0:
            value = None
        else:
            if pos + size > record_end:
                raise DecodeError(f"invalid header value length {size}")
            value = bytes(buf[pos : pos + size])
            pos += size
        headers.append((key, value))
    return headers, pos


# -- writing -----------------------------------------------------------------------------------------


def _write_record(out: bytearray, attributes, ts_delta, offset_delta, key, value, headers) -> None:
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
    records,
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
    """Write one v2 batch. ``records`` are :class:`Record` (absolute offsets and timestamps)."""
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
    out = bytearray(V2_HEADER_SIZE)
    out += payload
    try:
        _HEADER.pack_into(
            out,
            0,
            base_offset,
            len(out) - 12,
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    except struct.error as exc:
        raise EncodeError(f"record batch header field out of range: {exc}") from None
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)
