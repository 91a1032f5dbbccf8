"""Startup: storage recovery, control-record replay and the initial epoch state (kraft-node.md §2.2, §8).

Initial state from the stored election state:
1. a vote without a local id is an error;
2. stored epoch below the log's last batch epoch -> Unattached(log epoch), nothing else kept;
3. stored leader is self -> Resigned(same epoch): never initialize as Leader;
4. stored vote for self and no leader -> Candidate(same epoch), its vote already durable;
5. stored leader with known endpoints -> Follower; without -> Unattached(epoch, leader, vote);
6. otherwise Unattached(epoch, vote).
A single voter then goes Prospective -> Candidate -> Leader at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .api import ElectionState, InvariantViolation, Role
from .log_ops import earliest_snapshot, latest_snapshot
from .states import (
    CandidateState,
    EpochElection,
    EpochState,
    FollowerState,
    ResignedState,
    UnattachedState,
)
from .transitions import NEVER

if TYPE_CHECKING:
    from .core import KRaftCore


def recover_storage(core: "KRaftCore") -> None:
    log, snaps = core.log, core.snapshots
    latest = latest_snapshot(snaps)
    if latest is not None and latest.end_offset > log.end_offset():
        log.truncate_fully_and_start_at(latest)  # crashed right after a download
    for sid in list(snaps.ids()):
        if 0 < sid.end_offset < log.start_offset():
            snaps.delete(sid)
    if log.start_offset() > 0 and earliest_snapshot(log, snaps) is None:
        raise InvariantViolation(f"log starts at {log.start_offset()} but no snapshot is there")


def replay_control_records(core: "KRaftCore") -> None:
    from .snapshots import read_snapshot

    earliest = earliest_snapshot(core.log, core.snapshots)
    if earliest is not None:
        loaded = read_snapshot(core, earliest)
        core.control.reset_from_snapshot(earliest.end_offset, loaded.control_records)
    for batch in core.log.batches():
        core.control.apply_batch(batch)


def initialize(core: "KRaftCore") -> EpochState:
    recover_storage(core)
    replay_control_records(core)
    stored = core.quorum_store.read() or ElectionState(0)
    if stored.voted_key is not None and core.local_id is None:
        raise InvariantViolation("a vote is recorded but this node has no id")
    is_voter = core.is_voter()
    now = core.now

    def election_deadline() -> int:
        return now + core.random_election_timeout() if is_voter else NEVER

    log_epoch = core.log.last_fetched_epoch()
    st: EpochState
    if stored.epoch < log_epoch:
        st = UnattachedState(log_epoch, None, None, None, election_deadline())
        core.out.persist(st.election_state(core.control.kraft_version()))
    elif core.local_id is not None and stored.leader_id == core.local_id:
        others = [k for k in (v.key for v in core.voters()) if k.id != core.local_id]
        st = ResignedState(stored.epoch, core.local_id, None, {k.id for k in others}, others, election_deadline())
    elif (
        stored.leader_id is None  # a candidate that later learned the leader restarts as its follower
        and stored.voted_key is not None
        and core.local_key is not None
        and stored.voted_key.matches(core.local_key)
        and is_voter
    ):
        election = EpochElection(core.voters().ids(), core.local_id)  # type: ignore[arg-type]
        st = CandidateState(stored.epoch, stored.voted_key, None, election, election_deadline())
    elif stored.leader_id is not None and core.voters().endpoints(stored.leader_id):
        eps = dict(core.voters().endpoints(stored.leader_id))
        st = FollowerState(
            stored.epoch,
            stored.leader_id,
            stored.voted_key,
            None,
            eps,
            now + core.cfg.fetch_timeout_ms,
            now + core.cfg.update_voter_period_ms,
        )
    else:
        st = UnattachedState(stored.epoch, stored.leader_id, stored.voted_key, None, election_deadline())
    core.state = st
    if core.voters().is_only_voter(core.local_key) and st.role in (
        Role.UNATTACHED,
        Role.FOLLOWER,
        Role.RESIGNED,
    ):
        from .transitions import become_prospective

        become_prospective(core)
    elif isinstance(st, CandidateState) and st.election.is_granted():
        from .transitions import become_leader

        become_leader(core)
    return core.state
