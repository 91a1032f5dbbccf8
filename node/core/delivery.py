"""Application notifications: loaded snapshots, committed batches and leader changes, in order.

* A snapshot is loaded when the next offset to deliver lies below the log start (a follower that
  downloaded one) or, at startup, when a snapshot exists (Kafka's listener registration).
* Committed batches are delivered whole, in offset order, once the high watermark passes their last
  offset.
* Leader changes fire whenever (leader, epoch) changes, except that the local node's own leadership is
  announced only after the application has consumed everything before the epoch start (§5.1), and a
  Resigned node never announces itself (KAFKA-17333).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .api import CommittedBatch, InvariantViolation, LeaderAndEpoch, LeaderChanged, Role
from .leader import LeaderState
from .log_ops import latest_snapshot

if TYPE_CHECKING:
    from .core import KRaftCore


def deliver_committed(core: "KRaftCore") -> None:
    log = core.log
    start = log.start_offset()
    delivered = core.delivered_offset
    if delivered < start or (delivered == 0 and latest_snapshot(core.snapshots)):
        sid = latest_snapshot(core.snapshots)
        if sid is not None and sid.end_offset > core.delivered_offset:
            if core.state.role is Role.LEADER:
                raise InvariantViolation("a leader must never load a snapshot")
            from .snapshots import read_snapshot

            core.out.notify(read_snapshot(core, sid).notification())
            core.delivered_offset = sid.end_offset
    hw = core.state.high_watermark
    if hw is None or core.delivered_offset >= hw:
        return
    offset = core.delivered_offset
    while offset < hw:
        batch = log.batch_at(offset)
        if batch is None or batch.last_offset >= hw:
            break
        if batch.is_control:
            n = CommittedBatch(batch.base_offset, batch.last_offset, batch.epoch, (), batch.records, batch.append_time_ms)
        else:
            n = CommittedBatch(batch.base_offset, batch.last_offset, batch.epoch, batch.records, (), batch.append_time_ms)
        core.out.notify(n)
        offset = batch.next_offset
    core.delivered_offset = offset


def maybe_fire_leader_change(core: "KRaftCore") -> None:
    st = core.state
    if st.role is Role.RESIGNED:
        return
    if isinstance(st, LeaderState):
        if core.delivered_offset < st.epoch_start_offset or st.high_watermark is None:
            return
    fired = core.last_leader_fired
    if fired is None or fired.leader_id != st.leader_id or fired.epoch != st.epoch:
        current = LeaderAndEpoch(st.leader_id, st.epoch)
        core.last_leader_fired = current
        core.out.notify(LeaderChanged(current))
