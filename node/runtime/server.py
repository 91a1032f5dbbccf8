"""The node's TCP listener: Kafka frames in, one request at a time per connection, responses in order.

Like Kafka's socket server, a connection handles one request at a time (the next frame is read only
after the answer is written), so answers come back in request order even when the core parks a Fetch.
A frame that cannot be read or decoded (bad size, over ``max_frame_bytes``, unknown API or version,
garbage body, bytes left over) closes that connection with one log line; the node and every other
connection carry on. An ApiVersions request at a version we do not know is answered, as Kafka does,
with a v0 ``UNSUPPORTED_VERSION`` response listing what we serve.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from typing import Any, Awaitable, Callable, NamedTuple

from kraftwire.generated import ProtocolError, decode_request

from .capture import Capture, Stream, addresses
from .wire import FrameError, frame_response, read_payload

log = logging.getLogger("kraftwire.node")

API_VERSIONS = 18
_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id


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
        max_frame_bytes: int,
        capture: Capture | None = None,
    ) -> None:
        self.handler = handler
        self.capture = capture
        self.served = served  # (api key, version) -> True if served
        self.unsupported_api_versions = (
            unsupported_api_versions  # the v0 UNSUPPORTED_VERSION answer
        )
        self.max_frame_bytes = max_frame_bytes
        self._ids = itertools.count(1)
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def listen(self, host: str, port: int) -> None:
        self._servers.append(
            await asyncio.start_server(self._accept, host, port, reuse_address=True)
        )

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # asyncio runs every connection's callback as a task of its own
        self._tasks.add(task)
        connection = -(1000 + next(self._ids))
        address = writer.get_extra_info("peername")
        peer = f"{address[0]}:{address[1]}" if address else "?"
        stream = None
        if self.capture is not None:
            local, remote = addresses(writer)
            stream = self.capture.stream(client=remote, server=local)
        try:
            await self._serve(connection, peer, reader, _Recorder(writer, stream))
        except (FrameError, ProtocolError) as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except asyncio.TimeoutError:
            log.warning("closing connection from %s: a request went unanswered", peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the server is closing; this task belongs to the stream protocol, which must not see it
        finally:
            self._tasks.discard(task)
            writer.close()
            if stream is not None:
                stream.close("server")

    async def _serve(
        self, connection: int, peer: str, reader: asyncio.StreamReader, writer: _Recorder
    ) -> None:
        while True:
            payload = await read_payload(reader, self.max_frame_bytes)
            if payload is None:
                return
            writer.received(payload)
            if len(payload) < _HEAD.size:
                raise FrameError(
                    f"request of {len(payload)} bytes is shorter than a request header"
                )
            api_key, version, correlation_id = _HEAD.unpack_from(payload)
            if not self.served(api_key, version):
                if api_key != API_VERSIONS:
                    raise FrameError(f"API key {api_key} v{version} is not served here")
                writer.write(frame_response(self.unsupported_api_versions(), 0, correlation_id))
                await writer.drain()
                continue
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

    def __init__(self, writer: asyncio.StreamWriter, stream: Stream | None) -> None:
        self.writer = writer
        self.stream = stream

    def received(self, payload: bytes) -> None:
        if self.stream is not None:
            self.stream.sent_by("client", struct.pack(">i", len(payload)) + payload)

    def write(self, frame: bytes) -> None:
        if self.stream is not None:
            self.stream.sent_by("server", frame)
        self.writer.write(frame)

    async def drain(self) -> None:
        await self.writer.drain()
