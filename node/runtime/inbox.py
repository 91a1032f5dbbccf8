"""What the node's loop is fed: the core's network inputs, and the embedding API's calls queued beside
them so that they reach the core on the loop, in arrival order (``KRaftNode._feed`` applies each).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Union

from kraftwire.node.core.api import (
    AppendResult,
    RequestFailed,
    RequestReceived,
    Resign,
    ResponseReceived,
    SnapshotId,
)


@dataclass(frozen=True, slots=True)
class AppendCall:
    """``KRaftNode.submit``: consecutive ones are fed as one core append (group commit)."""

    records: tuple[bytes, ...]
    appended: asyncio.Future[AppendResult]  # in the leader's log and on disk
    committed: asyncio.Future[int]  # the offset of the last record, once committed


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

SingleInput = Union[ReadCall, SnapshotCall, ShutdownCall, Resign, NetworkInput]
"""Fed one at a time; appends are fed in runs instead (consecutive ones as one core append)."""

InboxItem = Union[AppendCall, SingleInput]
