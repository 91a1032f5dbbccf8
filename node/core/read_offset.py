"""ReadOffset (kraftwire's API 1000, issue #13): linearizable reads served by any replica.

Leader side, the rule. A ReadOffset names ``__cluster_metadata-0``; a node that is not the leader (or is
shutting down) answers NOT_LEADER_OR_FOLLOWER at once, naming the leader it knows (CurrentLeader and
its NodeEndpoints, as Fetch does). The leader notes its high watermark and answers with it only once it
has confirmed that it still led when the request arrived:

* it has committed a batch of its own epoch (its HW exists only past the epoch start; until then the
  answer is the HW at confirmation, which covers everything earlier leaders committed), and
* a majority of the latest voters (itself included) has answered, in this epoch, a ping sent after the
  request arrived. A voter that accepts our epoch after the request arrived had not voted in a later
  one by then (epochs only grow), so no later leader could have committed anything before the read
  began: the noted HW covers every write that finished before it.
* A voter's own ReadOffset counts as its answer for the reads it carries. It names the voter (id and
  log directory, matched against the latest voter set) and the epoch the voter was in when it sent the
  request, which was after every read it carries began. If that is our epoch, the voter had not voted
  in a later one when those reads began, which is all the ping shows. Such a request gets a round of
  its own, opened already acknowledged by its sender and closed to other reads (for them the request
  proves nothing); with three voters that is a majority with the leader, and no ping is sent. A
  client (ReplicaId -1), an observer, a voter of another directory or one in another epoch gets the
  ordinary round.

The ping is a BeginQuorumEpoch, correlated by its correlation id. Fetches were the other candidate:
they arrive every fetch interval anyway, but a Fetch carries nothing that says when it was sent, so
one sent before the request (delayed in the network, or a retry after a timeout) could pass for an
acknowledgement; a caught-up voter's Fetch also waits in the purgatory for up to its max wait. A ping
answered in our epoch is unambiguous and costs one round trip. Concurrent reads share one round: a read
joins the newest round until that round has sent its pings, then the next read opens a new round; one
ping serves every round open when it is sent, and a ping that fails or times out is sent again at the
next poll. A leader that resigns or loses its epoch before a round is confirmed answers its reads
NOT_LEADER_OR_FOLLOWER with the new leader (leader_ops.answer_abandoned); one that hears from no
majority resigns by check quorum, so no read waits longer than that.

Reader side (any replica, the leader included): :func:`start_read` takes the application's
``ReadIndex``; :func:`poll_reads` asks the leader (one ReadOffset carries every read not yet asked),
retries against a new leader after NOT_LEADER_OR_FOLLOWER, a failure or ``request_timeout_ms`` (after
``retry_backoff_ms``), and fails reads at their deadline; :mod:`.delivery` announces ``ReadReady`` once
the replica has delivered every committed batch below the answered offset.

A read whose ReadOffset is in flight when the replica learns of another leader (another id or a later
epoch) is asked again of that leader at once, not after the request timeout: the old leader was deposed
and will refuse, or never answer. Should the old leader's answer still come, nobody waits for it and it
is dropped. It would be safe to use (that leader confirmed it still led after the read began), but it
carries an older epoch, which the common response handling treats as stale, and the new leader's
answer costs only one round trip more.
"""

from __future__ import annotations

from kraftwire.generated import read_offset_request as _ro
from kraftwire.generated import read_offset_response as _ror

from kraftwire.generated import errors

from . import responses
from .api import (
    OutboundRequest,
    PeerRefused,
    ReadFailed,
    ReadIndex,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
)
from .common import cluster_id_ok, common_outcome
from .leader import LeaderState
from .leader_ops import enqueue_read
from .messages import as_message, key_of, metadata_partition, read_offset_request
from .reads import MAX_WAITING_READS, LeaderRead, LocalRead
from .replica import Replica


def handle_read_offset_request(replica: Replica, ev: RequestReceived) -> None:
    req, st = as_message(ev.request, _ro.ReadOffsetRequest), replica.state
    if not cluster_id_ok(replica, req.cluster_id):
        return replica.respond(ev, responses.read_offset_response(errors.INCONSISTENT_CLUSTER_ID))
    if metadata_partition(req.topics) is None:
        perr = errors.UNKNOWN_TOPIC_OR_PARTITION
        resp = responses.read_offset_response(errors.NONE, perr, None, st.leader_id, st.epoch)
        return replica.respond(ev, resp)
    if not isinstance(st, LeaderState) or replica.shutdown_deadline is not None:
        perr, ep = errors.NOT_LEADER_OR_FOLLOWER, replica.leader_endpoint()
        resp = responses.read_offset_response(errors.NONE, perr, None, st.leader_id, st.epoch, ep)
        return replica.respond(ev, resp)
    read = LeaderRead(ev.source, ev.correlation_id, ev.api_version, st.high_watermark)
    enqueue_read(replica, st, read, asking_voter(st, req))


def asking_voter(st: LeaderState, req: _ro.ReadOffsetRequest) -> int | None:
    """The voter whose ReadOffset ``req`` is, when it asks in our epoch (see the rule above), else None."""
    partition = req.topics[0].partitions[0]  # metadata_partition has checked there is exactly one
    if req.replica_id < 0 or req.replica_id == st.local_key.id:
        return None
    if partition.current_leader_epoch != st.epoch:
        return None
    key = key_of(req.replica_id, partition.replica_directory_id)
    return key.id if st.voter_progress(key) is not None else None


def start_read(replica: Replica, ev: ReadIndex) -> None:
    if ev.read_id in replica.local_reads or len(replica.local_reads) >= MAX_WAITING_READS:
        replica.out.notify(ReadFailed(ev.read_id, errors.BROKER_NOT_AVAILABLE))
        return
    replica.local_reads[ev.read_id] = LocalRead(ev.read_id, replica.now + ev.timeout_ms)
    poll_reads(replica)


def poll_reads(replica: Replica) -> None:
    """Fail reads past their deadline, then ask for an offset for every read that needs one."""
    reads, now = replica.local_reads, replica.now
    if not reads:
        return
    for read in [r for r in reads.values() if now >= r.deadline]:
        del reads[read.read_id]
        replica.out.notify(ReadFailed(read.read_id, errors.REQUEST_TIMED_OUT))
    timeout = replica.cfg.request_timeout_ms
    st = replica.state
    leader = None if st.leader_id is None else (st.leader_id, st.epoch)
    for read in reads.values():
        if read.asked is None or read.asked < 0:
            continue
        if now >= read.asked_at + timeout:
            read.asked, read.retry_at = None, now + replica.cfg.retry_backoff_ms
        elif leader is not None and leader != read.asked_of:
            read.asked, read.retry_at = None, now  # a new leader: ask it now (see the module doc)
    unasked = [
        r for r in reads.values() if r.offset is None and r.asked is None and now >= r.retry_at
    ]
    if (
        not unasked
        or st.leader_id is None
        or (st.leader_id == replica.local_id and not isinstance(st, LeaderState))
    ):
        return  # no leader to ask (a resigned leader still names itself)
    if isinstance(st, LeaderState):
        if replica.shutdown_deadline is None:
            for read in unasked:
                read.asked = -1  # in one of our own rounds
                enqueue_read(replica, st, LeaderRead(-1, -1, 0, st.high_watermark, read.read_id))
        return
    # Sent outside the RequestManager (one request per node): a Fetch to the leader is nearly always
    # in flight. The reads remember the correlation id instead.
    cid = replica.requests.next_correlation_id()
    request = read_offset_request(replica.cfg.cluster_id, replica.local_key, st.epoch)
    endpoint = replica.endpoint_of(st.leader_id)
    replica.out.send(OutboundRequest(st.leader_id, cid, request, endpoint, 0))
    for read in unasked:
        read.asked, read.asked_at, read.asked_of = cid, now, (st.leader_id, st.epoch)


def is_read_offset_answer(replica: Replica, correlation_id: int) -> bool:
    return any(r.asked == correlation_id for r in replica.local_reads.values())


def handle_read_offset_response(replica: Replica, ev: ResponseReceived) -> None:
    """An answer: reads asked with it learn their offset; an error (after the common handling has
    followed any new leader) sends them back to be asked again."""
    waiting = [r for r in replica.local_reads.values() if r.asked == ev.correlation_id]
    try:
        outcome = common_outcome(replica, ev.response)
    except PeerRefused:  # the answer lied: its reads ask again after the back-off
        for read in waiting:
            read.asked, read.retry_at = None, replica.now + replica.cfg.retry_backoff_ms
        raise
    offset = None
    if not isinstance(outcome, bool) and outcome.error == errors.NONE:
        answer = as_message(ev.response, _ror.ReadOffsetResponse)
        offset = answer.topics[0].partitions[0].applied_offset
    for read in waiting:
        read.asked = None
        if offset is not None and offset >= 0:
            read.offset = offset
        else:
            read.retry_at = replica.now + (0 if outcome is True else replica.cfg.retry_backoff_ms)
    poll_reads(replica)


def handle_read_offset_failure(replica: Replica, ev: RequestFailed) -> None:
    for read in replica.local_reads.values():
        if read.asked == ev.correlation_id:
            read.asked, read.retry_at = None, replica.now + replica.cfg.retry_backoff_ms


def read_deadline(replica: Replica) -> int | None:
    """When :func:`poll_reads` next has work: a read's deadline, retry or request timeout."""
    reads = replica.local_reads
    if not reads:
        return None
    timeout = replica.cfg.request_timeout_ms
    soonest = min(read.deadline for read in reads.values())
    for read in reads.values():  # asked every step: one pass, no list
        asked = read.asked
        if asked is None:
            if read.offset is None and read.retry_at < soonest:
                soonest = read.retry_at
        elif asked >= 0 and read.asked_at + timeout < soonest:
            soonest = read.asked_at + timeout
    return soonest
