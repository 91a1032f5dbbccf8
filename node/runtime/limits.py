"""What one listener lets its clients hold: connections (max.connections, per IP) and the bytes of
requests still arriving (queued.max.request.bytes), read in pieces so nothing is allocated for a size a
client merely declares.

- A connection over ``max.connections`` or over its address's limit (``max.connections.per.ip``, or
  the address's entry in ``max.connections.per.ip.overrides``) is closed as soon as it is accepted
  (Kafka drops per-IP excess the same way; where Kafka holds back accepting at the broker-wide limit,
  kraftwire closes, so a flood waits in no queue). Connections already open, peers' included, carry on.
- A request is read in pieces of at most :data:`CHUNK` bytes. Requests up to :data:`SMALL_REQUEST`
  bytes (every Vote, BeginQuorumEpoch, Fetch request a peer sends) are read without counting; the
  bytes of larger requests are counted against one :class:`RequestBytes` budget as they arrive, and a
  piece that would take the budget over its bound closes that connection with one log line. So memory
  held by partial requests stays under the bound however many connections declare huge frames.
- A connection silent for ``connections.max.idle.ms`` (between or inside requests) is closed.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from dataclasses import dataclass, field

from .config import NodeConfig
from .wire import FrameError

log = logging.getLogger("kraftwire.node")

_SIZE = struct.Struct(">i")
CHUNK = 1 << 16
SMALL_REQUEST = 1 << 16


@dataclass(frozen=True)
class ServerLimits:
    """Kafka's socket server limits, with Kafka's defaults (the config module documents each)."""

    max_frame_bytes: int
    partial_request_bytes: int  # queued.max.request.bytes, or max_frame_bytes for Kafka's -1
    idle_ms: int = 600_000  # connections.max.idle.ms; -1: never
    max_connections: int = 2**31 - 1
    max_connections_per_ip: int = 2**31 - 1
    per_ip_overrides: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, config: NodeConfig) -> "ServerLimits":
        return cls(
            config.max_frame_bytes,
            config.partial_request_bytes,
            config.connections_max_idle_ms,
            config.max_connections,
            config.max_connections_per_ip,
            config.max_connections_per_ip_overrides,
        )


class RequestBytes:
    """Bytes held by large requests being read or handled, across every connection of a node."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.held = 0

    def take(self, count: int) -> bool:
        if self.held + count > self.bound:
            return False
        self.held += count
        return True

    def give_back(self, count: int) -> None:
        self.held -= count


class ConnectionLimits:
    """Open connections, in total and per client address."""

    def __init__(self, total: int, per_ip: int, overrides: dict[str, int]) -> None:
        self.total = total
        self.per_ip = per_ip
        self.overrides = overrides
        self.open = 0
        self.by_ip: dict[str, int] = {}
        self._refused = 0  # refusals since the last log line
        self._logged_at = 0.0

    def admit(self, ip: str) -> bool:
        """Count the connection in and return True, or return False (and log, at most once a second
        with the number refused since) when a limit is reached."""
        limit = self.overrides.get(ip, self.per_ip)
        reason = None
        if self.open >= self.total:
            reason = f"max.connections={self.total} reached"
        elif self.by_ip.get(ip, 0) >= limit:
            reason = f"{ip} has its {limit} connections (max.connections.per.ip)"
        if reason is None:
            self.open += 1
            self.by_ip[ip] = self.by_ip.get(ip, 0) + 1
            return True
        self._refused += 1
        now = time.monotonic()
        if now - self._logged_at >= 1.0:
            log.warning("refusing connection from %s: %s (%d refused)", ip, reason, self._refused)
            self._refused, self._logged_at = 0, now
        return False

    def release(self, ip: str) -> None:
        self.open -= 1
        left = self.by_ip[ip] - 1
        if left:
            self.by_ip[ip] = left
        else:
            del self.by_ip[ip]


class IdleTimeout(Exception):
    """The client sent nothing for connections.max.idle.ms."""


async def _read_some(reader: asyncio.StreamReader, count: int, idle_s: float | None) -> bytes:
    # asyncio.timeout, not wait_for: wait_for runs the read as a task of its own, one more task and
    # one more trip through the event loop for every read of every request.
    try:
        async with asyncio.timeout(idle_s):
            return await reader.read(count)
    except TimeoutError:
        raise IdleTimeout() from None


async def read_request(
    reader: asyncio.StreamReader, max_size: int, budget: RequestBytes, idle_s: float | None
) -> tuple[bytes, int] | None:
    """(payload, bytes counted against ``budget``) of the next request, or None at a clean end of
    stream; the caller gives the counted bytes back once the request is handled. Raises FrameError
    (bad size, cut short, over the budget) or IdleTimeout."""
    prefix = b""
    while len(prefix) < 4:
        piece = await _read_some(reader, 4 - len(prefix), idle_s)
        if not piece:
            if prefix:
                raise FrameError(f"stream ended inside a size prefix ({len(prefix)} of 4 bytes)")
            return None
        prefix += piece
    (size,) = _SIZE.unpack(prefix)
    if size < 0 or size > max_size:
        raise FrameError(f"frame size {size} is outside 0..{max_size}")
    counted = size > SMALL_REQUEST
    payload = bytearray()
    try:
        while len(payload) < size:
            piece = await _read_some(reader, min(CHUNK, size - len(payload)), idle_s)
            if not piece:
                raise FrameError(f"stream ended after {len(payload)} of {size} frame bytes")
            if counted and not budget.take(len(piece)):
                raise FrameError(
                    f"requests being read already hold {budget.held} bytes; a {size}-byte request"
                    f" does not fit in queued.max.request.bytes={budget.bound}"
                )
            if len(piece) == size:  # the whole payload in one read: no copy to make
                return piece, size if counted else 0
            payload += piece
    except BaseException:
        if counted:
            budget.give_back(len(payload))
        raise
    return bytes(payload), len(payload) if counted else 0
