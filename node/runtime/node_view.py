"""What the runtime's own request handlers see of the node: the few calls each one makes.

The handlers of :mod:`.local_routes` (Produce in :mod:`.client_path`, a client's ReadOffset in
:mod:`.reads`, ApiVersions, DescribeConfigs, DescribeCluster) are called by
:class:`~.node.KRaftNode` and call back into it. Naming the node's whole class in their annotations
made them depend on the module that imports them (a circle, however hidden behind ``TYPE_CHECKING``);
these protocols sit below both, and ``KRaftNode`` satisfies them as it is.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, Sequence

from kraftwire.node.core.api import AppendResult, Endpoint, QuorumStatus

from .config import NodeConfig


class QuorumView(Protocol):
    """The node's view of the quorum, for the leader and epoch every error answer names."""

    def status(self) -> QuorumStatus: ...

    def leader_endpoint(self) -> Endpoint | None: ...


class ProduceTarget(QuorumView, Protocol):
    """Where a client's Produce writes: the leader's log, unless it is a Kafka metadata log."""

    def is_kafka_metadata_log(self) -> bool: ...

    def submit(
        self, records: Sequence[bytes]
    ) -> tuple[asyncio.Future[AppendResult], asyncio.Future[int]]: ...


class ReadTarget(QuorumView, Protocol):
    """Where a client's ReadOffset is answered: this node's linearizable read."""

    def cluster_id(self) -> str: ...

    async def read(
        self, consistency: str = "linearizable", timeout_ms: int | None = None
    ) -> int: ...


class LocalNode(ProduceTarget, ReadTarget, Protocol):
    """What the requests the runtime answers itself read (:mod:`.local_routes`)."""

    config: NodeConfig
    served: dict[int, tuple[int, int]]
