"""Kafka request and response headers read on their own, without any body codec.

Pairing needs only the header: a request header always starts ``int16 api key, int16 api version,
int32 correlation id, int16-length client id`` (the client id keeps its classic encoding even in
flexible versions), and a response header starts with the correlation id. So pairing never depends on
whether a body decodes. This module also judges where a frame plausibly starts (for resynchronising
after a gap) and reads Produce's ``acks`` (acks=0 gets no response).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Collection, Container
from typing import Final

_REQUEST_HEAD: Final = struct.Struct(">hhih")
_INT32: Final = struct.Struct(">i")
_INT16: Final = struct.Struct(">h")
_REQUEST_START: Final = struct.Struct(">ihhih")  # a request frame's size, then its header
_SIZE_AND_ID: Final = struct.Struct(">ii")  # a response frame's size, then its correlation id
# Bound once: compiled, ``_INT16.unpack_from(...)`` would look the method up on every call.
_unpack_int16: Final = _INT16.unpack_from
_unpack_request_head: Final = _REQUEST_HEAD.unpack_from
_unpack_int32: Final = _INT32.unpack_from
_unpack_request_start: Final = _REQUEST_START.unpack_from
_unpack_size_and_id: Final = _SIZE_AND_ID.unpack_from
_PRINTABLE: Final = re.compile(rb"[\x20-\x7e]*")
# Whether this module runs compiled: then a header's fields are read from bytes with librt's typed
# readers (see ``pipeline.COMPILED``).
COMPILED: Final = not __file__.endswith((".py", ".pyc"))
if COMPILED:
    from librt.strings import read_i16_be, read_i32_be
MAX_API_KEY: Final = 127
MAX_API_VERSION: Final = 40
PRODUCE: Final = 0


class RequestHead:
    """The fixed part of a request header. A class, not a NamedTuple: compiled, it is one object
    holding its numbers as machine integers, made by a direct call, where a NamedTuple was made
    through ``tuple.__new__`` (two tuples and a Python int per number)."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "end", "plain")

    def __init__(
        self,
        api_key: int,
        api_version: int,
        correlation_id: int,
        client_id: str | None,
        end: int,
        plain: bool,
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.end = end  # offset after the client id (the tagged fields of header v2 follow)
        # The client id is null (length -1) or ASCII: a header codec certainly reads it to
        # ``end`` (see ``request_body_start``). False for an invalid negative length or other bytes.
        self.plain = plain


def read_request_head(payload: bytes) -> RequestHead | None:
    """The fixed part of a request header, or None when the payload is too short to hold it."""
    if len(payload) < 10:
        return None
    length: int
    if COMPILED:
        api_key = int(read_i16_be(payload, 0))
        api_version = int(read_i16_be(payload, 2))
        correlation_id = int(read_i32_be(payload, 4))
        length = int(read_i16_be(payload, 8))
    else:
        api_key, api_version, correlation_id, length = _unpack_request_head(payload, 0)
    client_id: str | None = None
    end, plain = 10, length == -1
    if length >= 0:
        end = 10 + length
        if end > len(payload):
            return None
        raw = payload[10:end]
        client_id, plain = raw.decode("utf-8", "replace"), raw.isascii()
    return RequestHead(api_key, api_version, correlation_id, client_id, end, plain)


def request_body_start(payload: bytes, header_version: int) -> int | None:
    """Where the body starts after a request header of ``header_version``, when the header is the
    plain kind the codec's header reader certainly reads to that same offset: an ASCII (or null)
    client id and, in version 2, no tagged fields. None otherwise: the codec must read it (and
    report what is wrong with it; Kafka's header spec no longer has version 0, for one)."""
    head = read_request_head(payload)
    return None if head is None else request_body_start_after(head, payload, header_version)


def request_body_start_after(head: RequestHead, payload: bytes, header_version: int) -> int | None:
    """``request_body_start`` of a payload whose ``head`` was read already (the decoder reads it
    once per exchange, for its columns and for this)."""
    if not head.plain:
        return None
    end = head.end
    if header_version == 1:
        return end
    if header_version == 2 and end < len(payload) and payload[end] == 0:
        return end + 1
    return None


def response_body_start(payload: bytes, header_version: int) -> int | None:
    """Where the body starts after a response header (correlation id, and in version 1 an empty
    tagged-field section); None when the codec must read the header."""
    if header_version == 0:
        return 4 if len(payload) >= 4 else None
    if header_version == 1 and len(payload) >= 5 and payload[4] == 0:
        return 5
    return None


def read_correlation_id(payload: bytes) -> int | None:
    if len(payload) < 4:
        return None
    return int(read_i32_be(payload, 0)) if COMPILED else _unpack_int32(payload, 0)[0]


# What a frame reader holds: its buffer, or one packet's payload.
Buffer = bytes | bytearray
# Where packets start in a frame reader's buffer (a set, or ``framing._Offsets``).
Boundaries = Container[int]
# ``(buffer, offset, boundaries)`` -> can a frame start there (None: too few bytes to tell yet)
Plausible = Callable[[Buffer, int, Boundaries], "bool | None"]


def plausible_request(buf: Buffer, pos: int, boundaries: Boundaries = frozenset()) -> bool | None:
    """Whether a request frame can start at ``pos``: sane size, API key, version and client id
    (None: not enough bytes yet to tell)."""
    if len(buf) - pos < 14:
        return None
    size: int
    api_key: int
    api_version: int
    correlation_id: int
    length: int
    if COMPILED and isinstance(buf, bytes):
        size = int(read_i32_be(buf, pos))
        api_key = int(read_i16_be(buf, pos + 4))
        api_version = int(read_i16_be(buf, pos + 6))
        correlation_id = int(read_i32_be(buf, pos + 8))
        length = int(read_i16_be(buf, pos + 12))
    else:
        size, api_key, api_version, correlation_id, length = _unpack_request_start(buf, pos)
    if size < 10 or size > 100 * 1024 * 1024 or not 0 <= api_key <= MAX_API_KEY:
        return False
    if not 0 <= api_version <= MAX_API_VERSION or correlation_id < 0:
        return False
    if length == -1:
        return True
    if length < 0 or length > size - 10:
        return False
    return _printable(buf, pos + 14, pos + 14 + length)


# Client ids judged by ``_printable``: a connection sends the same few again and again, and a
# dictionary look-up costs a third of the regular expression's match. Short ids only, and a bounded
# number of them, so that hostile traffic cannot make the memo large.
_PRINTABLE_MEMO: Final[dict[bytes, bool]] = {}
_MEMO_ID_BYTES: Final = 64
_MEMO_IDS: Final = 4096


def _printable(buf: Buffer, start: int, end: int) -> bool:
    """Whether ``buf[start:end]`` is all printable ASCII."""
    if end - start > _MEMO_ID_BYTES or not isinstance(buf, bytes):
        return _PRINTABLE.fullmatch(buf, start, end) is not None
    client_id = buf[start:end]
    known = _PRINTABLE_MEMO.get(client_id)
    if known is None:
        if len(_PRINTABLE_MEMO) >= _MEMO_IDS:
            _PRINTABLE_MEMO.clear()
        known = _PRINTABLE_MEMO[client_id] = _PRINTABLE.fullmatch(client_id) is not None
    return known


WEAK_RESPONSE_MAX: Final = 64 * 1024


def plausible_response(pending: Collection[int]) -> Plausible:
    """A response can start where its correlation id answers a pending request; or, when no request
    waits (the capture missed them), where a packet starts and a small frame ends exactly where a
    packet ends (``boundaries`` holds the buffer offsets where packets start, and its end)."""

    def check(buf: Buffer, pos: int, boundaries: Boundaries = frozenset()) -> bool | None:
        if len(buf) - pos < 8:
            return None
        size: int
        correlation_id: int
        if COMPILED and isinstance(buf, bytes):
            size, correlation_id = int(read_i32_be(buf, pos)), int(read_i32_be(buf, pos + 4))
        else:
            size, correlation_id = _unpack_size_and_id(buf, pos)
        if size < 4 or size > 100 * 1024 * 1024 or correlation_id < 0:
            return False
        if correlation_id in pending:
            return pos in boundaries or _next_answers(buf, pos + 4 + size, boundaries, pending)
        if pending or pos not in boundaries or size > WEAK_RESPONSE_MAX:
            # While requests wait, a response answering none of them means lost frame boundaries.
            return False
        end = pos + 4 + size
        if end > len(buf):
            return None
        return end in boundaries or end == len(buf)

    return check


def _next_answers(
    buf: Buffer, end: int, boundaries: Boundaries, pending: Collection[int], depth: int = 3
) -> bool | None:
    """For a response start inside a packet: its end must be a packet boundary or the start of
    another response to a waiting request, and so on up to ``depth`` frames (small ids abound
    inside response bodies, so one match alone proves little)."""
    if end in boundaries or end == len(buf) or depth == 0:
        return True
    if end + 8 > len(buf):
        return None
    size, correlation_id = _unpack_size_and_id(buf, end)
    if not 4 <= size <= 100 * 1024 * 1024 or correlation_id not in pending:
        return False
    return _next_answers(buf, end + 4 + size, boundaries, pending, depth - 1)


def produce_acks(payload: bytes, head: RequestHead, flexible: bool | None) -> int | None:
    """Produce's ``acks`` (after the transactional id from v3 on); None when it cannot be read."""
    if head.api_key != PRODUCE:
        return None
    if flexible is None:
        flexible = head.api_version >= 9
    pos = head.end
    try:
        if flexible:
            pos = _skip_tagged_fields(payload, pos)
        if head.api_version >= 3:
            if flexible:
                length, pos = _uvarint(payload, pos)
                pos += max(length - 1, 0)
            else:
                (length,) = _unpack_int16(payload, pos)
                pos += 2 + max(length, 0)
        (acks,) = _unpack_int16(payload, pos)
    except (struct.error, IndexError):
        return None
    return acks


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while shift < 35:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise IndexError("varint too long")


def _skip_tagged_fields(data: bytes, pos: int) -> int:
    count, pos = _uvarint(data, pos)
    if count > len(data):
        raise IndexError("tagged field count past the end")
    for _ in range(count):
        _, pos = _uvarint(data, pos)
        size, pos = _uvarint(data, pos)
        pos += size
    return pos
