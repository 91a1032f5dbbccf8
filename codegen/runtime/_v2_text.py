"""Record batch v2 bytes straight to the JSON text of their view (the text twin of ``_v2_view``).

The Spark decoders carry each body as compact JSON text. For a body with a records field, building
``batches_to_json``'s dicts only to hand them to an encoder costs more than the text itself, so a
compiled codec's writer (``to_json_text``) hands each records field to
:func:`write_batches_json_text`, which writes the text of the view as the batches are read: the
same keys, in the same order, the same values, written as orjson (and ``json.dumps`` with
``ensure_ascii=False`` and compact separators) write them.

It writes only what it is sure of: v2 batches read as ``_v2_view`` reads them (every check there is
made here too), control records, and metadata-log values. Anything else raises, and the caller
writes the body through its view instead (which says what is wrong): a buffer ``_v2_view`` leaves to
the object path (legacy batches, a bad CRC or record), and any text that would make the view's
encoder escape the whole body (a lone surrogate). The members of the view that are dicts
built elsewhere (control records, metadata values whose class writes no text, such as one with a
float64 field) are written by the standard library's encoder, which writes the rest of any view
as orjson does, and their floats as the decoders write a view that holds floats.
"""

from __future__ import annotations

import json
from binascii import b2a_base64
from typing import Any, Final

from ._compression import (
    ATTR_CODEC_MASK,
    CODEC_NAMES,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    decompress,
)
from ._control import decode_control_record
from ._crc32c import crc32c
from ._runtime import ProtocolError
from ._v2_write import CRC_START, V2_HEADER, V2_HEADER_SIZE
from ._view_reader import metadata_value_view

# Whether this module runs compiled: then the text goes into librt's StringWriter with native calls
# (the codecs' compiled writers make it); pure, any object with ``write(str)`` serves.
COMPILED: Final = not __file__.endswith((".py", ".pyc"))
if COMPILED:
    from librt.strings import StringWriter

__all__ = ["write_batches_json_text"]

_V2_MIN_LENGTH: Final = V2_HEADER_SIZE - 12  # as in _v2_view
_MIN_RECORD_SIZE: Final = 7
_ATTR_LOG_APPEND_TIME: Final = 0x08
_ATTR_TRANSACTIONAL: Final = 0x10
_ATTR_CONTROL: Final = 0x20
_ATTR_DELETE_HORIZON: Final = 0x40
_ATTR_CODEC_MASK: Final = ATTR_CODEC_MASK
_HEADER_SIZE: Final = V2_HEADER_SIZE
_CRC_START: Final = CRC_START
_CODEC_NAMES: Final = CODEC_NAMES
_LIMIT: Final = DEFAULT_MAX_DECOMPRESSED_BYTES  # batches_to_json's default
_SMALL_WINDOW: Final = 2048  # bytes up to which a slice copy is cheaper than a memoryview
_unpack_header: Final = V2_HEADER.unpack_from
# Final: the compiled build calls them as constants, not through the module's dict on every call.
_b2a_base64: Final = b2a_base64
_crc32c: Final = crc32c
# json.dumps(value, ensure_ascii=False, separators=(",", ":")), made once
_encode: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False
).encode


class _NotWritten(Exception):
    """Something left to the view (which says what is wrong, if anything)."""


def write_batches_json_text(
    w: StringWriter, data: Any, package: Any = None, metadata_family: str | None = None
) -> None:
    """Write the text of ``batches_to_json(data, package=package)``'s view into ``w``; with
    ``metadata_family``, of ``batches_to_json(data, package=package, values="metadata",
    family=metadata_family)``'s. Raises for anything it does not write (see the module's text):
    what it wrote is then to be dropped."""
    if type(data) is not bytes:
        raise _NotWritten("not bytes")
    values = None if metadata_family is None else metadata_value_view(package, metadata_family)
    w.write('{"batches":[')
    pos = 0
    end = len(data)
    while end - pos >= 12:
        length = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
        if length < _V2_MIN_LENGTH:
            raise _NotWritten("a legacy entry or an error")
        if end - pos < 17:
            break
        if data[pos + 16] != 2:
            raise _NotWritten("not a v2 batch")
        stop = pos + 12 + length
        if stop > end:
            break
        if pos:
            w.write(",")
        _write_batch(w, data, pos, stop, package, values)
        pos = stop
    w.write('],"partialTail":"')
    if pos < end:
        w.write(_b2a_base64(data[pos:], newline=False).decode())
    w.write('"}')


def _write_batch(
    w: StringWriter, data: bytes, pos: int, end: int, package: Any, values: Any
) -> None:
    """The text of the v2 batch at ``data[pos:end]`` (``_v2_view._batch_view``'s dict)."""
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
    if _crc32c(_window(data, pos + _CRC_START, end)) != crc or count < 0:
        raise _NotWritten("a bad CRC or record count")
    codec = attributes & _ATTR_CODEC_MASK
    records_data, first = data, pos + _HEADER_SIZE
    if codec:
        records_data = decompress(codec, _window(data, first, end), _LIMIT)
        first, end = 0, len(records_data)
    control = (attributes & _ATTR_CONTROL) != 0
    w.write(
        f'{{"baseOffset":{base_offset},"batchLength":{batch_length},'
        f'"partitionLeaderEpoch":{leader_epoch},"magic":{magic},"crc":{crc},'
        f'"attributes":{attributes},"lastOffsetDelta":{last_offset_delta},'
        f'"baseTimestamp":{base_timestamp},"maxTimestamp":{max_timestamp},'
        f'"producerId":{producer_id},"producerEpoch":{producer_epoch},'
        f'"baseSequence":{base_sequence},"recordCount":{count},'
        f'"compression":"{_CODEC_NAMES[codec]}","timestampType":'
    )
    w.write('"LogAppendTime"' if attributes & _ATTR_LOG_APPEND_TIME else '"CreateTime"')
    w.write(
        ',"isTransactional":true'
        if attributes & _ATTR_TRANSACTIONAL
        else ',"isTransactional":false'
    )
    w.write(',"isControl":true' if control else ',"isControl":false')
    if attributes & _ATTR_DELETE_HORIZON:
        w.write(f',"deleteHorizonMs":{base_timestamp}')
    w.write(',"records":[')
    decoding = values if not control else _CONTROL
    _write_records(
        w, records_data, first, end, count, base_offset, base_timestamp, package, decoding
    )
    w.write("]}")


def _window(data: bytes, start: int, end: int) -> bytes | memoryview:
    """``data[start:end]`` for C code that reads it: a copy when small, cheaper than a memoryview
    (``_v2_view``'s choice)."""
    return data[start:end] if end - start <= _SMALL_WINDOW else memoryview(data)[start:end]


_CONTROL: Final = object()  # records of a control batch: each decoded as a control record


def _write_records(
    w: StringWriter,
    buf: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    package: Any,
    decoding: Any,
) -> None:
    """The text of the ``count`` records in ``buf[pos:end]`` (``_v2_view._record_views``'s reads
    and checks); ``decoding`` is _CONTROL, a metadata value view, or None (no member)."""
    if count > (end - pos) // _MIN_RECORD_SIZE:
        raise _NotWritten("more records than bytes allow")
    for index in range(count):
        length, pos = _varint(buf, pos, 5)
        record_end = pos + length
        if record_end > end or length < 6:
            raise _NotWritten("a record's length")
        attributes = buf[pos]
        timestamp_delta, pos = _varint(buf, pos + 1, 10)
        offset_delta, pos = _varint(buf, pos, 5)
        if index:
            w.write(",")
        w.write(
            f'{{"offset":{base_offset + offset_delta},'
            f'"timestamp":{base_timestamp + timestamp_delta},"attributes":{attributes},"key":'
        )
        key, pos = _write_base64(w, buf, pos)
        w.write(',"value":')
        value, pos = _write_base64(w, buf, pos)
        w.write(',"headers":[')
        pos = _write_headers(w, buf, pos, record_end)
        if pos != record_end:
            raise _NotWritten("a record's fields do not fill it")
        w.write("]")
        if decoding is not None:
            _write_member(w, decoding, key, value, package)
        w.write("}")
    if pos != end:
        raise _NotWritten("bytes after the records")


def _varint(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """``_v2_read.read_varint``: a signed zig-zag varint of at most ``max_bytes`` bytes, and the
    position after it (typed, so that compiled it is a C call returning two C values)."""
    value = 0
    shift = 0
    start = pos
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if pos - start >= max_bytes:
            raise _NotWritten("a varint is too long")


def _write_base64(w: StringWriter, buf: bytes, pos: int) -> tuple[bytes | None, int]:
    """A record's key or value (a varint size, -1 for null, then its bytes) written as the view
    writes it: its base64 in quotes, or null. Returns the bytes (for a member) and the position
    after them."""
    size, pos = _varint(buf, pos, 5)
    if size < 0:
        w.write("null")
        return None, pos
    found = buf[pos : pos + size]
    w.write('"')
    w.write(_b2a_base64(found, newline=False).decode())
    w.write('"')
    return found, pos + size


def _write_headers(w: StringWriter, buf: bytes, pos: int, record_end: int) -> int:
    """A record's headers (``_v2_view._header_views``' reads and checks), each as
    ``{"key":...,"value":...}``; returns the position after them. A key that is not UTF-8 raises:
    its view holds surrogates, and the view's encoder escapes the whole body for them."""
    count, pos = _varint(buf, pos, 5)
    if count < 0 or count > (record_end - pos) // 2:
        raise _NotWritten("a header count")
    for index in range(count):
        size, pos = _varint(buf, pos, 5)
        if size < 0 or pos + size > record_end:
            raise _NotWritten("a header key's size")
        w.write("{" if index == 0 else ",{")
        w.write(_header_key_text(buf[pos : pos + size]))
        pos += size
        size, pos = _varint(buf, pos, 5)
        if size < 0:
            w.write("null}")
            continue
        if pos + size > record_end:
            raise _NotWritten("a header value's size")
        w.write('"')
        w.write(_b2a_base64(buf[pos : pos + size], newline=False).decode())
        w.write('"}')
        pos += size
    return pos


# The text of each header key seen, by its bytes: '"key":' and the key's JSON, then ',"value":'.
# A log's records carry the same few header keys over and over. Bounded: cleared when full.
_HEADER_KEY_TEXTS: Final[dict[bytes, str]] = {}
_HEADER_KEY_TEXTS_LIMIT: Final = 4096
_CACHED_KEY_BYTES: Final = 256  # longer keys (rare) are not kept


def _header_key_text(raw: bytes) -> str:
    """``"key":`` with the header key ``raw`` as JSON text, then ``,"value":``. A key that is not
    UTF-8 raises (never cached): its view holds surrogates, and the view's encoder escapes the
    whole body for them."""
    found = _HEADER_KEY_TEXTS.get(raw)
    if found is None:
        found = '"key":' + _dumps(raw.decode()) + ',"value":'
        if len(raw) <= _CACHED_KEY_BYTES:
            if len(_HEADER_KEY_TEXTS) >= _HEADER_KEY_TEXTS_LIMIT:
                _HEADER_KEY_TEXTS.clear()
            _HEADER_KEY_TEXTS[raw] = found
    return found


def _write_member(
    w: StringWriter, decoding: Any, key: bytes | None, value: bytes | None, package: Any
) -> None:
    """A record's decoded member, as ``_records_json._decoded_member`` makes it: ``control`` or
    ``metadata``, or ``decodeError`` with the text of the ProtocolError that stopped it."""
    try:
        if decoding is _CONTROL:
            name = ',"control":'
            text = _control_text(key, value, package)
        else:
            name = ',"metadata":'
            text = decoding.json_text(value, _dumps)
    except ProtocolError as exc:
        name = ',"decodeError":'
        text = _dumps(str(exc))
    w.write(name)
    w.write(text)


# The text of each control record seen, by its key and value bytes (and the package that reads
# them): a log holds the same few markers over and over. Bounded: cleared when full.
_CONTROL_TEXTS: Final[dict[tuple[Any, bytes | None, bytes | None], str]] = {}
_CONTROL_TEXTS_LIMIT: Final = 4096


def _control_text(key: bytes | None, value: bytes | None, package: Any) -> str:
    """``_dumps`` of the control record's JSON form; raises its ProtocolError (never cached)."""
    found = _CONTROL_TEXTS.get((package, key, value))
    if found is None:
        found = _dumps(decode_control_record(key, value, package=package).to_json())
        if len(_CONTROL_TEXTS) >= _CONTROL_TEXTS_LIMIT:
            _CONTROL_TEXTS.clear()
        _CONTROL_TEXTS[(package, key, value)] = found
    return found


def _dumps(value: object) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``; a lone surrogate raises
    (UnicodeEncodeError), since the view's encoder would escape the whole body for it."""
    text: str = _encode(value)
    if not text.isascii():
        text.encode()
    return text
