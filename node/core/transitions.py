"""Every state change of the core: ``become_*`` plus ``maybe_transition`` (docs/kraft.md §2.1, §4.9).

Each change is checked against :data:`.states.TRANSITIONS`, resets all connections (so responses to
earlier requests are dropped), and, when durable, queues the new election state; the driver persists it
before any message of the same Ready leaves. Leaving Leader hands its parked fetches and pending voter
change to :func:`.leader_ops.abandon_leadership`; they are answered with ``NOT_LEADER_OR_FOLLOWER`` once
the new state is in place.
"""

from __future__ import annotations

from typing import Mapping

from .api import Endpoint, InvariantViolation, PeerRefused, ReplicaKey, Role
from .leader import LeaderState
from .leader_ops import abandon_leadership, append_start_of_epoch_records
from .replica import Replica
from .states import (
    EPOCH_LIMIT,
    NEVER,
    CandidateState,
    EpochElection,
    EpochState,
    FollowerState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
    check_transition,
    epoch_in_range,
)


def _leave(replica: Replica, dst: Role, epoch: int) -> EpochState:
    old = replica.state
    check_transition(old, dst, epoch)
    replica.trace_transition(old.role, dst)
    if isinstance(old, LeaderState):
        abandon_leadership(replica, old)
    if isinstance(old, FollowerState) and old.snapshot_download is not None:
        replica.snapshots.abort_partial(old.snapshot_download)
    replica.requests.reset()
    return old


def _enter(replica: Replica, new: EpochState, durable: bool) -> None:
    replica.state = new
    if durable:
        replica.out.persist(new.election_state(replica.control.kraft_version()))


def become_unattached(
    replica: Replica,
    epoch: int,
    leader_id: int | None = None,
    voted_key: ReplicaKey | None = None,
    deadline: int | None = None,
) -> None:
    old = _leave(replica, Role.UNATTACHED, epoch)
    if deadline is None:
        if not replica.is_voter():
            deadline = NEVER
        elif old.role in (Role.CANDIDATE, Role.UNATTACHED, Role.RESIGNED):
            deadline = old.election_deadline  # type: ignore[attr-defined]
        else:
            deadline = replica.now + replica.random_election_timeout()
    hw = old.high_watermark
    _enter(replica, UnattachedState(epoch, leader_id, voted_key, hw, deadline), True)


def add_vote(replica: Replica, key: ReplicaKey) -> None:
    """Unattached/Prospective at the same epoch record a vote (durable; timer re-randomised)."""
    st = replica.state
    if st.role not in (Role.UNATTACHED, Role.PROSPECTIVE) or st.voted_key is not None:
        raise InvariantViolation(f"cannot record a vote in {st.describe()}")
    if replica.local_key is not None and key.id == replica.local_key.id:
        raise InvariantViolation("may not vote for self outside candidacy")
    replica.trace_transition(st.role, st.role)
    st.voted_key = key
    st.election_deadline = replica.now + replica.random_election_timeout()  # type: ignore[attr-defined]
    replica.out.persist(st.election_state(replica.control.kraft_version()))


def become_prospective(replica: Replica, fetch_timed_out: bool = False) -> None:
    """``fetch_timed_out``: a follower's fetch timer ran out, so it asks for pre-votes only after a
    random ``pre_vote_jitter_ms`` (every other way in has already waited a randomized timeout)."""
    if not replica.is_voter():
        raise InvariantViolation("only voters may become prospective")
    old = _leave(replica, Role.PROSPECTIVE, replica.state.epoch)
    endpoints = getattr(old, "leader_endpoints", {})
    election = EpochElection(replica.voters().ids(), replica.local_id)
    deadline = replica.now + replica.random_election_timeout()
    jitter = min(replica.cfg.pre_vote_jitter_ms, replica.cfg.election_timeout_ms)
    asks_at = replica.now + (replica.rng.randrange(jitter) if fetch_timed_out and jitter > 0 else 0)
    leader_id = old.leader_id if old.role is not Role.RESIGNED else None
    prospective = ProspectiveState(
        old.epoch, leader_id, old.voted_key, old.high_watermark, election, deadline, endpoints, asks_at
    )
    _enter(replica, prospective, False)
    if election.is_granted() or not replica.cfg.pre_vote:
        become_candidate(replica)


def become_candidate(replica: Replica) -> None:
    old = _leave(replica, Role.CANDIDATE, replica.state.epoch + 1)
    election = EpochElection(replica.voters().ids(), replica.local_id)
    deadline = replica.now + replica.random_election_timeout()
    _enter(replica, CandidateState(old.epoch + 1, replica.local_key, old.high_watermark, election, deadline), True)
    if election.is_granted():
        become_leader(replica)


def become_leader(replica: Replica) -> None:
    old = replica.state
    if not isinstance(old, CandidateState) or not old.election.is_granted():
        raise InvariantViolation(f"cannot lead from {old.describe()}")
    local_key = replica.local_key
    assert local_key is not None  # only a voter campaigns
    _leave(replica, Role.LEADER, old.epoch)
    st = LeaderState(
        old.epoch,
        local_key,
        old.voted_key,
        replica.log.end_offset(),
        replica.voters(),
        old.election.granted,
        replica.now,
        replica.cfg.check_quorum_timeout_ms,
    )
    if replica.control.kraft_version() == 0:
        # The leader knows its own directory id, listeners and range; the others report theirs.
        static = replica.voters()
        st.volatile_voters = static.with_voter(replica.local_voter_spec()) if static.get(local_key.id) else static
    _enter(replica, st, True)
    append_start_of_epoch_records(replica, st)


def become_follower(
    replica: Replica, epoch: int, leader_id: int, endpoints: Mapping[str, Endpoint] | None = None
) -> None:
    if replica.local_id is not None and leader_id == replica.local_id:
        raise InvariantViolation(f"cannot follow self (epoch {epoch})")
    eps = dict(endpoints or {}) or dict(replica.voters().endpoints(leader_id))
    st = replica.state
    voted = st.voted_key if epoch == st.epoch else None
    if not eps:
        # A leader without endpoints cannot be fetched from: remember it as Unattached.
        if epoch > st.epoch or (st.role is Role.PROSPECTIVE and st.leader_id is None):
            become_unattached(replica, epoch, leader_id, voted)
        return
    _leave(replica, Role.FOLLOWER, epoch)
    hw = st.high_watermark
    new = FollowerState(
        epoch, leader_id, voted, hw, eps, replica.now + replica.cfg.fetch_timeout_ms, replica.now + replica.cfg.update_voter_period_ms
    )
    _enter(replica, new, True)


def become_resigned(replica: Replica) -> None:
    old = replica.state
    if not isinstance(old, LeaderState):
        raise InvariantViolation(f"only a leader can resign, not {old.describe()}")
    successors = old.successors()
    _leave(replica, Role.RESIGNED, old.epoch)
    unacked = {k.id for k in successors}
    deadline = replica.now + replica.random_election_timeout()
    new = ResignedState(old.epoch, old.leader_id, old.high_watermark, unacked, successors, deadline)
    _enter(replica, new, False)


def claim_conflict(replica: Replica, epoch: int, leader_id: int | None) -> str | None:
    """Why a peer's claim "``leader_id`` leads ``epoch``" cannot be accepted, or None if it can.

    Each of these Kafka treats as fatal (``hasConsistentLeader``: IllegalStateException, the process
    exits). Only a lying or broken peer makes such a claim (or an honest one about a node that lost its
    disk, which then refuses until the quorum elects again), so the message is refused instead."""
    st = replica.state
    if not epoch_in_range(epoch):
        return f"epoch {epoch} is outside 0..{EPOCH_LIMIT - 1}"
    if leader_id is None or leader_id < 0 or epoch != st.epoch:
        return None
    if leader_id == replica.local_id:
        if st.role not in (Role.LEADER, Role.RESIGNED):
            return f"names this node leader of epoch {epoch}, but it is {st.describe()}"
        return None
    if st.leader_id is not None and st.leader_id != leader_id:
        return f"names {leader_id} leader of epoch {epoch}, whose leader is {st.leader_id}"
    return None


def maybe_transition(
    replica: Replica, epoch: int, leader_id: int | None, endpoints: Mapping[str, Endpoint] | None
) -> None:
    """React to a peer naming ``(leader_id, epoch)`` (docs/kraft.md §4.3, §4.9 items 2-3).

    Raises :class:`PeerRefused`, before changing anything, for a claim :func:`claim_conflict` refuses.
    """
    conflict = claim_conflict(replica, epoch, leader_id)
    if conflict is not None:
        raise PeerRefused(conflict)
    st = replica.state
    if leader_id is not None and leader_id < 0:
        leader_id = None
    if epoch < st.epoch:
        return
    if leader_id is not None and leader_id == replica.local_id:
        if epoch > st.epoch:
            become_unattached(replica, epoch)  # we lost the state that made us leader (disk loss)
        return
    if epoch > st.epoch:
        if leader_id is None:
            become_unattached(replica, epoch)
        else:
            become_follower(replica, epoch, leader_id, endpoints)
        return
    if leader_id is None or st.role is Role.LEADER:
        return
    if isinstance(st, FollowerState):
        if endpoints and set(endpoints) - set(st.leader_endpoints):
            become_follower(replica, epoch, leader_id, {**st.leader_endpoints, **endpoints})
        return
    if st.leader_id is None or st.role in (Role.UNATTACHED, Role.PROSPECTIVE):
        if (
            st.role is Role.UNATTACHED
            and st.leader_id == leader_id
            and not (endpoints or replica.voters().endpoints(leader_id))
        ):
            return
        become_follower(replica, epoch, leader_id, endpoints)


def prospective_lost(replica: Replica, st: ProspectiveState, timed_out: bool) -> None:
    """Pre-vote lost or timed out: back to the known leader, else Unattached at the same epoch."""
    if st.leader_id is not None and (st.leader_endpoints or replica.voters().endpoints(st.leader_id)):
        become_follower(replica, st.epoch, st.leader_id, st.leader_endpoints)
        return
    deadline = replica.now if timed_out else None
    if deadline is None:
        deadline = replica.now + replica.random_election_timeout()
    become_unattached(replica, st.epoch, st.leader_id, st.voted_key, deadline=deadline)
