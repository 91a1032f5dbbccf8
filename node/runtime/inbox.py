"""What the node's loop is fed: the core's network inputs, and the embedding API's calls queued beside
them so that they reach the core on the loop, in arrival order (``KRaftNode._feed`` applies each).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Union

from kraftwire.node.core.api import (
    RequestFailed,
    RequestReceived,
    Resign,
    ResponseReceived,
    SnapshotId,
)


@dataclass(frozen=True, slots=True)
class ReadCall:
    """Start the next group of linearizable reads, if one is waiting (``ReadTracker.ask``)."""


@dataclass(frozen=True, slots=True)
class SnapshotCall:
    """``KRaftNode.create_snapshot``."""

    end_offset: int
    records: tuple[bytes, ...]
    future: asyncio.Future[SnapshotId | None]


@dataclass(frozen=True, slots=True)
class ShutdownCall:
    """``KRaftNode.shutdown``: a leader resigns first."""

    timeout_ms: int


NetworkInput = Union[RequestReceived, ResponseReceived, RequestFailed]
"""Stamped with the loop's clock when fed (``now_ms`` is 0 until then)."""

InboxItem = Union[ReadCall, SnapshotCall, ShutdownCall, Resign, NetworkInput]
"""Fed one at a time, in arrival order. Appends do not pass through the inbox: they go straight
into the leader's accumulator (``KRaftNode._accept``)."""


class Wakeup:
    """Wakes the node's loop when an input is posted: :meth:`wait` returns once :meth:`set` is
    called or after its timeout. One future and one timer per wait: ``asyncio.wait_for`` on an
    ``Event`` builds a task as well, and the loop waits hundreds of times a second. A set while
    the loop is not waiting does nothing: the loop looks at its inbox before each wait."""

    __slots__ = ("_waiter",)

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(timeout_s, _ring, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None


def _ring(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
