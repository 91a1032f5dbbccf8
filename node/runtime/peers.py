"""Outbound connections to other nodes: one channel per destination id (voters, bootstrap servers).

A channel connects on first use, negotiates versions with ApiVersions, then sends requests with its
own correlation ids and hands each decoded response (or a failure) back to the node. The version of a
request is the highest both sides support; a request the peer cannot take at or above its
``min_version`` fails at once with ``UNSUPPORTED_VERSION`` (how a prospective node learns that a peer
has no pre-vote). A failed connect fails the waiting requests with ``BROKER_NOT_AVAILABLE`` and backs
off (50 ms doubling to 1 s, like Kafka's reconnect.backoff); a request unanswered for the request
timeout closes the connection, so a hung peer does not hold the destination forever. With a TLS
context (the node's controller listener uses SSL) every channel runs the handshake as a client,
presenting the node's own certificate, before ApiVersions; a failed handshake is a failed connect.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable

from kraftwire.generated import APIS, ProtocolError
from kraftwire.generated.errors import BROKER_NOT_AVAILABLE, UNSUPPORTED_VERSION
from kraftwire.node.core.api import Endpoint, OutboundRequest
from kraftwire.node.core.messages import api_versions_request
from kraftwire.synthetic_capture import CapturedStream, CaptureFile

from .capture import addresses
from .wire import FrameError, frame_request, parse_response, read_payload, response_correlation_id

log = logging.getLogger("kraftwire.node")

RECONNECT_BACKOFF_MS = 50
RECONNECT_BACKOFF_MAX_MS = 1000


@dataclass
class _Pending:
    api_key: int
    version: int
    request_id: int  # the core's correlation id
    sent_ms: float


class PeerChannel:
    def __init__(self, network: "PeerNetwork", destination: int, endpoint: Endpoint) -> None:
        self.network = network
        self.destination = destination
        self.endpoint = endpoint
        self.versions: dict[int, tuple[int, int]] = {}  # api key -> the peer's (min, max)
        self._writer: asyncio.StreamWriter | None = None
        self._stream: CapturedStream | None = None  # the capture of the current connection
        self._queue: list[OutboundRequest] = []
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self._backoff_ms = 0
        self._retry_at = 0.0
        self._tls_failure = ""  # the last TLS failure logged

    def send(self, message: OutboundRequest) -> None:
        if self._writer is not None:
            self._write(self._writer, message)
            return
        if time.monotonic() < self._retry_at:
            self.network.fail(self.destination, message.correlation_id, BROKER_NOT_AVAILABLE)
            return
        self._queue.append(message)
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._disconnect()

    def expire(self, now: float, timeout_s: float) -> None:
        if self._pending and min(p.sent_ms for p in self._pending.values()) + timeout_s < now:
            log.info(
                "request to node %s at %s timed out; reconnecting", self.destination, self._where()
            )
            self._disconnect()

    def _where(self) -> str:
        return f"{self.endpoint.host}:{self.endpoint.port}"

    async def _run(self) -> None:
        writer = None
        try:
            tls = self.network.tls
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    self.endpoint.host,
                    self.endpoint.port,
                    ssl=tls,
                    server_hostname=self.endpoint.host if tls is not None else None,
                ),
                self.network.request_timeout_s,
            )
            if self.network.capture is not None:
                local, remote = addresses(writer)
                self._stream = self.network.capture.stream(client=local, server=remote)
            self.versions = await asyncio.wait_for(
                self._negotiate(reader, writer), self.network.request_timeout_s
            )
        except (OSError, asyncio.TimeoutError, FrameError, ProtocolError) as exc:
            if writer is not None:
                writer.close()
            if self._stream is not None:
                self._stream.close()
                self._stream = None
            self._backoff_ms = min(
                max(RECONNECT_BACKOFF_MS, self._backoff_ms * 2), RECONNECT_BACKOFF_MAX_MS
            )
            self._retry_at = time.monotonic() + self._backoff_ms / 1000
            queued, self._queue, self._task = self._queue, [], None
            if isinstance(exc, ssl.SSLError) and str(exc) != self._tls_failure:
                self._tls_failure = str(
                    exc
                )  # logged once until it changes: retries come each second
                log.warning("TLS to node %s at %s failed: %s", self.destination, self._where(), exc)
            log.debug("cannot reach node %s at %s: %s", self.destination, self._where(), exc)
            for message in queued:
                self.network.fail(self.destination, message.correlation_id, BROKER_NOT_AVAILABLE)
            return
        self._backoff_ms = 0
        self._writer = writer
        queued, self._queue = self._queue, []
        for message in queued:
            self._write(writer, message)
        try:
            await self._read_responses(reader)
        except (OSError, FrameError, ProtocolError) as exc:
            log.info("connection to node %s at %s lost: %s", self.destination, self._where(), exc)
        finally:
            if self._writer is writer:
                self._task = None
                self._disconnect()

    async def _negotiate(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> dict[int, tuple[int, int]]:
        """ApiVersions v3 (answered at v0 with UNSUPPORTED_VERSION by an older peer, then v0)."""
        for version in (3, 0):
            frame = frame_request(api_versions_request(), version, 0, self.network.client_id)
            self._send(writer, frame)
            await writer.drain()
            payload = await self._receive(reader)
            try:
                _, body = parse_response(payload, 18, version)
            except (FrameError, ProtocolError):  # an older peer answers in the v0 layout
                _, body = parse_response(payload, 18, 0)
            if body.error_code == 0:
                return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
            if body.error_code != UNSUPPORTED_VERSION:
                raise FrameError(f"ApiVersions answered error {body.error_code}")
        raise FrameError("peer refused every ApiVersions version")

    def _write(self, writer: asyncio.StreamWriter, message: OutboundRequest) -> None:
        api_key = message.api_key
        ours = APIS[api_key].highest_version
        theirs = self.versions.get(api_key)
        version = min(ours, theirs[1]) if theirs else -1
        if theirs is None or version < max(
            message.min_version, theirs[0], APIS[api_key].lowest_version
        ):
            self.network.fail(self.destination, message.correlation_id, UNSUPPORTED_VERSION)
            return
        wire_id = next(self._ids)
        try:
            frame = frame_request(message.request, version, wire_id, self.network.client_id)
        except ProtocolError:  # a field this version cannot carry
            self.network.fail(self.destination, message.correlation_id, UNSUPPORTED_VERSION)
            return
        self._pending[wire_id] = _Pending(
            api_key, version, message.correlation_id, time.monotonic()
        )
        self._send(writer, frame)

    async def _read_responses(self, reader: asyncio.StreamReader) -> None:
        while True:
            payload = await self._receive(reader)
            pending = self._pending.pop(response_correlation_id(payload), None)
            if pending is None:
                raise FrameError("response with an unknown correlation id")
            _, body = parse_response(payload, pending.api_key, pending.version)
            self.network.deliver(self.destination, pending.request_id, pending.version, body)

    def _send(self, writer: asyncio.StreamWriter, frame: bytes) -> None:
        if self._stream is not None:
            self._stream.sent_by("client", frame)
        writer.write(frame)

    async def _receive(self, reader: asyncio.StreamReader) -> bytes:
        payload = await read_payload(reader, self.network.max_frame_bytes)
        if payload is None:
            raise FrameError("peer closed the connection")
        if self._stream is not None:
            self._stream.sent_by("server", struct.pack(">i", len(payload)) + payload)
        return payload

    def _disconnect(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        pending, self._pending = self._pending, {}
        for p in pending.values():
            self.network.fail(self.destination, p.request_id, BROKER_NOT_AVAILABLE)
        if self._task is not None and writer is not None:
            self._task.cancel()
            self._task = None


class PeerNetwork:
    """All outbound channels of one node. ``on_response(source, correlation id, version, body)`` and
    ``on_failure(destination, correlation id, error code)`` feed the node's input queue."""

    def __init__(
        self,
        on_response: Callable[[int, int, int, Any], None],
        on_failure: Callable[[int, int, int], None],
        request_timeout_ms: int,
        max_frame_bytes: int,
        client_id: str,
        capture: CaptureFile | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.capture = capture
        self.tls = tls
        self.client_id = client_id  # "raft-client-<node id>", as Kafka's raft client names itself
        self.on_response = on_response
        self.on_failure = on_failure
        self.request_timeout_s = request_timeout_ms / 1000
        self.max_frame_bytes = max_frame_bytes
        self.channels: dict[int, PeerChannel] = {}

    def send(self, message: OutboundRequest, endpoint: Endpoint | None) -> None:
        channel = self.channels.get(message.destination)
        if endpoint is not None and (channel is None or channel.endpoint != endpoint):
            if channel is not None:
                channel.close()
            channel = self.channels[message.destination] = PeerChannel(
                self, message.destination, endpoint
            )
        if channel is None:
            self.fail(message.destination, message.correlation_id, BROKER_NOT_AVAILABLE)
            return
        channel.send(message)

    def expire(self) -> None:
        now = time.monotonic()
        for channel in list(self.channels.values()):
            channel.expire(now, self.request_timeout_s)

    def deliver(self, source: int, correlation_id: int, version: int, body: Any) -> None:
        self.on_response(source, correlation_id, version, body)

    def fail(self, destination: int, correlation_id: int, error: int) -> None:
        self.on_failure(destination, correlation_id, error)

    def close(self) -> None:
        for channel in self.channels.values():
            channel.close()
        self.channels.clear()
