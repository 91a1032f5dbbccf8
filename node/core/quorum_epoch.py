"""BeginQuorumEpoch (53) and EndQuorumEpoch (54), both sides (kraft-node.md §4.3, §4.4, §5.4).

Both requests validate cluster id, topic/partition, then the voter-only checks, then move us along
(``maybe_transition``) *before* the voter-key check. EndQuorumEpoch additionally shortens a follower's
fetch timer by its rank among the resigning leader's preferred successors, so the best-placed voter
starts the next election first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors, responses
from .api import METADATA_PARTITION, METADATA_TOPIC, Endpoint, RequestReceived, ResponseReceived
from .common import cluster_id_ok, common_outcome, validate_voter_only
from .messages import key_of
from .states import FollowerState, ResignedState
from .transitions import maybe_transition

if TYPE_CHECKING:
    from .core import KRaftCore


def _validate(core: "KRaftCore", ev: RequestReceived, build) -> Any:
    """Common checks; returns the partition, or None after answering with an error."""
    req, v = ev.request, ev.api_version
    if not cluster_id_ok(core, req.cluster_id):
        core.respond(ev, build(v, errors.INCONSISTENT_CLUSTER_ID))
        return None
    t = req.topics
    if (
        len(t) != 1
        or t[0].topic_name != METADATA_TOPIC
        or len(t[0].partitions) != 1
        or t[0].partitions[0].partition_index != METADATA_PARTITION
    ):
        core.respond(ev, build(v, errors.INVALID_REQUEST))
        return None
    p = t[0].partitions[0]
    err = validate_voter_only(core, p.leader_id, p.leader_epoch)
    if err != errors.NONE:
        _answer(core, ev, build, err)
        return None
    eps = {e.name: Endpoint(e.host, e.port) for e in (getattr(req, "leader_endpoints", None) or [])}
    if not eps:
        eps = dict(core.voters().endpoints(p.leader_id))
    maybe_transition(core, p.leader_epoch, p.leader_id, eps)
    return p


def _answer(core: "KRaftCore", ev: RequestReceived, build, perr: int) -> None:
    st = core.state
    core.respond(ev, build(ev.api_version, errors.NONE, perr, st.leader_id, st.epoch, core.leader_endpoint()))


def handle_begin_quorum_epoch_request(core: "KRaftCore", ev: RequestReceived) -> None:
    build = responses.begin_quorum_epoch_response
    p = _validate(core, ev, build)
    if p is None:
        return
    voter_id = getattr(ev.request, "voter_id", -1)
    if voter_id >= 0:
        key = key_of(voter_id, p.voter_directory_id)
        local = core.local_key
        if local is None or key.id != local.id or (key.directory_id not in (None, local.directory_id)):
            return _answer(core, ev, build, errors.INVALID_VOTER_KEY)
    _answer(core, ev, build, errors.NONE)


def handle_end_quorum_epoch_request(core: "KRaftCore", ev: RequestReceived) -> None:
    build = responses.end_quorum_epoch_response
    p = _validate(core, ev, build)
    if p is None:
        return
    st = core.state
    if isinstance(st, FollowerState) and st.leader_id == p.leader_id and st.epoch == p.leader_epoch:
        st.fetch_deadline = core.now + successor_backoff_ms(core, p, ev.api_version)
    _answer(core, ev, build, errors.NONE)


def successor_backoff_ms(core: "KRaftCore", p: Any, version: int) -> int:
    """0 for the first preferred successor, growing with rank; the maximum when not listed (§4.4)."""
    max_ms = core.cfg.election_backoff_max_ms
    local = core.local_key
    if local is None:
        return max_ms
    if version >= 1:
        ranked = [key_of(c.candidate_id, c.candidate_directory_id) for c in p.preferred_candidates]
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
        pos = ranked_ids.index(local.id) if local.id in ranked_ids else -1
        ranked = ranked_ids  # type: ignore[assignment]
    n = len(ranked)
    if pos < 0:
        return max_ms
    if pos == 0:
        return 0
    return min(max_ms, (max_ms >> (n - 1)) << (pos - 1))


def handle_begin_quorum_epoch_response(core: "KRaftCore", ev: ResponseReceived) -> bool:
    done, info = common_outcome(core, ev.response)
    return done if done is not None else info.error == errors.NONE


def handle_end_quorum_epoch_response(core: "KRaftCore", ev: ResponseReceived) -> bool:
    done, info = common_outcome(core, ev.response)
    if done is not None:
        return done
    st = core.state
    if isinstance(st, ResignedState) and info.error == errors.NONE:
        st.unacked.discard(ev.source)
    return info.error == errors.NONE
