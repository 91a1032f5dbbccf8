"""PendingAppends settles appends from the front of its queues while they are in offset order: a
leader with many appends in flight must not walk all of them for every batch it commits or flushes
(at 40,000 records/s in flight that was quadratic and the leader's throughput collapsed), and the
answers must be the same as a full walk's, in order or not."""

from __future__ import annotations

import asyncio
import time

from kraftwire.node.core.api import AppendResult, CommittedBatch
from kraftwire.node.runtime.appends import PendingAppends


def _group(loop: asyncio.AbstractEventLoop, count: int) -> list:
    return [(1, loop.create_future(), loop.create_future()) for _ in range(count)]


def _add_group(pending: PendingAppends, group: list, result: AppendResult) -> None:
    """Add one single-record append for each of ``group``, in order, the last at ``result``'s offset."""
    first = result.last_offset - len(group) + 1
    for offset, (_, appended, committed) in enumerate(group, first):
        pending.add(AppendResult(offset, result.epoch), appended, committed)


def test_commits_and_flushes_one_by_one_do_not_walk_every_append_in_flight():
    async def run() -> float:
        loop = asyncio.get_running_loop()
        pending, in_flight = PendingAppends(), 20_000
        group = _group(loop, in_flight)
        _add_group(pending, group, AppendResult(in_flight - 1, 3))
        began = time.perf_counter()
        for offset in range(1000):
            pending.on_flushed(offset + 1, 3, lambda: RuntimeError("not leader"))
            pending.on_committed(CommittedBatch(offset, offset, 3, (b"r",)))
        spent = time.perf_counter() - began
        assert all(group[i][2].result() == i for i in range(1000))
        assert all(group[i][1].result() == AppendResult(i, 3) for i in range(1000))
        assert not any(g[2].done() or g[1].done() for g in group[1000:])
        return spent

    spent = asyncio.run(run())
    assert spent < 2.0, f"1,000 commits over 20,000 appends in flight took {spent:.1f} s"


def test_a_new_term_appending_below_the_old_one_is_settled_as_a_full_walk_would():
    async def run() -> None:
        loop = asyncio.get_running_loop()
        pending = PendingAppends()
        old = _group(loop, 3)  # offsets 10..12 in epoch 3, never committed
        _add_group(pending, old, AppendResult(12, 3))
        new = _group(loop, 2)  # epoch 4 appends over a cut log at 8..9
        _add_group(pending, new, AppendResult(9, 4))
        pending.on_flushed(10, 4, lambda: RuntimeError("not leader"))
        assert all(isinstance(g[1].exception(), RuntimeError) for g in old)
        assert [g[1].result() for g in new] == [AppendResult(8, 4), AppendResult(9, 4)]
        pending.on_committed(CommittedBatch(8, 11, 4, (b"r",) * 4))
        assert [g[2].result() for g in new] == [8, 9]
        assert all("was lost" in str(g[2].exception()) for g in old[:2])
        assert not old[2][2].done()  # offset 12: not committed yet
        pending.on_committed(CommittedBatch(12, 12, 4, (b"r",)))
        assert "was lost" in str(old[2][2].exception())
        later = _group(loop, 1)  # the queues emptied: in order again
        _add_group(pending, later, AppendResult(13, 4))
        pending.on_committed(CommittedBatch(13, 13, 4, (b"r",)))
        assert later[0][2].result() == 13

    asyncio.run(run())
