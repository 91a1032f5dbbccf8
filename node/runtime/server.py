"""The node's TCP listener: Kafka frames in, one request at a time per connection, responses in order.

Like Kafka's socket server, a connection handles one request at a time (the next frame is read only
after the answer is written), so answers come back in request order even when the core parks a Fetch.
A frame that cannot be read or decoded (bad size, over ``max_frame_bytes``, unknown API or version,
garbage body, bytes left over) closes that connection with one log line; the node and every other
connection carry on. An ApiVersions request at a version we do not know is answered, as Kafka does,
with a v0 ``UNSUPPORTED_VERSION`` response listing what we serve.

A listener given an SSL context runs the TLS handshake first: a client that fails it (no certificate
where one is required, one no trusted CA signed, not TLS at all) is closed with one log line before it
can send a request. The connection and memory limits are in :mod:`.limits`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import struct
from typing import Any, Awaitable, Callable, NamedTuple

from kraftwire.generated import ProtocolError, api_keys, decode_request
from kraftwire.generated.framing import read_request_head
from kraftwire.synthetic_capture import CapturedStream, CaptureFile

from .capture import addresses
from .limits import ConnectionLimits, IdleTimeout, RequestBytes, ServerLimits, read_request
from .wire import FrameError, frame_response

log = logging.getLogger("kraftwire.node")


class InboundRequest(NamedTuple):
    connection: int  # the core's "source" for this connection (negative, unique per connection)
    peer: str
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any


# handler(request) -> (version, response body) to send, or None to send nothing (acks=0 Produce)
Handler = Callable[[InboundRequest], Awaitable[tuple[int, Any] | None]]


class RequestServer:
    def __init__(
        self,
        handler: Handler,
        served: Callable[[int, int], bool],
        unsupported_api_versions: Callable[[], Any],
        limits: ServerLimits,
        capture: CaptureFile | None = None,
    ) -> None:
        self.handler = handler
        self.capture = capture
        self.served = served  # (api key, version) -> True if served
        self.unsupported_api_versions = (
            unsupported_api_versions  # the v0 UNSUPPORTED_VERSION answer
        )
        self.max_frame_bytes = limits.max_frame_bytes
        self.idle_s = limits.idle_ms / 1000 if limits.idle_ms > 0 else None
        self.connections = ConnectionLimits(
            limits.max_connections, limits.max_connections_per_ip, limits.per_ip_overrides
        )
        self.request_bytes = RequestBytes(limits.partial_request_bytes)
        self._ids = itertools.count(1)
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def listen(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> None:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._accept(reader, writer, tls)

        self._servers.append(await asyncio.start_server(accept, host, port, reuse_address=True))

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    async def _accept(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        tls: ssl.SSLContext | None,
    ) -> None:
        address = writer.get_extra_info("peername")
        ip = str(address[0]) if address else "?"
        if not self.connections.admit(ip):
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None  # asyncio runs every connection's callback as a task of its own
        self._tasks.add(task)
        connection = -(1000 + next(self._ids))
        peer = f"{address[0]}:{address[1]}" if address else "?"
        stream = None
        secured = tls is None
        try:
            if tls is not None:
                await writer.start_tls(tls, ssl_handshake_timeout=min(60.0, self.idle_s or 60.0))
                secured = True
            if self.capture is not None:
                local, remote = addresses(writer)
                stream = self.capture.stream(client=remote, server=local)
            await self._serve(connection, peer, reader, _Recorder(writer, stream))
        except ssl.SSLError as exc:
            what = "TLS error" if secured else "TLS handshake failed"
            log.warning("closing connection from %s: %s: %s", peer, what, exc.reason or exc)
        except (FrameError, ProtocolError) as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except IdleTimeout:
            log.debug("closing connection from %s: idle for connections.max.idle.ms", peer)
        except asyncio.TimeoutError:
            log.warning("closing connection from %s: a request went unanswered", peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the server is closing; this task belongs to the stream protocol, which must not see it
        finally:
            self._tasks.discard(task)
            self.connections.release(ip)
            writer.close()
            if stream is not None:
                stream.close("server")

    async def _serve(
        self, connection: int, peer: str, reader: asyncio.StreamReader, writer: _Recorder
    ) -> None:
        while True:
            read = await read_request(reader, self.max_frame_bytes, self.request_bytes, self.idle_s)
            if read is None:
                return
            payload, counted = read
            try:
                await self._answer(connection, peer, payload, writer)
            finally:
                self.request_bytes.give_back(counted)

    async def _answer(self, connection: int, peer: str, payload: bytes, writer: _Recorder) -> None:
        writer.received(payload)
        head = read_request_head(payload)
        if head is None:
            raise FrameError(f"request of {len(payload)} bytes is shorter than a request header")
        api_key, version, correlation_id = head
        if not self.served(api_key, version):
            if api_key != api_keys.API_VERSIONS:
                raise FrameError(f"API key {api_key} v{version} is not served here")
            writer.write(frame_response(self.unsupported_api_versions(), 0, correlation_id))
            await writer.drain()
            return
        frame = decode_request(payload)
        request = InboundRequest(
            connection, peer, api_key, version, correlation_id, frame.client_id, frame.body
        )
        answer = await self.handler(request)
        if answer is not None:
            writer.write(frame_response(answer[1], answer[0], correlation_id))
            await writer.drain()


class _Recorder:
    """The connection's writer, copying every frame to the capture stream when there is one."""

    def __init__(self, writer: asyncio.StreamWriter, stream: CapturedStream | None) -> None:
        self.writer = writer
        self.stream = stream

    def received(self, payload: bytes) -> None:
        if self.stream is not None:
            self.stream.sent_by("client", struct.pack(">i", len(payload)) + payload)

    def write(self, frame: bytes | bytearray) -> None:
        if self.stream is not None:
            self.stream.sent_by("server", bytes(frame))
        self.writer.write(frame)

    async def drain(self) -> None:
        await self.writer.drain()
