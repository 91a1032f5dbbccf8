"""The node's pending application appends. Each append waits twice: to be in the leader's log and on
disk (what Produce acks=1 answers on), then to be committed (acks=-1 and ``KRaftNode.append``).
Appends accepted while the leader's accumulator lingers share one batch and one fsync (group
commit); each keeps the offsets of its own records.

Both queues are kept in offset order while appends arrive in offset order (always, within a leader's
term), so flushing or committing takes what it settles from the front and stops at the first append
beyond it: a leader with tens of thousands of appends in flight does not walk all of them for every
batch it commits. An append below the one before it (a new term appending over a cut log) turns
that off until the queue empties; each pass then walks the whole queue, as it must.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Callable, TypeVar

from kraftwire.node.core.api import (
    AppendResult,
    CommittedBatch,
    LeaderChanged,
    Notification,
    SnapshotLoaded,
)

from .errors import NodeFailed

_Value = TypeVar("_Value")


# (offset of the append's last record, its epoch, its future): one tuple per append, no object of
# its own (a leader has tens of thousands in flight, each settled once).
_Committed = tuple[int, int, asyncio.Future[int]]
_Flushed = tuple[int, int, asyncio.Future[AppendResult]]


class PendingAppends:
    def __init__(self) -> None:
        self._committed: deque[_Committed] = deque()  # appends waiting to be committed
        self._flushed: deque[_Flushed] = deque()  # appends waiting to be on disk
        self._in_order = True  # both queues in offset order (see the module docstring)

    def add(
        self,
        result: AppendResult,
        appended: asyncio.Future[AppendResult],
        committed: asyncio.Future[int],
    ) -> None:
        """One append the leader accepted as ``result``: ``appended`` settles once it is on disk,
        ``committed`` once it is committed (or either fails)."""
        last = result.last_offset
        if self._in_order and (
            (self._committed and last < self._committed[-1][0])
            or (self._flushed and last < self._flushed[-1][0])
        ):
            self._in_order = False
        self._flushed.append((last, result.epoch, appended))
        self._committed.append((last, result.epoch, committed))

    def on_flushed(
        self, flushed_to: int, leading_epoch: int | None, not_leader: Callable[[], Exception]
    ) -> None:
        """The log is on disk below ``flushed_to``; ``leading_epoch`` is the epoch this node leads
        (None when it does not). Records still in a leader's accumulator when it loses leadership
        are never appended."""
        pending = self._flushed
        while pending:
            last, epoch, future = pending[0]
            if leading_epoch != epoch:
                fail(future, not_leader())
            elif last < flushed_to:
                if not future.done():
                    future.set_result(AppendResult(last, epoch))
            elif self._in_order:
                break  # every append behind it is later, in this same term
            else:
                self._flushed = self._settle_flushed_unordered(
                    flushed_to, leading_epoch, not_leader
                )
                return
            pending.popleft()
        self._reorder_if_empty()

    def _settle_flushed_unordered(
        self, flushed_to: int, leading_epoch: int | None, not_leader: Callable[[], Exception]
    ) -> deque[_Flushed]:
        still: deque[_Flushed] = deque()
        for last, epoch, future in self._flushed:
            if leading_epoch != epoch:
                fail(future, not_leader())
            elif last < flushed_to:
                resolve(future, AppendResult(last, epoch))
            else:
                still.append((last, epoch, future))
        return still

    def on_committed(self, batch: CommittedBatch) -> None:
        if not self._in_order:
            keep: deque[_Committed] = deque()
            for waiter in self._committed:
                if waiter[0] > batch.last_offset:
                    keep.append(waiter)
                else:
                    _settle_committed(waiter, batch)
            self._committed = keep
            self._reorder_if_empty()
            return
        pending, batch_last, batch_epoch = self._committed, batch.last_offset, batch.epoch
        while pending and pending[0][0] <= batch_last:
            last, epoch, future = waiter = pending.popleft()
            if epoch != batch_epoch:
                _settle_committed(waiter, batch)
            elif not future.done():  # the batch's own term: committed, at or below its end
                future.set_result(last)
        self._reorder_if_empty()

    def _reorder_if_empty(self) -> None:
        if not self._committed and not self._flushed:
            self._in_order = True

    def fail_below(self, offset: int) -> None:
        """A snapshot up to ``offset`` replaced the log there: appends below it can no longer be seen."""
        below = [w for w in self._committed if w[0] < offset]
        self._committed = deque(w for w in self._committed if w[0] >= offset)
        for last, _, future in below:
            fail(future, NodeFailed(f"offset {last} was replaced by a snapshot"))
        self._reorder_if_empty()

    def fail_all(self, error: Exception) -> None:
        for _, _, future in self._committed:
            fail(future, error)
        for _, _, appended in self._flushed:
            fail(appended, error)
        self._committed.clear()
        self._flushed.clear()
        self._in_order = True


def _settle_committed(waiter: _Committed, batch: CommittedBatch) -> None:
    """``waiter``'s append is at or below ``batch``'s end: committed, unless another term's batch
    now holds its offsets."""
    last, epoch, future = waiter
    if future.done():
        return
    if last >= batch.base_offset and batch.epoch != epoch:
        lost = f"offset {last} was committed by epoch {batch.epoch}, not {epoch}"
        fail(future, NodeFailed(f"{lost}: the append was lost"))
    else:
        future.set_result(last)


def fail(future: asyncio.Future[_Value], error: Exception) -> None:
    """Fail ``future`` and mark the error retrieved: a caller may await only one of an append's two
    futures (Produce acks=1 never awaits the commit), and an unretrieved error would be logged from a
    finalizer at an arbitrary moment."""
    if not future.done():
        future.set_exception(error)
        future.exception()


def resolve(future: asyncio.Future[_Value], value: _Value) -> None:
    if not future.done():
        future.set_result(value)


class CommitWatchers:
    """Callers of ``KRaftNode.wait_for_commit``: woken by the next commit, snapshot load or leader
    change (or when the node stops)."""

    def __init__(self) -> None:
        self._waiting: list[asyncio.Future[None]] = []

    async def wait(self, timeout_s: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        try:
            await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            if future in self._waiting:
                self._waiting.remove(future)

    def on_notification(self, note: Notification) -> None:
        if self._waiting and type(note) in (CommittedBatch, SnapshotLoaded, LeaderChanged):
            self.wake_all()

    def wake_all(self) -> None:
        waiting, self._waiting = self._waiting, []
        for future in waiting:
            resolve(future, None)
