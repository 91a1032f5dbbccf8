"""DescribeQuorum (55): the leader's view of replica progress (kraft-node.md §4.8)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors, responses
from .api import METADATA_PARTITION, METADATA_TOPIC, ZERO_UUID, RequestReceived
from .leader import LeaderState

if TYPE_CHECKING:
    from .core import KRaftCore


def handle_describe_quorum_request(core: "KRaftCore", ev: RequestReceived) -> None:
    req, v = ev.request, ev.api_version
    st = core.state
    t = req.topics
    if (
        len(t) != 1
        or t[0].topic_name != METADATA_TOPIC
        or len(t[0].partitions) != 1
        or t[0].partitions[0].partition_index != METADATA_PARTITION
    ):
        return core.respond(
            ev, responses.describe_quorum_response(v, errors.NONE, errors.UNKNOWN_TOPIC_OR_PARTITION, st.leader_id, st.epoch)
        )
    if not isinstance(st, LeaderState):
        return core.respond(
            ev, responses.describe_quorum_response(v, errors.NONE, errors.NOT_LEADER_OR_FOLLOWER, st.leader_id, st.epoch)
        )
    now = core.now
    timeout = core.cfg.observer_session_timeout_ms
    for key in [k for k, p in st.observer_states.items() if now - p.last_fetch_ms > timeout]:
        del st.observer_states[key]

    def state_of(p, is_local: bool):
        fetch, caught = (now, now) if is_local else (p.last_fetch_ms, p.last_caught_up_ms)
        end = core.log.end_offset() if is_local else p.end_offset
        return responses.replica_state(v, p.key.id, p.key.directory_id or ZERO_UUID, end, fetch, caught)

    voters = [state_of(p, nid == st.local_key.id) for nid, p in sorted(st.voter_states.items())]
    observers = [state_of(p, False) for _, p in sorted(st.observer_states.items(), key=lambda kv: (kv[0].id, str(kv[0].directory_id)))]
    nodes = [(spec.key.id, dict(spec.listeners)) for spec in core.voters()]
    core.respond(
        ev,
        responses.describe_quorum_response(
            v, errors.NONE, errors.NONE, st.leader_id, st.epoch, st.high_watermark, voters, observers, nodes
        ),
    )
