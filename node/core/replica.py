"""The replica: its state and the few primitives every handler needs (etcd's ``raft`` struct).

:class:`Replica` holds what one KRaft replica knows (configuration, storage, clock, the current epoch
state, the voter-set history, the requests in flight and the outputs collected so far) and offers the
handful of operations every handler uses: respond, send a request, append to or truncate the log, and
the lookups behind them (voters, endpoints, the election timer). Handlers and transitions are functions
of a ``Replica``; only :class:`~.core.KRaftCore` drives it, one input at a time.
"""

from __future__ import annotations

from typing import Any, Sequence

from .api import (
    Config,
    Endpoint,
    InvariantViolation,
    LogBatch,
    OutboundRequest,
    OutboundResponse,
    QuorumStateStore,
    RaftLog,
    ReplicaKey,
    RequestReceived,
    Role,
    SnapshotStore,
    VoterSpec,
    WireMessage,
    api_key_of,
)
from .leader import ParkedFetch, PendingVoterChange
from .outbox import Outbox
from .reads import LeaderRead, LocalRead
from .requests import RequestManager
from .states import EpochState
from .voters import ControlState, VoterSet


class Replica:
    """One replica's state plus its primitives. ``state`` is set by startup (:mod:`.startup`) and
    replaced by every transition (:mod:`.transitions`)."""

    state: EpochState

    def __init__(
        self, config: Config, log: RaftLog, quorum_store: QuorumStateStore, snapshots: SnapshotStore
    ) -> None:
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
        self.control = initial_control_state(config)
        self.shutdown_deadline: int | None = None
        self.abandoned: list[tuple[list[ParkedFetch], PendingVoterChange | None]] = []
        """Waiters of a leadership just left (parked fetches, the pending voter change). They are
        answered once the new state is in place, so the answers name the new leader and epoch."""
        self.client_fetches: list[ParkedFetch] = []  # clients' Fetches waiting for commits (.fetch_client)
        self.client_fetch_view: tuple[Any, ...] | None = None  # what they were last evaluated on
        self.abandoned_reads: list[LeaderRead] = []  # the same, for ReadOffset rounds (.reads)
        self.local_reads: dict[int, LocalRead] = {}  # the application's reads by read id (.reads)
        self.edges_seen: set[tuple[Role, Role]] = set()
        self.discovery_cache: tuple[Any, list[int]] | None = None  # see poll._discovery_targets
        self._voter_check: tuple[VoterSet, bool] | None = None
        self._listener_name = next(iter(config.listeners), None)

    # -- lookups ---------------------------------------------------------------------------------------

    def voters(self) -> VoterSet:
        return self.control.latest_voters()

    def is_voter(self) -> bool:
        voters = self.voters()
        cached = self._voter_check
        if cached is None or cached[0] is not voters:  # voter sets are immutable: one answer each
            cached = self._voter_check = (voters, voters.is_voter(self.local_key))
        return cached[1]

    def random_election_timeout(self) -> int:
        t = self.cfg.election_timeout_ms
        return t + self.rng.randrange(t) if t > 0 else 0

    def listener_name(self) -> str | None:
        return self._listener_name

    def local_voter_spec(self) -> VoterSpec:
        assert self.local_key is not None
        lo, hi = self.cfg.supported_kraft_version  # as a tuple, however it was configured
        return VoterSpec(self.local_key, dict(self.cfg.listeners), (lo, hi))

    def endpoint_of(self, node_id: int) -> Endpoint | None:
        st = self.state
        eps = getattr(st, "leader_endpoints", None) if st.leader_id == node_id else None
        if not eps:
            eps = self.voters().endpoints(node_id)
        if not eps:
            return None
        name = self.listener_name()
        if name is not None and name in eps:
            return eps[name]
        return next(iter(eps.values()))

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

    # -- primitives ------------------------------------------------------------------------------------

    def trace_transition(self, src: Role, dst: Role) -> None:
        self.edges_seen.add((src, dst))

    def send_request(
        self,
        dest: int,
        request: WireMessage,
        endpoint: Endpoint | None = None,
        min_version: int = 0,
        timeout_ms: int | None = None,
    ) -> int:
        cid = self.requests.next_correlation_id()
        self.requests.on_send(dest, cid, api_key_of(request), self.now, timeout_ms)
        self.out.send(
            OutboundRequest(dest, cid, request, endpoint or self.endpoint_of(dest), min_version)
        )
        return cid

    def respond(self, ev: RequestReceived, response: WireMessage) -> None:
        self.out.send(OutboundResponse(ev.source, ev.correlation_id, ev.api_version, response))

    def respond_to(self, dest: int, correlation_id: int, api_version: int, response: WireMessage) -> None:
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


def initial_control_state(cfg: Config) -> ControlState:
    if cfg.kraft_version >= 1:
        return ControlState(
            VoterSet(), VoterSet(cfg.voters) if cfg.voters else None, cfg.kraft_version
        )
    static = VoterSet(
        VoterSpec(ReplicaKey(v.key.id, None), v.listeners, (0, 0)) for v in cfg.voters
    )
    return ControlState(static, None, 0)
