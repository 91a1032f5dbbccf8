"""The request server's frame reader is on every request's path: reading a request already buffered
must not start a task of its own per read (``asyncio.wait_for`` did, two or three per request)."""

from __future__ import annotations

import asyncio
import struct

from kraftwire.node.runtime.limits import RequestBytes, read_request


def test_a_buffered_request_is_read_without_starting_tasks():
    async def read_all() -> tuple[list[bytes], int]:
        loop = asyncio.get_running_loop()
        started = 0

        def counting_factory(loop, coro, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal started
            started += 1
            return asyncio.Task(coro, loop=loop, **kwargs)

        reader = asyncio.StreamReader()
        payloads = [b"a" * 10, b"b" * 300, b""]
        reader.feed_data(b"".join(struct.pack(">i", len(p)) + p for p in payloads))
        reader.feed_eof()
        loop.set_task_factory(counting_factory)
        budget = RequestBytes(1 << 20)
        read = []
        while (got := await read_request(reader, 1 << 20, budget, idle_s=30.0)) is not None:
            read.append(got[0])
        loop.set_task_factory(None)
        return read, started

    read, started = asyncio.run(read_all())
    assert read == [b"a" * 10, b"b" * 300, b""]
    assert started == 0, f"{started} tasks started to read 3 buffered requests"
