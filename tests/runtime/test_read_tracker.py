"""ReadTracker, the node's grouping of linearizable reads, driven step by step: a read that begins while
a group is being confirmed waits for the next group (the in-flight answer may predate it), answers and
failures reach exactly their group, and the applied offset follows the listener's batches."""

from __future__ import annotations

import asyncio

import pytest

from kraftwire.node.core.api import (
    CommittedBatch,
    LeaderAndEpoch,
    ReadFailed,
    ReadReady,
    SnapshotId,
    SnapshotLoaded,
)
from kraftwire.node.runtime.reads import MAX_WAITING_READS, ReadError, ReadTimeoutError, ReadTracker


def tracker() -> tuple[ReadTracker, list[int]]:
    asks: list[int] = []
    return ReadTracker(lambda: LeaderAndEpoch(2, 7), lambda: asks.append(1)), asks


def test_a_read_beginning_during_a_confirmation_waits_for_the_next_one():
    async def run() -> None:
        reads, asks = tracker()
        first = reads.join(1000)
        assert asks == [1]
        group = reads.start_group()
        assert group is not None and 0 < group[1] <= 1000
        late = reads.join(1000)  # begins after the group's read_index was asked for
        assert asks == [1] and reads.start_group() is None  # one group in flight at a time
        reads.on_notification(ReadReady(group[0], 10))
        assert first.result() == 10 and not late.done()
        assert asks == [1, 1]  # the next group is asked for at once
        second = reads.start_group()
        assert second is not None and second[0] != group[0]
        reads.on_notification(ReadReady(group[0], 99))  # a stale id is ignored
        assert not late.done()
        reads.on_notification(ReadReady(second[0], 12))
        assert late.result() == 12

    asyncio.run(run())


def test_a_group_shares_one_confirmation_and_failures_are_typed():
    async def run() -> None:
        reads, _ = tracker()
        waiting = [reads.join(500), reads.join(800)]
        read_id, timeout_ms = reads.start_group()
        assert 500 < timeout_ms <= 800  # the group waits as long as its most patient read
        reads.on_notification(ReadFailed(read_id, 7))
        for future, timeout in zip(waiting, (500, 800)):
            error = future.exception()
            assert isinstance(error, ReadTimeoutError) and error.error_code == 7
            assert f"within {timeout} ms" in str(error) and error.leader == LeaderAndEpoch(2, 7)
        crowded = reads.join(100)
        read_id, _ = reads.start_group()
        reads.on_notification(ReadFailed(read_id, 8))
        assert type(crowded.exception()) is ReadError and "too many" in str(crowded.exception())

    asyncio.run(run())


def test_cancelled_reads_leave_the_group_and_stopping_fails_the_rest():
    async def run() -> None:
        reads, _ = tracker()
        gone = reads.join(100)
        gone.cancel()
        assert reads.start_group() is None  # nobody is left to ask for
        flying = reads.join(100)
        reads.start_group()
        queued = reads.join(100)
        reads.fail_all(RuntimeError("stopped"))
        assert str(flying.exception()) == str(queued.exception()) == "stopped"

    asyncio.run(run())


def test_applied_offset_follows_batches_and_snapshots():
    reads, _ = tracker()
    assert reads.applied == 0
    reads.on_notification(CommittedBatch(0, 4, 1, (b"a",)))
    assert reads.applied == 5
    reads.on_notification(SnapshotLoaded(SnapshotId(20, 3), ()))
    assert reads.applied == 20


def test_waiting_reads_are_bounded_in_number():
    async def run() -> None:
        reads, _ = tracker()
        waiting = [reads.join(100) for _ in range(MAX_WAITING_READS)]
        reads.start_group()
        refused = reads.join(100)
        assert refused.done() and refused.exception().error_code == 8
        assert not any(w.done() for w in waiting)

    asyncio.run(run())
