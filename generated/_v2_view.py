"""Record batch v2 bytes straight to their JSON view (the fast path of ``_records_json``).

:func:`read_batch_views` builds the same dicts as ``batch_to_json`` (same keys, same order, equal
values) from a records buffer, without making Record or RecordBatch objects first. It covers the
buffers met in traffic: v2 batches, any codec, each CRC checked as ``_v2_read`` checks it. Anything
else (a legacy magic 0/1 message set, a bad length, CRC or record, a codec that fails) makes it return
None, and the caller takes the object path, which reads the buffer again and raises its own error: the
error texts are kept in one place. It never accepts a buffer that the object path refuses, because each
of its reads is that reader's read and each of its checks is that reader's check or a stricter one.

Control records and metadata/coordinator values are not decoded here: for the batches the caller asks
about, the raw key and value of each record are handed back beside its view (``Pending``), so that
decoding happens after every batch has been read, in the object path's order.
"""

from __future__ import annotations

import struct
from binascii import b2a_base64
from typing import Final, Optional

from ._compression import ATTR_CODEC_MASK, CODEC_NAMES, decompress
from ._crc32c import crc32c
from ._runtime import ProtocolError
from ._v2_read import ZIGZAG, ZIGZAG2, read_varint
from ._v2_write import CRC_START, V2_HEADER, V2_HEADER_SIZE

__all__ = ["Pending", "View", "read_batch_views"]

View = dict[str, object]  # a JSON object of the view
# (record view, batch is a control batch, key, value): a record whose key/value the caller decodes.
Pending = tuple[View, bool, Optional[bytes], Optional[bytes]]

# Final, here and in the names bound from other modules below: the compiled build reads them as C
# values instead of looking them up in the module's dict on every batch (8% of the reader's time).
_V2_MIN_LENGTH: Final = V2_HEADER_SIZE - 12  # what follows the offset and length fields
_MIN_RECORD_SIZE: Final = 7  # as in _v2_read: length, attributes, deltas, key, value, headers
_ATTR_LOG_APPEND_TIME: Final = 0x08
_ATTR_TRANSACTIONAL: Final = 0x10
_ATTR_CONTROL: Final = 0x20
_ATTR_DELETE_HORIZON: Final = 0x40
_HEADER_SIZE: Final = V2_HEADER_SIZE
_CRC_START: Final = CRC_START
_CODEC_MASK: Final = ATTR_CODEC_MASK
_CODEC_NAMES: Final = CODEC_NAMES
_unpack_header: Final = V2_HEADER.unpack_from
_unpack_int32: Final = struct.Struct(">i").unpack_from
_SMALL_WINDOW: Final = 2048  # bytes up to which a slice copy is cheaper than a memoryview


class _Unusual(Exception):
    """Something the fast path leaves to the object path (which says what is wrong, if anything)."""


def read_batch_views(
    data: bytes, limit: int, raw_control: bool, raw_data: bool
) -> tuple[list[View], int, list[Pending]] | None:
    """``(batch views, start of the partial tail, pending records)`` for ``data``, or None.

    ``raw_control`` / ``raw_data``: hand back the key and value of every record of control / data
    batches in ``pending``, in buffer order.
    """
    views: list[View] = []
    pending: list[Pending] = []
    pos = 0
    end = len(data)
    try:
        while end - pos >= 12:
            (length,) = _unpack_int32(data, pos + 8)
            if length < _V2_MIN_LENGTH:  # a legacy entry or an error: the object path says which
                return None
            if end - pos < 17:
                break
            if data[pos + 16] != 2:
                return None
            stop = pos + 12 + length
            if stop > end:
                break
            views.append(_batch_view(data, pos, stop, limit, raw_control, raw_data, pending))
            pos = stop
    except (_Unusual, IndexError, ProtocolError):  # ProtocolError: decompress, a varint too long
        return None
    return views, pos, pending


def _batch_view(
    data: bytes,
    pos: int,
    end: int,
    limit: int,
    raw_control: bool,
    raw_data: bool,
    pending: list[Pending],
) -> View:
    """The view of the v2 batch at ``data[pos:end]`` (header fields in ``_records_json`` order)."""
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
    ) = _unpack_header(data, pos)
    if crc32c(_window(data, pos + _CRC_START, end)) != crc or count < 0:
        raise _Unusual
    codec = attributes & _CODEC_MASK
    records_data, first = data, pos + _HEADER_SIZE
    if codec:
        records_data, first, end = _decompressed(data, first, end, codec, limit)
    control = (attributes & _ATTR_CONTROL) != 0
    handed_back = pending if (raw_control if control else raw_data) else None
    records = _record_views(
        records_data, first, end, count, base_offset, base_timestamp, control, handed_back
    )
    view: View = {
        "baseOffset": base_offset,
        "batchLength": batch_length,
        "partitionLeaderEpoch": leader_epoch,
        "magic": magic,
        "crc": crc,
        "attributes": attributes,
        "lastOffsetDelta": last_offset_delta,
        "baseTimestamp": base_timestamp,
        "maxTimestamp": max_timestamp,
        "producerId": producer_id,
        "producerEpoch": producer_epoch,
        "baseSequence": base_sequence,
        "recordCount": count,
        "compression": _CODEC_NAMES[codec],  # codecs 5-7 never get here: decompress refuses them
        "timestampType": "LogAppendTime" if attributes & _ATTR_LOG_APPEND_TIME else "CreateTime",
        "isTransactional": (attributes & _ATTR_TRANSACTIONAL) != 0,
        "isControl": control,
    }
    if attributes & _ATTR_DELETE_HORIZON:  # KIP-534: baseTimestamp holds the horizon
        view["deleteHorizonMs"] = base_timestamp
    view["records"] = records
    return view


def _window(data: bytes, start: int, end: int) -> bytes | memoryview:
    """``data[start:end]`` for the C code that reads it: a copy when small, which is cheaper than
    making a memoryview (in the decode bench, most batches hold a few records)."""
    return data[start:end] if end - start <= _SMALL_WINDOW else memoryview(data)[start:end]


def _decompressed(
    data: bytes, first: int, end: int, codec: int, limit: int
) -> tuple[bytes, int, int]:
    """The records of a compressed batch: ``(records bytes, 0, their length)``."""
    records_data = decompress(codec, _window(data, first, end), limit)
    return records_data, 0, len(records_data)


def _record_views(
    buf: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    control: bool,
    pending: list[Pending] | None,
) -> list[View]:
    """The views of the ``count`` records in ``buf[pos:end]``; with ``pending``, each view is also
    appended there with ``control`` (the batch's flag) and the record's key and value.

    ``_v2_read._read_records`` reading straight into view dicts: the same reads and checks (a failed
    check is _Unusual here), varints of one and two bytes decoded inline as there, for the reason
    given there.
    """
    if count > (end - pos) // _MIN_RECORD_SIZE:
        raise _Unusual
    views: list[View] = []
    append = views.append
    zigzag = ZIGZAG
    zigzag2 = ZIGZAG2
    varint = read_varint
    b64 = b2a_base64
    key: bytes | None
    value: bytes | None
    key_text: str | None
    value_text: str | None
    for _ in range(count):
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
            raise _Unusual
        attributes = buf[pos]
        b = buf[pos + 1]
        if b < 128:
            timestamp_delta = zigzag[b]
            pos += 2
        elif (c := buf[pos + 2]) < 128:
            timestamp_delta = zigzag2[(b & 127) | c << 7]
            pos += 3
        else:
            timestamp_delta, pos = varint(buf, pos + 1, 10)
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
            key = key_text = None
        else:
            key = buf[pos : pos + size]
            key_text = b64(key, newline=False).decode()
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
            value = value_text = None
        else:
            value = buf[pos : pos + size]
            value_text = b64(value, newline=False).decode()
            pos += size
        if buf[pos] == 0:
            headers: list[View] = []
            pos += 1
        else:
            headers, pos = _header_views(buf, pos, record_end)
        if pos != record_end:
            raise _Unusual
        view: View = {
            "offset": base_offset + offset_delta,
            "timestamp": base_timestamp + timestamp_delta,
            "attributes": attributes,
            "key": key_text,
            "value": value_text,
            "headers": headers,
        }
        append(view)
        if pending is not None:
            pending.append((view, control, key, value))
    if pos != end:
        raise _Unusual
    return views


def _header_views(buf: bytes, pos: int, record_end: int) -> tuple[list[View], int]:
    """``_v2_read._read_headers`` reading straight into view dicts (same reads and checks)."""
    zigzag = ZIGZAG
    varint = read_varint
    count, pos = varint(buf, pos)
    if count < 0 or count > (record_end - pos) // 2:
        raise _Unusual
    views: list[View] = []
    for _ in range(count):
        b = buf[pos]
        if b < 128:
            size = zigzag[b]
            pos += 1
        else:
            size, pos = varint(buf, pos)
        if size < 0 or pos + size > record_end:
            raise _Unusual
        key = buf[pos : pos + size].decode("utf-8", "surrogateescape")
        pos += size
        b = buf[pos]
        if b < 128:
            size = zigzag[b]
            pos += 1
        else:
            size, pos = varint(buf, pos)
        value_text: str | None = None
        if size >= 0:
            if pos + size > record_end:
                raise _Unusual
            value_text = b2a_base64(buf[pos : pos + size], newline=False).decode()
            pos += size
        views.append({"key": key, "value": value_text})
    return views, pos
