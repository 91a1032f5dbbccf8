"""The replicated application: a counter (Kafka's ``ReplicatedCounter``).

Every data record is the counter's next value as ASCII digits, so a committed record must be exactly one
more than the value before it; anything else (a lost, duplicated, reordered or foreign record) is a
violation. The counter is writable only while the core has announced this node as leader; it then
appends ``last appended + 1`` (starting from the committed value, which the core guarantees is
complete when it announces leadership). Every ``snapshot_every`` committed records it asks the core for a
snapshot at the end of the batch just applied; the snapshot's single record is the value.
"""

from __future__ import annotations

from kraftwire.node.core.api import CommittedBatch, LeaderAndEpoch, SnapshotLoaded

from .invariants import Checker
from .violation import Violation


class ReplicatedCounter:
    __slots__ = (
        "node_id",
        "checker",
        "value",
        "next_offset",
        "writable",
        "uncommitted",
        "snapshot_every",
        "since_snapshot",
        "pending_snapshot",
    )

    def __init__(self, node_id: int, checker: Checker, snapshot_every: int) -> None:
        self.node_id = node_id
        self.checker = checker
        self.value = 0
        self.next_offset = 0  # next offset the core must deliver
        self.writable = False
        self.uncommitted = 0  # last value appended while writable
        self.snapshot_every = snapshot_every
        self.since_snapshot = 0
        self.pending_snapshot: tuple[int, tuple[bytes, ...]] | None = None

    # -- the Listener callbacks ----------------------------------------------------------------------

    def handle_commit(self, batch: CommittedBatch) -> None:
        if batch.base_offset != self.next_offset:
            raise Violation(
                f"node {self.node_id}: committed batch at {batch.base_offset}, expected offset {self.next_offset}"
            )
        value = self.value
        for r in batch.records:
            v = int(r)
            if v != value + 1:
                raise Violation(
                    f"node {self.node_id}: counter jumped from {value} to {v} in batch {batch.base_offset}..{batch.last_offset}"
                )
            value = v
        self.value = value
        self.next_offset = batch.last_offset + 1
        if value > self.uncommitted or not self.writable:
            self.uncommitted = value
        self.checker.on_commit(self.node_id, batch, value)
        self.since_snapshot += len(batch.records)
        if self.snapshot_every and self.since_snapshot >= self.snapshot_every:
            self.since_snapshot = 0
            self.pending_snapshot = (self.next_offset, (str(value).encode(),))

    def handle_load_snapshot(self, snapshot: SnapshotLoaded, core_is_leader: bool = False) -> None:
        """``core_is_leader``: the core leads now, perhaps before the application was told it does."""
        if self.writable or core_is_leader:
            raise Violation(
                f"LeaderNeverLoadSnapshot: leader {self.node_id} was handed snapshot {snapshot.snapshot_id}"
            )
        if len(snapshot.records) != 1:
            raise Violation(
                f"node {self.node_id}: snapshot {snapshot.snapshot_id} holds {len(snapshot.records)} records"
            )
        self.value = int(snapshot.records[0])
        self.uncommitted = self.value
        self.next_offset = snapshot.snapshot_id.end_offset
        self.since_snapshot = 0
        self.checker.on_snapshot_loaded(self.node_id, snapshot.snapshot_id.end_offset, self.value)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.writable = leader.leader_id == self.node_id
        if self.writable:
            self.uncommitted = self.value

    # -- driving ---------------------------------------------------------------------------------------

    def next_record(self) -> bytes:
        return str(self.uncommitted + 1).encode()

    def appended(self) -> None:
        self.uncommitted += 1
