"""Timed work per state (Kafka's ``pollCurrentState``, kraft-node.md §3).

A node that is shutting down starts no election: it stays put until the shutdown completes or an epoch
bump moves it along.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import messages
from .api import Role
from .leader import LeaderState
from .leader_ops import leader_deadline, poll_leader
from .log_ops import latest_snapshot
from .states import CandidateState, FollowerState, ProspectiveState, ResignedState, UnattachedState
from .transitions import NEVER, become_prospective, become_unattached

if TYPE_CHECKING:
    from .core import KRaftCore


def poll_state(core: "KRaftCore") -> None:
    st = core.state
    _POLLERS[type(st)](core, st)


def _may_campaign(core: "KRaftCore") -> bool:
    return core.shutdown_deadline is None and core.is_voter()


def send_votes(core: "KRaftCore", election, epoch: int, pre_vote: bool) -> None:
    now = core.now
    last_epoch, leo = core.log.last_fetched_epoch(), core.log.end_offset()
    for nid in election.unrecorded():
        if nid == core.local_id or not core.requests.is_ready(nid, now):
            continue
        spec = core.voters().get(nid)
        if spec is None:
            continue
        req = messages.vote_request(
            core.cfg.cluster_id, spec.key, epoch, core.local_key, last_epoch, leo, pre_vote
        )
        core.send_request(nid, req, min_version=2 if pre_vote else 0)


def poll_candidate(core: "KRaftCore", st: CandidateState) -> None:
    if core.now >= st.election_deadline:
        if _may_campaign(core):
            become_prospective(core)
        return
    if not st.election.is_rejected():
        send_votes(core, st.election, st.epoch, pre_vote=False)


def prospective_lost(core: "KRaftCore", st: ProspectiveState, timed_out: bool) -> None:
    """Pre-vote lost or timed out: back to the known leader, else Unattached at the same epoch."""
    from .transitions import become_follower

    if st.leader_id is not None and (st.leader_endpoints or core.voters().endpoints(st.leader_id)):
        become_follower(core, st.epoch, st.leader_id, st.leader_endpoints)
        return
    deadline = core.now if timed_out else None
    if deadline is None:
        deadline = core.now + core.random_election_timeout()
    become_unattached(core, st.epoch, st.leader_id, st.voted_key, deadline=deadline)


def poll_prospective(core: "KRaftCore", st: ProspectiveState) -> None:
    if core.now >= st.election_deadline:
        prospective_lost(core, st, timed_out=True)
    elif st.election.is_rejected():
        prospective_lost(core, st, timed_out=False)
    else:
        send_votes(core, st.election, st.epoch, pre_vote=True)


def poll_unattached(core: "KRaftCore", st: UnattachedState) -> None:
    if core.now >= st.election_deadline and _may_campaign(core):
        become_prospective(core)
        return
    if core.requests.has_any_in_flight():
        return
    candidates = [n for n in _discovery_targets(core) if core.requests.is_ready(n, core.now)]
    if candidates:
        dest = candidates[core.rng.randrange(len(candidates))]
        send_fetch(core, dest, st.epoch)


def _discovery_targets(core: "KRaftCore", exclude: int | None = None) -> list[int]:
    """Voters and bootstrap servers (synthetic ids -2, -3, ...) to ask who leads, except ourselves and
    ``exclude``; a bootstrap server at our own or ``exclude``'s address is left out too.

    Unattached and cut-off nodes ask this on every poll, so the answer is kept until the voter set, the
    leader's endpoints or ``exclude`` change (the configuration never does)."""
    voters = core.voters()
    exclude_ep = core.endpoint_of(exclude) if exclude is not None else None
    key = (voters, exclude, exclude_ep)
    cached = core.discovery_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    ids = [n for n in voters.ids() if n != core.local_id and n != exclude]
    skip = set(core.cfg.listeners.values())
    if exclude_ep is not None:
        skip.add(exclude_ep)
    ids += [-2 - i for i, ep in enumerate(core.cfg.bootstrap_servers) if ep not in skip]
    core.discovery_cache = (key, ids)
    return ids


def discovery_endpoint(core: "KRaftCore", node_id: int):
    if node_id <= -2:
        return core.cfg.bootstrap_servers[-2 - node_id]
    return core.endpoint_of(node_id)


def send_fetch(core: "KRaftCore", dest: int, epoch: int) -> None:
    cfg = core.cfg
    req = messages.fetch_request(
        cfg.cluster_id,
        core.local_key,
        epoch,
        core.log.end_offset(),
        core.log.last_fetched_epoch(),
        cfg.fetch_max_wait_ms,
        cfg.fetch_max_bytes,
        core.state.high_watermark,
    )
    core.send_request(dest, req, endpoint=discovery_endpoint(core, dest))


def poll_follower(core: "KRaftCore", st: FollowerState) -> None:
    now = core.now
    voter = core.is_voter()
    if voter and now >= st.fetch_deadline and _may_campaign(core):
        become_prospective(core)
        return
    if core.requests.has_any_in_flight():
        return
    if voter and _vcl.maybe_send_update_voter(core, st):
        return
    if not voter and _vcl.maybe_send_auto_join(core, st):
        return
    fetch_from_best_node(core, st)


def fetch_from_best_node(core: "KRaftCore", st: FollowerState) -> None:
    """Kafka's ``maybeSendFetchToBestNode`` (kraft-node.md §3): the leader, unless the last request to it
    timed out or it is backing off after a failure; then a random ready bootstrap server (or voter), whose
    answer names the current leader and epoch. That is how an observer, which never campaigns, finds a new
    leader after its own died (KAFKA-19354). The caller checked that nothing is in flight."""
    leader = st.leader_id
    if leader is None:
        return
    requests = core.requests
    dest: int | None = leader
    timed_out = requests.has_timed_out(leader)
    if timed_out:
        requests.forget_timeout(leader)
    if timed_out or requests.is_backing_off(leader, core.now):
        others = [n for n in _discovery_targets(core, leader) if requests.is_ready(n, core.now)]
        dest = others[core.rng.randrange(len(others))] if others else None
    if dest is None:
        return
    if st.snapshot_download is not None:
        _snap.send_fetch_snapshot(core, st, dest, discovery_endpoint(core, dest))
    else:
        send_fetch(core, dest, st.epoch)


def poll_resigned(core: "KRaftCore", st: ResignedState) -> None:
    now = core.now
    if now >= st.election_deadline:
        become_unattached(core, st.epoch + 1)
        return
    for key in st.successors:
        if key.id in st.unacked and core.requests.is_ready(key.id, now):
            req = messages.end_quorum_epoch_request(
                core.cfg.cluster_id, core.local_id, st.epoch, st.successors, core.cfg.listeners
            )
            core.send_request(key.id, req)


def shutdown_complete(core: "KRaftCore") -> bool:
    st = core.state
    if core.now >= (core.shutdown_deadline or 0):
        return True
    if not core.is_voter() or core.voters().is_only_voter(core.local_key):
        return st.role is not Role.LEADER
    return st.role is Role.FOLLOWER and st.leader_id not in (None, core.local_id)


def state_deadline(core: "KRaftCore") -> int:
    st = core.state
    if isinstance(st, LeaderState):
        return leader_deadline(core, st)
    if isinstance(st, FollowerState):
        # The update-voter / auto-join timer is only looked at when nothing is in flight, and the answer
        # or timeout of whatever is in flight polls anyway: an overdue timer is no reason to wake up.
        voter = core.is_voter()
        periodic = voter or _vcl.auto_join_enabled(core)
        update = st.update_voter_deadline if periodic and not core.requests.has_any_in_flight() else NEVER
        if update <= core.now and st.leader_id is not None:
            update = max(update, core.requests.backoff_end(st.leader_id))  # overdue, waiting to send
        return min(st.fetch_deadline, update) if voter else update
    return getattr(st, "election_deadline", NEVER)


_POLLERS = {
    LeaderState: poll_leader,
    FollowerState: poll_follower,
    CandidateState: poll_candidate,
    ProspectiveState: poll_prospective,
    UnattachedState: poll_unattached,
    ResignedState: poll_resigned,
}
"""The timed work per state class (the states are final classes, so a lookup replaces isinstance)."""

__all__ = ["poll_state", "state_deadline", "shutdown_complete", "send_fetch", "latest_snapshot"]


from . import snapshots as _snap  # noqa: E402
from . import voter_client as _vcl  # noqa: E402
