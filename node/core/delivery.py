"""Application notifications: loaded snapshots, committed batches and leader changes, in order.

* A snapshot is loaded when the next offset to deliver lies below the log start (a follower that
  downloaded one) or, at startup, when a snapshot exists (Kafka's listener registration).
* Committed batches are delivered whole, in offset order, once the high watermark passes their last
  offset.
* A linearizable read is ready once the batches below its read offset are delivered (issue #13).
* Leader changes fire whenever (leader, epoch) changes, except that the local node's own leadership is
  announced only once the application has consumed all before the epoch start (docs/kraft.md §5.1), and a
  Resigned node never announces itself (KAFKA-17333).
"""

from __future__ import annotations

from . import batches as _batches
from .api import (
    CommittedBatch,
    InvariantViolation,
    LeaderAndEpoch,
    LeaderChanged,
    LogBatch,
    ReadReady,
    Role,
)
from .leader import LeaderState
from .log_ops import latest_snapshot, read_snapshot
from .replica import Replica


class Delivery:
    """What the application has been told so far: the next offset to deliver and the last leader
    announced. Only :class:`~.core.KRaftCore` holds one; it runs both steps after every input."""

    __slots__ = ("delivered_offset", "last_leader_fired")

    def __init__(self) -> None:
        self.delivered_offset = 0
        self.last_leader_fired: LeaderAndEpoch | None = None

    def deliver_committed(self, replica: Replica) -> None:
        log = replica.log
        start = log.start_offset()
        delivered = self.delivered_offset
        if delivered < start or (delivered == 0 and latest_snapshot(replica.snapshots)):
            sid = latest_snapshot(replica.snapshots)
            if sid is not None and sid.end_offset > self.delivered_offset:
                if replica.state.role is Role.LEADER:
                    raise InvariantViolation("a leader must never load a snapshot")
                replica.out.notify(read_snapshot(replica.snapshots, sid).notification())
                self.delivered_offset = sid.end_offset
        hw = replica.state.high_watermark
        if hw is None or self.delivered_offset >= hw:
            return
        offset = self.delivered_offset
        while offset < hw:
            batch = log.batch_at(offset)
            if batch is None or batch.last_offset >= hw:
                break
            replica.out.notify(_committed(batch))
            _batches.keep_encoded(batch)  # the application has them: the log keeps only the bytes
            offset = batch.next_offset
        self.delivered_offset = offset

    def deliver_reads(self, replica: Replica) -> None:
        """A read whose offset the application has now been given every batch below may be served."""
        reads = replica.local_reads
        if not reads:
            return
        done = [
            r for r in reads.values() if r.offset is not None and r.offset <= self.delivered_offset
        ]
        for read in done:
            del reads[read.read_id]
            replica.out.notify(ReadReady(read.read_id, read.offset))  # type: ignore[arg-type]

    def maybe_fire_leader_change(self, replica: Replica) -> None:
        st = replica.state
        if st.role is Role.RESIGNED:
            return
        if isinstance(st, LeaderState):
            if self.delivered_offset < st.epoch_start_offset or st.high_watermark is None:
                return
        fired = self.last_leader_fired
        if fired is None or fired.leader_id != st.leader_id or fired.epoch != st.epoch:
            current = LeaderAndEpoch(st.leader_id, st.epoch)
            self.last_leader_fired = current
            replica.out.notify(LeaderChanged(current))


def _committed(batch: LogBatch) -> CommittedBatch:
    records = tuple(batch.records)  # the tuple itself while decoded records are held
    if batch.is_control:
        return CommittedBatch(
            batch.base_offset, batch.last_offset, batch.epoch, (), records, batch.append_time_ms
        )
    return CommittedBatch(
        batch.base_offset, batch.last_offset, batch.epoch, records, (), batch.append_time_ms
    )
