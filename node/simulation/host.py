"""What the parts of the simulation may see of each other, as small protocols.

The nodes, the admin client, the checker and the liveness watchdog never hold the whole
:class:`~.simulation.Simulation`; each is handed a host typed by one of these protocols (or by a
protocol next to it that extends :class:`Host`), which the simulation satisfies. Keeping the contracts
here, below every module that uses them, is what lets the package import strictly downward.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from kraftwire.node.core import (
    Endpoint,
    KRaftCore,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    ReplicaKey,
)
from kraftwire.node.core.api import Ready

from .events import EventQueue
from .trace import Trace
from .wire import Envelope, WireCodec

Failure = tuple[int, int, int, int]
"""A request that failed at the network level: (destination, correlation id, api key, error code)."""


@dataclass
class Disk:
    """What survives a crash: log, quorum-state file, snapshots and the directory id (meta.properties)."""

    directory_id: uuid.UUID
    log: MemoryLog = field(default_factory=MemoryLog)
    qs: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    snaps: MemorySnapshotStore = field(default_factory=MemorySnapshotStore)


class Party(Protocol):
    """Anything with an address on the simulated network: a node or the admin client."""

    @property
    def id(self) -> int: ...

    @property
    def inc(self) -> int:
        """The process incarnation: messages of an older one are lost with its connections."""
        ...

    @property
    def running(self) -> bool: ...

    @property
    def versions(self) -> Mapping[int, int]:
        """Api key -> the highest version this party speaks, where it is capped."""
        ...

    def receive(self, env: Envelope) -> None: ...

    def request_failed(self, failure: Failure) -> None: ...


class Replica(Protocol):
    """A simulated process as the checker, the watchdog and the operator see it."""

    @property
    def id(self) -> int: ...

    @property
    def key(self) -> ReplicaKey: ...

    @property
    def disk(self) -> Disk: ...

    @property
    def core(self) -> KRaftCore | None: ...

    @property
    def pending(self) -> Ready | None:
        """The Ready whose disk operation is in progress."""
        ...

    @property
    def running(self) -> bool: ...

    @property
    def stopping(self) -> bool:
        """A graceful shutdown was asked for."""
        ...


class Cluster(Protocol):
    """The processes and the clock, read-only: what the checker and the watchdog look at."""

    @property
    def queue(self) -> EventQueue: ...

    @property
    def nodes(self) -> Mapping[int, Replica]: ...

    @property
    def running(self) -> Sequence[Replica]:
        """The running processes in id order."""
        ...


class Host(Protocol):
    """What every party on the network asks of the simulation: the clock, the trace, the codecs and
    a way to send a request."""

    @property
    def queue(self) -> EventQueue: ...

    @property
    def trace(self) -> Trace: ...

    @property
    def codec(self) -> WireCodec: ...

    def send_request(
        self,
        src: Party,
        dest_id: int,
        cid: int,
        request: Any,
        min_version: int,
        endpoint: Endpoint | None = None,
    ) -> None: ...
