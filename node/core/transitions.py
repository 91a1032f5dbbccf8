"""Every state change of the core: ``become_*`` plus ``maybe_transition`` (kraft-node.md §2.1, §4.9).

Each change is checked against :data:`.states.TRANSITIONS`, resets all connections (so responses to
earlier requests are dropped), and, when durable, queues the new election state; the driver persists it
before any message of the same Ready leaves. Leaving Leader completes parked fetches and pending voter
changes with ``NOT_LEADER_OR_FOLLOWER``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from .api import Endpoint, InvariantViolation, LeaderConflict, ReplicaKey, Role
from .leader import LeaderState
from .states import (
    CandidateState,
    EpochElection,
    EpochState,
    FollowerState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
    check_transition,
)

if TYPE_CHECKING:
    from .core import KRaftCore

NEVER = 1 << 62
"""A deadline that never comes (observers' election timer)."""


def _leave(core: "KRaftCore", dst: Role, epoch: int) -> EpochState:
    old = core.state
    check_transition(old, dst, epoch)
    core.trace_transition(old.role, dst)
    if isinstance(old, LeaderState):
        from .leader_ops import abandon_leadership

        abandon_leadership(core, old)
    if isinstance(old, FollowerState) and old.snapshot_download is not None:
        core.snapshots.abort_partial(old.snapshot_download)
    core.requests.reset()
    return old


def _enter(core: "KRaftCore", new: EpochState, durable: bool) -> None:
    core.state = new
    if durable:
        core.out.persist(new.election_state(core.control.kraft_version()))


def become_unattached(
    core: "KRaftCore",
    epoch: int,
    leader_id: int | None = None,
    voted_key: ReplicaKey | None = None,
    deadline: int | None = None,
) -> None:
    old = _leave(core, Role.UNATTACHED, epoch)
    if deadline is None:
        if not core.is_voter():
            deadline = NEVER
        elif old.role in (Role.CANDIDATE, Role.UNATTACHED, Role.RESIGNED):
            deadline = old.election_deadline  # type: ignore[attr-defined]
        else:
            deadline = core.now + core.random_election_timeout()
    hw = old.high_watermark if not isinstance(old, LeaderState) else old.high_watermark
    _enter(core, UnattachedState(epoch, leader_id, voted_key, hw, deadline), True)


def add_vote(core: "KRaftCore", key: ReplicaKey) -> None:
    """Unattached/Prospective at the same epoch record a vote (durable; timer re-randomised)."""
    st = core.state
    if st.role not in (Role.UNATTACHED, Role.PROSPECTIVE) or st.voted_key is not None:
        raise InvariantViolation(f"cannot record a vote in {st.describe()}")
    if core.local_key is not None and key.id == core.local_key.id:
        raise InvariantViolation("may not vote for self outside candidacy")
    core.trace_transition(st.role, st.role)
    st.voted_key = key
    st.election_deadline = core.now + core.random_election_timeout()  # type: ignore[attr-defined]
    core.out.persist(st.election_state(core.control.kraft_version()))


def become_prospective(core: "KRaftCore") -> None:
    if not core.is_voter():
        raise InvariantViolation("only voters may become prospective")
    old = _leave(core, Role.PROSPECTIVE, core.state.epoch)
    endpoints = getattr(old, "leader_endpoints", {})
    election = EpochElection(core.voters().ids(), core.local_id)
    deadline = core.now + core.random_election_timeout()
    leader_id = old.leader_id if old.role is not Role.RESIGNED else None
    _enter(
        core,
        ProspectiveState(old.epoch, leader_id, old.voted_key, old.high_watermark, election, deadline, endpoints),
        False,
    )
    if election.is_granted() or not core.cfg.pre_vote:
        become_candidate(core)


def become_candidate(core: "KRaftCore") -> None:
    old = _leave(core, Role.CANDIDATE, core.state.epoch + 1)
    election = EpochElection(core.voters().ids(), core.local_id)
    deadline = core.now + core.random_election_timeout()
    _enter(core, CandidateState(old.epoch + 1, core.local_key, old.high_watermark, election, deadline), True)
    if election.is_granted():
        become_leader(core)


def become_leader(core: "KRaftCore") -> None:
    old = core.state
    if not isinstance(old, CandidateState) or not old.election.is_granted():
        raise InvariantViolation(f"cannot lead from {old.describe()}")
    _leave(core, Role.LEADER, old.epoch)
    st = LeaderState(
        old.epoch,
        core.local_key,
        old.voted_key,
        core.log.end_offset(),
        core.voters(),
        old.election.granted,
        core.now,
        core.cfg.check_quorum_timeout_ms,
    )
    if core.control.kraft_version() == 0:
        # The leader knows its own directory id, listeners and range; the others report theirs.
        static = core.voters()
        st.volatile_voters = static.with_voter(core.local_voter_spec()) if static.get(core.local_id) else static
    _enter(core, st, True)
    from .leader_ops import append_start_of_epoch_records

    append_start_of_epoch_records(core, st)


def become_follower(
    core: "KRaftCore", epoch: int, leader_id: int, endpoints: Mapping[str, Endpoint] | None = None
) -> None:
    if core.local_id is not None and leader_id == core.local_id:
        raise InvariantViolation(f"cannot follow self (epoch {epoch})")
    eps = dict(endpoints or {}) or dict(core.voters().endpoints(leader_id))
    st = core.state
    voted = st.voted_key if epoch == st.epoch else None
    if not eps:
        # A leader without endpoints cannot be fetched from: remember it as Unattached.
        if epoch > st.epoch or (st.role is Role.PROSPECTIVE and st.leader_id is None):
            become_unattached(core, epoch, leader_id, voted)
        return
    _leave(core, Role.FOLLOWER, epoch)
    hw = st.high_watermark
    new = FollowerState(
        epoch, leader_id, voted, hw, eps, core.now + core.cfg.fetch_timeout_ms, core.now + core.cfg.update_voter_period_ms
    )
    _enter(core, new, True)


def become_resigned(core: "KRaftCore") -> None:
    old = core.state
    if not isinstance(old, LeaderState):
        raise InvariantViolation(f"only a leader can resign, not {old.describe()}")
    successors = old.successors()
    _leave(core, Role.RESIGNED, old.epoch)
    unacked = {k.id for k in successors}
    deadline = core.now + core.random_election_timeout()
    new = ResignedState(old.epoch, old.leader_id, old.high_watermark, unacked, successors, deadline)
    _enter(core, new, False)


def maybe_transition(
    core: "KRaftCore", epoch: int, leader_id: int | None, endpoints: Mapping[str, Endpoint] | None
) -> None:
    """React to a peer naming ``(leader_id, epoch)`` (kraft-node.md §4.3 step 5, §4.9 step 2-3)."""
    st = core.state
    if leader_id is not None and leader_id < 0:
        leader_id = None
    if epoch < st.epoch:
        return
    if leader_id is not None and leader_id == core.local_id:
        if epoch > st.epoch:
            become_unattached(core, epoch)  # we lost the state that made us leader (disk loss)
        elif st.role not in (Role.LEADER, Role.RESIGNED):
            raise LeaderConflict(f"peer names us leader of epoch {epoch} but we are {st.describe()}")
        return
    if epoch > st.epoch:
        if leader_id is None:
            become_unattached(core, epoch)
        else:
            become_follower(core, epoch, leader_id, endpoints)
        return
    if leader_id is None:
        return
    if st.leader_id is not None and st.leader_id != leader_id:
        raise InvariantViolation(f"two leaders in epoch {epoch}: {st.leader_id} and {leader_id}")
    if st.role is Role.LEADER:
        return
    if isinstance(st, FollowerState):
        if endpoints and set(endpoints) - set(st.leader_endpoints):
            become_follower(core, epoch, leader_id, {**st.leader_endpoints, **endpoints})
        return
    if st.leader_id is None or st.role in (Role.UNATTACHED, Role.PROSPECTIVE):
        if st.role is Role.UNATTACHED and st.leader_id == leader_id and not (
            endpoints or core.voters().endpoints(leader_id)
        ):
            return
        become_follower(core, epoch, leader_id, endpoints)

