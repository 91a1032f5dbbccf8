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
    if isinstance(st, LeaderState):
        poll_leader(core, st)
    elif isinstance(st, FollowerState):
        poll_follower(core, st)
    elif isinstance(st, CandidateState):
        poll_candidate(core, st)
    elif isinstance(st, ProspectiveState):
        poll_prospective(core, st)
    elif isinstance(st, UnattachedState):
        poll_unattached(core, st)
    elif isinstance(st, ResignedState):
        poll_resigned(core, st)


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


def _discovery_targets(core: "KRaftCore") -> list[int]:
    ids = [n for n in core.voters().ids() if n != core.local_id]
    ids += [-2 - i for i in range(len(core.cfg.bootstrap_servers))]
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
    if now >= st.fetch_deadline:
        if voter and _may_campaign(core):
            become_prospective(core)
            return
        if not voter:  # observers rediscover the leader through any voter
            st.fetch_deadline = now + core.cfg.fetch_timeout_ms
            core.requests.reset()
    if core.requests.has_any_in_flight():
        return
    if voter and _vcl.maybe_send_update_voter(core, st):
        return
    if not voter and _vcl.maybe_send_auto_join(core, st):
        return
    leader = st.leader_id
    if leader is None or not core.requests.is_ready(leader, now):
        return
    if st.snapshot_download is not None:
        _snap.send_fetch_snapshot(core, st)
    else:
        send_fetch(core, leader, st.epoch)


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
        return min(st.fetch_deadline, st.update_voter_deadline if core.is_voter() else NEVER)
    return getattr(st, "election_deadline", NEVER)


__all__ = ["poll_state", "state_deadline", "shutdown_complete", "send_fetch", "latest_snapshot"]


from . import snapshots as _snap  # noqa: E402
from . import voter_client as _vcl  # noqa: E402
