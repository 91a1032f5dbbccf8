"""Vote (apiKey 52): standard votes and KIP-996 pre-votes, both sides (docs/kraft.md §4.2, §6).

Validation order of a request: cluster id; topic/partition (top-level INVALID_REQUEST); offsets and
epochs (partition INVALID_REQUEST); voter-only checks (an epoch at 2^31-1 is INVALID_REQUEST, a
candidate outside the voter set INCONSISTENT_VOTER_SET, a candidate naming this node
INVALID_REQUEST: each refused without any state change); a higher epoch moves us to Unattached (even
for a pre-vote); voter key (INVALID_VOTER_KEY); then the grant rules of §6.2. A granted standard
vote is persisted before the answer leaves (same Ready).

A VoteResponse does not say whether it answered a pre-vote: the round is inferred from our own state
(Prospective means pre-vote).
"""

from __future__ import annotations

from kraftwire.generated import errors
from kraftwire.generated import vote_request as _vq
from kraftwire.generated import vote_response as _vr

from . import responses
from .api import ReplicaKey, RequestReceived, ResponseReceived, Role
from .common import cluster_id_ok, common_outcome, refuse, validate_voter_only
from .messages import as_message, key_of, metadata_partition
from .replica import Replica
from .states import CandidateState, ProspectiveState
from .transitions import add_vote, become_candidate, become_leader, become_unattached, prospective_lost


def handle_vote_request(replica: Replica, ev: RequestReceived) -> None:
    req, v = as_message(ev.request, _vq.VoteRequest), ev.api_version
    if not cluster_id_ok(replica, req.cluster_id):
        return replica.respond(ev, responses.vote_response(v, errors.INCONSISTENT_CLUSTER_ID))
    p = metadata_partition(req.topics)
    if p is None:
        return replica.respond(ev, responses.vote_response(v, errors.INVALID_REQUEST))
    pre_vote = bool(getattr(p, "pre_vote", False)) and v >= 2
    epoch, last_epoch, last_offset = p.replica_epoch, p.last_offset_epoch, p.last_offset
    illegal_epoch = last_epoch > epoch if pre_vote else last_epoch >= epoch
    if last_offset < 0 or last_epoch < 0 or illegal_epoch:
        return _answer(replica, ev, errors.INVALID_REQUEST, False)
    what = "PreVote" if pre_vote else "Vote"
    err = validate_voter_only(replica, ev.source, what, p.replica_id, epoch)
    if err == errors.NONE and p.replica_id == replica.local_id:
        # Kafka's transitionToUnattachedVoted throws (the process exits) on a vote for itself
        refuse(replica, ev.source, what, f"the candidate {p.replica_id} is this node")
        err = errors.INVALID_REQUEST
    if err != errors.NONE:
        return _answer(replica, ev, err, False)
    if epoch > replica.state.epoch:
        become_unattached(replica, epoch)
    voter_id = getattr(req, "voter_id", -1)
    if voter_id >= 0:
        dir_id = key_of(voter_id, p.voter_directory_id).directory_id
        local = replica.local_key
        if local is None or voter_id != local.id or (dir_id is not None and dir_id != local.directory_id):
            return _answer(replica, ev, errors.INVALID_VOTER_KEY, False)
    candidate = key_of(p.replica_id, p.replica_directory_id)
    up_to_date = (last_epoch, last_offset) >= (replica.log.last_fetched_epoch(), replica.log.end_offset())
    granted = can_grant(replica, candidate, pre_vote, up_to_date)
    st = replica.state
    if granted and not pre_vote and st.role in (Role.UNATTACHED, Role.PROSPECTIVE) and st.voted_key is None:
        add_vote(replica, candidate)
    _answer(replica, ev, errors.NONE, granted)


def _answer(replica: Replica, ev: RequestReceived, perr: int, granted: bool) -> None:
    st = replica.state
    replica.respond(
        ev,
        responses.vote_response(
            ev.api_version, errors.NONE, perr, st.leader_id, st.epoch, granted, replica.leader_endpoint()
        ),
    )


def can_grant(replica: Replica, candidate: ReplicaKey, pre_vote: bool, up_to_date: bool) -> bool:
    """The grant table of docs/kraft.md §6.2."""
    st = replica.state
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
            silent = replica.now >= st.fetch_deadline  # type: ignore[attr-defined]
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


def handle_vote_response(replica: Replica, ev: ResponseReceived) -> bool:
    resp = as_message(ev.response, _vr.VoteResponse)
    if resp.error_code == errors.UNSUPPORTED_VERSION:
        on_vote_unsupported(replica, ev.source)
        return False
    info = common_outcome(replica, resp)
    if isinstance(info, bool):
        return info
    st = replica.state
    if info.error != errors.NONE:
        return False
    p = resp.topics[0].partitions[0]
    if isinstance(st, ProspectiveState):
        st.election.record(ev.source, bool(p.vote_granted))
        if st.election.is_granted():
            become_candidate(replica)
        elif st.election.is_rejected():
            prospective_lost(replica, st, timed_out=False)
    elif isinstance(st, CandidateState):
        st.election.record(ev.source, bool(p.vote_granted))
        if st.election.is_granted():
            become_leader(replica)
    return True


def on_vote_unsupported(replica: Replica, dest: int) -> None:
    """A peer without Vote v2 cannot take a pre-vote: run a real election at once (3.9 interop)."""
    if replica.state.role is Role.PROSPECTIVE:
        become_candidate(replica)
