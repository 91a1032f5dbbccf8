"""Messages between simulated nodes, optionally through the real wire codecs.

With ``encode=True`` every request leaves as a Kafka frame (``RequestHeader`` + body, size-prefixed) at
the version negotiated with the peer, and is decoded from those bytes on delivery; a response is framed
at the version of the request it answers and decoded with that API key and version, as a client does.
So every simulated exchange also round-trips the generated codecs (and the record batches inside Fetch
and FetchSnapshot). With ``encode=False`` the objects are handed over as they are (faster, same
behaviour as long as the codecs are right).

Version negotiation stands in for ApiVersions: each node has a table of the highest version it speaks
per API key (default: the highest the generated class knows). A request is sent at
``min(our highest, peer's highest)``; if that is below the request's ``min_version`` the sender gets a
synthetic ``UNSUPPORTED_VERSION`` failure instead, which is how a prospective node learns that a peer
predates pre-vote.
"""

from __future__ import annotations

import struct
from typing import Any, Mapping

from kraftwire.generated import (
    DecodeError,
    lookup,
    request_class,
    request_header_version,
    response_class,
    response_header_version,
)
from kraftwire.generated.framing import REQUEST_HEAD

_SIZE = struct.Struct(">i")
# The API key and version a request header starts with (framing's layout; the correlation id is
# read with the whole header), enough to pick the header's version.
_KEY_AND_VERSION = struct.Struct(REQUEST_HEAD.format[:3])
_REQUEST_HEADER = lookup("RequestHeader")
_RESPONSE_HEADER = lookup("ResponseHeader")
CLIENT_ID = "sim"


class Envelope:
    """One message in flight. ``payload`` is frame bytes (encoded) or the message object itself.

    ``src_inc``/``dst_inc`` are process incarnations: a message belongs to a connection between two
    particular incarnations and is lost if either end restarted meanwhile (a new process must never
    see a response meant for its predecessor, whose correlation ids it reuses).
    """

    __slots__ = (
        "src",
        "dst",
        "src_inc",
        "dst_inc",
        "is_request",
        "api_key",
        "version",
        "correlation_id",
        "payload",
    )

    def __init__(
        self,
        src: int,
        dst: int,
        src_inc: int,
        dst_inc: int,
        is_request: bool,
        api_key: int,
        version: int,
        correlation_id: int,
        payload: Any,
    ) -> None:
        self.src = src
        self.dst = dst
        self.src_inc = src_inc
        self.dst_inc = dst_inc
        self.is_request = is_request
        self.api_key = api_key
        self.version = version
        self.correlation_id = correlation_id
        self.payload = payload


class WireCodec:
    """Encodes at send and decodes at delivery (or passes objects through when disabled).

    The framing is that of ``kraftwire.generated.framing`` (size, header, body; byte-identical, a test
    checks it), with the header and body classes looked up once per API instead of per message.
    """

    __slots__ = ("encode", "frames", "_classes", "_request_header", "_response_header")

    def __init__(self, encode: bool = True) -> None:
        self.encode = encode
        self.frames = 0
        self._classes: dict[tuple[bool, int, int], tuple[Any, int]] = {}
        # One header object each, re-stamped per message (the simulator is single-threaded).
        self._request_header = _REQUEST_HEADER(client_id=CLIENT_ID)
        self._response_header = _RESPONSE_HEADER()

    @staticmethod
    def request_version(request: Any, peer_versions: Mapping[int, int] | None) -> int:
        """The version to send ``request`` at: our highest, capped by the peer's highest."""
        ours: int = request.HIGHEST_VERSION
        if peer_versions:
            theirs = peer_versions.get(request.API_KEY)
            if theirs is not None and theirs < ours:
                return theirs
        return ours

    def _body_class(self, is_request: bool, api_key: int, version: int) -> tuple[Any, int]:
        """(body class, header version) for one API version, cached."""
        key = (is_request, api_key, version)
        found = self._classes.get(key)
        if found is None:
            if is_request:
                found = (request_class(api_key), request_header_version(api_key, version))
            else:
                found = (response_class(api_key), response_header_version(api_key, version))
            self._classes[key] = found
        return found

    def _frame(self, header: Any, header_version: int, body: Any, version: int) -> bytes:
        out = bytearray(4)
        header.write(out, header_version)
        body.write(out, version)
        _SIZE.pack_into(out, 0, len(out) - 4)
        self.frames += 1
        return bytes(out)

    def pack_request(self, request: Any, version: int, correlation_id: int) -> Any:
        if not self.encode:
            return request
        _, header_version = self._body_class(True, request.API_KEY, version)
        header = self._request_header
        header.request_api_key = request.API_KEY
        header.request_api_version = version
        header.correlation_id = correlation_id
        return self._frame(header, header_version, request, version)

    def unpack_request(self, env: Envelope) -> Any:
        if not self.encode:
            return env.payload
        data = env.payload
        api_key, version = _KEY_AND_VERSION.unpack_from(data, 4)
        cls, header_version = self._body_class(True, api_key, version)
        header, pos = _REQUEST_HEADER.read(data, 4, header_version)
        body, pos = cls.read(data, pos, version)
        _check(pos, data, cls)
        if (api_key, version, header.correlation_id) != (
            env.api_key,
            env.version,
            env.correlation_id,
        ):
            raise DecodeError(
                f"request header {api_key}/{version}/{header.correlation_id} does not match the envelope",
                4,
            )
        return body

    def pack_response(self, response: Any, version: int, correlation_id: int) -> Any:
        if not self.encode:
            return response
        _, header_version = self._body_class(False, response.API_KEY, version)
        header = self._response_header
        header.correlation_id = correlation_id
        return self._frame(header, header_version, response, version)

    def unpack_response(self, env: Envelope) -> Any:
        if not self.encode:
            return env.payload
        data = env.payload
        cls, header_version = self._body_class(False, env.api_key, env.version)
        header, pos = _RESPONSE_HEADER.read(data, 4, header_version)
        body, pos = cls.read(data, pos, env.version)
        _check(pos, data, cls)
        if header.correlation_id != env.correlation_id:
            raise DecodeError(
                f"response correlation id {header.correlation_id} != {env.correlation_id}", 4
            )
        return body


def _check(pos: int, data: bytes, cls: Any) -> None:
    if pos != len(data) or _SIZE.unpack_from(data, 0)[0] != len(data) - 4:
        raise DecodeError(f"{cls.__name__}: frame of {len(data)} bytes, message ends at {pos}", pos)
