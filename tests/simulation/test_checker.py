"""Unit tests of the invariant checker and the counter, on hand-made states."""

from __future__ import annotations

import pytest

from kraftwire.node.core import ElectionState, SnapshotId
from kraftwire.node.core.api import CommittedBatch, LeaderAndEpoch, SnapshotLoaded
from kraftwire.node.simulation import SimOptions, Simulation, Violation
from kraftwire.node.simulation.counter import ReplicatedCounter


def _sim() -> Simulation:
    return Simulation("unit", SimOptions(voters=3))


def test_single_leader_from_persisted_states() -> None:
    checker = _sim().checker
    checker.on_persist(1, ElectionState(4, leader_id=2))
    checker.on_persist(3, ElectionState(4, leader_id=2))
    with pytest.raises(Violation, match="SingleLeader"):
        checker.on_persist(2, ElectionState(4, leader_id=3))


def test_persisted_epoch_never_goes_back() -> None:
    checker = _sim().checker
    checker.on_persist(1, ElectionState(5))
    with pytest.raises(Violation, match="MonotonicEpoch"):
        checker.on_persist(1, ElectionState(4))


def test_committed_data_must_agree() -> None:
    checker = _sim().checker
    checker.on_commit(1, CommittedBatch(10, 11, 3, (b"6", b"7")), 7)
    checker.on_commit(2, CommittedBatch(10, 11, 3, (b"6", b"7")), 7)
    with pytest.raises(Violation, match="ConsistentCommittedData"):
        checker.on_commit(3, CommittedBatch(10, 11, 4, (b"6", b"7")), 7)


def test_counter_increases_by_one_and_in_order() -> None:
    counter = ReplicatedCounter(1, _sim().checker, snapshot_every=0)
    counter.handle_commit(CommittedBatch(0, 1, 1, (b"1", b"2")))
    with pytest.raises(Violation, match="counter jumped"):
        counter.handle_commit(CommittedBatch(2, 2, 1, (b"4",)))
    with pytest.raises(Violation, match="expected offset 2"):
        counter.handle_commit(CommittedBatch(5, 5, 1, (b"3",)))


def test_counter_asks_for_snapshots_every_n_records() -> None:
    counter = ReplicatedCounter(1, _sim().checker, snapshot_every=3)
    counter.handle_commit(CommittedBatch(0, 1, 1, (b"1", b"2")))
    assert counter.pending_snapshot is None
    counter.handle_commit(CommittedBatch(2, 3, 1, (b"3", b"4")))
    assert counter.pending_snapshot == (4, (b"4",))


def test_leader_never_loads_a_snapshot() -> None:
    counter = ReplicatedCounter(1, _sim().checker, snapshot_every=0)
    counter.handle_leader_change(LeaderAndEpoch(1, 2))
    with pytest.raises(Violation, match="LeaderNeverLoadSnapshot"):
        counter.handle_load_snapshot(SnapshotLoaded(SnapshotId(10, 2), (b"10",)))
    # a core that leads before its application was told so must not be handed one either
    follower_app = ReplicatedCounter(2, _sim().checker, snapshot_every=0)
    with pytest.raises(Violation, match="LeaderNeverLoadSnapshot"):
        follower_app.handle_load_snapshot(SnapshotLoaded(SnapshotId(10, 2), (b"10",)), core_is_leader=True)


def test_snapshot_value_must_match_committed_value() -> None:
    sim = _sim()
    ReplicatedCounter(1, sim.checker, 0).handle_commit(CommittedBatch(0, 2, 1, (b"1", b"2", b"3")))
    with pytest.raises(Violation, match="ConsistentCommittedData"):
        ReplicatedCounter(2, sim.checker, 0).handle_load_snapshot(
            SnapshotLoaded(SnapshotId(3, 1), (b"4",))
        )


def test_log_start_needs_a_snapshot() -> None:
    sim = _sim()
    sim.start()
    node = sim.nodes[1]
    node.disk.log.delete_before(0)  # nothing yet: fine
    sim.checker.on_snapshots_changed(node)
    node.disk.log._start = 5  # the bug: the log start moved without a snapshot there
    with pytest.raises(Violation, match="SnapshotAtLogStart"):
        sim.checker.on_snapshots_changed(node)
