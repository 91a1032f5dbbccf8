"""Timed work per state (Kafka's ``pollCurrentState``, docs/kraft.md §3).

A node that is shutting down starts no election: it stays put until the shutdown completes or an epoch
bump moves it along.
"""

from __future__ import annotations

from typing import Any, Callable

from . import messages
from .api import Endpoint, Role
from .fetch_leader import expire_parked
from .leader import LeaderState
from .leader_ops import drain, leader_deadline, ping_rounds
from .replica import Replica
from .snapshots import send_fetch_snapshot
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
)
from .transitions import become_prospective, become_resigned, become_unattached, prospective_lost
from .voter_changes import expire_pending_change
from .voter_client import auto_join_enabled, maybe_send_auto_join, maybe_send_update_voter


def poll_state(replica: Replica) -> None:
    st = replica.state
    _POLLERS[type(st)](replica, st)


def _may_campaign(replica: Replica) -> bool:
    """Not while shutting down, only as a voter, and only while the next epoch stays below the int32
    limit (peers refuse an epoch at it; one past it could not even be sent)."""
    return (
        replica.shutdown_deadline is None
        and replica.is_voter()
        and replica.state.epoch + 1 < EPOCH_LIMIT
    )


def send_votes(replica: Replica, election: EpochElection, epoch: int, pre_vote: bool) -> None:
    now = replica.now
    candidate = replica.local_key
    assert candidate is not None  # only a voter campaigns
    last_epoch, leo = replica.log.last_fetched_epoch(), replica.log.end_offset()
    for nid in election.unrecorded():
        if nid == replica.local_id or not replica.requests.is_ready(nid, now):
            continue
        spec = replica.voters().get(nid)
        if spec is None:
            continue
        req = messages.vote_request(
            replica.cfg.cluster_id, spec.key, epoch, candidate, last_epoch, leo, pre_vote
        )
        replica.send_request(nid, req, min_version=2 if pre_vote else 0)


def poll_candidate(replica: Replica, st: CandidateState) -> None:
    if replica.now >= st.election_deadline:
        if _may_campaign(replica):
            become_prospective(replica)
        return
    if not st.election.is_rejected():
        send_votes(replica, st.election, st.epoch, pre_vote=False)


def poll_prospective(replica: Replica, st: ProspectiveState) -> None:
    if replica.now >= st.election_deadline:
        prospective_lost(replica, st, timed_out=True)
    elif st.election.is_rejected():
        prospective_lost(replica, st, timed_out=False)
    elif replica.now >= st.asks_at:
        send_votes(replica, st.election, st.epoch, pre_vote=True)


def poll_unattached(replica: Replica, st: UnattachedState) -> None:
    if replica.now >= st.election_deadline and _may_campaign(replica):
        become_prospective(replica)
        return
    if replica.requests.has_any_in_flight():
        return
    candidates = [n for n in _discovery_targets(replica) if replica.requests.is_ready(n, replica.now)]
    if candidates:
        dest = candidates[replica.rng.randrange(len(candidates))]
        send_fetch(replica, dest, st.epoch)


def _discovery_targets(replica: Replica, exclude: int | None = None) -> list[int]:
    """Voters and bootstrap servers (synthetic ids -2, -3, ...) to ask who leads, except ourselves and
    ``exclude``; a bootstrap server at our own or ``exclude``'s address is left out too.

    Unattached and cut-off nodes ask this on every poll, so the answer is kept until the voter set, the
    leader's endpoints or ``exclude`` change (the configuration never does)."""
    voters = replica.voters()
    exclude_ep = replica.endpoint_of(exclude) if exclude is not None else None
    key = (voters, exclude, exclude_ep)
    cached = replica.discovery_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    ids = [n for n in voters.ids() if n != replica.local_id and n != exclude]
    skip = set(replica.cfg.listeners.values())
    if exclude_ep is not None:
        skip.add(exclude_ep)
    ids += [-2 - i for i, ep in enumerate(replica.cfg.bootstrap_servers) if ep not in skip]
    replica.discovery_cache = (key, ids)
    return ids


def discovery_endpoint(replica: Replica, node_id: int) -> Endpoint | None:
    if node_id <= -2:
        return replica.cfg.bootstrap_servers[-2 - node_id]
    return replica.endpoint_of(node_id)


def send_fetch(replica: Replica, dest: int, epoch: int) -> None:
    cfg = replica.cfg
    req = messages.fetch_request(
        cfg.cluster_id,
        replica.local_key,
        epoch,
        replica.log.end_offset(),
        replica.log.last_fetched_epoch(),
        cfg.fetch_max_wait_ms,
        cfg.fetch_max_bytes,
        replica.state.high_watermark,
    )
    replica.send_request(dest, req, endpoint=discovery_endpoint(replica, dest))


def poll_follower(replica: Replica, st: FollowerState) -> None:
    now = replica.now
    voter = replica.is_voter()
    if voter and now >= st.fetch_deadline and _may_campaign(replica):
        become_prospective(replica, fetch_timed_out=True)
        return
    if replica.requests.has_any_in_flight():
        return
    if voter and maybe_send_update_voter(replica, st):
        return
    if not voter and maybe_send_auto_join(replica, st):
        return
    fetch_from_best_node(replica, st)


def fetch_from_best_node(replica: Replica, st: FollowerState) -> None:
    """Kafka's ``maybeSendFetchToBestNode`` (docs/kraft.md §3): the leader, unless the last request to it
    timed out or it is backing off after a failure; then a random ready bootstrap server (or voter), whose
    answer names the current leader and epoch. That is how an observer, which never campaigns, finds a new
    leader after its own died (KAFKA-19354). The caller checked that nothing is in flight."""
    leader = st.leader_id
    if leader is None:
        return
    requests = replica.requests
    dest: int | None = leader
    timed_out = requests.has_timed_out(leader)
    if timed_out:
        requests.forget_timeout(leader)
    if timed_out or requests.is_backing_off(leader, replica.now):
        others = [n for n in _discovery_targets(replica, leader) if requests.is_ready(n, replica.now)]
        dest = others[replica.rng.randrange(len(others))] if others else None
    if dest is None:
        return
    if st.snapshot_download is not None:
        send_fetch_snapshot(replica, st, dest, discovery_endpoint(replica, dest))
    else:
        send_fetch(replica, dest, st.epoch)


def poll_leader(replica: Replica, st: LeaderState) -> None:
    now = replica.now
    if replica.shutdown_deadline is not None or st.resign_requested or st.check_quorum_expired(now):
        become_resigned(replica)
        return
    expire_pending_change(replica, st)
    drain(replica, st)
    expire_parked(replica, st)
    ping_rounds(replica, st)
    if now >= st.begin_quorum_deadline:
        resend = replica.cfg.begin_quorum_epoch_resend_ms
        for nid, p in st.voter_states.items():
            if nid == st.local_key.id or (p.last_fetch_ms >= 0 and now - p.last_fetch_ms < resend):
                continue  # fetched recently (a voter that never fetched gets one at once)
            if not replica.requests.is_ready(nid, now):
                continue
            req = messages.begin_quorum_epoch_request(
                replica.cfg.cluster_id, p.key, st.local_key.id, st.epoch, replica.cfg.listeners
            )
            replica.send_request(nid, req)
        st.begin_quorum_deadline = now + resend


def poll_resigned(replica: Replica, st: ResignedState) -> None:
    now = replica.now
    if now >= st.election_deadline:
        become_unattached(replica, st.epoch + 1)
        return
    local_id = replica.local_id
    assert local_id is not None  # it led
    for key in st.successors:
        if key.id in st.unacked and replica.requests.is_ready(key.id, now):
            req = messages.end_quorum_epoch_request(
                replica.cfg.cluster_id, local_id, st.epoch, st.successors, replica.cfg.listeners
            )
            replica.send_request(key.id, req)


def shutdown_complete(replica: Replica) -> bool:
    st = replica.state
    if replica.now >= (replica.shutdown_deadline or 0):
        return True
    if not replica.is_voter() or replica.voters().is_only_voter(replica.local_key):
        return st.role is not Role.LEADER
    return st.role is Role.FOLLOWER and st.leader_id not in (None, replica.local_id)


def state_deadline(replica: Replica) -> int:
    st = replica.state
    if isinstance(st, LeaderState):
        return leader_deadline(replica, st)
    if isinstance(st, FollowerState):
        # The update-voter / auto-join timer is only looked at when nothing is in flight, and the answer
        # or timeout of whatever is in flight polls anyway: an overdue timer is no reason to wake up.
        voter = replica.is_voter()
        periodic = voter or auto_join_enabled(replica)
        update = st.update_voter_deadline if periodic and not replica.requests.has_any_in_flight() else NEVER
        if update <= replica.now and st.leader_id is not None:
            update = max(update, replica.requests.backoff_end(st.leader_id))  # overdue, waiting to send
        return min(st.fetch_deadline, update) if voter else update
    if isinstance(st, ProspectiveState) and st.asks_at > replica.now:
        return st.asks_at  # before its election deadline: the jitter stays below the election timeout
    return getattr(st, "election_deadline", NEVER)


_POLLERS: dict[type[EpochState], Callable[[Replica, Any], None]] = {
    LeaderState: poll_leader,
    FollowerState: poll_follower,
    CandidateState: poll_candidate,
    ProspectiveState: poll_prospective,
    UnattachedState: poll_unattached,
    ResignedState: poll_resigned,
}
"""The timed work per state class (the states are final classes, so a lookup replaces isinstance)."""

__all__ = ["poll_state", "state_deadline", "shutdown_complete"]
