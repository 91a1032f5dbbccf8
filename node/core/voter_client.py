"""The follower/observer side of voter changes (kraft-node.md §7.5, §7.6).

Every ``2 x fetch.timeout`` a voter sends UpdateRaftVoter when its entry in the voter set differs from
its own listeners or supported kraft.version range (kraft.version 1), or when it has not yet updated
this leader (kraft.version 0). With ``auto_join`` an observer sends RemoveRaftVoter for a stale entry
of its id, else AddRaftVoter for itself with ``AckWhenCommitted=false``. The first period starts when
the node becomes a follower. Once a period is over the timer re-arms as soon as a request goes out or
none is needed, so a node with nothing to send does not spin (KAFKA-17751); an auto-join answer
restarts the period again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors, messages
from .api import ResponseReceived
from .common import common_outcome
from .states import FollowerState

if TYPE_CHECKING:
    from .core import KRaftCore


def _period_over(core: "KRaftCore", st: FollowerState) -> bool:
    return core.now >= st.update_voter_deadline


def _restart_period(core: "KRaftCore", st: FollowerState) -> None:
    st.update_voter_deadline = core.now + core.cfg.update_voter_period_ms


def maybe_send_update_voter(core: "KRaftCore", st: FollowerState) -> bool:
    """Once the period is over: send UpdateRaftVoter if needed (restarting the period), or restart it
    when nothing is needed. While the leader cannot be sent to, the period stays over (Kafka restarts it
    only once the request went out)."""
    if not _period_over(core, st) or st.leader_id is None or not core.requests.is_ready(st.leader_id, core.now):
        return False
    kv = core.control.kraft_version()
    wanted = core.local_voter_spec()
    entry = core.voters().get(wanted.key.id)
    if kv >= 1:
        needed = entry is not None and (
            dict(entry.listeners) != dict(wanted.listeners)
            or tuple(entry.kraft_version_range) != tuple(wanted.kraft_version_range)
        )
    else:
        needed = not st.voter_updated
    _restart_period(core, st)
    if not needed or not core.cfg.listeners:
        return False
    req = messages.update_raft_voter_request(
        core.cfg.cluster_id, st.epoch, wanted.key, wanted.listeners, wanted.kraft_version_range
    )
    core.send_request(st.leader_id, req)
    return True


def handle_update_raft_voter_response(core: "KRaftCore", ev: ResponseReceived) -> bool:
    resp = ev.response
    st = core.state
    if resp.error_code in (errors.NONE, errors.UNSUPPORTED_VERSION) and isinstance(st, FollowerState):
        st.voter_updated = True
        st.fetch_deadline = core.now + core.cfg.fetch_timeout_ms
        return True
    done, _ = common_outcome(core, resp)
    return bool(done)  # settled by the common handling, else a failure (retry backoff)


def auto_join_enabled(core: "KRaftCore") -> bool:
    return core.cfg.auto_join and core.local_key is not None and core.control.kraft_version() >= 1


def maybe_send_auto_join(core: "KRaftCore", st: FollowerState) -> bool:
    cfg = core.cfg
    if not auto_join_enabled(core):
        return False
    if not _period_over(core, st) or st.leader_id is None or not core.requests.is_ready(st.leader_id, core.now):
        return False
    _restart_period(core, st)
    entry = core.voters().get(core.local_key.id)
    if entry is not None and entry.key != core.local_key:
        req = messages.remove_raft_voter_request(cfg.cluster_id, entry.key)
        core.send_request(st.leader_id, req)
    else:
        req = messages.add_raft_voter_request(
            cfg.cluster_id, core.local_key, cfg.listeners, cfg.request_timeout_ms, ack=False
        )
        core.send_request(st.leader_id, req, min_version=1)
    return True


def handle_auto_join_response(core: "KRaftCore", ev: ResponseReceived) -> bool:
    """NONE, REQUEST_TIMED_OUT, DUPLICATE_VOTER and VOTER_NOT_FOUND restart the period (the next attempt
    comes a full period after the answer); anything else is a failure (retry backoff)."""
    done = ev.response.error_code in (
        errors.NONE,
        errors.REQUEST_TIMED_OUT,
        errors.DUPLICATE_VOTER,
        errors.VOTER_NOT_FOUND,
    )
    st = core.state
    if done and isinstance(st, FollowerState):
        _restart_period(core, st)
    return done
