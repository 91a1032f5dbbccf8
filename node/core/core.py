"""KRaftCore: the sans-IO KRaft node (see :mod:`.api` for the contract).

Each input is handled in three phases, like one turn of Kafka's ``poll()``:

1. dispatch the event to its handler (requests, responses, failures, appends, snapshots, shutdown);
2. ``_poll``: the timed work of the current state (:mod:`.poll`), e.g. send Fetch, resend votes,
   drain the append accumulator, resign on check-quorum expiry;
3. ``_after``: answer waiters orphaned by a transition, deliver committed batches and leader changes.

Outputs accumulate in :class:`.outbox.Outbox` until :meth:`KRaftCore.ready`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from . import errors
from .api import (
    Append,
    AppendResult,
    Config,
    CreateSnapshot,
    ElectionState,
    Endpoint,
    Event,
    InvariantViolation,
    LeaderAndEpoch,
    LogBatch,
    NotLeaderError,
    OutboundRequest,
    OutboundResponse,
    QuorumStateStore,
    QuorumStatus,
    RaftLog,
    Ready,
    ReplicaKey,
    ReplicaStatus,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    Role,
    Shutdown,
    SnapshotId,
    SnapshotStore,
    Tick,
    UpgradeKRaftVersion,
    VoterSpec,
)
from .leader import LeaderState, ReplicaProgress
from .outbox import Outbox
from .requests import RequestManager
from .states import EpochState
from .voters import ControlState, VoterSet
from .delivery import deliver_committed, maybe_fire_leader_change
from .dispatch import dispatch_failure, dispatch_request, dispatch_response, on_request_timeout
from .leader_ops import on_flushed
from .poll import poll_state, shutdown_complete, state_deadline
from .snapshots import create_snapshot
from .kraft_upgrade import upgrade_kraft_version


class KRaftCore:
    """One KRaft replica (voter or observer) as a pure state machine.

    Public surface: :meth:`step`, :meth:`tick`, :meth:`append`, :meth:`create_snapshot`,
    :meth:`upgrade_kraft_version`, :meth:`shutdown`, :meth:`has_ready`, :meth:`ready`, :meth:`advance`,
    :meth:`next_deadline_ms`, plus read-only properties for tests, the simulator and DescribeQuorum-style
    introspection.
    """

    def __init__(
        self,
        config: Config,
        log: RaftLog,
        quorum_store: QuorumStateStore,
        snapshots: SnapshotStore,
    ) -> None:
        if config.directory_id.int == 0:
            raise ValueError("directory id must be set and non-zero")
        self.cfg = config
        self.log = log
        self.quorum_store = quorum_store
        self.snapshots = snapshots
        self.rng = config.rng
        self.now = config.start_ms
        self.local_key: ReplicaKey | None = config.local_key
        self.local_id: int | None = config.node_id
        self.requests = RequestManager(config.request_timeout_ms, config.retry_backoff_ms)
        self.out = Outbox()
        self.after_transition: list[Callable[[], None]] = []
        self.shutdown_deadline: int | None = None
        self.shutdown_done = False
        self.delivered_offset = 0
        self.last_leader_fired: LeaderAndEpoch | None = None
        self.edges_seen: set[tuple[Role, Role]] = set()
        # next_deadline_ms is asked for after every Ready; it only changes when an input or advance()
        # ran, so it is computed once per input (the stamp counts inputs).
        self._stamp = 0
        self._deadline_stamp = -1
        self._deadline = 0
        self.discovery_cache: tuple | None = None  # see poll._discovery_targets
        self._voter_check: tuple[VoterSet, bool] | None = None
        self._status: tuple[int, QuorumStatus] | None = None  # (stamp, snapshot): one per input at most
        self._listener_name = next(iter(config.listeners), None)
        self.control = _initial_control_state(config)
        from .startup import initialize

        self.state: EpochState = initialize(self)
        self._poll()
        self._after()

    # -- inputs ----------------------------------------------------------------------------------------

    def step(self, event: Event) -> Any:
        """Handle one input. Returns an :class:`AppendResult` for :class:`Append`, the
        :class:`SnapshotId` for :class:`CreateSnapshot`, whether a batch was appended for
        :class:`UpgradeKRaftVersion`, else ``None``."""
        if event.now_ms > self.now:
            self.now = event.now_ms
        self._stamp += 1
        result = None
        t = type(event)
        if t is RequestReceived:
            dispatch_request(self, event)  # type: ignore[arg-type]
        elif t is ResponseReceived:
            dispatch_response(self, event)  # type: ignore[arg-type]
        elif t is RequestFailed:
            dispatch_failure(self, event)  # type: ignore[arg-type]
        elif t is Append:
            result = self._append(event)  # type: ignore[arg-type]
        elif t is CreateSnapshot:
            result = create_snapshot(self, event)  # type: ignore[arg-type]
        elif t is UpgradeKRaftVersion:
            result = upgrade_kraft_version(self, event)  # type: ignore[arg-type]
        elif t is Shutdown:
            # Like Kafka's shutdown(): only flag it; the next poll (any later event or tick) acts on it,
            # so a request handled in between still sees a leader that is shutting down.
            if self.shutdown_deadline is None:
                self.shutdown_deadline = self.now + event.timeout_ms  # type: ignore[union-attr]
            return None
        elif t is not Tick:
            raise TypeError(f"not a core event: {event!r}")
        self._poll()
        self._after()
        return result

    def tick(self, now_ms: int) -> None:
        self.step(Tick(now_ms))

    def append(self, records: Sequence[bytes], now_ms: int | None = None, epoch: int | None = None) -> AppendResult:
        """Leader-only append; raises :class:`NotLeaderError` otherwise."""
        return self.step(Append(tuple(records), self.now if now_ms is None else now_ms, epoch))

    def create_snapshot(self, end_offset: int, records: Sequence[bytes], now_ms: int | None = None) -> SnapshotId | None:
        return self.step(CreateSnapshot(end_offset, tuple(records), self.now if now_ms is None else now_ms))

    def upgrade_kraft_version(
        self, version: int, epoch: int | None = None, validate_only: bool = False, now_ms: int | None = None
    ) -> bool:
        """Leader-only kraft.version upgrade (see :class:`UpgradeKRaftVersion`); True if appended."""
        return self.step(UpgradeKRaftVersion(version, self.now if now_ms is None else now_ms, epoch, validate_only))

    def shutdown(self, timeout_ms: int, now_ms: int | None = None) -> None:
        self.step(Shutdown(timeout_ms, self.now if now_ms is None else now_ms))

    # -- outputs ---------------------------------------------------------------------------------------

    def has_ready(self) -> bool:
        return not self.out.is_empty() or (self.shutdown_done and not self.out.shutdown_reported)

    def ready(self) -> Ready:
        rd = self.out.take(self.shutdown_done, self.next_deadline_ms())
        return rd

    def advance(self, ready: Ready) -> None:
        """The driver handled ``ready``: its log flush is durable, so the leader may count it."""
        st = self.state
        if ready.flush_log_to is not None and isinstance(st, LeaderState):
            self._stamp += 1
            on_flushed(self, st, ready.flush_log_to)
            self._after()

    def next_deadline_ms(self) -> int:
        if self._deadline_stamp == self._stamp:
            return self._deadline
        now = self.now
        d = state_deadline(self)
        w = self.requests.next_wakeup(now)
        if w is not None and w < d:
            d = w
        if self.shutdown_deadline is not None and not self.shutdown_done and self.shutdown_deadline < d:
            d = self.shutdown_deadline
        if d < now:
            d = now
        self._deadline_stamp = self._stamp
        self._deadline = d
        return d

    # -- read-only views -------------------------------------------------------------------------------

    @property
    def role(self) -> Role:
        return self.state.role

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int | None:
        return self.state.leader_id

    @property
    def high_watermark(self) -> int | None:
        return self.state.high_watermark

    def voters(self) -> VoterSet:
        return self.control.latest_voters()

    def is_voter(self) -> bool:
        voters = self.voters()
        cached = self._voter_check
        if cached is None or cached[0] is not voters:  # voter sets are immutable: one answer each
            cached = self._voter_check = (voters, voters.is_voter(self.local_key))
        return cached[1]

    def election_state(self) -> ElectionState:
        return self.state.election_state(self.control.kraft_version())

    def status(self) -> QuorumStatus:
        """A frozen snapshot of this replica: role, epoch, leader, voters, high watermark, log end and,
        on a leader, every replica's progress (what DescribeQuorum reports)."""
        if self._status is not None and self._status[0] == self._stamp:
            return self._status[1]
        st, control, log = self.state, self.control, self.log
        hw = st.high_watermark
        voter_progress: tuple[ReplicaStatus, ...] = ()
        observer_progress: tuple[ReplicaStatus, ...] = ()
        if isinstance(st, LeaderState):
            voter_progress = tuple(
                self._replica_status(p, nid == st.local_key.id) for nid, p in sorted(st.voter_states.items())
            )
            timeout = self.cfg.observer_session_timeout_ms
            observer_progress = tuple(
                self._replica_status(p, False)
                for k, p in sorted(st.observer_states.items(), key=lambda kv: (kv[0].id, str(kv[0].directory_id)))
                if self.now - p.last_fetch_ms <= timeout
            )
        status = QuorumStatus(
            role=st.role,
            epoch=st.epoch,
            leader_id=st.leader_id,
            voted_key=st.voted_key,
            high_watermark=hw,
            log_start_offset=log.start_offset(),
            log_end_offset=log.end_offset(),
            kraft_version=control.kraft_version(),
            voters=tuple(control.latest_voters()),
            committed_voters=None if hw is None else tuple(control.voters_at(hw - 1)),
            voters_offset=control.last_voters_offset(),
            voter_progress=voter_progress,
            observer_progress=observer_progress,
        )
        self._status = (self._stamp, status)
        return status

    def _replica_status(self, p: ReplicaProgress, is_local: bool) -> ReplicaStatus:
        if is_local:
            return ReplicaStatus(p.key, self.log.end_offset(), self.now, self.now)
        return ReplicaStatus(p.key, p.end_offset, p.last_fetch_ms, p.last_caught_up_ms)

    # -- helpers for handlers --------------------------------------------------------------------------

    def trace_transition(self, src: Role, dst: Role) -> None:
        self.edges_seen.add((src, dst))

    def random_election_timeout(self) -> int:
        t = self.cfg.election_timeout_ms
        return t + self.rng.randrange(t) if t > 0 else 0

    def listener_name(self) -> str | None:
        return self._listener_name

    def local_voter_spec(self) -> VoterSpec:
        assert self.local_key is not None
        return VoterSpec(self.local_key, dict(self.cfg.listeners), tuple(self.cfg.supported_kraft_version))

    def endpoint_of(self, node_id: int) -> Endpoint | None:
        st = self.state
        eps = getattr(st, "leader_endpoints", None) if st.leader_id == node_id else None
        if not eps:
            eps = self.voters().endpoints(node_id)
        if not eps:
            return None
        name = self.listener_name()
        return eps.get(name) if name in eps else next(iter(eps.values()))

    def leader_endpoint(self) -> tuple[int, Endpoint] | None:
        """(leader id, endpoint) for responses' NodeEndpoints, when known."""
        lid = self.state.leader_id
        if lid is None:
            return None
        if lid == self.local_id:
            name = self.listener_name()
            return (lid, self.cfg.listeners[name]) if name is not None else None
        ep = self.endpoint_of(lid)
        return None if ep is None else (lid, ep)

    def send_request(
        self,
        dest: int,
        request: Any,
        endpoint: Endpoint | None = None,
        min_version: int = 0,
        timeout_ms: int | None = None,
    ) -> int:
        cid = self.requests.next_correlation_id()
        self.requests.on_send(dest, cid, request.API_KEY, self.now, timeout_ms)
        self.out.send(OutboundRequest(dest, cid, request, endpoint or self.endpoint_of(dest), min_version))
        return cid

    def respond(self, ev: RequestReceived, response: Any) -> None:
        self.out.send(OutboundResponse(ev.source, ev.correlation_id, ev.api_version, response))

    def respond_to(self, dest: int, correlation_id: int, api_version: int, response: Any) -> None:
        self.out.send(OutboundResponse(dest, correlation_id, api_version, response))

    def append_to_log(self, batches: Sequence[LogBatch]) -> None:
        self.log.append(batches)
        for b in batches:
            self.control.apply_batch(b)
            self.out.appended(b)
        self.out.need_flush(self.log.end_offset())

    def truncate_log(self, offset: int) -> None:
        hw = self.state.high_watermark
        if hw is not None and offset < hw:
            raise InvariantViolation(f"truncation to {offset} below the high watermark {hw}")
        self.log.truncate_to(offset)
        self.control.truncate_new_entries(self.log.end_offset())
        self.out.truncated(self.log.end_offset())

    # -- internals -------------------------------------------------------------------------------------

    def _append(self, ev: Append) -> AppendResult:
        st = self.state
        if not isinstance(st, LeaderState) or (ev.epoch is not None and ev.epoch != st.epoch):
            raise NotLeaderError(f"not leader of epoch {ev.epoch}: {st.describe()}")
        if self.shutdown_deadline is not None:
            raise NotLeaderError("shutting down")
        if not ev.records:
            raise ValueError("append needs at least one record")
        last = st.accept(ev.records, self.now)
        return AppendResult(last, st.epoch)

    def _poll(self) -> None:
        if self.requests.has_expired(self.now):
            for dest, flight in self.requests.expire(self.now):
                on_request_timeout(self, dest, flight)
        for _ in range(8):  # a transition may enable more work at once (Kafka polls again with 0 wait)
            before = self.state
            poll_state(self)
            if self.state is before:
                break

    def _after(self) -> None:
        if self.after_transition:
            while self.after_transition:
                self.after_transition.pop(0)()
        deliver_committed(self)
        maybe_fire_leader_change(self)
        if self.shutdown_deadline is not None and not self.shutdown_done:
            self.shutdown_done = shutdown_complete(self)


def _initial_control_state(cfg: Config) -> ControlState:
    if cfg.kraft_version >= 1:
        return ControlState(VoterSet(), VoterSet(cfg.voters) if cfg.voters else None, cfg.kraft_version)
    static = VoterSet(
        VoterSpec(ReplicaKey(v.key.id, None), v.listeners, (0, 0)) for v in cfg.voters
    )
    return ControlState(static, None, 0)


__all__ = ["KRaftCore", "errors"]
