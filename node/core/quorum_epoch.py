"""BeginQuorumEpoch (53) and EndQuorumEpoch (54), both sides (docs/kraft.md §4.3, §4.4, §5.4).

Both requests validate cluster id, topic/partition, then the voter-only checks (beyond Kafka: an
epoch at 2^31-1, a leader outside the voter set, a leader that is this node or a second leader of
the current epoch are refused with an error and no state change, where Kafka would act on the first
two and exit on the last two), then move us along (``maybe_transition``) *before* the voter-key
check. EndQuorumEpoch additionally shortens a follower's fetch timer by its rank among the resigning
leader's preferred successors, so the best-placed voter starts the next election first.
"""

from __future__ import annotations

from typing import Any, Callable

from kraftwire.generated import errors
from kraftwire.generated import begin_quorum_epoch_request as _bqe
from kraftwire.generated import end_quorum_epoch_request as _eqe

from . import responses
from .api import Endpoint, PeerRefused, RequestReceived, ResponseReceived, WireMessage
from .common import cluster_id_ok, common_outcome, refuse, validate_voter_only
from .leader import LeaderState
from .leader_ops import answer_confirmed_reads
from .messages import key_of, metadata_partition
from .replica import Replica
from .states import FollowerState, ResignedState
from .transitions import claim_conflict, maybe_transition


ResponseBuilder = Callable[..., WireMessage]
"""``responses.begin_quorum_epoch_response`` or ``responses.end_quorum_epoch_response``."""


def _validate(replica: Replica, ev: RequestReceived, build: ResponseBuilder) -> Any:
    """Common checks; returns the partition, or None after answering with an error."""
    req, v = ev.request, ev.api_version
    if not isinstance(req, (_bqe.BeginQuorumEpochRequest, _eqe.EndQuorumEpochRequest)):
        raise PeerRefused(f"expected a quorum epoch request, got a {type(req).__name__}")
    if not cluster_id_ok(replica, req.cluster_id):
        replica.respond(ev, build(v, errors.INCONSISTENT_CLUSTER_ID))
        return None
    p = metadata_partition(req.topics)
    if p is None:
        replica.respond(ev, build(v, errors.INVALID_REQUEST))
        return None
    what = type(req).__name__.removesuffix("Request")
    err = validate_voter_only(replica, ev.source, what, p.leader_id, p.leader_epoch)
    if err == errors.NONE:
        conflict = _leader_claim_conflict(replica, p.leader_epoch, p.leader_id)
        if conflict is not None:
            refuse(replica, ev.source, what, conflict)
            err = errors.INVALID_REQUEST
    if err != errors.NONE:
        _answer(replica, ev, build, err)
        return None
    eps = {e.name: Endpoint(e.host, e.port) for e in (getattr(req, "leader_endpoints", None) or [])}
    if not eps:
        eps = dict(replica.voters().endpoints(p.leader_id))
    maybe_transition(replica, p.leader_epoch, p.leader_id, eps)
    return p


def _leader_claim_conflict(replica: Replica, epoch: int, leader_id: int) -> str | None:
    """A leader announces or resigns its own epoch to the others, so one of these naming this node is
    never true; any other claim is checked like every peer's (:func:`.transitions.claim_conflict`)."""
    if leader_id == replica.local_id:
        return f"names this node leader of epoch {epoch}; a leader never sends that to itself"
    return claim_conflict(replica, epoch, leader_id)


def _answer(replica: Replica, ev: RequestReceived, build: ResponseBuilder, perr: int) -> None:
    st = replica.state
    replica.respond(ev, build(ev.api_version, errors.NONE, perr, st.leader_id, st.epoch, replica.leader_endpoint()))


def handle_begin_quorum_epoch_request(replica: Replica, ev: RequestReceived) -> None:
    build = responses.begin_quorum_epoch_response
    p = _validate(replica, ev, build)
    if p is None:
        return
    voter_id = getattr(ev.request, "voter_id", -1)
    if voter_id >= 0:
        key = key_of(voter_id, p.voter_directory_id)
        local = replica.local_key
        if local is None or key.id != local.id or (key.directory_id not in (None, local.directory_id)):
            return _answer(replica, ev, build, errors.INVALID_VOTER_KEY)
    _answer(replica, ev, build, errors.NONE)


def handle_end_quorum_epoch_request(replica: Replica, ev: RequestReceived) -> None:
    build = responses.end_quorum_epoch_response
    p = _validate(replica, ev, build)
    if p is None:
        return
    st = replica.state
    if isinstance(st, FollowerState) and st.leader_id == p.leader_id and st.epoch == p.leader_epoch:
        st.fetch_deadline = replica.now + successor_backoff_ms(replica, p, ev.api_version)
    _answer(replica, ev, build, errors.NONE)


def successor_backoff_ms(replica: Replica, p: Any, version: int) -> int:
    """0 for the first preferred successor, growing with rank; the maximum when not listed (§4.4)."""
    max_ms = replica.cfg.election_backoff_max_ms
    local = replica.local_key
    if local is None:
        return max_ms
    if version >= 1:
        ranked = [key_of(c.candidate_id, c.candidate_directory_id) for c in p.preferred_candidates]
        n = len(ranked)
        pos = next(
            (
                i
                for i, k in enumerate(ranked)
                if k.id == local.id and k.directory_id in (None, local.directory_id)
            ),
            -1,
        )
    else:
        ranked_ids = list(p.preferred_successors)
        n = len(ranked_ids)
        pos = ranked_ids.index(local.id) if local.id in ranked_ids else -1
    if pos < 0:
        return max_ms
    if pos == 0:
        return 0
    return min(max_ms, (max_ms >> (n - 1)) << (pos - 1))


def handle_begin_quorum_epoch_response(replica: Replica, ev: ResponseReceived) -> bool:
    """A success is also the voter's acknowledgement of any ReadOffset round it was pinged for."""
    info = common_outcome(replica, ev.response)
    if isinstance(info, bool):
        return info
    st = replica.state
    if info.error == errors.NONE and isinstance(st, LeaderState) and info.epoch == st.epoch:
        st.ack_ping(ev.source, ev.correlation_id)
        answer_confirmed_reads(replica, st)
    return info.error == errors.NONE


def handle_end_quorum_epoch_response(replica: Replica, ev: ResponseReceived) -> bool:
    info = common_outcome(replica, ev.response)
    if isinstance(info, bool):
        return info
    st = replica.state
    if isinstance(st, ResignedState) and info.error == errors.NONE:
        st.unacked.discard(ev.source)
    return info.error == errors.NONE
