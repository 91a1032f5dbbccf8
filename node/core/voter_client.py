"""The follower/observer side of voter changes (docs/kraft.md §7.5, §7.6).

Every ``2 x fetch.timeout`` a voter sends UpdateRaftVoter when its entry in the voter set differs from
its own listeners or supported kraft.version range (kraft.version 1), or when it has not yet updated
this leader (kraft.version 0). With ``auto_join`` an observer sends RemoveRaftVoter for a stale entry
of its id, else AddRaftVoter for itself with ``AckWhenCommitted=false``. The first period starts when
the node becomes a follower. Once a period is over the timer re-arms as soon as a request goes out or
none is needed, so a node with nothing to send does not spin (KAFKA-17751); an auto-join answer
restarts the period again.
"""

from __future__ import annotations

from kraftwire.generated import errors
from kraftwire.generated import add_raft_voter_response as _addr
from kraftwire.generated import remove_raft_voter_response as _remr
from kraftwire.generated import update_raft_voter_response as _updr

from . import messages
from .api import PeerRefused, ResponseReceived
from .common import common_outcome
from .replica import Replica
from .states import FollowerState


def _period_over(replica: Replica, st: FollowerState) -> bool:
    return replica.now >= st.update_voter_deadline


def _restart_period(replica: Replica, st: FollowerState) -> None:
    st.update_voter_deadline = replica.now + replica.cfg.update_voter_period_ms


def maybe_send_update_voter(replica: Replica, st: FollowerState) -> bool:
    """Once the period is over: send UpdateRaftVoter if needed (restarting the period), or restart it
    when nothing is needed. While the leader cannot be sent to, the period stays over (Kafka restarts it
    only once the request went out)."""
    if not _period_over(replica, st) or st.leader_id is None or not replica.requests.is_ready(st.leader_id, replica.now):
        return False
    kv = replica.control.kraft_version()
    wanted = replica.local_voter_spec()
    entry = replica.voters().get(wanted.key.id)
    if kv >= 1:
        needed = entry is not None and (
            dict(entry.listeners) != dict(wanted.listeners)
            or tuple(entry.kraft_version_range) != tuple(wanted.kraft_version_range)
        )
    else:
        needed = not st.voter_updated
    _restart_period(replica, st)
    if not needed or not replica.cfg.listeners:
        return False
    req = messages.update_raft_voter_request(
        replica.cfg.cluster_id, st.epoch, wanted.key, wanted.listeners, wanted.kraft_version_range
    )
    replica.send_request(st.leader_id, req)
    return True


def handle_update_raft_voter_response(replica: Replica, ev: ResponseReceived) -> bool:
    resp = messages.as_message(ev.response, _updr.UpdateRaftVoterResponse)
    st = replica.state
    if resp.error_code in (errors.NONE, errors.UNSUPPORTED_VERSION) and isinstance(st, FollowerState):
        st.voter_updated = True
        st.fetch_deadline = replica.now + replica.cfg.fetch_timeout_ms
        return True
    outcome = common_outcome(replica, resp)
    return outcome if isinstance(outcome, bool) else False  # unsettled: a failure (retry backoff)


def auto_join_enabled(replica: Replica) -> bool:
    return replica.cfg.auto_join and replica.local_key is not None and replica.control.kraft_version() >= 1


def maybe_send_auto_join(replica: Replica, st: FollowerState) -> bool:
    cfg = replica.cfg
    if not auto_join_enabled(replica):
        return False
    if not _period_over(replica, st) or st.leader_id is None or not replica.requests.is_ready(st.leader_id, replica.now):
        return False
    _restart_period(replica, st)
    local = replica.local_key
    assert local is not None  # auto_join_enabled() checked
    entry = replica.voters().get(local.id)
    if entry is not None and entry.key != local:
        req = messages.remove_raft_voter_request(cfg.cluster_id, entry.key)
        replica.send_request(st.leader_id, req)
    else:
        join = messages.add_raft_voter_request(
            cfg.cluster_id, local, cfg.listeners, cfg.request_timeout_ms, ack=False
        )
        replica.send_request(st.leader_id, join, min_version=1)
    return True


def handle_auto_join_response(replica: Replica, ev: ResponseReceived) -> bool:
    """NONE, REQUEST_TIMED_OUT, DUPLICATE_VOTER and VOTER_NOT_FOUND restart the period (the next attempt
    comes a full period after the answer); anything else is a failure (retry backoff)."""
    answer = ev.response
    if not isinstance(answer, (_addr.AddRaftVoterResponse, _remr.RemoveRaftVoterResponse)):
        raise PeerRefused(f"expected an AddRaftVoter or RemoveRaftVoter answer, got a {type(answer).__name__}")
    done = answer.error_code in (
        errors.NONE,
        errors.REQUEST_TIMED_OUT,
        errors.DUPLICATE_VOTER,
        errors.VOTER_NOT_FOUND,
    )
    st = replica.state
    if done and isinstance(st, FollowerState):
        _restart_period(replica, st)
    return done
