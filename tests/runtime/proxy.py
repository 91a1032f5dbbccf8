"""A loopback TCP proxy in front of every node that a test can partition.

Each node advertises its proxy's port. The proxy reads the first frame of each connection (always a
request) to learn who is calling: a node's raft client names itself ``raft-client-<id>``; anything
else (tools, tests) is never blocked. ``block(a, b)`` cuts both directions between nodes a and b:
open connections are closed and new ones refused until ``heal()``.
"""

from __future__ import annotations

import asyncio
import struct
import threading

_HEAD = struct.Struct(">ihhih")  # size, api key, version, correlation id, client id length


class PartitionProxy:
    def __init__(self, routes: dict[int, tuple[int, int]]) -> None:
        """``routes``: node id -> (proxy port, the node's real port)."""
        self.routes = routes
        self.blocked: set[frozenset[int]] = set()
        self._links: list[tuple[int | None, int, asyncio.StreamWriter, asyncio.StreamWriter]] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list = []

    def __enter__(self) -> "PartitionProxy":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)

    def block(self, a: int, b: int) -> None:
        self._call(self._block, frozenset((a, b)))

    def isolate(self, node: int) -> None:
        for other in self.routes:
            if other != node:
                self.block(node, other)

    def heal(self) -> None:
        self._call(self.blocked.clear)

    def _call(self, function, *args) -> None:
        async def run():
            function(*args)

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(30)

    def _block(self, pair: frozenset[int]) -> None:
        self.blocked.add(pair)
        for source, target, a, b in list(self._links):
            if source is not None and frozenset((source, target)) == pair:
                a.close()
                b.close()

    async def _listen(self) -> None:
        for node, (proxy_port, _) in self.routes.items():
            server = await asyncio.start_server(
                lambda r, w, node=node: self._accept(node, r, w),
                "127.0.0.1",
                proxy_port,
                reuse_address=True,
            )
            self._servers.append(server)

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for _, _, a, b in self._links:
            a.close()
            b.close()

    async def _accept(self, target: int, reader, writer) -> None:
        try:
            head = await reader.readexactly(_HEAD.size)
            name_length = _HEAD.unpack(head)[4]
            name = await reader.readexactly(max(0, name_length))
            source = _node_of(name.decode(errors="replace"))
            if source is not None and frozenset((source, target)) in self.blocked:
                writer.close()
                return
            up_reader, up_writer = await asyncio.open_connection(
                "127.0.0.1", self.routes[target][1]
            )
        except (OSError, asyncio.IncompleteReadError):
            writer.close()
            return
        link = (source, target, writer, up_writer)
        self._links.append(link)
        up_writer.write(head + name)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            self._links.remove(link)
            writer.close()
            up_writer.close()


def _node_of(client_id: str) -> int | None:
    prefix = "raft-client-"
    return (
        int(client_id[len(prefix) :])
        if client_id.startswith(prefix) and client_id[len(prefix) :].isdigit()
        else None
    )


async def _pipe(reader, writer) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()
