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
    header = _RequestHeader(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    out = bytearray(4)
    header.write(out, request_header_version(api_key, version))
    body.write(out, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def frame_response(body: Any, version: int, correlation_id: int) -> bytes:
    out = bytearray(4)
    _ResponseHeader(correlation_id=correlation_id).write(
        out, response_header_version(body.API_KEY, version)
    )
    body.write(out, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


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
