"""Epoch states and the table of legal transitions (docs/kraft.md §2, §2.1).

``TRANSITIONS`` is the single source of truth: :func:`check_transition` is called by every
``become_*`` in :mod:`.transitions`, and a test asserts each edge is exercised by a scenario.
Each state object carries ``epoch``, ``leader_id``, ``voted_key`` and the known ``high_watermark``
(``None`` = unknown); Leader's own fields live in :mod:`.leader`.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .api import ElectionState, Endpoint, InvariantViolation, ReplicaKey, Role, SnapshotId
from .values import describe_state

NEVER = 1 << 62
"""A deadline that never comes (observers' election timer)."""

EPOCH_LIMIT = (1 << 31) - 1
"""The largest int32, the wire type of every epoch. A peer's epoch must be below it (the node could not
step past an epoch at the limit: its next election would leave int32, so the quorum would be stuck for
good); the node itself campaigns only while the new epoch stays below it, and never stores or sends an
epoch above it."""


def epoch_in_range(epoch: int) -> bool:
    """Whether a peer's epoch is one this node could step past (0 <= epoch < 2^31-1)."""
    return 0 <= epoch < EPOCH_LIMIT

U, P, C, L, F, R = (
    Role.UNATTACHED,
    Role.PROSPECTIVE,
    Role.CANDIDATE,
    Role.LEADER,
    Role.FOLLOWER,
    Role.RESIGNED,
)

# (from, to) -> (trigger, durable?). Mirrors the table of docs/kraft.md §2.1. "unattached-voted" and
# "prospective-voted" are the same-epoch "record a vote" edges.
TRANSITIONS: dict[tuple[Role, Role], tuple[str, bool]] = {
    # Unattached(e' > e): any state on a higher epoch without a leader.
    **{(s, U): ("higher epoch, no leader", True) for s in (U, P, C, L, F, R)},
    # Prospective(e): voters only, memory-only.
    (U, P): ("election timeout", False),
    (F, P): ("fetch timeout", False),
    (C, P): ("election timeout after a lost election", False),
    (R, P): ("single voter at startup", False),
    # Candidate(e+1): only from Prospective.
    (P, C): ("pre-vote majority, or UNSUPPORTED_VERSION from a peer", True),
    # Leader(e): only from Candidate.
    (C, L): ("majority of standard votes", True),
    # Follower(e' >= e): anything but Leader at the same epoch.
    **{(s, F): ("leader learned", True) for s in (U, P, C, L, F, R)},
    # Resigned(e): only from Leader, memory-only.
    (L, R): ("shutdown, resign, check-quorum expiry or own removal committed", False),
}
"""The legal state changes. Same-epoch edges additionally obey :func:`check_transition`'s rules."""


def check_transition(src: "EpochState", dst: Role, epoch: int) -> None:
    """Raise :class:`InvariantViolation` for a change the table (or its epoch rules) forbids."""
    if (src.role, dst) not in TRANSITIONS:
        raise InvariantViolation(f"illegal transition {src.role.value}({src.epoch}) -> {dst.value}")
    if epoch < src.epoch:
        raise InvariantViolation(f"epoch would go back: {src.epoch} -> {epoch} ({dst.value})")
    if dst is U and epoch == src.epoch and src.role is not P:
        raise InvariantViolation(f"same-epoch Unattached only from Prospective, not {src.role.value}")
    if dst is P and src.role is L:
        raise InvariantViolation("Leader cannot become Prospective")
    if dst is C and epoch != src.epoch + 1:
        raise InvariantViolation("Candidate must bump the epoch by one")
    if dst is F and epoch == src.epoch and src.role is L:
        raise InvariantViolation("Leader cannot follow another leader in its own epoch")


class EpochElection:
    """Vote tally over the voter set captured when the election starts (local grant pre-recorded)."""

    __slots__ = ("voters", "granted", "rejected")

    def __init__(self, voter_ids: Iterable[int], local_id: int | None) -> None:
        self.voters = frozenset(voter_ids)
        self.granted: set[int] = {local_id} if local_id in self.voters else set()
        self.rejected: set[int] = set()

    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def record(self, voter_id: int, granted: bool) -> None:
        if voter_id not in self.voters or voter_id in self.granted or voter_id in self.rejected:
            return
        (self.granted if granted else self.rejected).add(voter_id)

    def is_granted(self) -> bool:
        return len(self.granted) >= self.majority()

    def is_rejected(self) -> bool:
        return len(self.voters) - len(self.rejected) < self.majority()

    def unrecorded(self) -> list[int]:
        return sorted(self.voters - self.granted - self.rejected)


class EpochState:
    """Fields every state has. ``high_watermark`` is ``None`` while unknown."""

    role: Role
    __slots__ = ("epoch", "leader_id", "voted_key", "high_watermark")

    def __init__(
        self,
        epoch: int,
        leader_id: int | None = None,
        voted_key: ReplicaKey | None = None,
        high_watermark: int | None = None,
    ) -> None:
        self.epoch = epoch
        self.leader_id = leader_id
        self.voted_key = voted_key
        self.high_watermark = high_watermark

    def election_state(self, kraft_version: int) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key, kraft_version)

    def describe(self) -> str:
        return describe_state(self.role, self.epoch, self.leader_id, self.voted_key, self.high_watermark)


class UnattachedState(EpochState):
    role = Role.UNATTACHED
    __slots__ = ("election_deadline",)

    def __init__(
        self,
        epoch: int,
        leader_id: int | None,
        voted_key: ReplicaKey | None,
        hw: int | None,
        election_deadline: int,
    ) -> None:
        super().__init__(epoch, leader_id, voted_key, hw)
        self.election_deadline = election_deadline


class ProspectiveState(EpochState):
    """Pre-vote in progress at the current epoch; never persisted (KIP-996). Its pre-votes are asked
    for from ``asks_at`` on (after a fetch timeout, a random jitter; otherwise at once)."""

    role = Role.PROSPECTIVE
    __slots__ = ("election", "election_deadline", "leader_endpoints", "asks_at")

    def __init__(
        self,
        epoch: int,
        leader_id: int | None,
        voted_key: ReplicaKey | None,
        hw: int | None,
        election: EpochElection,
        deadline: int,
        endpoints: Mapping[str, Endpoint],
        asks_at: int,
    ) -> None:
        super().__init__(epoch, leader_id, voted_key, hw)
        self.election: EpochElection = election
        self.election_deadline: int = deadline
        self.leader_endpoints: Mapping[str, Endpoint] = endpoints
        self.asks_at: int = asks_at


class CandidateState(EpochState):
    role = Role.CANDIDATE
    __slots__ = ("election", "election_deadline")

    def __init__(
        self, epoch: int, voted_key: ReplicaKey | None, hw: int | None, election: EpochElection, deadline: int
    ) -> None:
        super().__init__(epoch, None, voted_key, hw)
        self.election = election
        self.election_deadline = deadline


class FollowerState(EpochState):
    role = Role.FOLLOWER
    __slots__ = (
        "leader_endpoints",
        "fetch_deadline",
        "has_fetched",
        "update_voter_deadline",
        "snapshot_download",
        "voter_updated",
    )

    def __init__(
        self,
        epoch: int,
        leader_id: int,
        voted_key: ReplicaKey | None,
        hw: int | None,
        endpoints: Mapping[str, Endpoint],
        fetch_deadline: int,
        update_voter_deadline: int,
    ) -> None:
        super().__init__(epoch, leader_id, voted_key, hw)
        self.leader_endpoints: Mapping[str, Endpoint] = endpoints
        self.fetch_deadline: int = fetch_deadline
        self.has_fetched = False
        # UpdateRaftVoter / auto-join: first looked at one full period after becoming a follower
        self.update_voter_deadline: int = update_voter_deadline
        self.snapshot_download: SnapshotId | None = None  # the snapshot being downloaded, if any
        self.voter_updated = False


class ResignedState(EpochState):
    """A leader that stepped down; the memory-only leader(self) stays on disk."""

    role = Role.RESIGNED
    __slots__ = ("unacked", "successors", "election_deadline")

    def __init__(
        self,
        epoch: int,
        leader_id: int | None,
        hw: int | None,
        unacked: set[int],
        successors: list[ReplicaKey],
        deadline: int,
    ) -> None:
        super().__init__(epoch, leader_id, None, hw)
        self.unacked = unacked
        self.successors = successors
        self.election_deadline = deadline
