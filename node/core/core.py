"""KRaftCore: the sans-IO KRaft node (see :mod:`.api` for the contract).

Each input is handled in three phases, like one turn of Kafka's ``poll()``:

1. dispatch the event to its handler (requests, responses, failures, appends, snapshots, shutdown);
2. ``_poll``: the timed work of the current state (:mod:`.poll`), e.g. send Fetch, resend votes,
   drain the append accumulator, resign on check-quorum expiry;
3. ``_after``: answer waiters orphaned by a transition, deliver committed batches and leader changes.

Outputs accumulate in :class:`.outbox.Outbox` until :meth:`KRaftCore.ready`.

The modules stack top-down; each imports only modules below it (``tests/test_layering.py`` checks):

* ``core``: this class, the only importer of the four below;
* ``dispatch`` (requests, responses, failures by API key), ``poll`` (timed work per state),
  ``startup`` (recovery and the initial state), ``delivery`` (application notifications);
* the handlers: ``vote``, ``quorum_epoch``, ``fetch_leader``, ``fetch_client`` (a client's Fetch),
  ``fetch_follower``, ``snapshots``, ``describe``, ``voter_changes``, ``voter_client``,
  ``kraft_upgrade``, ``read_offset``;
* ``common``: validation and response handling shared by the handlers;
* ``transitions``: every state change;
* ``leader_ops``: the leader's appends and the answers it owes;
* ``replica``: the replica's state and its primitives (respond, send, append, truncate);
* ``leader``: the leader's epoch state, over the other state and value modules: ``states``,
  ``voters``, ``requests``, ``outbox``, ``log_ops``, ``messages``, ``responses``, ``memory``,
  ``reads``;
* ``api``, the public contract, over ``config``, ``storage`` and ``batches`` (log batches to and from
  record-batch bytes), over ``values`` and ``errors``.
"""

from __future__ import annotations

from typing import Sequence, cast

from .api import (
    Append,
    AppendResult,
    Config,
    CreateSnapshot,
    ElectionState,
    Event,
    NotLeaderError,
    QuorumStateStore,
    QuorumStatus,
    RaftLog,
    ReadIndex,
    Ready,
    ReplicaStatus,
    RequestFailed,
    Resign,
    RequestReceived,
    ResponseReceived,
    Role,
    Shutdown,
    SnapshotId,
    SnapshotStore,
    Tick,
    UpgradeKRaftVersion,
)
from .delivery import Delivery
from .dispatch import dispatch_failure, dispatch_request, dispatch_response, on_request_timeout
from .fetch_client import answer_client_fetches, client_fetch_deadline
from .fetch_leader import on_flushed
from .kraft_upgrade import upgrade_kraft_version
from .leader import LeaderState
from .leader_ops import answer_abandoned
from .poll import poll_state, shutdown_complete, state_deadline
from .read_offset import poll_reads, read_deadline, start_read
from .replica import Replica
from .requests import RequestManager
from .snapshots import create_snapshot
from .startup import initialize
from .states import EpochState
from .voters import ControlState, VoterSet


class KRaftCore:
    """One KRaft replica (voter or observer) as a pure state machine.

    Public surface: :meth:`step`, :meth:`tick`, :meth:`append`, :meth:`create_snapshot`,
    :meth:`upgrade_kraft_version`, :meth:`shutdown`, :meth:`has_ready`, :meth:`ready`, :meth:`advance`,
    :meth:`next_deadline_ms` and :meth:`status` (a frozen snapshot for describe, metrics and checks).
    The replica's working state is a :class:`~.replica.Replica`, which the handlers act on; the core
    adds the input loop, delivery to the application and the shutdown bookkeeping.
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
        self._replica = Replica(config, log, quorum_store, snapshots)
        self._delivery = Delivery()
        self._shutdown_done = False
        # next_deadline_ms is asked for after every Ready and status() maybe as often; both only change
        # when an input or advance() ran, so each is computed once per input (the stamp counts inputs).
        self._stamp = 0
        self._deadline_stamp = -1
        self._deadline = 0
        self._status: tuple[int, QuorumStatus] | None = None
        initialize(self._replica)
        self._poll()
        self._after()

    # -- inputs ----------------------------------------------------------------------------------------

    def step(self, event: Event) -> AppendResult | SnapshotId | bool | None:
        """Handle one input. Returns an :class:`AppendResult` for :class:`Append`, the
        :class:`SnapshotId` for :class:`CreateSnapshot`, whether a batch was appended for
        :class:`UpgradeKRaftVersion`, else ``None``."""
        replica = self._replica
        if event.now_ms > replica.now:
            replica.now = event.now_ms
        self._stamp += 1
        result: AppendResult | SnapshotId | bool | None = None
        # Matched by exact type, cheaper than isinstance on this path; mypy does not narrow on it.
        t = type(event)
        if t is RequestReceived:
            dispatch_request(replica, event)  # type: ignore[arg-type]
        elif t is ResponseReceived:
            dispatch_response(replica, event)  # type: ignore[arg-type]
        elif t is RequestFailed:
            dispatch_failure(replica, event)  # type: ignore[arg-type]
        elif t is Append:
            result = self._append(event)  # type: ignore[arg-type]
        elif t is CreateSnapshot:
            result = create_snapshot(replica, event)  # type: ignore[arg-type]
        elif t is UpgradeKRaftVersion:
            result = upgrade_kraft_version(replica, event)  # type: ignore[arg-type]
        elif t is ReadIndex:
            start_read(replica, event)  # type: ignore[arg-type]
        elif t is Shutdown:
            # Like Kafka's shutdown(): only flag it; the next poll (any later event or tick) acts on it,
            # so a request handled in between still sees a leader that is shutting down.
            if replica.shutdown_deadline is None:
                replica.shutdown_deadline = replica.now + event.timeout_ms  # type: ignore[union-attr]
            return None
        elif t is Resign:
            st = replica.state
            if isinstance(st, LeaderState) and st.epoch == event.epoch:  # type: ignore[union-attr]
                st.resign_requested = True  # the poll below resigns, as on check-quorum expiry
        elif t is not Tick:
            raise TypeError(f"not a core event: {event!r}")
        self._poll()
        self._after()
        return result

    def tick(self, now_ms: int) -> None:
        self.step(Tick(now_ms))

    def append(self, records: Sequence[bytes], now_ms: int | None = None, epoch: int | None = None) -> AppendResult:
        """Leader-only append; raises :class:`NotLeaderError` otherwise."""
        now = self._replica.now if now_ms is None else now_ms
        return cast(AppendResult, self.step(Append(tuple(records), now, epoch)))

    def accept_append(self, records: Sequence[bytes], now_ms: int, epoch: int | None = None) -> int:
        """Queue ``records`` in the leader's accumulator and return the offset of the last one, as
        :meth:`append` does (its AppendResult's), but without stepping the core: nothing is
        drained, written or sent until the next input (a :class:`Tick` at :meth:`next_deadline_ms`,
        which now counts their linger and the batch size cap). It touches the accumulator alone, so
        unlike :meth:`append` it may be called between :meth:`ready` and :meth:`advance`: a driver
        takes appends while a Ready's writes and fsync run, as Kafka's application threads add to
        its accumulator while its raft thread writes. ``now_ms`` starts the linger of an empty
        accumulator (it is not read otherwise). Raises as :meth:`append` does."""
        replica = self._replica
        st = replica.state
        if type(st) is not LeaderState or (epoch is not None and epoch != st.epoch):
            raise NotLeaderError(f"not leader of epoch {epoch}: {st.describe()}")
        if replica.shutdown_deadline is not None:
            raise NotLeaderError("shutting down")
        if not records:
            raise ValueError("append needs at least one record")
        lingering = bool(st.acc.records)
        last: int = st.accept(records, now_ms)
        full = st.acc.size >= self.cfg.max_batch_size_bytes
        if not lingering or full:
            self._deadline_stamp = -1  # a linger starts, or the batch is full: drain due sooner
        return last

    def create_snapshot(self, end_offset: int, records: Sequence[bytes], now_ms: int | None = None) -> SnapshotId | None:
        now = self._replica.now if now_ms is None else now_ms
        return cast("SnapshotId | None", self.step(CreateSnapshot(end_offset, tuple(records), now)))

    def upgrade_kraft_version(
        self, version: int, epoch: int | None = None, validate_only: bool = False, now_ms: int | None = None
    ) -> bool:
        """Leader-only kraft.version upgrade (see :class:`UpgradeKRaftVersion`); True if appended."""
        now = self._replica.now if now_ms is None else now_ms
        return cast(bool, self.step(UpgradeKRaftVersion(version, now, epoch, validate_only)))

    def read_index(self, read_id: int, timeout_ms: int, now_ms: int | None = None) -> None:
        """Start a linearizable read (see :class:`ReadIndex`); watch for ReadReady / ReadFailed."""
        self.step(ReadIndex(read_id, timeout_ms, self._replica.now if now_ms is None else now_ms))

    def resign(self, epoch: int, now_ms: int | None = None) -> None:
        """Leave the leadership of ``epoch`` (see :class:`Resign`)."""
        self.step(Resign(epoch, self._replica.now if now_ms is None else now_ms))

    def shutdown(self, timeout_ms: int, now_ms: int | None = None) -> None:
        self.step(Shutdown(timeout_ms, self._replica.now if now_ms is None else now_ms))

    # -- outputs ---------------------------------------------------------------------------------------

    def has_ready(self) -> bool:
        out = self._replica.out
        return not out.is_empty() or (self._shutdown_done and not out.shutdown_reported)

    def ready(self) -> Ready:
        return self._replica.out.take(self._shutdown_done, self.next_deadline_ms())

    def advance(self, ready: Ready) -> None:
        """The driver handled ``ready``: its log flush is durable, so the leader may count it."""
        st = self._replica.state
        if ready.flush_log_to is not None and isinstance(st, LeaderState):
            self._stamp += 1
            on_flushed(self._replica, st, ready.flush_log_to)
            self._after()

    def appends_lingering(self) -> bool:
        """Whether this node leads and holds appended records in its accumulator: until they drain,
        :meth:`next_deadline_ms` is no later than their linger deadline."""
        st = self._replica.state
        return type(st) is LeaderState and bool(st.acc.records)

    def next_deadline_ms(self) -> int:
        if self._deadline_stamp == self._stamp:
            return self._deadline
        replica = self._replica
        now = replica.now
        d = state_deadline(replica)
        waits = (replica.requests.next_wakeup(now), read_deadline(replica), client_fetch_deadline(replica))
        for w in waits:
            if w is not None and w < d:
                d = w
        shutdown = replica.shutdown_deadline
        if shutdown is not None and not self._shutdown_done and shutdown < d:
            d = shutdown
        if d < now:
            d = now
        self._deadline_stamp = self._stamp
        self._deadline = d
        return d

    # -- read-only views -------------------------------------------------------------------------------

    @property
    def role(self) -> Role:
        return self._replica.state.role

    @property
    def epoch(self) -> int:
        return self._replica.state.epoch

    @property
    def leader_id(self) -> int | None:
        return self._replica.state.leader_id

    @property
    def high_watermark(self) -> int | None:
        return self._replica.state.high_watermark

    def voters(self) -> VoterSet:
        return self._replica.voters()

    def is_voter(self) -> bool:
        return self._replica.is_voter()

    def election_state(self) -> ElectionState:
        return self._replica.state.election_state(self._replica.control.kraft_version())

    def status(self) -> QuorumStatus:
        """A frozen snapshot of this replica: role, epoch, leader, voters, high watermark, log end and,
        on a leader, every replica's progress (what DescribeQuorum reports)."""
        if self._status is not None and self._status[0] == self._stamp:
            return self._status[1]
        replica = self._replica
        st, control, log = replica.state, replica.control, replica.log
        hw = st.high_watermark
        voter_progress: tuple[ReplicaStatus, ...] = ()
        observer_progress: tuple[ReplicaStatus, ...] = ()
        observer_count: int | None = None
        voter_change_pending: bool | None = None
        if isinstance(st, LeaderState):
            now, timeout = replica.now, self.cfg.observer_session_timeout_ms
            voter_progress, observers = st.progress(log.end_offset(), now)
            # DescribeQuorum prunes observers idle too long; a status only leaves them out
            observer_progress = tuple(p for p in observers if now - p.last_fetch_ms <= timeout)
            observer_count, voter_change_pending = len(observers), st.pending_change is not None
        own_vote = st.role in (Role.LEADER, Role.CANDIDATE)
        status = QuorumStatus(
            role=st.role,
            epoch=st.epoch,
            leader_id=st.leader_id,
            voted_key=st.voted_key,
            high_watermark=hw,
            log_start_offset=log.start_offset(),
            log_end_offset=log.end_offset(),
            kraft_version=control.kraft_version(),
            voters=control.latest_voters().specs(),
            committed_voters=None if hw is None else control.voters_at(hw - 1).specs(),
            voters_offset=control.last_voters_offset(),
            voter_progress=voter_progress,
            observer_progress=observer_progress,
            current_vote=replica.local_key if own_vote else st.voted_key,
            log_end_epoch=log.last_fetched_epoch(),
            observer_count=observer_count,
            voter_change_pending=voter_change_pending,
        )
        self._status = (self._stamp, status)
        return status

    # -- internals, for the transcript harness and the simulator until they read status() ------------

    @property
    def state(self) -> EpochState:
        return self._replica.state

    @property
    def control(self) -> ControlState:
        return self._replica.control

    @property
    def requests(self) -> RequestManager:
        return self._replica.requests

    @property
    def edges_seen(self) -> set[tuple[Role, Role]]:
        """The (from, to) state changes taken so far (the transcript tests check every legal one ran)."""
        return self._replica.edges_seen

    # -- internals -------------------------------------------------------------------------------------

    def _append(self, ev: Append) -> AppendResult:
        return AppendResult(self.accept_append(ev.records, self._replica.now, ev.epoch), self.epoch)

    def _poll(self) -> None:
        replica = self._replica
        if replica.requests.has_expired(replica.now):
            for dest, flight in replica.requests.expire(replica.now):
                on_request_timeout(replica, dest, flight)
        for _ in range(8):  # a transition may enable more work at once (Kafka polls again with 0 wait)
            before = replica.state
            poll_state(replica)
            if replica.state is before:
                break
        poll_reads(replica)

    def _after(self) -> None:
        replica = self._replica
        if replica.abandoned:
            answer_abandoned(replica)
        self._delivery.deliver_committed(replica)
        self._delivery.deliver_reads(replica)
        self._delivery.maybe_fire_leader_change(replica)
        answer_client_fetches(replica)
        if replica.shutdown_deadline is not None and not self._shutdown_done:
            self._shutdown_done = shutdown_complete(replica)
