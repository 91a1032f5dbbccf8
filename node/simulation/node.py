"""One simulated KRaft process: its disk (which survives crashes), the core, the counter application and
the driver loop that turns the core's :class:`Ready` batches into disk writes, messages and callbacks.

Disk model: a Ready that persists a quorum state or flushes the log is one disk operation taking
``fsync_ms`` virtual milliseconds. Like Kafka's single raft thread blocked in fsync, the node handles
nothing else meanwhile (arriving messages wait in ``deferred``), and the Ready's messages leave only when
the operation completes. A crash during the operation loses the quorum-state write (the atomic rename
never happened) and, when the crash loses unflushed data, the log suffix above the flushed offset.
"""

from __future__ import annotations

from typing import Any, Protocol

from kraftwire.node.core import (
    Config,
    KRaftCore,
    KRaftVersionUpgradeError,
    NotLeaderError,
    ReadIndex,
    ReplicaKey,
    Role,
    Shutdown,
    Tick,
)
from kraftwire.node.core.api import (
    CommittedBatch,
    ElectionState,
    LeaderChanged,
    OutboundRequest,
    OutboundResponse,
    QuorumStatus,
    ReadFailed,
    ReadReady,
    Ready,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SnapshotLoaded,
)

from .counter import ReplicatedCounter
from .host import Disk, Failure, Host
from .invariants import Checker
from .linearizability import History
from .violation import Violation
from .wire import Envelope


class NodeHost(Host, Protocol):
    """What a simulated process asks of the simulation around it."""

    @property
    def checker(self) -> Checker: ...

    @property
    def history(self) -> History:
        """The read workload's history of writes and reads (issue #13), checked after the run."""
        ...

    def core_config(self, node: "SimNode") -> Config:
        """The Config for a new incarnation of ``node`` (its own random source drawn now)."""
        ...

    def core_event(self, node: "SimNode") -> None:
        """``node``'s core is about to handle one input: count it, and check the node afterwards."""
        ...

    def send_response(
        self,
        src: "SimNode",
        dest_id: int,
        dest_inc: int | None,
        cid: int,
        version: int,
        response: Any,
    ) -> None: ...

    def exited(self, node: "SimNode") -> None:
        """A graceful shutdown completed: the process exits cleanly."""
        ...

    def refused(self, node: "SimNode", line: str) -> None:
        """``node`` refused a peer's message (``line`` says which and why): count it, and judge it."""
        ...

    def crash_mid_fsync(self, node: "SimNode") -> None: ...


class SimNode:
    def __init__(
        self, host: NodeHost, node_id: int, disk: Disk, config: dict[str, Any], snapshot_every: int
    ) -> None:
        self.host = host
        self.id = node_id
        self.disk = disk
        self.config = config  # extra Config keyword arguments (timers, pre_vote, auto_join, ...)
        self.snapshot_every = snapshot_every  # the counter's snapshot interval, in records
        self.versions: dict[int, int] = (
            {}
        )  # api key -> highest version this node speaks (if capped)
        self.inc = 0  # process incarnation
        self.core: KRaftCore | None = None
        self.counter: ReplicatedCounter | None = None
        self.pending: Ready | None = None  # the Ready whose disk operation is in progress
        self.deferred: list[Envelope | Failure] = (
            []
        )  # inputs that arrived during the disk operation
        self.next_tick: int | None = None
        # (source, correlation id) -> source incarnation
        self.requesters: dict[tuple[int, int], int] = {}
        # (node id, correlation id) -> the id the core addressed (a bootstrap server's synthetic id)
        self.aliases: dict[tuple[int, int], int] = {}
        self.fsync_ms = 0
        self.kill_on_next_fsync = False  # crash mid-fsync, losing unflushed data (a targeted fault)
        self.stopping = False  # graceful shutdown requested

    @property
    def key(self) -> ReplicaKey:
        return ReplicaKey(self.id, self.disk.directory_id)

    @property
    def running(self) -> bool:
        return self.core is not None

    @property
    def writable(self) -> bool:
        """The application has been told this node leads (it appends)."""
        return self.counter is not None and self.counter.writable

    @property
    def applied_offset(self) -> int:
        """The next offset the application expects (0 while the process is down)."""
        return 0 if self.counter is None else self.counter.next_offset

    def status(self) -> QuorumStatus:
        """The running core's :meth:`~KRaftCore.status`."""
        return self._core().status()

    def _note(self, kind: str, *details: Any) -> None:
        """A trace line ``nN <kind> <details>``."""
        self.host.trace.note(self.host.queue.now, kind, f"n{self.id}", kind, *details)

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        host = self.host
        self.inc += 1
        self.stopping = False
        cfg = host.core_config(self)
        self.counter = ReplicatedCounter(self.id, host.checker, self.snapshot_every)
        host.checker.on_restart(self.id)
        self._note("start", f"(incarnation {self.inc}, log end {self.disk.log.end_offset()})")
        try:
            self.core = KRaftCore(cfg, self.disk.log, self.disk.qs, self.disk.snaps)
        except Exception as exc:
            raise Violation(f"node {self.id} failed to start: {type(exc).__name__}: {exc}") from exc
        host.checker.touched[self.id] = self
        host.checker.on_snapshots_changed(self)
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
        self.host.history.node_stopped(self.id)
        self.host.checker.touched[self.id] = self
        self.host.checker.log_shrunk()

    # -- inputs ----------------------------------------------------------------------------------------

    def step(self, event: Any) -> Any:
        """Feed one input to the core (every call counts as one core event)."""
        core = self._core()
        self.host.core_event(self)
        st = core.status()
        before = (st.role, st.epoch, st.leader_id)
        try:
            result = core.step(event)
        except Exception as exc:  # no input, a peer's message least of all, may end the process
            raise Violation(f"node {self.id}: core raised {type(exc).__name__}: {exc}") from exc
        st = core.status()
        if (st.role, st.epoch, st.leader_id) != before:
            after = _state(st.role, st.epoch, st.leader_id)
            self.host.trace.note(
                self.host.queue.now, "state", f"n{self.id}", _state(*before), "->", after
            )
        return result

    def receive(self, env: Envelope) -> None:
        if self.pending is not None:
            self.deferred.append(env)
            return
        host = self.host
        now = host.queue.now
        if env.is_request:
            body = host.codec.unpack_request(env)
            self.requesters[(env.src, env.correlation_id)] = env.src_inc
            if len(self.requesters) > 4096:  # requests the core never answers must not pile up
                del self.requesters[next(iter(self.requesters))]
            host.trace.add((now, "recv", self.id, env.src, env.version, body))
            self.step(RequestReceived(env.src, env.correlation_id, env.version, body, now))
        else:
            body = host.codec.unpack_response(env)
            source = (
                self.aliases.pop((env.src, env.correlation_id), env.src)
                if self.aliases
                else env.src
            )
            host.trace.add((now, "recv", self.id, source, env.version, body))
            self.step(ResponseReceived(source, env.correlation_id, env.version, body, now))
        self.drain()

    def request_failed(self, failure: Failure) -> None:
        dest, cid, api_key, error = failure
        if self.pending is not None:
            self.deferred.append(failure)
            return
        if self.aliases:
            dest = self.aliases.pop((dest, cid), dest)
        now = self.host.queue.now
        self.host.trace.add((now, "fail", self.id, dest, api_key, error))
        self.step(RequestFailed(dest, cid, error, now))
        self.drain()

    def tick(self, inc: int) -> None:
        now = self.host.queue.now
        if inc != self.inc or self.core is None or self.next_tick != now:
            return  # stale: a newer tick was planned or the process restarted
        self.next_tick = None
        if self.pending is not None:
            return  # the disk is busy; the tick is planned again when it completes
        self.step(Tick(now))
        self.drain()

    def append_next(self) -> None:
        """The workload: a writable counter appends its next value."""
        counter = self._counter()
        try:
            result = self._call(
                "append",
                self._core().append,
                [counter.next_record()],
                self.host.queue.now,
                expected=(NotLeaderError,),
            )
        except NotLeaderError:
            return
        counter.appended()
        self.host.history.append_called(result.epoch, result.last_offset, self.host.queue.now)
        self.drain()

    def read(self, read_id: int, timeout_ms: int) -> None:
        """The read workload (issue #13): a linearizable read of the counter on this node."""
        now = self.host.queue.now
        self.host.history.read_called(self.id, read_id, now)
        self.step(ReadIndex(read_id, timeout_ms, now))
        self.drain()

    def alias(self, real_id: int, cid: int, addressed_id: int) -> None:
        """The core sent ``cid`` to ``addressed_id`` (e.g. bootstrap server -2), which is node ``real_id``."""
        self.aliases[(real_id, cid)] = addressed_id
        if len(self.aliases) > 4096:
            del self.aliases[next(iter(self.aliases))]

    def _call(
        self, what: str, method: Any, *args: Any, expected: tuple[type[Exception], ...] = ()
    ) -> Any:
        """A direct core call (append, snapshot, upgrade): one core event; an exception other than the
        ``expected`` ones is a violation."""
        self.host.core_event(self)
        try:
            return method(*args)
        except expected:
            raise
        except Exception as exc:
            raise Violation(f"node {self.id}: {what} raised {type(exc).__name__}: {exc}") from exc

    def upgrade_kraft_version(self, version: int) -> str:
        """Ask this node's core to raise kraft.version; returns what happened, for the trace."""
        if self.core is None or self.pending is not None:
            return "not now (stopped or mid-fsync)"
        core, refusals = self.core, (NotLeaderError, KRaftVersionUpgradeError)
        try:
            now = self.host.queue.now
            appended = self._call(
                "upgrade", core.upgrade_kraft_version, version, None, False, now, expected=refusals
            )
        except refusals as exc:
            return f"refused: {type(exc).__name__}: {exc}"
        self.drain()
        return "appended" if appended else "nothing to append"

    def shutdown(self, timeout_ms: int) -> None:
        self.stopping = True
        self.step(Shutdown(timeout_ms, self.host.queue.now))
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
                    self.host.crash_mid_fsync(self)
                    return
                self.host.queue.after(self.fsync_ms, self._disk_done, (self.inc, rd))
                return
            self._release(rd)
            core = self.core  # a completed graceful shutdown stops the process
        if core is not None and self.pending is None:
            self._plan_tick(core)

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
        """The disk operation of ``rd`` is done: send, notify the application, advance the core, then
        act on what the application and the core asked for meanwhile."""
        self._write_disk(rd)
        self._send(rd)
        self._notify(rd)
        for line in rd.refused:
            self._note("refused", line.removeprefix("refused "))
            self.host.refused(self, line)
        self.host.core_event(self)
        self._core().advance(rd)
        self._after_advance(rd)

    def _write_disk(self, rd: Ready) -> None:
        disk, checker = self.disk, self.host.checker
        if rd.quorum_state is not None:
            disk.qs.write(rd.quorum_state)
            self._note("persist", _election(rd.quorum_state))
            checker.on_persist(self.id, rd.quorum_state)
        if rd.log_truncated_to is not None:
            self._note("truncate", "to", rd.log_truncated_to)
            checker.log_shrunk()
        if rd.flush_log_to is not None:
            disk.log.flush(rd.flush_log_to)

    def _send(self, rd: Ready) -> None:
        host = self.host
        for msg in rd.messages:
            if type(msg) is OutboundRequest:
                host.send_request(
                    self,
                    msg.destination,
                    msg.correlation_id,
                    msg.request,
                    msg.min_version,
                    msg.endpoint,
                )
            else:
                assert isinstance(msg, OutboundResponse)
                src_inc = self.requesters.pop((msg.destination, msg.correlation_id), None)
                host.send_response(
                    self,
                    msg.destination,
                    src_inc,
                    msg.correlation_id,
                    msg.api_version,
                    msg.response,
                )

    def _notify(self, rd: Ready) -> None:
        counter = self._counter()
        history, now = self.host.history, self.host.queue.now
        for n in rd.notifications:
            if isinstance(n, CommittedBatch):
                counter.handle_commit(n)
                for i, record in enumerate(n.records):
                    history.committed(self.id, n.epoch, n.base_offset + i, int(record), now)
            elif isinstance(n, SnapshotLoaded):
                counter.handle_load_snapshot(n, self.status().role is Role.LEADER)
            elif isinstance(n, ReadReady):
                history.read_returned(self.id, n.read_id, counter.value, now)
            elif isinstance(n, ReadFailed):
                history.read_failed(self.id, n.read_id)
            elif isinstance(n, LeaderChanged):
                counter.handle_leader_change(n.leader)
                self._note("leader-change", f"leader={n.leader.leader_id} epoch={n.leader.epoch}")

    def _after_advance(self, rd: Ready) -> None:
        if rd.snapshot_writes:
            self._note(
                "snapshots",
                " ".join(
                    f"{w.kind}({w.snapshot_id.end_offset},{w.snapshot_id.epoch})"
                    for w in rd.snapshot_writes
                ),
            )
            self.host.checker.on_snapshots_changed(self)
        counter = self._counter()
        if counter.pending_snapshot is not None:
            end, records = counter.pending_snapshot
            counter.pending_snapshot = None
            now = self.host.queue.now
            self._call(f"create_snapshot({end})", self._core().create_snapshot, end, records, now)
        if rd.shutdown_complete:
            self._note("shutdown", "complete")
            self.disk.log.flush(
                self.disk.log.end_offset()
            )  # a clean exit closes (and flushes) the log
            self.host.exited(self)

    def _plan_tick(self, core: KRaftCore) -> None:
        now = self.host.queue.now
        d = core.next_deadline_ms()
        if d <= now:
            d = now + 1  # the core has just polled; never spin at one instant
        if d != self.next_tick:
            self.next_tick = d
            self.host.queue.at(d, self.tick, self.inc)

    def _core(self) -> KRaftCore:
        """The running core (callers only act on a running process)."""
        assert self.core is not None, f"node {self.id} is not running"
        return self.core

    def _counter(self) -> ReplicatedCounter:
        assert self.counter is not None, f"node {self.id} is not running"
        return self.counter


def _state(role: Role, epoch: int, leader: int | None) -> str:
    return f"{role.value}(e{epoch}{'' if leader is None else f' L{leader}'})"


def _election(s: ElectionState) -> str:
    parts = [f"epoch={s.epoch}"]
    if s.leader_id is not None:
        parts.append(f"leader={s.leader_id}")
    if s.voted_key is not None:
        parts.append(f"voted={s.voted_key}")
    return " ".join(parts)
