"""One simulated KRaft process: its disk (which survives crashes), the core, the counter application and
the driver loop that turns the core's :class:`Ready` batches into disk writes, messages and callbacks.

Disk model: a Ready that persists a quorum state or flushes the log is one disk operation taking
``fsync_ms`` virtual milliseconds. Like Kafka's single raft thread blocked in fsync, the node handles
nothing else meanwhile (arriving messages wait in ``deferred``), and the Ready's messages leave only when
the operation completes. A crash during the operation loses the quorum-state write (the atomic rename
never happened) and, when the crash loses unflushed data, the log suffix above the flushed offset.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kraftwire.node.core import (
    Config,
    Endpoint,
    KRaftCore,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    KRaftVersionUpgradeError,
    LeaderConflict,
    NotLeaderError,
    ReadIndex,
    ReplicaKey,
    Role,
    Shutdown,
    Tick,
)
from kraftwire.node.core.api import (
    CommittedBatch,
    LeaderChanged,
    OutboundRequest,
    ReadFailed,
    ReadReady,
    Ready,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SnapshotLoaded,
)

from .counter import ReplicatedCounter
from .invariants import Violation
from .wire import Envelope

if TYPE_CHECKING:
    from .simulation import Simulation

LISTENER = "CONTROLLER"


def endpoint_of(node_id: int) -> Endpoint:
    return Endpoint(f"node{node_id}", 9000 + node_id)


@dataclass
class Disk:
    """What survives a crash: log, quorum-state file, snapshots and the directory id (meta.properties)."""

    directory_id: uuid.UUID
    log: MemoryLog = field(default_factory=MemoryLog)
    qs: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    snaps: MemorySnapshotStore = field(default_factory=MemorySnapshotStore)


class SimNode:
    def __init__(self, sim: "Simulation", node_id: int, disk: Disk, config: dict[str, Any]) -> None:
        self.sim = sim
        self.id = node_id
        self.disk = disk
        self.config = config  # extra Config keyword arguments (timers, pre_vote, auto_join, ...)
        self.versions: dict[int, int] = (
            {}
        )  # api key -> highest version this node speaks (if capped)
        self.inc = 0  # process incarnation
        self.core: KRaftCore | None = None
        self.counter: ReplicatedCounter | None = None
        self.pending: Ready | None = None  # the Ready whose disk operation is in progress
        self.deferred: list[Any] = []  # inputs that arrived during the disk operation
        self.next_tick: int | None = None
        self.requesters: dict[tuple[int, int], int] = (
            {}
        )  # (source, correlation id) -> source incarnation
        # (node id, correlation id) -> the id the core addressed (a bootstrap server's synthetic id)
        self.aliases: dict[tuple[int, int], int] = {}
        self.fsync_ms = 0
        self.kill_on_next_fsync = False  # crash mid-fsync, losing unflushed data (a targeted fault)
        self.stopping = False  # graceful shutdown requested
        self.wiped = False  # lost its disk during this run

    @property
    def key(self) -> ReplicaKey:
        return ReplicaKey(self.id, self.disk.directory_id)

    @property
    def running(self) -> bool:
        return self.core is not None

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        sim = self.sim
        self.inc += 1
        self.stopping = False
        cfg = Config(
            node_id=self.id,
            directory_id=self.disk.directory_id,
            cluster_id=sim.cluster_id,
            voters=sim.bootstrap_voters,
            rng=random.Random(sim.rng.getrandbits(64)),
            start_ms=sim.queue.now,
            listeners={LISTENER: endpoint_of(self.id)},
            kraft_version=sim.options.kraft_version,
            **self.config,
        )
        self.counter = ReplicatedCounter(self.id, sim.checker, sim.snapshot_every)
        sim.checker.on_restart(self.id)
        sim.trace.note(
            sim.queue.now,
            f"n{self.id}",
            "start",
            f"(incarnation {self.inc}, log end {self.disk.log.end_offset()})",
        )
        try:
            self.core = KRaftCore(cfg, self.disk.log, self.disk.qs, self.disk.snaps)
        except Exception as exc:
            raise Violation(f"node {self.id} failed to start: {type(exc).__name__}: {exc}") from exc
        sim.node_started(self)
        sim.checker.touched[self.id] = self
        sim.checker.on_snapshots_changed(self)
        self.drain()

    def stop(self, lose_unflushed: bool) -> None:
        """Crash (or, after a graceful shutdown, exit): everything in memory is gone."""
        if self.core is None:
            return
        self.core = None
        self.counter = None
        self.pending = None
        self.deferred.clear()
        self.requesters.clear()
        self.aliases.clear()
        self.next_tick = None
        self.kill_on_next_fsync = False
        self.disk.log.crash(lose_unflushed)
        self.disk.snaps.crash()
        self.sim.history.node_stopped(self.id)
        self.sim.checker.touched[self.id] = self
        self.sim.checker.log_shrunk()
        self.sim.node_stopped(self)

    # -- inputs ----------------------------------------------------------------------------------------

    def step(self, event: Any) -> Any:
        """Feed one input to the core (every call counts as one core event)."""
        core = self.core
        sim = self.sim
        sim.core_events += 1
        sim.checker.touched[self.id] = self
        st = core.state
        before = (st.role, st.epoch, st.leader_id)
        try:
            result = core.step(event)
        except LeaderConflict as exc:
            if not self.wiped:
                raise Violation(f"node {self.id}: core raised {type(exc).__name__}: {exc}") from exc
            # A node that lost its disk (quorum-state included) can be named leader of the epoch it
            # led before the wipe; Kafka treats that as fatal and the process exits. So does this one;
            # its supervisor restarts it. Any other invariant failure stays a violation.
            sim.fatal_exit(self, exc)
            return None
        except Exception as exc:
            raise Violation(f"node {self.id}: core raised {type(exc).__name__}: {exc}") from exc
        st = core.state
        if (st.role, st.epoch, st.leader_id) != before:
            sim.trace.note(
                sim.queue.now,
                f"n{self.id}",
                _state(*before),
                "->",
                _state(st.role, st.epoch, st.leader_id),
            )
        return result

    def receive(self, env: Envelope) -> None:
        if self.pending is not None:
            self.deferred.append(env)
            return
        sim = self.sim
        now = sim.queue.now
        if env.is_request:
            body = sim.codec.unpack_request(env)
            self.requesters[(env.src, env.correlation_id)] = env.src_inc
            if len(self.requesters) > 4096:  # requests the core never answers must not pile up
                del self.requesters[next(iter(self.requesters))]
            sim.trace.add((now, "recv", self.id, env.src, env.version, body))
            self.step(RequestReceived(env.src, env.correlation_id, env.version, body, now))
        else:
            body = sim.codec.unpack_response(env)
            source = (
                self.aliases.pop((env.src, env.correlation_id), env.src)
                if self.aliases
                else env.src
            )
            sim.trace.add((now, "recv", self.id, source, env.version, body))
            self.step(ResponseReceived(source, env.correlation_id, env.version, body, now))
        self.drain()

    def request_failed(self, failure: tuple[int, int, int, int]) -> None:
        dest, cid, api_key, error = failure
        if self.pending is not None:
            self.deferred.append(failure)
            return
        if self.aliases:
            dest = self.aliases.pop((dest, cid), dest)
        self.sim.trace.add((self.sim.queue.now, "fail", self.id, dest, api_key, error))
        self.step(RequestFailed(dest, cid, error, self.sim.queue.now))
        self.drain()

    def tick(self, inc: int) -> None:
        if inc != self.inc or self.core is None or self.next_tick != self.sim.queue.now:
            return  # stale: a newer tick was planned or the process restarted
        self.next_tick = None
        if self.pending is not None:
            return  # the disk is busy; the tick is planned again when it completes
        self.step(Tick(self.sim.queue.now))
        self.drain()

    def append_next(self) -> None:
        """The workload: a writable counter appends its next value."""
        counter = self.counter
        try:
            result = self.step_append(counter.next_record())
        except NotLeaderError:
            return
        counter.appended()
        self.sim.history.append_called(result.epoch, result.last_offset, self.sim.queue.now)
        self.drain()

    def read(self, read_id: int, timeout_ms: int) -> None:
        """The read workload (issue #13): a linearizable read of the counter on this node."""
        self.sim.history.read_called(self.id, read_id, self.sim.queue.now)
        self.step(ReadIndex(read_id, timeout_ms, self.sim.queue.now))
        self.drain()

    def alias(self, real_id: int, cid: int, addressed_id: int) -> None:
        """The core sent ``cid`` to ``addressed_id`` (e.g. bootstrap server -2), which is node ``real_id``."""
        self.aliases[(real_id, cid)] = addressed_id
        if len(self.aliases) > 4096:
            del self.aliases[next(iter(self.aliases))]

    def _call(self, what: str, method: Any, *args: Any, expected: tuple = ()) -> Any:
        """A direct core call (append, snapshot, upgrade): one core event; an exception other than the
        ``expected`` ones is a violation."""
        self.sim.core_events += 1
        self.sim.checker.touched[self.id] = self
        try:
            return method(*args)
        except expected:
            raise
        except Exception as exc:
            raise Violation(f"node {self.id}: {what} raised {type(exc).__name__}: {exc}") from exc

    def step_append(self, record: bytes) -> Any:
        core = self.core
        return self._call(
            "append", core.append, [record], self.sim.queue.now, expected=(NotLeaderError,)
        )

    def upgrade_kraft_version(self, version: int) -> str:
        """Ask this node's core to raise kraft.version; returns what happened, for the trace."""
        if self.core is None or self.pending is not None:
            return "not now (stopped or mid-fsync)"
        core, refusals = self.core, (NotLeaderError, KRaftVersionUpgradeError)
        try:
            now = self.sim.queue.now
            appended = self._call(
                "upgrade", core.upgrade_kraft_version, version, None, False, now, expected=refusals
            )
        except refusals as exc:
            return f"refused: {type(exc).__name__}: {exc}"
        self.drain()
        return "appended" if appended else "nothing to append"

    def shutdown(self, timeout_ms: int) -> None:
        self.stopping = True
        self.step(Shutdown(timeout_ms, self.sim.queue.now))
        self.drain()

    # -- the driver loop -------------------------------------------------------------------------------

    def drain(self) -> None:
        """Handle Ready batches until the core has nothing more or a disk operation is in progress."""
        core = self.core
        while core is not None and self.pending is None and core.has_ready():
            rd = core.ready()
            if (rd.quorum_state is not None or rd.flush_log_to is not None) and self.fsync_ms > 0:
                self.pending = rd
                if self.kill_on_next_fsync:
                    self.sim.crash_mid_fsync(self)
                    return
                self.sim.queue.after(self.fsync_ms, self._disk_done, (self.inc, rd))
                return
            self._release(rd)
            core = self.core  # a completed graceful shutdown stops the process
        if core is not None and self.pending is None:
            self._plan_tick()

    def _disk_done(self, arg: tuple[int, Ready]) -> None:
        inc, rd = arg
        if inc != self.inc or self.pending is not rd:
            return
        self.pending = None
        self._release(rd)
        self.drain()
        while self.deferred and self.pending is None and self.core is not None:
            item = self.deferred.pop(0)
            if isinstance(item, Envelope):
                self.receive(item)
            else:
                self.request_failed(item)

    def _release(self, rd: Ready) -> None:
        sim, disk = self.sim, self.disk
        if rd.quorum_state is not None:
            disk.qs.write(rd.quorum_state)
            sim.trace.note(sim.queue.now, f"n{self.id}", "persist", _election(rd.quorum_state))
            sim.checker.on_persist(self.id, rd.quorum_state)
        if rd.log_truncated_to is not None:
            sim.trace.note(sim.queue.now, f"n{self.id}", "truncate to", rd.log_truncated_to)
            sim.checker.log_shrunk()
        if rd.flush_log_to is not None:
            disk.log.flush(rd.flush_log_to)
        for msg in rd.messages:
            if type(msg) is OutboundRequest:
                sim.send_request(
                    self,
                    msg.destination,
                    msg.correlation_id,
                    msg.request,
                    msg.min_version,
                    msg.endpoint,
                )
            else:
                src_inc = self.requesters.pop((msg.destination, msg.correlation_id), None)
                sim.send_response(
                    self,
                    msg.destination,
                    src_inc,
                    msg.correlation_id,
                    msg.api_version,
                    msg.response,
                )
        counter = self.counter
        for n in rd.notifications:
            t = type(n)
            if t is CommittedBatch:
                counter.handle_commit(n)
                for i, record in enumerate(n.records):
                    sim.history.committed(
                        self.id, n.epoch, n.base_offset + i, int(record), sim.queue.now
                    )
            elif t is SnapshotLoaded:
                counter.handle_load_snapshot(n, self.core.state.role is Role.LEADER)
            elif t is ReadReady:
                sim.history.read_returned(self.id, n.read_id, counter.value, sim.queue.now)
            elif t is ReadFailed:
                sim.history.read_failed(self.id, n.read_id)
            elif t is LeaderChanged:
                counter.handle_leader_change(n.leader)
                sim.trace.note(
                    sim.queue.now,
                    f"n{self.id}",
                    "leader-change",
                    f"leader={n.leader.leader_id} epoch={n.leader.epoch}",
                )
        sim.core_events += 1
        sim.checker.touched[self.id] = self
        self.core.advance(rd)
        if rd.snapshot_writes:
            sim.trace.note(
                sim.queue.now,
                f"n{self.id}",
                "snapshots",
                " ".join(
                    f"{w.kind}({w.snapshot_id.end_offset},{w.snapshot_id.epoch})"
                    for w in rd.snapshot_writes
                ),
            )
            sim.checker.on_snapshots_changed(self)
        if counter.pending_snapshot is not None:
            end, records = counter.pending_snapshot
            counter.pending_snapshot = None
            self._call(
                f"create_snapshot({end})", self.core.create_snapshot, end, records, sim.queue.now
            )
        if rd.shutdown_complete:
            sim.trace.note(sim.queue.now, f"n{self.id}", "shutdown complete")
            disk.log.flush(disk.log.end_offset())  # a clean exit closes (and so flushes) the log
            sim.node_exited(self)

    def _plan_tick(self) -> None:
        now = self.sim.queue.now
        d = self.core.next_deadline_ms()
        if d <= now:
            d = now + 1  # the core has just polled; never spin at one instant
        if d != self.next_tick:
            self.next_tick = d
            self.sim.queue.at(d, self.tick, self.inc)


def _state(role: Any, epoch: int, leader: int | None) -> str:
    return f"{role.value}(e{epoch}{'' if leader is None else f' L{leader}'})"


def _election(s: Any) -> str:
    parts = [f"epoch={s.epoch}"]
    if s.leader_id is not None:
        parts.append(f"leader={s.leader_id}")
    if s.voted_key is not None:
        parts.append(f"voted={s.voted_key}")
    return " ".join(parts)
