"""Whole Kafka frames: ``int32 size`` + request/response header + body, both directions.

A request's header version follows from its API key and version (the first four bytes of every
request header), so requests decode on their own. A response carries only a correlation id, so its
decoder needs the API key and version of the request it answers. Message classes and header versions
come from the package this module is part of (its ``lookup`` and API tables).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, NamedTuple

from ._base import Message, generated_package
from ._runtime import DecodeError, EncodeError, ProtocolError, UnsupportedVersionError

if TYPE_CHECKING:  # every package has the header specs; looked up at run time through the package
    from .request_header import RequestHeader
    from .response_header import ResponseHeader

_SIZE = struct.Struct(">i")
# Every request header, in all its versions, starts with the API key, the API version and the
# correlation id, then the client id as an int16-length string (its classic encoding even in the
# flexible header v2, -1 for null); every response header starts with the correlation id. Routing a
# request and pairing a response need no more, and no body codec: ``read_request_head`` and
# ``read_response_head`` read them, and the capture decoders' own readers share these layouts.
REQUEST_HEAD = struct.Struct(">hhi")
CLIENT_ID_LENGTH = struct.Struct(">h")
RESPONSE_HEAD = struct.Struct(">i")
_KEY_AND_VERSION = struct.Struct(REQUEST_HEAD.format[:3])  # what names a request's header version
DEFAULT_MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
# Kafka's client.id default: clients that set none send "" (the broker reads a null id as "" too).
DEFAULT_CLIENT_ID = ""


class RequestFrame(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: RequestHeader
    body: Message  # an instance of the package's request_class(api_key)


class ResponseFrame(NamedTuple):
    correlation_id: int
    header: ResponseHeader
    body: Message  # an instance of the package's response_class(api_key)


class RequestHead(NamedTuple):
    """The fields a request header starts with in every version."""

    api_key: int
    api_version: int
    correlation_id: int


def read_request_head(payload: bytes | bytearray, pos: int = 0) -> RequestHead | None:
    """The API key, version and correlation id of the request payload at ``pos`` (without the
    frame's size prefix); None when fewer bytes than they take are there."""
    if len(payload) - pos < REQUEST_HEAD.size:
        return None
    return RequestHead._make(REQUEST_HEAD.unpack_from(payload, pos))


def read_response_head(payload: bytes | bytearray, pos: int = 0) -> int | None:
    """The correlation id of the response payload at ``pos``; None when it is cut short."""
    if len(payload) - pos < RESPONSE_HEAD.size:
        return None
    correlation_id: int = RESPONSE_HEAD.unpack_from(payload, pos)[0]
    return correlation_id


def read_frame(
    buf: bytes, pos: int = 0, max_size: int = DEFAULT_MAX_FRAME
) -> tuple[bytes | None, int]:
    """The payload of the frame at ``pos`` and the position after it; ``(None, pos)`` if incomplete."""
    if len(buf) - pos < 4:
        return None, pos
    (size,) = _SIZE.unpack_from(buf, pos)
    if size < 0 or size > max_size:
        raise DecodeError(f"frame size {size} is outside 0..{max_size}", pos)
    end = pos + 4 + size
    if end > len(buf):
        return None, pos
    return bytes(buf[pos + 4 : end]), end


def _api_key_of(body: object, side: str, call: str) -> int:
    """The API key of ``body``, which must be a message of the ``side`` ("request"/"response")."""
    # a compiled message class (kraftwire codegen --native) cannot derive from Message
    compiled = type(body).__module__.rpartition(".")[2].startswith("_native_")
    is_message = isinstance(body, Message) or compiled
    spec_type: str | None = getattr(body, "SPEC_TYPE", None) if is_message else None
    api_key: int | None = getattr(body, "API_KEY", None) if is_message else None
    if spec_type != side or api_key is None:
        what = f"a {spec_type} message" if spec_type else "not a message class of an API"
        raise EncodeError(f"{call} needs a {side} message, got {type(body).__name__} ({what})")
    return api_key


def encode_request(
    body: Message,
    version: int,
    correlation_id: int,
    client_id: str | None = DEFAULT_CLIENT_ID,
) -> bytes:
    """A size-prefixed request frame for ``body`` (a generated request message) at ``version``."""
    package = generated_package()
    api_key = _api_key_of(body, "request", "encode_request")
    header = package.lookup("RequestHeader")(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    out = bytearray(4)
    header.write(out, package.request_header_version(api_key, version))
    body.write(out, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_request(payload: bytes) -> RequestFrame:
    """Decode a request: its frame's payload (header and body), or the whole frame.

    ``payload`` is what ``read_frame`` returns, without the size prefix. A whole frame (what
    ``encode_request`` returns, what ``kraftwire decode-frame`` reads) is accepted too: when the
    buffer does not decode as a payload and its first four bytes are a size equal to the length
    of the bytes after them, those bytes are decoded (and their error, if any, is raised). A buffer
    whose first four bytes could be the size of a shorter frame gets an error that says to split
    it with ``read_frame`` first.
    """
    payload = bytes(payload)
    try:
        return _decode_request_payload(payload)
    except (DecodeError, UnsupportedVersionError) as exc:
        framed = _unframed(payload)
        if framed is None:
            raise _with_frame_hint(exc, payload) from None
    return _decode_request_payload(framed)  # a whole frame: its own error is the one to tell


def _unframed(buffer: bytes) -> bytes | None:
    """The bytes after the size prefix when ``buffer`` is one whole frame, else None."""
    if len(buffer) < 4 or _SIZE.unpack_from(buffer, 0)[0] != len(buffer) - 4:
        return None
    return buffer[4:]


def _with_frame_hint(exc: ProtocolError, buffer: bytes) -> ProtocolError:
    """``exc``, told that the buffer may start with a size prefix when its first four bytes could be
    one (a size that ends inside the buffer: several frames, or a frame with bytes after it)."""
    size = _SIZE.unpack_from(buffer, 0)[0] if len(buffer) >= 4 else -1
    if not 0 <= size < len(buffer) - 4:
        return exc
    hint = (
        f"{exc} (if the buffer starts with a frame's size prefix ({size} bytes follow it), "
        "split it with read_frame and decode each payload)"
    )
    if not isinstance(exc, DecodeError):
        return type(exc)(hint)
    hinted = DecodeError(hint)  # the message names the offset already
    hinted.offset = exc.offset
    return hinted


def _decode_request_payload(payload: bytes) -> RequestFrame:
    package = generated_package()
    if len(payload) < 4:
        raise DecodeError("request shorter than its API key and version", 0)
    api_key, api_version = _KEY_AND_VERSION.unpack_from(payload, 0)
    try:
        header_version = package.request_header_version(api_key, api_version)
        body_class = package.request_class(api_key)
    except UnsupportedVersionError as exc:
        raise UnsupportedVersionError(
            f"request with API key {api_key} v{api_version}: {exc}"
        ) from None
    header, pos = package.lookup("RequestHeader").read(payload, 0, header_version)
    body, pos = body_class.read(payload, pos, api_version)
    if pos != len(payload):
        raise DecodeError(
            f"{body_class.SPEC_NAME} v{api_version}: {len(payload) - pos} bytes left over", pos
        )
    return RequestFrame(api_key, api_version, header.correlation_id, header.client_id, header, body)


def encode_response(body: Message, version: int, correlation_id: int) -> bytes:
    """A size-prefixed response frame for ``body`` (a generated response message) at ``version``."""
    package = generated_package()
    api_key = _api_key_of(body, "response", "encode_response")
    header = package.lookup("ResponseHeader")(correlation_id=correlation_id)
    out = bytearray(4)
    header.write(out, package.response_header_version(api_key, version))
    body.write(out, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_response(payload: bytes, api_key: int, api_version: int) -> ResponseFrame:
    """Decode a response, given the API key and version of its request.

    As ``decode_request``: the frame's payload, or the whole frame with its size prefix (tried
    when the buffer does not decode as a payload and its prefix equals the length after it).
    """
    payload = bytes(payload)
    try:
        return _decode_response_payload(payload, api_key, api_version)
    except DecodeError as exc:
        framed = _unframed(payload)
        if framed is None:
            raise _with_frame_hint(exc, payload) from None
    return _decode_response_payload(framed, api_key, api_version)


def _decode_response_payload(payload: bytes, api_key: int, api_version: int) -> ResponseFrame:
    package = generated_package()
    body_class = package.response_class(api_key)
    header_version = package.response_header_version(api_key, api_version)
    header, pos = package.lookup("ResponseHeader").read(payload, 0, header_version)
    body, pos = body_class.read(payload, pos, api_version)
    if pos != len(payload):
        raise DecodeError(
            f"{body_class.SPEC_NAME} v{api_version}: {len(payload) - pos} bytes left over", pos
        )
    return ResponseFrame(header.correlation_id, header, body)
