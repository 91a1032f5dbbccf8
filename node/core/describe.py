"""DescribeQuorum (55): the leader's view of replica progress (kraft-node.md §4.8)."""

from __future__ import annotations

from . import errors, responses
from .api import RequestReceived
from .leader import LeaderState
from .messages import metadata_partition
from .replica import Replica


def handle_describe_quorum_request(replica: Replica, ev: RequestReceived) -> None:
    req, v = ev.request, ev.api_version
    st = replica.state
    if metadata_partition(req.topics) is None:
        return replica.respond(
            ev, responses.describe_quorum_response(v, errors.NONE, errors.UNKNOWN_TOPIC_OR_PARTITION, st.leader_id, st.epoch)
        )
    if not isinstance(st, LeaderState):
        return replica.respond(
            ev, responses.describe_quorum_response(v, errors.NONE, errors.NOT_LEADER_OR_FOLLOWER, st.leader_id, st.epoch)
        )
    now = replica.now
    timeout = replica.cfg.observer_session_timeout_ms
    for key in [k for k, p in st.observer_states.items() if now - p.last_fetch_ms > timeout]:
        del st.observer_states[key]

    voter_progress, observer_progress = st.progress(replica.log.end_offset(), now)
    voters = [responses.replica_state(p) for p in voter_progress]
    observers = [responses.replica_state(p) for p in observer_progress]
    nodes = [(spec.key.id, dict(spec.listeners)) for spec in replica.voters()]
    replica.respond(
        ev,
        responses.describe_quorum_response(
            v, errors.NONE, errors.NONE, st.leader_id, st.epoch, st.high_watermark, voters, observers, nodes
        ),
    )
