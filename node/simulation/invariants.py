"""Safety invariants, checked after every simulator event (docs/kraft.md §12).

1. MonotonicHighWatermark: a leader's HW never decreases within its epoch, is never below the HW any
   leader of an earlier epoch exposed (so it never decreases across leaders either), and no node's HW
   goes back within one process lifetime.
2. MonotonicEpoch: each node's persisted epoch never decreases, and a running node with no disk write
   in progress is at exactly its persisted epoch.
3. MajorityReachedHighWatermark: a majority of the leader's voters have *flushed* the log up to its HW
   (while a voter change is uncommitted, a majority of the voter set before it also qualifies).
4. SingleLeader: one leader per epoch, judged from every persisted election state and every in-memory
   Leader ever seen.
5. SnapshotAtLogStart: when the log start is above 0 a snapshot sits exactly there, no snapshot is
   below it, its epoch agrees with the log, and its bytes are header + data + footer holding the
   counter value committed at that offset.
6. LeaderNeverLoadSnapshot: checked by the counter (neither a writable counter nor one whose core
   leads may load one).
7. ConsistentCommittedData: every committed batch and every loaded snapshot agrees with what any other
   node committed at that offset (checked as they are delivered, so the first divergence stops the run).

Deliberate faults need two relaxations, both explicit: a node whose disk was wiped starts a new
MonotonicEpoch history, and a voter key whose disk was wiped counts as "reached" in (3) (its data loss is
the fault being injected; Kafka drops the invariant altogether for that test).
"""

from __future__ import annotations

from typing import Any, Sequence

from kraftwire.node.core.batches import decode_batches
from kraftwire.node.core.api import (
    BOOTSTRAP_SNAPSHOT_ID,
    CommittedBatch,
    ElectionState,
    QuorumStatus,
    ReplicaKey,
    Role,
    VoterSpec,
)

from .host import Cluster, Replica
from .violation import Violation

CommittedRecords = tuple[int, int, tuple[bytes, ...], tuple[Any, ...]]
"""A committed batch as compared across nodes: (last offset, epoch, records, control records)."""


class Checker:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.leader_of_epoch: dict[int, int] = {}
        self.persisted_epoch: dict[int, int] = {}
        self.node_hw: dict[int, int] = {}  # per running process; cleared on restart
        self.epoch_hw: dict[int, int] = {}  # leader epoch -> highest HW its leader exposed
        self.wiped_keys: set[ReplicaKey] = set()
        # base offset -> (last offset, epoch, records, control records)
        self.batches: dict[int, CommittedRecords] = {}
        self.value_at: dict[int, int] = {0: 0}  # offset -> counter value of everything below it
        self.committed_end = 0  # highest committed end offset seen anywhere
        self.data_committed_at = 0  # virtual time of the last newly committed data record
        self.touched: dict[int, Replica] = {}
        self.top: Replica | None = None  # the running leader of the highest epoch
        self._last_leader_check: tuple[int, int, int, int | None] | None = None
        # False while a peer may claim a voter's identity: a persisted leader is then what a node
        # was told, possibly a lie, and only the leaders in memory count for SingleLeader
        self.trust_persisted_leaders = True

    # -- hooks called by the nodes ---------------------------------------------------------------------

    def on_persist(self, node_id: int, state: ElectionState) -> None:
        prev = self.persisted_epoch.get(node_id)
        if prev is not None and state.epoch < prev:
            raise Violation(
                f"MonotonicEpoch: node {node_id} persisted epoch {state.epoch} after {prev}"
            )
        self.persisted_epoch[node_id] = state.epoch
        if state.leader_id is not None and self.trust_persisted_leaders:
            self._claim(state.epoch, state.leader_id, f"persisted by node {node_id}")

    def on_restart(self, node_id: int) -> None:
        self.node_hw.pop(node_id, None)

    def on_wipe(self, node_id: int, old_key: ReplicaKey) -> None:
        self.persisted_epoch.pop(node_id, None)
        self.node_hw.pop(node_id, None)
        self.wiped_keys.add(old_key)
        self.log_shrunk()

    def on_commit(self, node_id: int, batch: CommittedBatch, value_after: int) -> None:
        rec = (batch.last_offset, batch.epoch, batch.records, batch.control_records)
        seen = self.batches.get(batch.base_offset)
        if seen is None:
            self.batches[batch.base_offset] = rec
        elif seen != rec:
            raise Violation(
                f"ConsistentCommittedData: node {node_id} committed {_describe(rec)} at {batch.base_offset}, "
                f"another node committed {_describe(seen)}"
            )
        end = batch.last_offset + 1
        known = self.value_at.get(end)
        if known is None:
            self.value_at[end] = value_after
        elif known != value_after:
            raise Violation(
                f"ConsistentCommittedData: node {node_id} has value {value_after} at {end}, others {known}"
            )
        if end > self.committed_end:
            self.committed_end = end
            if batch.records:
                self.data_committed_at = self.cluster.queue.now

    def on_snapshot_loaded(self, node_id: int, end_offset: int, value: int) -> None:
        known = self.value_at.setdefault(end_offset, value)
        if known != value:
            raise Violation(
                f"ConsistentCommittedData: node {node_id} loaded a snapshot at {end_offset} with value {value}, "
                f"committed value there is {known}"
            )

    def on_snapshots_changed(self, node: Replica) -> None:
        """SnapshotAtLogStart, run whenever a node's snapshots or log start may have moved."""
        disk = node.disk
        log, store = disk.log, disk.snaps
        ids = [s for s in store.ids() if s != BOOTSTRAP_SNAPSHOT_ID]
        start = log.start_offset()
        if ids and ids[0].end_offset < start:
            raise Violation(
                f"SnapshotAtLogStart: node {node.id} keeps snapshot {ids[0]} below log start {start}"
            )
        if start == 0:
            return
        at_start = [s for s in ids if s.end_offset == start]
        if not at_start:
            raise Violation(
                f"SnapshotAtLogStart: node {node.id} log starts at {start} without a snapshot there ({ids})"
            )
        sid = at_start[0]
        batches = log.batches()
        log_epoch = batches[0].epoch if batches else log.last_fetched_epoch()
        if (batches and log_epoch < sid.epoch) or (not batches and log_epoch != sid.epoch):
            raise Violation(
                f"SnapshotAtLogStart: node {node.id} snapshot {sid} disagrees with log epoch {log_epoch}"
            )
        self._validate_snapshot_bytes(node.id, sid, store.read(sid, 0, store.size(sid)))

    def _validate_snapshot_bytes(self, node_id: int, sid: Any, data: bytes) -> None:
        try:
            batches = decode_batches(data)
        except Exception as exc:  # a snapshot we cannot even parse is invalid
            raise Violation(
                f"SnapshotAtLogStart: node {node_id} snapshot {sid} does not decode: {exc}"
            ) from None
        names = [type(r).__name__ for b in batches if b.is_control for r in b.records]
        data_records = [r for b in batches if not b.is_control for r in b.records]
        if (
            not batches
            or names[:1] != ["SnapshotHeaderRecord"]
            or names[-1:] != ["SnapshotFooterRecord"]
        ):
            raise Violation(
                f"SnapshotAtLogStart: node {node_id} snapshot {sid} lacks header/footer: {names}"
            )
        if any(b.epoch != sid.epoch for b in batches):
            raise Violation(
                f"SnapshotAtLogStart: node {node_id} snapshot {sid} has batches of another epoch"
            )
        if len(data_records) != 1:
            raise Violation(
                f"SnapshotAtLogStart: node {node_id} snapshot {sid} has {len(data_records)} data records"
            )
        self.on_snapshot_loaded(node_id, sid.end_offset, int(data_records[0]))

    # -- after every event -----------------------------------------------------------------------------

    def log_shrunk(self) -> None:
        """Some node's flushed log got shorter (truncation, crash, wipe): recheck the majority."""
        self._last_leader_check = None

    def after_event(self) -> None:
        touched = self.touched
        if not touched:
            return
        top = self.top
        top_status = None if top is None or top.core is None else top.core.status()
        recompute = top is not None and (top_status is None or top_status.role is not Role.LEADER)
        for node in touched.values():
            core = node.core
            if core is None:
                recompute = recompute or node is top
                continue
            status = core.status()
            self._check_node(node, status)
            if status.role is Role.LEADER:
                self._claim(status.epoch, node.id, "in memory")
                if top_status is None or status.epoch >= top_status.epoch:
                    top, top_status = node, status
        touched.clear()
        if recompute:
            top = self._highest_leader()
        self.top = top
        if top is not None:
            self._check_leader(top)

    def _check_node(self, node: Replica, status: QuorumStatus) -> None:
        """A node's HW never goes back within one process; with no disk write in progress it runs at
        exactly the epoch it persisted."""
        hw = status.high_watermark
        if hw is not None:
            prev = self.node_hw.get(node.id)
            if prev is not None and hw < prev:
                raise Violation(
                    f"MonotonicHighWatermark: node {node.id} HW went from {prev} to {hw}"
                )
            self.node_hw[node.id] = hw
        if node.pending is None:
            persisted = node.disk.qs.state
            if (persisted.epoch if persisted is not None else 0) != status.epoch:
                raise Violation(
                    f"MonotonicEpoch: node {node.id} runs at epoch {status.epoch} but persisted "
                    f"{persisted.epoch if persisted is not None else 'nothing'}"
                )

    def _highest_leader(self) -> Replica | None:
        """The running leader of the highest epoch (the first one found, on a tie)."""
        top, top_epoch = None, -1
        for node in self.cluster.running:
            assert node.core is not None
            status = node.core.status()
            if status.role is Role.LEADER and status.epoch > top_epoch:
                top, top_epoch = node, status.epoch
        return top

    def _claim(self, epoch: int, leader: int, how: str) -> None:
        prev = self.leader_of_epoch.setdefault(epoch, leader)
        if prev != leader:
            raise Violation(f"SingleLeader: epoch {epoch} has leaders {prev} and {leader} ({how})")

    def _check_leader(self, node: Replica) -> None:
        assert node.core is not None
        status = node.core.status()
        epoch, hw = status.epoch, status.high_watermark
        if hw is None:
            return
        key = (node.id, epoch, hw, status.voters_offset)
        if key == self._last_leader_check:
            return
        self._last_leader_check = key
        self._check_leader_hw(node.id, epoch, hw)
        voters = status.voters
        if self._reached(voters, hw) >= _majority(voters):
            return
        # While the latest VotersRecord is not yet committed, the HW may have been reached under the
        # voter set before it (a single-member change keeps every new majority overlapping the old one).
        before = status.committed_voters
        if (
            before is not None
            and before != voters
            and self._reached(before, hw) >= _majority(before)
        ):
            return
        raise Violation(
            f"MajorityReachedHighWatermark: leader {node.id} epoch {epoch} HW {hw} is flushed on only "
            f"{self._reached(voters, hw)} of {len(voters)} voters ({_keys(voters)})"
        )

    def _check_leader_hw(self, leader: int, epoch: int, hw: int) -> None:
        """A leader's HW never decreases within its epoch, nor below what earlier leaders exposed."""
        mine = self.epoch_hw.get(epoch, 0)
        if hw < mine:
            raise Violation(
                f"MonotonicHighWatermark: leader {leader} of epoch {epoch} HW went from {mine} to {hw}"
            )
        if hw > mine:
            earlier = max((h for e, h in self.epoch_hw.items() if e < epoch), default=0)
            if hw < earlier:
                raise Violation(
                    f"MonotonicHighWatermark: leader {leader} of epoch {epoch} HW {hw} < earlier leaders' {earlier}"
                )
            self.epoch_hw[epoch] = hw

    def _reached(self, voters: Sequence[VoterSpec], hw: int) -> int:
        reached = 0
        for spec in voters:
            if spec.key in self.wiped_keys:
                reached += 1
                continue
            n = self.cluster.nodes.get(spec.key.id)
            if n is not None and spec.key.matches(n.key) and n.disk.log.flushed_offset() >= hw:
                reached += 1
        return reached


def _describe(rec: CommittedRecords) -> str:
    last, epoch, records, control = rec
    body = (
        ",".join(r.decode() for r in records)
        if records
        else ",".join(type(c).__name__ for c in control)
    )
    return f"..{last}@e{epoch}[{body}]"


def _majority(voters: Sequence[VoterSpec]) -> int:
    return len(voters) // 2 + 1


def _keys(voters: Sequence[VoterSpec]) -> str:
    return ",".join(str(v.key) for v in voters)
