"""The value types of the KRaft core: identities, records, roles, the status snapshot and the errors.

They sit below everything else in the core (configuration, storage, the state objects and
:mod:`.api`, which re-exports them as part of the public contract). Identities and records are frozen
and hashable; nothing here refers to any other module of the core.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

# ---------------------------------------------------------------------------------------------------
# Identity and small values
# ---------------------------------------------------------------------------------------------------

ZERO_UUID = uuid.UUID(int=0)
"""The "no directory id" value (docs/kraft.md §1)."""

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
METADATA_TOPIC_ID = uuid.UUID(int=1)
"""``Uuid(0, 1)``, printed by Kafka as ``AAAAAAAAAAAAAAAAAAAAAQ``. Fetch v13+ matches on it."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener address: where a node can be reached."""

    host: str
    port: int


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica's identity: node id plus optional directory id (``None`` means "unknown/any").

    A voter entry without a directory id matches any replica with the same id; one with a directory id
    matches only that exact id (docs/kraft.md §1). Ordering is by id, then directory id.
    """

    id: int
    directory_id: uuid.UUID | None = None

    def matches(self, other: "ReplicaKey") -> bool:
        """True if ``other`` (a replica presenting itself) is this voter entry."""
        if self.id != other.id:
            return False
        return self.directory_id is None or self.directory_id == other.directory_id

    def __str__(self) -> str:
        return (
            f"{self.id}" if self.directory_id is None else f"{self.id}:{str(self.directory_id)[:8]}"
        )


@dataclass(frozen=True, slots=True)
class VoterSpec:
    """One voter as configured or as carried by a ``VotersRecord``.

    ``listeners`` maps listener name to endpoint; the first entry is the default (controller) listener.
    ``kraft_version_range`` is the voter's supported ``kraft.version`` range (min, max).
    """

    key: ReplicaKey
    listeners: Mapping[str, Endpoint] = field(default_factory=dict)
    kraft_version_range: tuple[int, int] = (0, 1)


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    """A snapshot's id: ``end_offset`` (last contained offset + 1) and the epoch of its last batch."""

    end_offset: int
    epoch: int


BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)
"""The bootstrap checkpoint written by ``kafka-storage format``; never served over FetchSnapshot."""


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    """Who leads (``None`` if unknown) in which epoch."""

    leader_id: int | None
    epoch: int


@dataclass(frozen=True, slots=True)
class ElectionState:
    """The persisted quorum state (``QuorumStateData`` / the ``quorum-state`` file, docs/kraft.md §9).

    ``leader_id`` and ``voted_key`` are ``None`` when absent (the file stores -1 / the zero UUID).
    ``kraft_version`` selects the file's ``data_version`` (1 writes ``votedDirectoryId``; 0 writes the
    legacy fields).
    """

    epoch: int
    leader_id: int | None = None
    voted_key: ReplicaKey | None = None
    kraft_version: int = 1

    def has_voted(self) -> bool:
        return self.voted_key is not None


@dataclass(frozen=True, slots=True)
class LogBatch:
    """One record batch as the core sees it, independent of its byte layout.

    ``records`` holds opaque ``bytes`` values for a data batch, or generated control-record objects
    (``LeaderChangeMessage``, ``VotersRecord``, ``KRaftVersionRecord``, ...) for a control batch: a
    tuple, or, once the application has been given them, a sequence that decodes ``raw`` when read
    (so a log holds its records once, encoded; see ``kraftwire.node.core.batches``).
    ``raw`` caches the encoded record-batch bytes once computed.
    """

    base_offset: int
    epoch: int
    records: Sequence[Any]
    is_control: bool = False
    append_time_ms: int = 0
    raw: bytes | None = field(default=None, compare=False)

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)

    def size_in_bytes(self) -> int:
        """Byte size used for MaxBytes accounting (exact when ``raw`` is known, else an estimate)."""
        if self.raw is not None:
            return len(self.raw)
        n = 61
        for r in self.records:
            n += (len(r) if isinstance(r, (bytes, bytearray)) else 32) + 8
        return n


class Role(enum.Enum):
    """The epoch states of docs/kraft.md §2. Observers use only UNATTACHED and FOLLOWER."""

    UNATTACHED = "unattached"
    PROSPECTIVE = "prospective"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"
    RESIGNED = "resigned"


# ---------------------------------------------------------------------------------------------------
# Introspection
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplicaStatus:
    """What the leader knows of one replica's progress (DescribeQuorum's ``ReplicaState``).

    ``log_end_offset`` is ``None`` while unknown; the times are ``-1`` until the first fetch / catch-up.
    The leader's own entry shows its log end offset, fetched and caught up "now".
    """

    key: ReplicaKey
    log_end_offset: int | None
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass(frozen=True, slots=True)
class QuorumStatus:
    """A read-only snapshot of one replica, from :meth:`KRaftCore.status` (for describe, metrics, tests
    and the simulator's checks). It never changes after it is taken.

    ``voters`` is the latest voter set (in effect from its append on); ``committed_voters`` the set in
    effect at the high watermark (``None`` while the HW is unknown); ``voters_offset`` the offset of the
    latest ``VotersRecord`` (-1: the bootstrap set; ``None``: static configuration, kraft.version 0).
    ``voter_progress`` and ``observer_progress`` are known on a leader only (else empty); observers idle
    longer than ``observer_session_timeout_ms`` are left out, as DescribeQuorum does.

    For Kafka's raft metrics (docs/operations.md §6): ``current_vote`` is the replica a
    ``current-vote`` / ``current-vote-directory-id`` gauge reports (itself as leader or candidate, else
    the replica it voted for, if any); ``log_end_epoch`` the epoch of the last batch at the log end (the
    snapshot's for an empty log). Two are leader-only, ``None`` elsewhere, as Kafka adds those gauges on
    becoming leader: ``observer_count``, every observer the leader tracks (idle ones too, until a
    DescribeQuorum prunes them, as Kafka counts), and ``voter_change_pending``, an add, remove or update
    of a voter in progress (``uncommitted-voter-change``).
    """

    role: Role
    epoch: int
    leader_id: int | None
    voted_key: ReplicaKey | None
    high_watermark: int | None
    log_start_offset: int
    log_end_offset: int
    kraft_version: int
    voters: tuple[VoterSpec, ...]
    committed_voters: tuple[VoterSpec, ...] | None
    voters_offset: int | None
    voter_progress: tuple[ReplicaStatus, ...] = ()
    observer_progress: tuple[ReplicaStatus, ...] = ()
    current_vote: ReplicaKey | None = None
    log_end_epoch: int = 0
    observer_count: int | None = None
    voter_change_pending: bool | None = None

    def voter_ids(self) -> tuple[int, ...]:
        return tuple(v.key.id for v in self.voters)

    def is_voter(self, key: ReplicaKey | None) -> bool:
        """True when ``key`` matches an entry of the latest voter set."""
        return key is not None and any(v.key.matches(key) for v in self.voters)

    def describe(self) -> str:
        """``leader epoch=3 leader=1 voted=1 hw=5``, as the core names its states in errors and traces."""
        return describe_state(
            self.role, self.epoch, self.leader_id, self.voted_key, self.high_watermark
        )


def describe_state(
    role: Role,
    epoch: int,
    leader_id: int | None,
    voted_key: ReplicaKey | None,
    high_watermark: int | None,
) -> str:
    parts = [f"{role.value} epoch={epoch}"]
    if leader_id is not None:
        parts.append(f"leader={leader_id}")
    if voted_key is not None:
        parts.append(f"voted={voted_key}")
    parts.append(f"hw={'-' if high_watermark is None else high_watermark}")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------------


class KRaftError(Exception):
    """Base class of the core's exceptions."""


class NotLeaderError(KRaftError):
    """An append or snapshot request that only the current leader (at the given epoch) may make."""


class KRaftVersionUpgradeError(KRaftError):
    """A kraft.version change the leader cannot make: a downgrade, an unknown version, a voter that has
    not reported its directory id or does not support the version."""


class InvariantViolation(KRaftError):
    """A fatal safety violation in a state the node reached by itself (Kafka throws
    IllegalStateException): e.g. a truncation below its own high watermark, an illegal state change.
    What a peer claims never raises it: that is a :class:`PeerRefused`."""


class PeerRefused(KRaftError):
    """A peer's request or response claims what this node cannot accept: a second leader of its epoch,
    this node as a leader it is not, an epoch it could never step past, a truncation below its high
    watermark, a snapshot chunk that does not continue its download. Only a lying or broken peer sends
    one, so the message is refused (answered with an error, or ignored), one line is logged
    (:attr:`Ready.refused`) and the node keeps running. Raised before the refused part changed
    anything; the dispatcher catches it."""


class LeaderConflict(InvariantViolation):
    """Kept for callers that catch it; no longer raised. A peer naming this node leader of an epoch it
    does not lead (Kafka's ``hasConsistentLeader``: the process exits) is now a :class:`PeerRefused`.
    """
