"""Kafka framing over asyncio streams: ``int32 size`` then header and body, both directions.

:func:`read_payload` returns one frame's payload or raises :class:`FrameError` for a size outside
``0..max_size`` (Kafka's ``socket.request.max.bytes``), so an oversized or nonsense length closes the
connection without the reader ever allocating it.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from kraftwire.generated import (
    lookup,
    request_header_version,
    response_class,
    response_header_version,
)
from kraftwire.generated.framing import read_response_head

_SIZE = struct.Struct(">i")
_CORRELATION = _SIZE  # an int32 too
_RequestHeader = lookup("RequestHeader")
_ResponseHeader = lookup("ResponseHeader")


class FrameError(Exception):
    """A frame that cannot be read: bad size prefix, cut short."""


async def read_payload(reader: asyncio.StreamReader, max_size: int) -> bytes | None:
    """The next frame's payload, or ``None`` on a clean end of stream between frames."""
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError(
                f"stream ended inside a size prefix ({len(exc.partial)} of 4 bytes)"
            ) from None
        return None
    (size,) = _SIZE.unpack(prefix)
    if size < 0 or size > max_size:
        raise FrameError(f"frame size {size} is outside 0..{max_size}")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        raise FrameError(f"stream ended after {len(exc.partial)} of {size} frame bytes") from None


def frame_request(body: Any, version: int, correlation_id: int, client_id: str) -> bytes:
    api_key = body.API_KEY
    out = bytearray(4)
    out += _request_header(api_key, version, client_id)
    _CORRELATION.pack_into(out, 8, correlation_id)  # after the size, api key and api version
    body.write(out, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def frame_response(body: Any, version: int, correlation_id: int) -> bytearray:
    """The response's frame, size prefix included: a bytearray, which a transport takes as it is
    (a copy to bytes would cost as much as writing a Fetch answer's records once more)."""
    out = bytearray(4)
    out += _response_header(body.API_KEY, version)
    _CORRELATION.pack_into(out, 4, correlation_id)
    body.write(out, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return out


# Every request (and response) of one API version from one client has the same header but for its
# correlation id: each header is encoded once, by the generated header codec, with a correlation id
# of 0 that each frame overwrites in place.
_REQUEST_HEADERS: dict[tuple[int, int, str], bytes] = {}
_RESPONSE_HEADERS: dict[tuple[int, int], bytes] = {}
_MAX_CACHED = 1024  # a node sends as a handful of client ids; a caller with endless ones is not cached


def _request_header(api_key: int, version: int, client_id: str) -> bytes:
    key = (api_key, version, client_id)
    header = _REQUEST_HEADERS.get(key)
    if header is None:
        out = bytearray()
        _RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=0,
            client_id=client_id,
        ).write(out, request_header_version(api_key, version))
        header = bytes(out)
        if len(_REQUEST_HEADERS) < _MAX_CACHED:
            _REQUEST_HEADERS[key] = header
    return header


def _response_header(api_key: int, version: int) -> bytes:
    key = (api_key, version)
    header = _RESPONSE_HEADERS.get(key)
    if header is None:
        out = bytearray()
        _ResponseHeader(correlation_id=0).write(out, response_header_version(api_key, version))
        header = _RESPONSE_HEADERS[key] = bytes(out)
    return header


def parse_response(payload: bytes, api_key: int, version: int) -> tuple[int, Any]:
    """(correlation id, body) of a response to a request of ``api_key`` at ``version``."""
    header, pos = _ResponseHeader.read(payload, 0, response_header_version(api_key, version))
    body, pos = response_class(api_key).read(payload, pos, version)
    if pos != len(payload):
        raise FrameError(f"{len(payload) - pos} bytes left over after the response body")
    correlation_id: int = header.correlation_id
    return correlation_id, body


def response_correlation_id(payload: bytes) -> int:
    correlation_id: int | None = read_response_head(payload)
    if correlation_id is None:
        raise FrameError("response shorter than its correlation id")
    return correlation_id
