"""The leader's epoch state: replica progress, high watermark, check-quorum and the append accumulator
(docs/kraft.md §5).

High watermark rule (§5.2): sort the end offsets of the *latest* voter set in descending order (unknown
last) and take index ``len // 2``. It becomes the HW only if it is strictly greater than
``epoch_start_offset`` (so the LeaderChange batch of this epoch must commit first), and the HW never
decreases. The leader's own end offset counts only when the leader is itself a voter, and only after its
appends are flushed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from kraftwire.generated import fetch_request as _fetch

from .api import LogBatch, ReplicaKey, ReplicaStatus, Role
from .reads import ConfirmRound
from .states import EpochState
from .voters import VoterSet


class ReplicaProgress:
    __slots__ = ("key", "end_offset", "last_fetch_ms", "last_caught_up_ms")

    def __init__(self, key: ReplicaKey) -> None:
        self.key = key
        self.end_offset: int | None = None
        self.last_fetch_ms = -1
        self.last_caught_up_ms = -1


@dataclass(slots=True)
class ParkedFetch:
    """A Fetch waiting in the purgatory for new data, an HW change or ``deadline``."""

    source: int
    correlation_id: int
    api_version: int
    request: _fetch.FetchRequest
    deadline: int


@dataclass(slots=True)
class PendingVoterChange:
    """The one voter change in progress (§7.2): add, remove or update."""

    kind: str  # "add" | "remove" | "update"
    source: int
    correlation_id: int
    api_version: int
    deadline: int
    key: ReplicaKey
    spec: Any = None  # VoterSpec to add/update
    record_offset: int | None = None  # offset of the VotersRecord once appended
    ack_when_committed: bool = True
    responded: bool = False
    awaiting_api_versions: bool = False


@dataclass(slots=True)
class Accumulator:
    """Records accepted by ``append`` but not yet in the log (linger + size cap, §5.5)."""

    base_offset: int
    records: list[bytes] = field(default_factory=list)
    size: int = 0
    first_append_ms: int | None = None


class LeaderState(EpochState):
    role = Role.LEADER
    __slots__ = (
        "local_key",
        "epoch_start_offset",
        "granting_voters",
        "voter_states",
        "local_is_voter",
        "observer_states",
        "fetched_voters",
        "check_quorum_deadline",
        "check_quorum_ms",
        "begin_quorum_deadline",
        "acc",
        "parked",
        "pending_change",
        "volatile_voters",
        "resign_requested",
        "read_rounds",
    )

    def __init__(
        self,
        epoch: int,
        local_key: ReplicaKey,
        voted_key: ReplicaKey | None,
        epoch_start_offset: int,
        voters: VoterSet,
        granting: Iterable[int],
        now: int,
        cq_ms: int,
    ) -> None:
        super().__init__(epoch, local_key.id, voted_key, None)
        self.local_key: ReplicaKey = local_key
        self.epoch_start_offset: int = epoch_start_offset
        self.granting_voters: list[int] = sorted(granting)
        self.voter_states: dict[int, ReplicaProgress] = {}
        self.observer_states: dict[ReplicaKey, ReplicaProgress] = {}
        self.fetched_voters: set[int] = set()
        self.check_quorum_ms = cq_ms
        self.check_quorum_deadline: int = now + cq_ms
        self.local_is_voter = False
        self.begin_quorum_deadline: int = now
        self.acc = Accumulator(epoch_start_offset)
        self.parked: list[ParkedFetch] = []
        self.pending_change: PendingVoterChange | None = None
        # kraft.version 0 only: the voter set as updated by UpdateRaftVoter, in memory (never written
        # to the log) until the kraft.version upgrade writes it as the first VotersRecord (§7.5, §7.6).
        self.volatile_voters: VoterSet | None = None
        self.resign_requested = False
        self.read_rounds: list[ConfirmRound] = []  # oldest first; see .reads
        self.update_voters(voters, now)

    # -- membership ----------------------------------------------------------------------------------

    def update_voters(self, voters: VoterSet, now: int) -> None:
        """Re-key replica progress to the latest voter set, keeping what is known.

        A leader that needed no other voter's fetches (it was the only voter) starts its check-quorum
        window ``now`` when the set grows: judging the new voters by a window that ended long ago
        would resign a healthy leader at its next poll. Kafka gets there another way: while the
        majority it needs is zero, every Fetch (an observer's too) resets its timer, so the window
        starts at the new voter's last fetch as an observer; starting it at the change is the same
        for a voter that fetched just before and never stricter."""
        needed_before = self.required_fetchers() if self.voter_states else 0
        old = self.voter_states
        new: dict[int, ReplicaProgress] = {}
        for spec in voters:
            prev = old.get(spec.key.id)
            if prev is None:
                prev = self.observer_states.pop(spec.key, None) or self._observer_by_id(spec.key)
            p = prev or ReplicaProgress(spec.key)
            p.key = spec.key
            new[spec.key.id] = p
        for nid, p in old.items():
            if nid not in new and not (nid == self.local_key.id):
                self.observer_states[p.key] = p
        self.voter_states = new
        local = new.get(self.local_key.id)
        self.local_is_voter = local is not None and local.key.matches(self.local_key)
        if needed_before == 0 and self.required_fetchers() > 0:
            self.fetched_voters.clear()
            self.check_quorum_deadline = now + self.check_quorum_ms

    def _observer_by_id(self, key: ReplicaKey) -> ReplicaProgress | None:
        for k in list(self.observer_states):
            if key.matches(k):
                return self.observer_states.pop(k)
        return None

    def is_local_voter(self) -> bool:
        return self.local_is_voter

    def voter_progress(self, key: ReplicaKey) -> ReplicaProgress | None:
        """Progress entry if ``key`` is a voter of the latest set (directory id must match)."""
        p = self.voter_states.get(key.id)
        return p if p is not None and p.key.matches(key) else None

    # -- high watermark ------------------------------------------------------------------------------

    def update_local_end_offset(self, end_offset: int, now: int) -> bool:
        p = self.voter_states.get(self.local_key.id)
        if p is not None and p.key.matches(self.local_key):
            p.end_offset = end_offset
            p.last_fetch_ms = now
            p.last_caught_up_ms = now
        return self.maybe_update_high_watermark()

    def update_replica(self, key: ReplicaKey, fetch_offset: int, now: int, leader_leo: int) -> bool:
        """Record a valid Fetch at ``fetch_offset``; returns True if the HW moved."""
        p = self.voter_progress(key)
        is_voter = p is not None
        if p is None:
            p = self.observer_states.get(key)
            if p is None:
                p = self.observer_states[key] = ReplicaProgress(key)
        p.end_offset = fetch_offset
        p.last_fetch_ms = now
        if fetch_offset >= leader_leo:
            p.last_caught_up_ms = now
        return self.maybe_update_high_watermark() if is_voter else False

    def maybe_update_high_watermark(self) -> bool:
        offsets = [
            p.end_offset
            for nid, p in self.voter_states.items()
            if not (nid == self.local_key.id and not p.key.matches(self.local_key))
        ]
        if not offsets:
            return False
        offsets.sort(key=lambda o: -1 if o is None else o, reverse=True)
        candidate = offsets[len(offsets) // 2]
        if candidate is None or candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    # -- check quorum --------------------------------------------------------------------------------

    def required_fetchers(self) -> int:
        n = len(self.voter_states)
        return n // 2 + 1 - (1 if self.is_local_voter() else 0)

    def record_voter_fetch(self, key: ReplicaKey, now: int) -> None:
        if self.voter_progress(key) is None or key.id == self.local_key.id:
            return
        self.fetched_voters.add(key.id)
        if len(self.fetched_voters) >= self.required_fetchers():
            self.fetched_voters.clear()
            self.check_quorum_deadline = now + self.check_quorum_ms

    def ack_ping(self, voter_id: int, correlation_id: int) -> None:
        """Voter ``voter_id`` accepted our epoch in answer to ping ``correlation_id``: it counts for
        every round that ping was sent for (each round opened before it went out)."""
        for read_round in self.read_rounds:
            if read_round.pings.get(voter_id) == correlation_id:
                read_round.acked.add(voter_id)

    def confirmed_round(self) -> ConfirmRound | None:
        """The oldest read round, taken off the queue once it is confirmed: a batch of this epoch is
        committed (the HW exists only past the epoch start) and a majority of the latest voters, the
        leader included, answered a ping sent after every read of the round arrived."""
        if not self.read_rounds or self.high_watermark is None:
            return None
        if not self.round_acked(self.read_rounds[0]):
            return None
        return self.read_rounds.pop(0)

    def round_acked(self, read_round: ConfirmRound) -> bool:
        """A majority of the latest voters, the leader included, acknowledged ``read_round``."""
        local = self.local_key.id
        acked = sum(1 for nid in read_round.acked if nid in self.voter_states and nid != local)
        return acked >= self.required_fetchers()

    def check_quorum_expired(self, now: int) -> bool:
        return self.required_fetchers() > 0 and now >= self.check_quorum_deadline

    # -- accumulator ---------------------------------------------------------------------------------

    def accept(self, records: Sequence[bytes], now: int) -> int:
        """Queue records; returns the offset the last one will have."""
        acc = self.acc
        if acc.first_append_ms is None:
            acc.first_append_ms = now
        queued = acc.records
        queued += records
        acc.size += sum(map(len, records))
        return acc.base_offset + len(queued) - 1

    def drain(self, now: int, linger_ms: int, max_bytes: int, force: bool = False) -> LogBatch | None:
        acc = self.acc
        if not acc.records:
            return None
        due = force or acc.size >= max_bytes or now >= (acc.first_append_ms or now) + linger_ms
        if not due:
            return None
        batch = LogBatch(acc.base_offset, self.epoch, tuple(acc.records), False, now)
        self.acc = Accumulator(acc.base_offset + len(acc.records))
        return batch

    def drain_deadline(self, linger_ms: int, max_bytes: int) -> int | None:
        """When :meth:`drain` is next due: at once for a full batch, else at the linger's end."""
        acc = self.acc
        if not acc.records or acc.first_append_ms is None:
            return None
        return acc.first_append_ms + (0 if acc.size >= max_bytes else linger_ms)

    def progress(self, log_end_offset: int, now: int) -> tuple[tuple[ReplicaStatus, ...], tuple[ReplicaStatus, ...]]:
        """Every voter's and observer's progress, as DescribeQuorum reports it: voters by id, observers by
        key; the leader itself with its log end offset, fetched and caught up ``now``."""

        def status(p: ReplicaProgress, is_local: bool) -> ReplicaStatus:
            if is_local:
                return ReplicaStatus(p.key, log_end_offset, now, now)
            return ReplicaStatus(p.key, p.end_offset, p.last_fetch_ms, p.last_caught_up_ms)

        local_id = self.local_key.id
        voters = tuple(status(p, nid == local_id) for nid, p in sorted(self.voter_states.items()))
        by_key = sorted(self.observer_states.items(), key=lambda kv: (kv[0].id, str(kv[0].directory_id)))
        return voters, tuple(status(p, False) for _, p in by_key)

    def successors(self) -> list[ReplicaKey]:
        """Other voters, by descending end offset (unknown last), then id."""
        others = [p for nid, p in self.voter_states.items() if nid != self.local_key.id]
        others.sort(key=lambda p: (-(p.end_offset if p.end_offset is not None else -1), p.key.id))
        return [p.key for p in others]
