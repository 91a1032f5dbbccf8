"""The leader's log operations and the answers it owes (docs/kraft.md §5, §7.2-§7.4).

Appending: the start-of-epoch records, draining the append accumulator, one control batch at a time.
Answering: a Fetch that ends in an error, a voter change once it is decided, the waiters of a
leadership that ended (:func:`abandon_leadership` keeps them as data on the replica; the core answers
them with :func:`answer_abandoned` once the new state is in place), and what a committed VotersRecord
settles (:func:`on_leader_commit`).
"""

from __future__ import annotations

from typing import Sequence

from kraftwire.generated import errors
from kraftwire.generated import k_raft_version_record as _kv
from kraftwire.generated import leader_change_message as _lc

from . import messages, responses
from .api import LogBatch, WireMessage
from .leader import Accumulator, LeaderState, PendingVoterChange
from .reads import ConfirmRound, LeaderRead
from .replica import Replica

# -- appending -----------------------------------------------------------------------------------------


def append_control(replica: Replica, st: LeaderState, records: Sequence[WireMessage]) -> int:
    """Append one control batch at LEO (after draining pending data); returns its base offset."""
    drain(replica, st, force=True)
    base = replica.log.end_offset()
    replica.append_to_log([LogBatch(base, st.epoch, tuple(records), True, replica.now)])
    st.acc = Accumulator(replica.log.end_offset())
    return base


def append_start_of_epoch_records(replica: Replica, st: LeaderState) -> None:
    """LeaderChange, plus KRaftVersion and Voters when the voter set must be (re)written (§5.1)."""
    voters = replica.voters()
    records: list[WireMessage] = [
        _lc.LeaderChangeMessage(
            version=0,
            leader_id=st.local_key.id,
            voters=[_lc.Voter(voter_id=i) for i in voters.ids()],
            granting_voters=[_lc.Voter(voter_id=i) for i in st.granting_voters],
        )
    ]
    kv = replica.control.kraft_version()
    if kv >= 1:
        local = voters.get(st.local_key.id)
        wanted = replica.local_voter_spec()
        if replica.control.last_voters_offset() == -1 or (local is not None and local != wanted):
            new_set = voters.with_voter(wanted) if local is not None else voters
            records.append(_kv.KRaftVersionRecord(version=0, k_raft_version=kv))
            records.append(new_set.to_record())
    append_control(replica, st, records)
    st.update_voters(replica.voters(), replica.now)


def drain(replica: Replica, st: LeaderState, force: bool = False) -> None:
    cfg = replica.cfg
    batch = st.drain(replica.now, cfg.append_linger_ms, cfg.max_batch_size_bytes, force)
    if batch is not None:
        replica.append_to_log([batch])


# -- answering -----------------------------------------------------------------------------------------


def respond_fetch_error(replica: Replica, source: int, cid: int, version: int, perr: int) -> None:
    """A partition-level error naming the current leader; like Kafka's ``buildEmptyFetchResponse`` it
    carries no high watermark (-1), even where one is known."""
    st = replica.state
    response = responses.fetch_response(
        version, errors.NONE, perr, st.leader_id, st.epoch, None, replica.log.start_offset(), ep=replica.leader_endpoint()
    )
    replica.respond_to(source, cid, version, response)


def respond_change(replica: Replica, change: PendingVoterChange, error: int, message: str | None = None) -> None:
    """Answer the change's request (once); ``message`` None: the error's default (UpdateRaftVoter's
    answer has no message)."""
    if change.responded:
        return
    change.responded = True
    s = replica.state
    resp: WireMessage
    if change.kind == "add":
        resp = responses.add_raft_voter_response(error, message)
    elif change.kind == "remove":
        resp = responses.remove_raft_voter_response(error, message)
    else:
        resp = responses.update_raft_voter_response(
            error, s.leader_id, s.epoch, replica.leader_endpoint()
        )
    replica.respond_to(change.source, change.correlation_id, change.api_version, resp)


def abandon_leadership(replica: Replica, st: LeaderState) -> None:
    """Called while leaving Leader: parked fetches and the pending voter change are answered once the
    new state is in place (their answers must name the new leader and epoch)."""
    replica.abandoned.append((st.parked, st.pending_change))
    st.parked = []
    st.pending_change = None
    replica.abandoned_reads.extend(read for rnd in st.read_rounds for read in rnd.reads)
    st.read_rounds = []


def answer_abandoned(replica: Replica) -> None:
    """Fail the waiters :func:`abandon_leadership` kept, oldest leadership first."""
    while replica.abandoned:
        parked, change = replica.abandoned.pop(0)
        for p in parked:
            respond_fetch_error(
                replica, p.source, p.correlation_id, p.api_version, errors.NOT_LEADER_OR_FOLLOWER
            )
        if change is not None and not change.responded:
            respond_change(replica, change, errors.NOT_LEADER_OR_FOLLOWER)
    reads, replica.abandoned_reads = replica.abandoned_reads, []
    for read in reads:
        answer_read(replica, read, None)


# -- ReadOffset rounds (the rule is in read_offset.py) ----------------------------------------------------


def enqueue_read(
    replica: Replica, st: LeaderState, read: LeaderRead, asking_voter: int | None = None
) -> None:
    """Add a read to the newest round if that is still open, else open a round; a voter's own
    ReadOffset (``asking_voter``) gets a round of its own that it has acknowledged. Then ping."""
    rounds = st.read_rounds
    if asking_voter is not None:
        rounds.append(ConfirmRound([read], acked={asking_voter}, closed=True))
    else:
        if not rounds or rounds[-1].closed:
            rounds.append(ConfirmRound())
        rounds[-1].reads.append(read)
    answer_confirmed_reads(replica, st)
    ping_rounds(replica, st)


def ping_rounds(replica: Replica, st: LeaderState) -> None:
    """Send a BeginQuorumEpoch to every voter an open round still needs and has no live ping to (never
    sent for that round, or its ping failed or timed out): one ping serves every round open when it
    is sent. Called when a read arrives and on every leader poll (retries after a failure)."""
    if not st.read_rounds:
        return
    now, local = replica.now, st.local_key.id
    for nid, progress in st.voter_states.items():
        if nid == local or not replica.requests.is_ready(nid, now):
            continue
        needing = [
            r
            for r in st.read_rounds
            if nid not in r.acked and not st.round_acked(r) and not _ping_live(replica, r, nid)
        ]
        if not needing:
            continue
        request = messages.begin_quorum_epoch_request(
            replica.cfg.cluster_id, progress.key, local, st.epoch, replica.cfg.listeners
        )
        cid = replica.send_request(nid, request)
        for read_round in needing:
            read_round.pings[nid] = cid
            read_round.closed = True


def _ping_live(replica: Replica, read_round: ConfirmRound, nid: int) -> bool:
    flight = replica.requests.in_flight_to(nid)
    return flight is not None and read_round.pings.get(nid) == flight.correlation_id


def answer_confirmed_reads(replica: Replica, st: LeaderState) -> None:
    """Answer every confirmed round, oldest first (after a voter fetch or an HW advance)."""
    while (confirmed := st.confirmed_round()) is not None:
        for read in confirmed.reads:
            answer_read(replica, read, read.noted_hw if read.noted_hw is not None else st.high_watermark)


def answer_read(replica: Replica, read: LeaderRead, offset: int | None) -> None:
    """``offset`` None: leadership was lost; a remote reader hears NOT_LEADER_OR_FOLLOWER with the
    leader we know now, a local read goes back to asking whoever leads next."""
    if read.read_id is not None:
        local = replica.local_reads.get(read.read_id)
        if local is not None:
            local.offset, local.asked = offset, None
        return
    st = replica.state
    perr = errors.NONE if offset is not None else errors.NOT_LEADER_OR_FOLLOWER
    ep = replica.leader_endpoint() if offset is None else None
    resp = responses.read_offset_response(errors.NONE, perr, offset, st.leader_id, st.epoch, ep)
    replica.respond_to(read.source, read.correlation_id, read.api_version, resp)


def on_leader_commit(replica: Replica, st: LeaderState) -> None:
    """The HW moved: a committed VotersRecord answers its request and frees the slot; a leader that
    the committed voter set leaves out resigns."""
    change = st.pending_change
    hw = st.high_watermark
    if hw is None:
        return
    if change is not None and change.record_offset is not None and hw > change.record_offset:
        respond_change(replica, change, errors.NONE)
        st.pending_change = None
    maybe_resign_removed_leader(replica, st)


def maybe_resign_removed_leader(replica: Replica, st: LeaderState) -> None:
    """The leader resigns once the VotersRecord that removed it is committed (docs/kraft.md §7.4).

    This follows the committed voter set, not the RemoveRaftVoter request: that request may have expired
    (REQUEST_TIMED_OUT) or been sent to an earlier leader, yet its record still commits here later.
    """
    hw = st.high_watermark
    off = replica.control.last_voters_offset()
    if hw is None or off is None or hw <= off:
        return
    if not replica.voters().is_voter(st.local_key):
        st.resign_requested = True


# -- timing ----------------------------------------------------------------------------------------------


def leader_deadline(replica: Replica, st: LeaderState) -> int:
    times = [st.begin_quorum_deadline]
    if st.required_fetchers() > 0:
        times.append(st.check_quorum_deadline)
    d = st.drain_deadline(replica.cfg.append_linger_ms, replica.cfg.max_batch_size_bytes)
    if d is not None:
        times.append(d)
    times.extend(p.deadline for p in st.parked)
    if st.pending_change is not None:
        times.append(st.pending_change.deadline)
    return min(times)
