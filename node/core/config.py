"""Node configuration (part of the :mod:`.api` contract, re-exported there)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

from .values import Endpoint, ReplicaKey, VoterSpec

__all__ = ["RandomSource", "Config"]


# ---------------------------------------------------------------------------------------------------


class RandomSource(Protocol):
    """What the core needs from its injected random source (``random.Random(seed)`` fits)."""

    def randrange(self, stop: int, /) -> int: ...


@dataclass(frozen=True)
class Config:
    """Node identity, quorum membership and timers. Timer names and defaults follow Kafka's
    ``QuorumConfig`` (``controller.quorum.*``, docs/kraft.md §1).

    Membership: with ``kraft_version == 0`` the voters are the static ``controller.quorum.voters``
    (ids plus endpoints; directory ids ignored). With ``kraft_version == 1`` they are the bootstrap
    voter set (as if from the bootstrap checkpoint, offset -1) and the first leader copies them into
    the log as a ``VotersRecord``. Either way a ``VotersRecord`` in the log, once present, wins.
    ``voters`` may be empty for a node that only learns membership from the log (it must have a
    snapshot or a leader to fetch from via ``bootstrap_servers``).
    """

    node_id: int | None
    directory_id: uuid.UUID
    cluster_id: str
    voters: Sequence[VoterSpec]
    rng: RandomSource
    start_ms: int = 0
    kraft_version: int = 1
    listeners: Mapping[str, Endpoint] = field(default_factory=dict)
    """This node's listeners; the first is the default controller listener."""
    supported_kraft_version: tuple[int, int] = (0, 1)
    bootstrap_servers: Sequence[Endpoint] = ()
    """``controller.quorum.bootstrap.servers``; they get the synthetic ids -2, -3, ..."""

    election_timeout_ms: int = 1000
    """``controller.quorum.election.timeout.ms``: randomised to [T, 2T)."""
    fetch_timeout_ms: int = 2000
    """``controller.quorum.fetch.timeout.ms``: check-quorum at 1.5x, BeginQuorumEpoch resend at 0.5x,
    follower UpdateRaftVoter period at 2x."""
    pre_vote_jitter_ms: int = 50
    """kraftwire's own (Kafka has no such setting): a follower whose fetch timer ran out waits a
    random [0, this) ms as Prospective before it asks for pre-votes (0: asks at once). The followers
    of a leader that died last heard from it at nearly the same moment, so their fixed fetch timers
    run out together; asking at the same instant, each grants the other's pre-vote and both become
    candidates of the same epoch, a split vote that costs a randomized election timeout
    (docs/kraft.md §6.3)."""
    election_backoff_max_ms: int = 1000
    """``controller.quorum.election.backoff.max.ms``: EndQuorumEpoch successor backoff (§4.4)."""
    request_timeout_ms: int = 2000
    """``controller.quorum.request.timeout.ms``."""
    retry_backoff_ms: int = 20
    """``controller.quorum.retry.backoff.ms``."""
    append_linger_ms: int = 25
    """``controller.quorum.append.linger.ms``."""
    fetch_max_bytes: int = 1 << 20
    """``controller.quorum.fetch.max.bytes``."""
    fetch_snapshot_max_bytes: int = 1 << 20
    """``controller.quorum.fetch.snapshot.max.bytes``."""
    auto_join: bool = False
    """``controller.quorum.auto.join.enable``."""
    fetch_max_wait_ms: int = 500
    """The follower's Fetch ``MaxWaitMs`` (hard-coded 500 in Kafka)."""
    max_batch_size_bytes: int = 8 << 20
    """Leader accumulator batch cap (8 MiB in Kafka)."""
    observer_session_timeout_ms: int = 300_000
    """DescribeQuorum prunes observers idle this long."""
    caught_up_window_ms: int = 3_600_000
    """An observer counts as caught up for AddRaftVoter if it fetched within this window."""
    pre_vote: bool = True
    """Send pre-votes (KIP-996). ``False`` models a 3.9 node for tests."""
    follower_fetch: bool = False
    """``kraftwire.follower.fetch.enable``: a follower answers a client's Fetch (replica id -1) from
    the records it knows are committed; otherwise only the leader does (:mod:`.fetch_client`)."""

    @property
    def check_quorum_timeout_ms(self) -> int:
        return self.fetch_timeout_ms * 3 // 2

    @property
    def begin_quorum_epoch_resend_ms(self) -> int:
        return self.fetch_timeout_ms // 2

    @property
    def update_voter_period_ms(self) -> int:
        return self.fetch_timeout_ms * 2

    @property
    def local_key(self) -> ReplicaKey | None:
        return None if self.node_id is None else ReplicaKey(self.node_id, self.directory_id)
