"""KRaftCore.accept_append: records go into the leader's accumulator without a step, even between
ready() and advance() (a driver takes appends while a Ready's fsync runs); nothing is drained,
written or sent until the next input, which next_deadline_ms() schedules at the linger's end, or at
once when the batch is full."""

from __future__ import annotations

import pytest

from wired_cores import core as built_core
from kraftwire.node.core import KRaftCore, MemoryLog, Tick
from kraftwire.node.core.api import CommittedBatch, NotLeaderError

LINGER_MS = 25
NOW = 1000  # the leader's clock once it leads; its next timer is ~1 s later


def _leader(max_batch_size_bytes: int = 8 << 20) -> tuple[KRaftCore, MemoryLog]:
    """A single-voter core, leading, its start-of-epoch records committed."""
    log = MemoryLog()
    leader = built_core(
        1,
        [1],
        leader=None,
        seed=1,
        log=log,
        append_linger_ms=LINGER_MS,
        max_batch_size_bytes=max_batch_size_bytes,
    )
    leader.step(Tick(NOW))
    _handle_all(leader, log)
    assert leader.status().high_watermark == log.end_offset()
    return leader, log


def _handle_all(core: KRaftCore, log: MemoryLog) -> list[CommittedBatch]:
    committed = []
    while core.has_ready():
        ready = core.ready()
        if ready.flush_log_to is not None:
            log.flush(ready.flush_log_to)
        committed += [n for n in ready.notifications if isinstance(n, CommittedBatch)]
        core.advance(ready)
    return committed


def test_records_accepted_during_a_ready_wait_for_the_linger_then_commit_as_one_batch() -> None:
    core, log = _leader()
    end, now = log.end_offset(), NOW + 10
    assert core.next_deadline_ms() > now + LINGER_MS  # nothing lingers: only the leader's timers
    core.append([b"first"], now)
    ready = core.ready()  # the first append's Ready is being handled (its fsync, say) ...
    later = [core.accept_append([b"r%d" % i], now + 1) for i in range(3)]  # ... meanwhile
    assert later == [end + 1, end + 2, end + 3]  # the offsets they will have
    assert log.end_offset() == end and not core.has_ready()  # nothing written, nothing to handle
    core.advance(ready)
    assert core.next_deadline_ms() == now + LINGER_MS  # the first append's linger
    core.step(Tick(now + LINGER_MS - 1))
    assert log.end_offset() == end  # still lingering
    core.step(Tick(now + LINGER_MS))
    (batch,) = _handle_all(core, log)
    assert (batch.base_offset, batch.last_offset) == (end, end + 3)
    assert batch.records == (b"first", b"r0", b"r1", b"r2")


def test_an_accepted_record_starts_a_linger_the_deadline_counts() -> None:
    core, log = _leader()
    now = NOW + 10
    before = core.next_deadline_ms()  # cached
    core.accept_append([b"one"], now)
    assert core.next_deadline_ms() == now + LINGER_MS < before
    assert core.appends_lingering()


def test_a_full_batch_is_due_at_once() -> None:
    core, log = _leader(max_batch_size_bytes=100)
    now = NOW + 10
    core.accept_append([b"x" * 60], now)
    assert core.next_deadline_ms() == now + LINGER_MS
    core.accept_append([b"y" * 60], now + 1)
    assert core.next_deadline_ms() <= now + 1  # the batch cap is reached: drain at once
    core.step(Tick(now + 1))
    (batch,) = _handle_all(core, log)
    assert batch.records == (b"x" * 60, b"y" * 60)


def test_it_refuses_as_append_does() -> None:
    core, _ = _leader()
    epoch = core.status().epoch
    with pytest.raises(NotLeaderError):
        core.accept_append([b"r"], 1000, epoch + 1)
    with pytest.raises(ValueError, match="at least one record"):
        core.accept_append([], 1000)
    assert core.accept_append([b"r"], 1000, epoch) == core.status().log_end_offset
