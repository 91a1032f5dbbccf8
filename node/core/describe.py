"""DescribeQuorum (55): the leader's view of replica progress (docs/kraft.md §4.8).

A partition other than ``__cluster_metadata``-0 is answered UNKNOWN_TOPIC_OR_PARTITION for every
partition asked; a non-leader answers NOT_LEADER_OR_FOLLOWER, both with Kafka's default message and no
leader (the fields left at 0, as Kafka's answers leave them)."""

from __future__ import annotations

from kraftwire.generated import errors
from kraftwire.generated import describe_quorum_request as _dq

from . import responses
from .api import METADATA_PARTITION, METADATA_TOPIC, RequestReceived
from .leader import LeaderState
from .messages import as_message, metadata_partition
from .replica import Replica


def handle_describe_quorum_request(replica: Replica, ev: RequestReceived) -> None:
    req, v = as_message(ev.request, _dq.DescribeQuorumRequest), ev.api_version
    st = replica.state
    if metadata_partition(req.topics) is None:
        asked = [(t.topic_name, [p.partition_index for p in t.partitions]) for t in req.topics]
        return replica.respond(ev, responses.describe_quorum_error(errors.UNKNOWN_TOPIC_OR_PARTITION, asked))
    if not isinstance(st, LeaderState):
        # Kafka's answer names no leader: LeaderId, LeaderEpoch and HighWatermark stay 0 (not -1).
        asked = [(METADATA_TOPIC, [METADATA_PARTITION])]
        return replica.respond(ev, responses.describe_quorum_error(errors.NOT_LEADER_OR_FOLLOWER, asked))
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
            v, st.leader_id, st.epoch, st.high_watermark, voters, observers, nodes
        ),
    )
