"""Fetch (apiKey 1) from a client, replica id -1: committed records only, parked until there are some.

No replica has a negative id, so such a Fetch comes from a reader of the metadata log (a consumer, a
tool), not from a follower: it moves no high watermark and sees committed records only. It is
validated as :mod:`.fetch_leader` validates every Fetch (a negative MaxWaitMs, FetchOffset or
LastFetchedEpoch, or a LastFetchedEpoch above CurrentLeaderEpoch, is INVALID_REQUEST; a
CurrentLeaderEpoch below ours FENCED_LEADER_EPOCH, above ours UNKNOWN_LEADER_EPOCH), but each topic and
partition it names is answered on its own (UNKNOWN_TOPIC_ID or UNKNOWN_TOPIC_OR_PARTITION for any but
``__cluster_metadata``-0), an offset outside [log start, high watermark] is OFFSET_OUT_OF_RANGE, and
every error answer names the leader and epoch with an unknown (-1) high watermark, as Kafka's raft
client answers it.

The leader serves it, and with ``Config.follower_fetch`` a follower too, from what it knows is
committed. A Fetch that finds fewer than MinBytes of committed records (and no error) is parked, as
Kafka's broker parks it, until the replica's view changes (records commit, a snapshot loads, the
leader or epoch changes) or MaxWaitMs passes, then answered with what there is then.
"""

from __future__ import annotations

from typing import Any

from kraftwire.generated import errors
from kraftwire.generated import fetch_request as _fetch
from kraftwire.generated import fetch_response as _fr

from . import batches as _batches
from .api import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID, RequestReceived, Role
from .leader import ParkedFetch
from .messages import as_message
from .replica import Replica

_ERRORS_NAMING_THE_LEADER = (
    errors.NOT_LEADER_OR_FOLLOWER,
    errors.FENCED_LEADER_EPOCH,
    errors.UNKNOWN_LEADER_EPOCH,
)


def is_client_fetch(ev: RequestReceived) -> bool:
    """A Fetch whose replica id is negative: a client's, not a replica's."""
    req = as_message(ev.request, _fetch.FetchRequest)
    replica_id: int = req.replica_state.replica_id if ev.api_version >= 15 else req.replica_id
    return replica_id < 0


def handle_client_fetch(replica: Replica, ev: RequestReceived) -> None:
    req = as_message(ev.request, _fetch.FetchRequest)
    deadline = replica.now + max(0, req.max_wait_ms)
    fetch = ParkedFetch(ev.source, ev.correlation_id, ev.api_version, req, deadline)
    if not _try_answer(replica, fetch):
        if not replica.client_fetches:
            replica.client_fetch_view = _view(replica)
        replica.client_fetches.append(fetch)


def answer_client_fetches(replica: Replica) -> None:
    """After each input: when the replica's view changed, re-evaluate every parked client Fetch;
    otherwise answer those whose MaxWaitMs has passed."""
    if not replica.client_fetches:
        return
    view = _view(replica)
    changed, replica.client_fetch_view = view != replica.client_fetch_view, view
    now = replica.now
    waiting, replica.client_fetches = replica.client_fetches, []
    for fetch in waiting:
        if not (changed or now >= fetch.deadline) or not _try_answer(replica, fetch):
            replica.client_fetches.append(fetch)


def client_fetch_deadline(replica: Replica) -> int | None:
    """When the first parked client Fetch is due, if any is parked."""
    return min((f.deadline for f in replica.client_fetches), default=None)


def _view(replica: Replica) -> tuple[Any, ...]:
    """What a client Fetch's answer depends on besides the log below the high watermark."""
    st = replica.state
    return (st.role, st.epoch, st.leader_id, st.high_watermark, replica.log.start_offset())


def _try_answer(replica: Replica, fetch: ParkedFetch) -> bool:
    """Answer ``fetch`` unless it should wait for more committed records; True when answered."""
    response = _response(replica, fetch.api_version, fetch.request)
    if replica.now < fetch.deadline and _worth_waiting(response, fetch.request.min_bytes):
        return False
    replica.respond_to(fetch.source, fetch.correlation_id, fetch.api_version, response)
    return True


def _worth_waiting(response: Any, min_bytes: int) -> bool:
    partitions = [p for topic in response.responses for p in topic.partitions]
    if any(p.error_code != errors.NONE for p in partitions):
        return False
    return sum(len(p.records or b"") for p in partitions) < min_bytes


def _response(replica: Replica, version: int, request: Any) -> Any:
    topics = []
    for topic in request.topics:
        answers = [_partition(replica, version, topic, p, request) for p in topic.partitions]
        topics.append(
            _fr.FetchableTopicResponse(topic_id=topic.topic_id, partitions=answers)
            if version >= 13
            else _fr.FetchableTopicResponse(topic=topic.topic, partitions=answers)
        )
    nodes = []
    leader = replica.leader_endpoint() if replica.state.role is not Role.LEADER else None
    if leader is not None and version >= 16:
        endpoint = leader[1]
        nodes = [_fr.NodeEndpoint(node_id=leader[0], host=endpoint.host, port=endpoint.port)]
    return _fr.FetchResponse(responses=topics, node_endpoints=nodes)


def _partition(replica: Replica, version: int, topic: Any, p: Any, request: Any) -> Any:
    st, log = replica.state, replica.log
    hw = st.high_watermark

    def answer(error: int, records: bytes | None = None) -> Any:
        out = _fr.PartitionData(
            partition_index=p.partition,
            error_code=error,
            high_watermark=-1 if error != errors.NONE or hw is None else hw,
            log_start_offset=log.start_offset(),
            records=records,
        )
        if error in _ERRORS_NAMING_THE_LEADER:
            out.current_leader = _fr.LeaderIdAndEpoch(
                leader_id=-1 if st.leader_id is None else st.leader_id, leader_epoch=st.epoch
            )
        return out

    if not _names_the_metadata_topic(topic, version) or p.partition != METADATA_PARTITION:
        unknown = errors.UNKNOWN_TOPIC_ID if version >= 13 else errors.UNKNOWN_TOPIC_OR_PARTITION
        return answer(unknown)
    if (
        request.max_wait_ms < 0
        or p.fetch_offset < 0
        or p.last_fetched_epoch < 0
        or p.last_fetched_epoch > p.current_leader_epoch
    ):
        return answer(errors.INVALID_REQUEST)
    if p.current_leader_epoch != st.epoch:
        stale = p.current_leader_epoch < st.epoch
        return answer(errors.FENCED_LEADER_EPOCH if stale else errors.UNKNOWN_LEADER_EPOCH)
    serving = (Role.LEADER, Role.FOLLOWER) if replica.cfg.follower_fetch else (Role.LEADER,)
    if st.role not in serving or hw is None:
        return answer(errors.NOT_LEADER_OR_FOLLOWER)
    if p.fetch_offset < log.start_offset() or p.fetch_offset > hw:
        return answer(errors.OFFSET_OUT_OF_RANGE)
    limit = max(1, min(request.max_bytes, p.partition_max_bytes))
    committed = [b for b in log.read(p.fetch_offset, limit) if b.last_offset < hw]
    return answer(errors.NONE, _batches.encode_batches(committed) if committed else b"")


def _names_the_metadata_topic(topic: Any, version: int) -> bool:
    if version >= 13:
        return bool(topic.topic_id == METADATA_TOPIC_ID)
    return bool(topic.topic == METADATA_TOPIC)
