"""Record batch v2 (magic 2): the reader. The layout is described, and written, in ``_v2_write.py``."""

from __future__ import annotations

from ._batch import Header, Record, RecordBatch
from ._compression import ATTR_CODEC_MASK, decompress
from ._crc32c import crc32c
from ._runtime import ByteData, DecodeError
from ._v2_write import CRC_START, V2_HEADER, V2_HEADER_SIZE

__all__ = ["ZIGZAG", "ZIGZAG2", "decode_v2_batch", "read_varint"]

_MIN_RECORD_SIZE = 7  # length, attributes, timestamp/offset deltas, key, value, header count
_new_record = tuple.__new__
# Zig-zag decoding tables for one- and two-byte varints (the two-byte one indexed by the 14 bits).
ZIGZAG = tuple((u >> 1) ^ -(u & 1) for u in range(128))
ZIGZAG2 = tuple((u >> 1) ^ -(u & 1) for u in range(1 << 14))


def read_varint(buf: ByteData, pos: int, max_bytes: int = 5) -> tuple[int, int]:
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
    ) = V2_HEADER.unpack_from(buf, pos)
    where = f"batch at offset {base_offset}"
    actual = crc32c(memoryview(buf)[pos + CRC_START : end])
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


def _read_records(
    buf: bytes, pos: int, end: int, count: int, base_offset: int, base_timestamp: int
) -> list[Record]:
    # The hot loop: varints of one and two bytes (the common case) are decoded inline. The repetition is
    # deliberate: a helper call per varint makes decoding about 40% slower (bench/records.py).
    records: list[Record] = []
    append = records.append
    varint = read_varint
    new = _new_record
    zigzag = ZIGZAG
    zigzag2 = ZIGZAG2
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


def _read_headers(buf: bytes, pos: int, record_end: int) -> tuple[list[Header], int]:
    count, pos = read_varint(buf, pos)
    if count < 0 or count > (record_end - pos) // 2:
        raise DecodeError(f"invalid header count {count}")
    headers: list[Header] = []
    for _ in range(count):
        size, pos = read_varint(buf, pos)
        if size < 0 or pos + size > record_end:
            raise DecodeError(f"invalid header key length {size}")
        key = bytes(buf[pos : pos + size]).decode("utf-8", "surrogateescape")
        pos += size
        size, pos = read_varint(buf, pos)
        if size < 0:
            value = None
        else:
            if pos + size > record_end:
                raise DecodeError(f"invalid header value length {size}")
            value = bytes(buf[pos : pos + size])
            pos += size
        headers.append((key, value))
    return headers, pos
