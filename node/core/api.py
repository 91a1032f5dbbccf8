"""The public contract of the KRaft core: inputs, outputs, configuration, storage and the embedding API.

Theory of operation
-------------------
:class:`kraftwire.node.core.KRaftCore` is a deterministic state machine. It never reads a clock, never
draws global randomness and never touches sockets or files. A *driver* (the asyncio runtime, or the
simulator) feeds it :data:`Event` values and drains :class:`Ready` batches of outputs::

    core = KRaftCore(config, log=..., quorum_store=..., snapshots=...)
    core.step(RequestReceived(source=2, correlation_id=7, api_version=2, request=vote, now_ms=1000))
    core.tick(1005)
    while core.has_ready():
        rd = core.ready()
        if rd.quorum_state is not None:      # 1. durable election state (write + fsync)
            quorum_store.write(rd.quorum_state)
        if rd.flush_log_to is not None:      # 2. durable log prefix (fsync)
            log.flush(rd.flush_log_to)
        for m in rd.messages:                # 3. only now may anything leave the node
            transport.send(m)
        deliver(rd, listener)                # 4. application notifications, in order
        core.advance(rd)                     # 5. tell the core the Ready was handled

The same configuration, storage contents and input sequence always give the same outputs: this is what
lets the simulator replay a failing seed exactly.

Durability rule (Kafka's ``durableTransitionTo`` plus the fsync rules of docs/kraft.md §14): every
output in :attr:`Ready.messages` may be released only after :attr:`Ready.quorum_state` and
:attr:`Ready.flush_log_to` of *the same* Ready are durable. So a granted vote never leaves before the
vote is persisted, a candidate's Vote requests never leave before its self-vote is persisted, and a
follower's next Fetch (its acknowledgement) never leaves before the records it appended are fsynced.
The leader counts its own log end offset toward the high watermark only in :meth:`advance`, i.e. after
the driver has flushed (docs/kraft.md §14, third item).

Mutation ownership: the core appends to and truncates the :class:`RaftLog` itself (the writes may sit in
an unflushed buffer until :meth:`RaftLog.flush`), writes snapshots through :class:`SnapshotStore` (a
snapshot is durable once frozen), and **never** writes the :class:`QuorumStateStore`: the driver writes
:attr:`Ready.quorum_state`. The core reads the quorum-state store once, at construction.

Messages are the generated wire classes of ``kraftwire.generated`` (``VoteRequest``, ``FetchResponse``,
...). A request leaves as an :class:`OutboundRequest`; the driver picks the version (negotiated with the
peer, never below :attr:`OutboundRequest.min_version`) and, if the peer cannot take it, reports
:class:`RequestFailed` with ``UNSUPPORTED_VERSION`` (that is how a prospective node learns a peer lacks
pre-vote). A response leaves as an :class:`OutboundResponse` already shaped for the version of the
request it answers.

Value types: the identities and records (``ReplicaKey``, ``SnapshotId``, ``ElectionState``, ``LogBatch``,
...) are frozen and hashable. The per-event inputs and outputs (events, ``Ready``, outbound messages,
notifications) are plain slotted records, not frozen: one of each is built for almost every event, and a
frozen dataclass costs five times as much to construct. Treat them as read-only all the same.

Stability: this module is the contract the runtime and the simulator code against. It only grows.
The value types (:mod:`.values`), the configuration (:mod:`.config`) and the storage interfaces
(:mod:`.storage`) live in their own modules below this one, so that they need nothing from it; they
are part of this contract and exported from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Union

from kraftwire.generated import Message as WireMessage

from .config import Config, RandomSource
from .storage import QuorumStateStore, RaftLog, SnapshotStore
from .values import (
    BOOTSTRAP_SNAPSHOT_ID,
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    ZERO_UUID,
    ElectionState,
    Endpoint,
    InvariantViolation,
    KRaftError,
    KRaftVersionUpgradeError,
    LeaderAndEpoch,
    LeaderConflict,
    LogBatch,
    NotLeaderError,
    PeerRefused,
    QuorumStatus,
    ReplicaKey,
    ReplicaStatus,
    Role,
    SnapshotId,
    VoterSpec,
)

__all__ = [
    # the wire messages' base class (the generated classes of the KRaft APIs)
    "WireMessage",
    "api_key_of",
    # identity and values
    "ZERO_UUID",
    "METADATA_TOPIC",
    "METADATA_PARTITION",
    "METADATA_TOPIC_ID",
    "Endpoint",
    "ReplicaKey",
    "VoterSpec",
    "SnapshotId",
    "BOOTSTRAP_SNAPSHOT_ID",
    "LeaderAndEpoch",
    "ElectionState",
    "LogBatch",
    "Role",
    # inputs
    "RequestReceived",
    "ResponseReceived",
    "RequestFailed",
    "Tick",
    "Append",
    "CreateSnapshot",
    "Shutdown",
    "Resign",
    "UpgradeKRaftVersion",
    "ReadIndex",
    "Event",
    # outputs
    "OutboundRequest",
    "OutboundResponse",
    "Message",
    "CommittedBatch",
    "SnapshotLoaded",
    "LeaderChanged",
    "ReadReady",
    "ReadFailed",
    "Notification",
    "SnapshotWrite",
    "Ready",
    "AppendResult",
    # introspection
    "ReplicaStatus",
    "QuorumStatus",
    # configuration
    "RandomSource",
    "Config",
    # storage
    "RaftLog",
    "QuorumStateStore",
    "SnapshotStore",
    # embedding
    "Listener",
    "deliver",
    # errors
    "KRaftError",
    "NotLeaderError",
    "KRaftVersionUpgradeError",
    "InvariantViolation",
    "LeaderConflict",
    "PeerRefused",
]

# ---------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class RequestReceived:
    """A request that arrived from node ``source`` (negative ids: unknown/bootstrap peers).

    ``api_version`` is the version it was decoded at; the answer is shaped for it. ``now_ms`` is the
    arrival time on the injected clock.
    """

    source: int
    correlation_id: int
    api_version: int
    request: WireMessage  # handlers take it as their API's class (messages.as_message)
    now_ms: int


@dataclass(slots=True)
class ResponseReceived:
    """A response from node ``source`` to the request the core sent with ``correlation_id``.

    Responses whose correlation id is not the one in flight to ``source`` are dropped silently.
    """

    source: int
    correlation_id: int
    api_version: int
    response: WireMessage  # handlers take it as their API's class (messages.as_message)
    now_ms: int


@dataclass(slots=True)
class RequestFailed:
    """The request with ``correlation_id`` to ``destination`` got no real response.

    ``error_code`` is the synthetic error Kafka's network layer would produce: ``BROKER_NOT_AVAILABLE``
    (8) for a disconnect, ``UNSUPPORTED_VERSION`` (35) when it cannot be sent at a version the peer
    supports, ``NETWORK_EXCEPTION`` (13) for an authentication failure. Request timeouts are tracked
    by the core itself (``request_timeout_ms``); drivers need not report them.
    """

    destination: int
    correlation_id: int
    error_code: int
    now_ms: int


@dataclass(slots=True)
class Tick:
    """The clock moved to ``now_ms``: run the timed work of the current state."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class Append:
    """Application append (leader only). ``epoch``, when given, must be the current leader epoch.

    Prefer :meth:`KRaftCore.append`, which returns the :class:`AppendResult`.
    """

    records: tuple[bytes, ...]
    now_ms: int
    epoch: int | None = None


@dataclass(frozen=True, slots=True)
class CreateSnapshot:
    """The application's snapshot of its state at committed ``end_offset`` (exclusive).

    ``records`` are the state machine's data records (opaque bytes). The core wraps them in the header
    (plus kraft.version and voters when kraft.version ≥ 1) and footer control batches (docs/kraft.md §8).
    """

    end_offset: int
    records: tuple[bytes, ...]
    now_ms: int
    last_contained_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Graceful shutdown request: a leader resigns and sends EndQuorumEpoch. Completes (see
    :attr:`Ready.shutdown_complete`) when the node is an observer, the only voter, or follows a remote
    leader, or after ``timeout_ms``."""

    timeout_ms: int
    now_ms: int


@dataclass(slots=True)
class Resign:
    """Give up the leadership of ``epoch``, as Kafka's ``RaftClient.resign(epoch)`` does: the leader
    resigns and sends EndQuorumEpoch to its preferred successors, and takes part in the next
    election like any voter. Ignored unless this node leads ``epoch``."""

    epoch: int
    now_ms: int = 0


@dataclass(frozen=True, slots=True)
class UpgradeKRaftVersion:
    """Raise the finalized kraft.version (leader only; Kafka's ``RaftClient.upgradeKRaftVersion``).

    Only 0 → 1 exists. It needs every voter to have reported its directory id, listeners and supported
    range through UpdateRaftVoter, and every voter to support the new version; then one control batch
    is appended: ``KRaftVersionRecord`` plus the first ``VotersRecord`` (docs/kraft.md §7.6). A request
    for the current version changes nothing. ``epoch``, when given, must be the leader's epoch.
    With ``validate_only`` nothing is appended. Prefer :meth:`KRaftCore.upgrade_kraft_version`.
    """

    version: int
    now_ms: int
    epoch: int | None = None
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class ReadIndex:
    """Ask for a linearizable read (issue #13), on any replica. The core learns the offset the read must
    wait for (the leader's confirmed high watermark: at once on a leader, by ReadOffset elsewhere, asked
    again of a new leader when the old one fails) and notifies :class:`ReadReady` once every committed
    batch below it has been delivered, so the application may serve the read from its own state; or
    :class:`ReadFailed` at ``now_ms + timeout_ms``, or at once when too many reads wait. ``read_id`` is
    the application's, echoed back. Prefer :meth:`KRaftCore.read_index`."""

    read_id: int
    timeout_ms: int
    now_ms: int


Event = Union[
    RequestReceived,
    ResponseReceived,
    RequestFailed,
    Tick,
    Append,
    CreateSnapshot,
    Shutdown,
    Resign,
    UpgradeKRaftVersion,
    ReadIndex,
]
"""Everything :meth:`KRaftCore.step` accepts."""


# ---------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class OutboundRequest:
    """A request to send to node ``destination``.

    ``endpoint`` is the address to connect to when the core knows it (voter listeners, bootstrap
    servers, a voter being added); ``None`` means "look the node up yourself". At most one request is
    in flight per destination. ``min_version`` is the lowest version that can carry the message as
    built (e.g. 2 for a pre-vote); if the peer's highest version is below it, report
    :class:`RequestFailed` with ``UNSUPPORTED_VERSION``.
    """

    destination: int
    correlation_id: int
    request: WireMessage
    endpoint: Endpoint | None = None
    min_version: int = 0

    @property
    def api_key(self) -> int:
        return api_key_of(self.request)


@dataclass(slots=True)
class OutboundResponse:
    """A response to the request ``correlation_id`` from ``destination``, shaped for ``api_version``."""

    destination: int
    correlation_id: int
    api_version: int
    response: WireMessage

    @property
    def api_key(self) -> int:
        return api_key_of(self.response)


def api_key_of(message: WireMessage) -> int:
    """The API key of a request or response class (the core takes and makes no other messages)."""
    key = message.API_KEY
    if key is None:
        raise TypeError(f"{type(message).__name__} is not a request or response")
    return key


Message = Union[OutboundRequest, OutboundResponse]


@dataclass(slots=True)
class CommittedBatch:
    """A batch below the high watermark, delivered once and in offset order.

    ``records`` are the data payloads (empty for a control batch); ``control_records`` the decoded
    control records (``LeaderChangeMessage``, ``VotersRecord``, ``KRaftVersionRecord``).
    """

    base_offset: int
    last_offset: int
    epoch: int
    records: tuple[bytes, ...]
    control_records: tuple[WireMessage, ...] = ()
    append_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class SnapshotLoaded:
    """The application must replace its state with this snapshot's ``records`` (data payloads).

    Delivered when the next offset to deliver is below the log start (a follower that downloaded a
    snapshot, or a restart with a snapshot). Committed batches from ``snapshot_id.end_offset`` follow.
    A leader never receives one.
    """

    snapshot_id: SnapshotId
    records: tuple[bytes, ...]
    last_contained_timestamp: int = -1


@dataclass(slots=True)
class LeaderChanged:
    """Leadership changed. For the local node becoming leader, this is delivered only once the
    application has consumed everything committed before the leader's epoch start (docs/kraft.md §5.1);
    from then on :meth:`KRaftCore.append` is accepted. A resigned node never announces itself."""

    leader: LeaderAndEpoch


@dataclass(frozen=True, slots=True)
class ReadReady:
    """A :class:`ReadIndex` may be served: every batch below ``offset`` has been delivered."""

    read_id: int
    offset: int


@dataclass(frozen=True, slots=True)
class ReadFailed:
    """A :class:`ReadIndex` gave up: ``REQUEST_TIMED_OUT`` at its deadline, ``BROKER_NOT_AVAILABLE``
    when too many reads already wait (``reads.MAX_WAITING_READS``)."""

    read_id: int
    error_code: int


Notification = Union[CommittedBatch, SnapshotLoaded, LeaderChanged, ReadReady, ReadFailed]


@dataclass(frozen=True, slots=True)
class SnapshotWrite:
    """Informational: the core wrote a snapshot (already durable once ``kind == "frozen"``).

    ``kind`` is ``"created"`` (a local snapshot written and frozen in one go), ``"started"`` (download
    begun), ``"frozen"`` (download complete) or ``"deleted"``.
    """

    snapshot_id: SnapshotId
    kind: str


@dataclass(slots=True)
class Ready:
    """Outputs accumulated since the previous Ready. Handle the fields in this order:

    1. ``quorum_state``: write and fsync (atomic replace) before anything else is released.
    2. ``flush_log_to``: fsync the log up to this offset (exclusive) before releasing messages.
       ``log_truncated_to`` and ``log_appended`` say what the core already did to the log object
       (information for traces and for stores that mirror it).
    3. ``messages``: send requests, send responses.
    4. ``notifications``: deliver to the application in order (see :func:`deliver`).
    5. call :meth:`KRaftCore.advance` with this Ready.

    ``snapshot_writes`` reports snapshot activity (already durable). ``shutdown_complete`` becomes true
    once a requested graceful shutdown has finished: the driver may stop the node after sending
    ``messages``. ``next_deadline_ms`` is when :meth:`KRaftCore.tick` next has timed work.
    """

    quorum_state: ElectionState | None = None
    log_truncated_to: int | None = None
    log_appended: tuple[LogBatch, ...] = ()
    flush_log_to: int | None = None
    snapshot_writes: tuple[SnapshotWrite, ...] = ()
    messages: tuple[Message, ...] = ()
    notifications: tuple[Notification, ...] = ()
    shutdown_complete: bool = False
    next_deadline_ms: int | None = None
    refused: tuple[str, ...] = ()
    """One line per peer message refused since the previous Ready (see :class:`PeerRefused`), for the
    driver's log."""

    @property
    def committed(self) -> tuple[CommittedBatch, ...]:
        return tuple(n for n in self.notifications if isinstance(n, CommittedBatch))

    @property
    def snapshot_loaded(self) -> tuple[SnapshotLoaded, ...]:
        return tuple(n for n in self.notifications if isinstance(n, SnapshotLoaded))

    @property
    def leader_changes(self) -> tuple[LeaderChanged, ...]:
        return tuple(n for n in self.notifications if isinstance(n, LeaderChanged))

    def is_empty(self) -> bool:
        return not (
            self.quorum_state is not None
            or self.log_truncated_to is not None
            or self.log_appended
            or self.flush_log_to is not None
            or self.snapshot_writes
            or self.messages
            or self.notifications
            or self.shutdown_complete
            or self.refused
        )


@dataclass(slots=True)
class AppendResult:
    """Where an application append landed: the offset of its last record and the leader epoch.
    The records are committed once a :class:`CommittedBatch` covering ``last_offset`` is delivered."""

    last_offset: int
    epoch: int


# ---------------------------------------------------------------------------------------------------
# Embedding API (the spirit of Kafka's RaftClient.Listener)
# ---------------------------------------------------------------------------------------------------


class Listener(Protocol):
    """Application callbacks, invoked by :func:`deliver` in the order the core produced them."""

    def handle_commit(self, batch: CommittedBatch) -> None: ...

    def handle_load_snapshot(self, snapshot: SnapshotLoaded) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


def deliver(ready: Ready, listener: Listener) -> None:
    """Dispatch ``ready.notifications`` to ``listener`` in order. ``ReadReady``/``ReadFailed`` answer
    the caller of :class:`ReadIndex`, not the listener: they are left for that caller to pick out."""
    for n in ready.notifications:
        if isinstance(n, CommittedBatch):
            listener.handle_commit(n)
        elif isinstance(n, SnapshotLoaded):
            listener.handle_load_snapshot(n)
        elif isinstance(n, LeaderChanged):
            listener.handle_leader_change(n.leader)
