"""Kafka's raft metrics (group ``raft-metrics``, docs/operations.md §6) for one node, and an optional
Prometheus endpoint serving them (``kraftwire node start --metrics-port P``; off by default, loopback).

The node's loop calls :meth:`RaftMetrics.on_ready` for every Ready it handles; the figures that need a
window (latency avg/max, record rates) keep the last 60 s of samples, as Kafka's two 30 s samples do.
The Prometheus names follow the JMX exporter's usual convention for ``kafka.server:type=raft-metrics``:
``kafka_server_raft_metrics_<name with _>``; the two string gauges become labels of a gauge valued 1
(``current-state`` a ``state`` label, ``current-vote-directory-id`` a ``directory_id`` label).
``number-of-observers`` and ``uncommitted-voter-change`` exist only while the node leads, as in Kafka.
The loop publishes an immutable snapshot; the HTTP thread only reads the latest one.
"""

from __future__ import annotations

import collections
import time
import uuid
from typing import TYPE_CHECKING, Any, Iterator

from kraftwire.node.core.api import QuorumStatus, Ready, ReplicaKey, Role
from kraftwire.node.storage.layout import uuid_to_str

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.metrics_core import Metric

WINDOW_S = 60.0
PREFIX = "kafka_server_raft_metrics_"
STRING_GAUGES = {"current-state": "state", "current-vote-directory-id": "directory_id"}
ZERO_UUID = uuid.UUID(int=0)


class _Window:
    def __init__(self) -> None:
        self.samples: collections.deque[tuple[float, float]] = collections.deque()  # (time, value)

    def add(self, value: float, now: float) -> None:
        self.samples.append((now, value))
        self._trim(now)

    def _trim(self, now: float) -> None:
        while self.samples and self.samples[0][0] < now - WINDOW_S:
            self.samples.popleft()

    def avg(self, now: float) -> float:
        self._trim(now)
        return sum(v for _, v in self.samples) / len(self.samples) if self.samples else float("nan")

    def max(self, now: float) -> float:
        self._trim(now)
        return max((v for _, v in self.samples), default=float("nan"))

    def rate(self, now: float, started: float) -> float:
        self._trim(now)
        return sum(v for _, v in self.samples) / max(1e-3, min(WINDOW_S, now - started))

    def time_ratio(self, now: float, started: float) -> float:
        """The summed durations (seconds) as a fraction of the time the window covers."""
        return min(1.0, self.rate(now, started))


def state_name(status: QuorumStatus, local_id: int | None) -> str:
    """Kafka's ``current-state`` strings."""
    role = status.role
    voted = status.voted_key is not None
    if role is Role.FOLLOWER:
        return "follower" if status.is_voter(_local_key(status, local_id)) else "observer"
    if role is Role.PROSPECTIVE:
        return "prospective-voted" if voted else "prospective"
    if role is Role.UNATTACHED:
        return "unattached-voted" if voted else "unattached"
    if role is Role.RESIGNED:
        return "resigned"
    name: str = role.value
    return name


def _local_key(status: QuorumStatus, local_id: int | None) -> ReplicaKey | None:
    return next((v.key for v in status.voters if v.key.id == local_id), None)


class RaftMetrics:
    def __init__(self, local_id: int | None, directory_id: uuid.UUID | None = None) -> None:
        self.local_id = local_id
        self.directory_id = directory_id
        self.started = time.monotonic()
        self.commit_latency = _Window()
        self.election_latency = _Window()
        self.appended_as_leader = _Window()
        self.fetched_as_follower = _Window()
        self.poll_idle = _Window()
        self._election_started: float | None = None
        self.snapshot: dict[str, Any] = {}

    def on_poll_idle(self, idle_s: float) -> None:
        """The loop spent ``idle_s`` seconds blocked waiting for input (Kafka's poll-idle-ratio-avg)."""
        self.poll_idle.add(idle_s, time.monotonic())

    def on_ready(
        self,
        ready: Ready,
        status: QuorumStatus,
        now_ms: int,
        log_end_epoch: int = 0,
        voter_change_pending: bool = False,
    ) -> None:
        now = time.monotonic()
        records = sum(len(b.records) for b in ready.log_appended)
        if records:
            (
                self.appended_as_leader if status.role is Role.LEADER else self.fetched_as_follower
            ).add(records, now)
        if status.role is Role.LEADER:
            for batch in ready.committed:
                if batch.records and batch.append_time_ms > 0:
                    self.commit_latency.add(
                        (now_ms - batch.append_time_ms) / len(batch.records), now
                    )
        if status.role in (Role.PROSPECTIVE, Role.CANDIDATE):
            if self._election_started is None:
                self._election_started = now
        elif self._election_started is not None:
            if status.role in (Role.LEADER, Role.FOLLOWER):
                self.election_latency.add(1000 * (now - self._election_started), now)
            self._election_started = None
        self.snapshot = self._values(status, now, log_end_epoch, voter_change_pending)

    def _values(
        self, status: QuorumStatus, now: float, log_end_epoch: int, voter_change_pending: bool
    ) -> dict[str, Any]:
        voted = status.voted_key
        me = status.role in (Role.LEADER, Role.CANDIDATE)
        if me:
            vote_directory = self.directory_id
        else:
            vote_directory = None if voted is None else voted.directory_id
        values = {
            "current-state": state_name(status, self.local_id),
            "current-leader": -1 if status.leader_id is None else status.leader_id,
            "current-vote": self.local_id if me else (-1 if voted is None else voted.id),
            "current-vote-directory-id": uuid_to_str(vote_directory or ZERO_UUID),
            "current-epoch": status.epoch,
            "high-watermark": -1 if status.high_watermark is None else status.high_watermark,
            "log-end-offset": status.log_end_offset,
            "log-end-epoch": log_end_epoch,
            "number-of-voters": len(status.voters),
            "number-unknown-voter-connections": 0,
            "commit-latency-avg": self.commit_latency.avg(now),
            "commit-latency-max": self.commit_latency.max(now),
            "election-latency-avg": self.election_latency.avg(now),
            "election-latency-max": self.election_latency.max(now),
            "append-records-rate": self.appended_as_leader.rate(now, self.started),
            "fetch-records-rate": self.fetched_as_follower.rate(now, self.started),
            "poll-idle-ratio-avg": self.poll_idle.time_ratio(now, self.started),
        }
        if status.role is Role.LEADER:
            values["number-of-observers"] = len(status.observer_progress)
            values["uncommitted-voter-change"] = int(voter_change_pending)
        return values


def serve_prometheus(metrics: RaftMetrics, port: int) -> WSGIServer:
    """Start the HTTP endpoint on 127.0.0.1:``port`` (prometheus-client); returns the server."""
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.core import GaugeMetricFamily

    class Collector:
        def collect(self) -> Iterator[Metric]:
            values = dict(metrics.snapshot)
            for name, label in STRING_GAUGES.items():
                if name in values:
                    family = GaugeMetricFamily(
                        PREFIX + name.replace("-", "_"), f"raft-metrics {name}", labels=[label]
                    )
                    family.add_metric([values.pop(name)], 1)
                    yield family
            for name, value in values.items():
                yield GaugeMetricFamily(
                    PREFIX + name.replace("-", "_"), f"raft-metrics {name}", value=value
                )

    registry = CollectorRegistry()
    registry.register(Collector())
    server, _thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    return server
