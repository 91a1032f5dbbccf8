"""What a leader does over time: start-of-epoch records, draining appends, heartbeating with
BeginQuorumEpoch, check-quorum, and reacting to high-watermark advances (kraft-node.md §5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from kraftwire.generated import k_raft_version_record as _kv
from kraftwire.generated import leader_change_message as _lc

from . import errors, messages
from .api import LogBatch
from .leader import Accumulator, LeaderState, ParkedFetch

if TYPE_CHECKING:
    from .core import KRaftCore


def append_control(core: "KRaftCore", st: LeaderState, records: Sequence[Any]) -> int:
    """Append one control batch at LEO (after draining pending data); returns its base offset."""
    drain(core, st, force=True)
    base = core.log.end_offset()
    core.append_to_log([LogBatch(base, st.epoch, tuple(records), True, core.now)])
    st.acc = Accumulator(core.log.end_offset())
    return base


def append_start_of_epoch_records(core: "KRaftCore", st: LeaderState) -> None:
    """LeaderChange, plus KRaftVersion and Voters when the voter set must be (re)written (§5.1)."""
    voters = core.voters()
    records: list[Any] = [
        _lc.LeaderChangeMessage(
            version=0,
            leader_id=st.local_key.id,
            voters=[_lc.Voter(voter_id=i) for i in voters.ids()],
            granting_voters=[_lc.Voter(voter_id=i) for i in st.granting_voters],
        )
    ]
    kv = core.control.kraft_version()
    if kv >= 1:
        local = voters.get(st.local_key.id)
        wanted = core.local_voter_spec()
        if core.control.last_voters_offset() == -1 or (local is not None and local != wanted):
            new_set = voters.with_voter(wanted) if local is not None else voters
            records.append(_kv.KRaftVersionRecord(version=0, k_raft_version=kv))
            records.append(new_set.to_record())
    append_control(core, st, records)
    st.update_voters(core.voters())


def drain(core: "KRaftCore", st: LeaderState, force: bool = False) -> None:
    cfg = core.cfg
    batch = st.drain(core.now, cfg.append_linger_ms, cfg.max_batch_size_bytes, force)
    if batch is not None:
        core.append_to_log([batch])


def on_flushed(core: "KRaftCore", st: LeaderState, flushed_to: int) -> None:
    """The driver made the log durable up to ``flushed_to``: count the leader's own end offset."""
    end = min(flushed_to, core.log.end_offset())
    if st.update_local_end_offset(end, core.now):
        on_high_watermark_advanced(core, st)
    else:
        _fl.retry_parked(core, st, only_new_data=True)


def on_high_watermark_advanced(core: "KRaftCore", st: LeaderState) -> None:
    _vc.on_leader_commit(core, st)
    _fl.retry_parked(core, st, only_new_data=False)


def abandon_leadership(core: "KRaftCore", st: LeaderState) -> None:
    """Called while leaving Leader: parked fetches and the pending voter change fail once the new
    state is in place (their answers must name the new leader and epoch)."""
    parked, change = st.parked, st.pending_change
    core.after_transition.append(lambda: _fail_leader_waiters(core, parked, change))
    st.parked = []
    st.pending_change = None


def _fail_leader_waiters(core: "KRaftCore", parked: list[ParkedFetch], change: Any) -> None:
    for p in parked:
        _fl.respond_fetch_error(core, p.source, p.correlation_id, p.api_version, errors.NOT_LEADER_OR_FOLLOWER)
    if change is not None and not change.responded:
        _vc.respond_change(core, change, errors.NOT_LEADER_OR_FOLLOWER)


def poll_leader(core: "KRaftCore", st: LeaderState) -> None:
    now = core.now
    if core.shutdown_deadline is not None or st.resign_requested or st.check_quorum_expired(now):
        _tr.become_resigned(core)
        return
    _vc.expire_pending_change(core, st)
    drain(core, st)
    _fl.expire_parked(core, st)
    if now >= st.begin_quorum_deadline:
        resend = core.cfg.begin_quorum_epoch_resend_ms
        for nid, p in st.voter_states.items():
            if nid == st.local_key.id or (p.last_fetch_ms >= 0 and now - p.last_fetch_ms < resend):
                continue  # fetched recently (a voter that never fetched gets one at once)
            if not core.requests.is_ready(nid, now):
                continue
            req = messages.begin_quorum_epoch_request(
                core.cfg.cluster_id, p.key, st.local_key.id, st.epoch, core.cfg.listeners
            )
            core.send_request(nid, req)
        st.begin_quorum_deadline = now + resend


def leader_deadline(core: "KRaftCore", st: LeaderState) -> int:
    times = [st.begin_quorum_deadline]
    if st.required_fetchers() > 0:
        times.append(st.check_quorum_deadline)
    d = st.drain_deadline(core.cfg.append_linger_ms)
    if d is not None:
        times.append(d)
    times.extend(p.deadline for p in st.parked)
    if st.pending_change is not None:
        times.append(st.pending_change.deadline)
    return min(times)


# Imported last: these modules import this one (a cycle resolved because everything above is defined).
from . import fetch_leader as _fl  # noqa: E402
from . import transitions as _tr  # noqa: E402
from . import voter_changes as _vc  # noqa: E402
