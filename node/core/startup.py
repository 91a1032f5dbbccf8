"""Startup: storage recovery, control-record replay and the initial epoch state (docs/kraft.md §2.2, §8).

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

from .api import ElectionState, InvariantViolation, Role
from .log_ops import earliest_snapshot, latest_snapshot, read_snapshot
from .replica import Replica
from .states import (
    NEVER,
    CandidateState,
    EpochElection,
    EpochState,
    FollowerState,
    ResignedState,
    UnattachedState,
)
from .transitions import become_leader, become_prospective


def recover_storage(replica: Replica) -> None:
    log, snaps = replica.log, replica.snapshots
    latest = latest_snapshot(snaps)
    if latest is not None and latest.end_offset > log.end_offset():
        log.truncate_fully_and_start_at(latest)  # crashed right after a download
    for sid in list(snaps.ids()):
        if 0 < sid.end_offset < log.start_offset():
            snaps.delete(sid)
    if log.start_offset() > 0 and earliest_snapshot(log, snaps) is None:
        raise InvariantViolation(f"log starts at {log.start_offset()} but no snapshot is there")


def replay_control_records(replica: Replica) -> None:
    earliest = earliest_snapshot(replica.log, replica.snapshots)
    if earliest is not None:
        loaded = read_snapshot(replica.snapshots, earliest)
        replica.control.reset_from_snapshot(earliest.end_offset, loaded.control_records)
    for batch in replica.log.batches():
        replica.control.apply_batch(batch)


def initialize(replica: Replica) -> None:
    """Recover storage, replay the control records and put the replica in its initial state."""
    recover_storage(replica)
    replay_control_records(replica)
    stored = replica.quorum_store.read() or ElectionState(0)
    if stored.voted_key is not None and replica.local_id is None:
        raise InvariantViolation("a vote is recorded but this node has no id")
    is_voter = replica.is_voter()
    now = replica.now

    def election_deadline() -> int:
        return now + replica.random_election_timeout() if is_voter else NEVER

    log_epoch = replica.log.last_fetched_epoch()
    st: EpochState
    if stored.epoch < log_epoch:
        st = UnattachedState(log_epoch, None, None, None, election_deadline())
        replica.out.persist(st.election_state(replica.control.kraft_version()))
    elif replica.local_id is not None and stored.leader_id == replica.local_id:
        others = [k for k in (v.key for v in replica.voters()) if k.id != replica.local_id]
        st = ResignedState(stored.epoch, replica.local_id, None, {k.id for k in others}, others, election_deadline())
    elif (
        stored.leader_id is None  # a candidate that later learned the leader restarts as its follower
        and stored.voted_key is not None
        and replica.local_key is not None
        and stored.voted_key.matches(replica.local_key)
        and is_voter
    ):
        election = EpochElection(replica.voters().ids(), replica.local_id)
        st = CandidateState(stored.epoch, stored.voted_key, None, election, election_deadline())
    elif stored.leader_id is not None and replica.voters().endpoints(stored.leader_id):
        eps = dict(replica.voters().endpoints(stored.leader_id))
        st = FollowerState(
            stored.epoch,
            stored.leader_id,
            stored.voted_key,
            None,
            eps,
            now + replica.cfg.fetch_timeout_ms,
            now + replica.cfg.update_voter_period_ms,
        )
    else:
        st = UnattachedState(stored.epoch, stored.leader_id, stored.voted_key, None, election_deadline())
    replica.state = st
    if replica.voters().is_only_voter(replica.local_key) and st.role in (
        Role.UNATTACHED,
        Role.FOLLOWER,
        Role.RESIGNED,
    ):
        become_prospective(replica)
    elif isinstance(st, CandidateState) and st.election.is_granted():
        become_leader(replica)
