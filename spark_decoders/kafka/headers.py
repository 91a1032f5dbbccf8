"""Kafka request and response headers read on their own, without any body codec.

Pairing needs only the header: a request header always starts ``int16 api key, int16 api version,
int32 correlation id, int16-length client id`` (the client id keeps its classic encoding even in
flexible versions), and a response header starts with the correlation id. So pairing never depends on
whether a body decodes. This module also judges where a frame plausibly starts (only to find the
frames again after a gap of unknown length or a mid-stream start: a frame read in sync is taken
whatever its header holds) and reads Produce's ``acks`` (acks=0 gets no response).

Kafka's rule for the client id is that of a nullable string: an int16 length, -1 for null, then
that many bytes of UTF-8 (so any text up to 32,767 bytes); its header reader refuses other negative
lengths and, here as in kraftwire's codecs, bytes that are not UTF-8.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Collection, Container
from typing import Callable, Final

from kraftwire.generated import api_keys
from kraftwire.generated.framing import CLIENT_ID_LENGTH, DEFAULT_MAX_FRAME, REQUEST_HEAD

from ..packets.typed_reads import (
    i16_i16_i32_i16_be,
    i32_be,
    i32_i16_i16_i32_i16_be,
    i32_i32_be,
)

# The header layouts are the codecs' (``kraftwire.generated.framing``): key, version and correlation
# id, then the client id's int16 length (so the client id's bytes start at 10); a response's
# correlation id. This reader stays the decoders' own: it runs compiled (the packet stage's typed
# reads, a native ``RequestHead``) once per frame, never raises on damaged bytes, and judges frame
# starts. The fixed fields are read in one call of the packet stage's ``typed_reads`` whose layout
# is the header's (tests/spark/test_stages.py checks that the layouts agree): a request header's
# ``i16_i16_i32_i16``, a request frame's size then its header ``i32_i16_i16_i32_i16``, a response
# frame's size then its correlation id ``i32_i32``.
_INT16: Final = CLIENT_ID_LENGTH
# The largest frame Kafka reads by default (socket.request.max.bytes): a size above it is no frame.
MAX_FRAME: Final = DEFAULT_MAX_FRAME
# Bound once: compiled, ``_INT16.unpack_from(...)`` would look the method up on every call.
_unpack_int16: Final[Callable[[bytes | bytearray | memoryview, int], tuple[int]]] = (
    _INT16.unpack_from
)
_unpack_numbers: Final = REQUEST_HEAD.unpack_from  # key, version, correlation id
# Bytes no client id plausibly holds when looking for a frame start: control characters.
_CONTROL: Final = re.compile(rb"[\x00-\x1f\x7f]")
MAX_API_KEY: Final = 127  # Kafka numbers its APIs from 0 up; a codec set may add its own keys
MAX_API_VERSION: Final = 40
PRODUCE: Final = api_keys.PRODUCE


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
        # The client id is null (length -1) or UTF-8, as Kafka's rule has it: a header codec
        # certainly reads it to ``end`` (see ``request_body_start``). False for an invalid
        # negative length or bytes that are not UTF-8 (then ``client_id`` has them replaced).
        self.plain = plain


def read_request_head(payload: bytes) -> RequestHead | None:
    """The fixed part of a request header, or None when the payload is too short to hold it."""
    if len(payload) < 10:
        return None
    api_key, api_version, correlation_id, length = i16_i16_i32_i16_be(payload, 0)
    client_id: str | None = None
    end, plain = 10, length == -1
    if length >= 0:
        end = 10 + length
        if end > len(payload):
            return None
        raw = payload[10:end]
        try:
            client_id, plain = raw.decode(), True
        except UnicodeDecodeError:
            client_id, plain = raw.decode("utf-8", "replace"), False
    return RequestHead(api_key, api_version, correlation_id, client_id, end, plain)


def read_cut_request_head(payload: bytes) -> RequestHead | None:
    """``read_request_head`` of a frame cut short: when its client id goes on past the bytes
    there are, its API key, version and correlation id still (no client id); None when even
    those are cut."""
    head = read_request_head(payload)
    if head is None and len(payload) >= 8:
        api_key, api_version, correlation_id = _unpack_numbers(payload, 0)
        head = RequestHead(api_key, api_version, correlation_id, None, len(payload), False)
    return head


def request_body_start(payload: bytes, header_version: int) -> int | None:
    """Where the body starts after a request header of ``header_version``, when the header is the
    plain kind the codec's header reader certainly reads to that same offset: a null or UTF-8
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
    return i32_be(payload, 0)


# What a frame reader holds: its buffer, or one packet's payload.
Buffer = bytes | bytearray
# Where packets start in a frame reader's buffer (a set, or ``framing._Offsets``).
Boundaries = Container[int]
# ``(buffer, offset, boundaries)`` -> can a frame start there (None: too few bytes to tell yet)
Plausible = Callable[[Buffer, int, Boundaries], "bool | None"]


def request_check(api_keys: Container[int]) -> Plausible:
    """Whether a request frame can start at ``pos`` (None: not enough bytes yet to tell): a sane
    size, an API key of Kafka's or of ``api_keys`` (the codec set's), a version Kafka could have,
    a correlation id, and a client id that is null or UTF-8 text without control characters.
    Only for finding frames again: a frame read in sync is never judged."""

    def check(buf: Buffer, pos: int, boundaries: Boundaries = frozenset()) -> bool | None:
        return _plausible_request(buf, pos, api_keys)

    return check


_NO_KEYS: Final[frozenset[int]] = frozenset()


def plausible_request(buf: Buffer, pos: int, boundaries: Boundaries = frozenset()) -> bool | None:
    """``request_check`` of Kafka's own API keys."""
    return _plausible_request(buf, pos, _NO_KEYS)


def _plausible_request(buf: Buffer, pos: int, api_keys: Container[int]) -> bool | None:
    if len(buf) - pos < 14:
        return None
    size, api_key, api_version, correlation_id, length = i32_i16_i16_i32_i16_be(buf, pos)
    if size < 10 or size > MAX_FRAME:
        return False
    if not 0 <= api_key <= MAX_API_KEY and api_key not in api_keys:
        return False
    if not 0 <= api_version <= MAX_API_VERSION or correlation_id < 0:
        return False
    if length == -1:
        return True
    if length < 0 or length > size - 10:
        return False
    if pos + 14 + length > len(buf):
        return None  # the client id goes on past the bytes there are
    return _plausible_client_id(buf, pos + 14, pos + 14 + length)


def request_in_rules(buf: Buffer, pos: int, boundaries: Boundaries = frozenset()) -> bool | None:
    """Whether the request frame at ``pos`` keeps Kafka's rules for every request header (None:
    not enough bytes yet to tell): room for its fixed fields, and a client id that is null or
    UTF-8 and lies inside the frame. A frame read in sync that breaks them means the frame
    boundaries were lost (a damaged size): Kafka's own reader could not read it. Its API key and
    version are not judged: a key no codec knows is a frame all the same."""
    if len(buf) - pos < 14:
        return None
    # one read of the fixed fields (the key, version and correlation id are not judged here)
    size, _, _, _, length = i32_i16_i16_i32_i16_be(buf, pos)
    if size < 10:
        return False
    if length == -1:
        return True
    if length < 0 or length > size - 10:
        return False
    if pos + 14 + length > len(buf):
        return None
    return _client_id_kind(buf, pos + 14, pos + 14 + length) != _NOT_UTF8


def _plausible_client_id(buf: Buffer, start: int, end: int) -> bool:
    """Whether ``buf[start:end]`` is UTF-8 text without control characters."""
    return _client_id_kind(buf, start, end) == _TEXT


# What a client id's bytes are: not UTF-8, UTF-8 with control characters, or text without them.
_NOT_UTF8: Final = 0
_CONTROLS: Final = 1
_TEXT: Final = 2
# Client ids judged by ``_client_id_kind``: a connection sends the same few again and again, and a
# dictionary look-up costs less than decoding. Short ids only, and a bounded number of them, so
# that hostile traffic cannot make the memo large.
_CLIENT_ID_MEMO: Final[dict[bytes, int]] = {}
_MEMO_ID_BYTES: Final = 64
_MEMO_IDS: Final = 4096


def _client_id_kind(buf: Buffer, start: int, end: int) -> int:
    client_id = bytes(buf[start:end])
    if end - start > _MEMO_ID_BYTES:
        return _kind_of(client_id)
    known = _CLIENT_ID_MEMO.get(client_id)
    if known is None:
        if len(_CLIENT_ID_MEMO) >= _MEMO_IDS:
            _CLIENT_ID_MEMO.clear()
        known = _CLIENT_ID_MEMO[client_id] = _kind_of(client_id)
    return known


def _kind_of(client_id: bytes) -> int:
    try:
        client_id.decode()
    except UnicodeDecodeError:
        return _NOT_UTF8
    return _CONTROLS if _CONTROL.search(client_id) is not None else _TEXT


WEAK_RESPONSE_MAX: Final = 64 * 1024


def plausible_response(pending: Collection[int]) -> Plausible:
    """A response can start where its correlation id answers a pending request; or, when no request
    waits (the capture missed them), where a packet starts and a small frame ends exactly where a
    packet ends (``boundaries`` holds the buffer offsets where packets start, and its end)."""

    def check(buf: Buffer, pos: int, boundaries: Boundaries = frozenset()) -> bool | None:
        if len(buf) - pos < 8:
            return None
        size, correlation_id = i32_i32_be(buf, pos)
        if size < 4 or size > MAX_FRAME or correlation_id < 0:
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
    size, correlation_id = i32_i32_be(buf, end)
    if not 4 <= size <= MAX_FRAME or correlation_id not in pending:
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
