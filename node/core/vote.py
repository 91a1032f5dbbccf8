"""Vote (apiKey 52): standard votes and KIP-996 pre-votes, both sides (kraft-node.md §4.2, §6).

Validation order of a request: cluster id; topic/partition (top-level INVALID_REQUEST); offsets and
epochs (partition INVALID_REQUEST); voter-only checks; a higher epoch moves us to Unattached (even
for a pre-vote); voter key (INVALID_VOTER_KEY); then the grant rules of §6.2. A granted standard vote
is persisted before the answer leaves (same Ready).

A VoteResponse does not say whether it answered a pre-vote: the round is inferred from our own state
(Prospective means pre-vote).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors, responses
from .api import METADATA_PARTITION, METADATA_TOPIC, ReplicaKey, RequestReceived, ResponseReceived, Role
from .common import cluster_id_ok, common_outcome, validate_voter_only
from .messages import key_of
from .states import CandidateState, ProspectiveState
from .transitions import add_vote, become_candidate, become_leader, become_unattached

if TYPE_CHECKING:
    from .core import KRaftCore


def handle_vote_request(core: "KRaftCore", ev: RequestReceived) -> None:
    req, v = ev.request, ev.api_version
    if not cluster_id_ok(core, req.cluster_id):
        return core.respond(ev, responses.vote_response(v, errors.INCONSISTENT_CLUSTER_ID))
    topics = req.topics
    if (
        len(topics) != 1
        or topics[0].topic_name != METADATA_TOPIC
        or len(topics[0].partitions) != 1
        or topics[0].partitions[0].partition_index != METADATA_PARTITION
    ):
        return core.respond(ev, responses.vote_response(v, errors.INVALID_REQUEST))
    p = topics[0].partitions[0]
    pre_vote = bool(getattr(p, "pre_vote", False)) and v >= 2
    epoch, last_epoch, last_offset = p.replica_epoch, p.last_offset_epoch, p.last_offset
    illegal_epoch = last_epoch > epoch if pre_vote else last_epoch >= epoch
    if last_offset < 0 or last_epoch < 0 or illegal_epoch:
        return _answer(core, ev, errors.INVALID_REQUEST, False)
    err = validate_voter_only(core, p.replica_id, epoch)
    if err != errors.NONE:
        return _answer(core, ev, err, False)
    if epoch > core.state.epoch:
        become_unattached(core, epoch)
    voter_id = getattr(req, "voter_id", -1)
    if voter_id >= 0:
        dir_id = key_of(voter_id, p.voter_directory_id).directory_id
        local = core.local_key
        if local is None or voter_id != local.id or (dir_id is not None and dir_id != local.directory_id):
            return _answer(core, ev, errors.INVALID_VOTER_KEY, False)
    candidate = key_of(p.replica_id, p.replica_directory_id)
    up_to_date = (last_epoch, last_offset) >= (core.log.last_fetched_epoch(), core.log.end_offset())
    granted = can_grant(core, candidate, pre_vote, up_to_date)
    st = core.state
    if granted and not pre_vote and st.role in (Role.UNATTACHED, Role.PROSPECTIVE) and st.voted_key is None:
        add_vote(core, candidate)
    _answer(core, ev, errors.NONE, granted)


def _answer(core: "KRaftCore", ev: RequestReceived, perr: int, granted: bool) -> None:
    st = core.state
    core.respond(
        ev,
        responses.vote_response(
            ev.api_version, errors.NONE, perr, st.leader_id, st.epoch, granted, core.leader_endpoint()
        ),
    )


def can_grant(core: "KRaftCore", candidate: ReplicaKey, pre_vote: bool, up_to_date: bool) -> bool:
    """The grant table of kraft-node.md §6.2."""
    st = core.state
    role = st.role
    if role is Role.LEADER:
        return False
    if pre_vote:
        if role is Role.FOLLOWER:
            # Kafka: only while nothing was fetched from the leader in this state. A voter leaves the
            # state when its fetch timer runs out; an observer never does, so one that is already a
            # voter in the latest set (it has not fetched that VotersRecord yet) would refuse every
            # pre-vote after its leader died, and with such a voter needed for a majority no election
            # could ever succeed (found by the simulator, chaos). A leader silent for a whole fetch
            # timeout therefore no longer counts, for observers too.
            silent = core.now >= st.fetch_deadline  # type: ignore[attr-defined]
            return (not st.has_fetched or silent) and up_to_date  # type: ignore[attr-defined]
        return up_to_date
    if role in (Role.UNATTACHED, Role.PROSPECTIVE):
        voted = st.voted_key
        if voted is not None:
            return voted.id == candidate.id and (
                voted.directory_id is None or voted.directory_id == candidate.directory_id
            )
        if st.leader_id is not None:
            return False
        return up_to_date
    return False


def handle_vote_response(core: "KRaftCore", ev: ResponseReceived) -> bool:
    resp = ev.response
    if resp.error_code == errors.UNSUPPORTED_VERSION:
        on_vote_unsupported(core, ev.source)
        return False
    done, info = common_outcome(core, resp)
    if done is not None:
        return done
    st = core.state
    if info.error != errors.NONE:
        return False
    p = resp.topics[0].partitions[0]
    if isinstance(st, ProspectiveState):
        st.election.record(ev.source, bool(p.vote_granted))
        if st.election.is_granted():
            become_candidate(core)
        elif st.election.is_rejected():
            from .poll import prospective_lost

            prospective_lost(core, st, timed_out=False)
    elif isinstance(st, CandidateState):
        st.election.record(ev.source, bool(p.vote_granted))
        if st.election.is_granted():
            become_leader(core)
    return True


def on_vote_unsupported(core: "KRaftCore", dest: int) -> None:
    """A peer without Vote v2 cannot take a pre-vote: run a real election at once (3.9 interop)."""
    if core.state.role is Role.PROSPECTIVE:
        become_candidate(core)
