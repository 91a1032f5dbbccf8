"""Fetch (apiKey 1), follower side: truncation on divergence, switching to a snapshot download, and
appending records (docs/kraft.md §4.5 "Fetch-response handling", §4.6 truncation).

Any ``NONE`` answer from the leader, including a divergence or a snapshot redirect, resets the fetch
timer and marks that we fetched from this leader (which stops us granting pre-votes in this epoch).
The follower's HW is ``min(leader HW, our LEO)`` and never decreases.
"""

from __future__ import annotations

from kraftwire.generated import errors
from kraftwire.generated import fetch_response as _fetch

from . import batches as _batches
from .api import PeerRefused, ResponseReceived, SnapshotId, SnapshotWrite
from .common import common_outcome
from .log_ops import truncation_offset
from .messages import as_message
from .replica import Replica
from .states import FollowerState


def handle_fetch_response(replica: Replica, ev: ResponseReceived) -> bool:
    info = common_outcome(replica, ev.response)
    if isinstance(info, bool):
        return info
    st = replica.state
    if info.error != errors.NONE:
        return False
    if not isinstance(st, FollowerState) or info.leader_id != st.leader_id or info.epoch != st.epoch:
        return True
    p = as_message(ev.response, _fetch.FetchResponse).responses[0].partitions[0]
    div = p.diverging_epoch
    snap = p.snapshot_id
    if div is not None and div.epoch >= 0:
        _truncate(replica, st, div.end_offset, div.epoch)
    elif snap is not None and (snap.end_offset >= 0 or snap.epoch >= 0):
        if snap.end_offset < 0 or snap.epoch < 0:
            return False
        sid = SnapshotId(snap.end_offset, snap.epoch)
        if sid not in replica.snapshots.ids():
            replica.snapshots.begin_partial(sid)
            st.snapshot_download = sid
            replica.out.snapshot(SnapshotWrite(sid, "started"))
    elif not _append(replica, st, p.records or b""):
        return False
    else:
        _update_high_watermark(replica, st, p.high_watermark)
    st.has_fetched = True
    st.fetch_deadline = replica.now + replica.cfg.fetch_timeout_ms
    return True


def _truncate(replica: Replica, st: FollowerState, end_offset: int, epoch: int) -> None:
    """Committed entries are never truncated: a divergence that would cut below our HW is refused
    (Kafka throws and its process exits)."""
    hw = st.high_watermark
    target = truncation_offset(replica.log, replica.snapshots, end_offset, epoch)
    if hw is not None and min(target, end_offset) < hw:
        raise PeerRefused(
            f"diverging epoch ({epoch}, {end_offset}) would truncate to {target}, below our HW {hw}"
        )
    if target < replica.log.end_offset():
        replica.truncate_log(target)


def _append(replica: Replica, st: FollowerState, data: bytes) -> bool:
    if not data:
        return True
    try:
        batches = _batches.decode_batches(data)
    except Exception:  # corrupt or foreign bytes: abandon, the next Fetch retries
        return False
    if not batches:
        return True
    if batches[0].base_offset != replica.log.end_offset() or any(b.epoch > st.epoch for b in batches):
        return False
    for prev, nxt in zip(batches, batches[1:]):
        if nxt.base_offset != prev.next_offset:
            return False
    epoch = replica.log.last_fetched_epoch()
    for b in batches:  # the log refuses (raises) an epoch going down: refuse the answer first
        if b.epoch < epoch:
            raise PeerRefused(f"records at {b.base_offset} of epoch {b.epoch} follow epoch {epoch}")
        epoch = b.epoch
    replica.append_to_log(batches)
    return True


def _update_high_watermark(replica: Replica, st: FollowerState, leader_hw: int) -> None:
    if leader_hw < 0:
        return
    new = min(leader_hw, replica.log.end_offset())
    if st.high_watermark is None or new > st.high_watermark:
        st.high_watermark = new
