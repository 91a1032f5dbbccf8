"""The waiting linearizable reads of one replica (ReadOffset, issue #13): plain data, no behaviour.

Two kinds wait. On a leader, :class:`ConfirmRound` batches every ReadOffset (remote, or the leader's own
``read_index``) that arrived before the round sent its first ping; the round is confirmed once a majority
of voters has answered a ping sent after every one of its reads arrived, and the leader has committed a
batch of its own epoch (:mod:`.leader_ops` answers it). On any replica, :class:`LocalRead` is one ``read_index`` call of the
application: it waits for a read offset (from its own leadership or a ReadOffset to the leader) and then
for the replica to have delivered every committed batch below that offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_WAITING_READS = 1024
"""Bound on the application's waiting reads; one more is refused at once (``ReadFailed``)."""


@dataclass(slots=True)
class LeaderRead:
    """One read the leader owes an answer: a remote ReadOffset (``read_id`` None) or a local read."""

    source: int
    correlation_id: int
    api_version: int
    noted_hw: int | None  # the high watermark when the read arrived (None: none yet in this epoch)
    read_id: int | None = None


@dataclass(slots=True)
class ConfirmRound:
    """Reads confirmed together: those that arrived before the round's first ping went out, or the
    reads of one voter's own ReadOffset (``closed`` from the start, acknowledged by that voter)."""

    reads: list[LeaderRead] = field(default_factory=list)
    pings: dict[int, int] = field(default_factory=dict)  # voter id -> correlation id of its ping
    acked: set[int] = field(default_factory=set)  # voters that acknowledged the round
    closed: bool = False  # no read joins it any more (it sent a ping, or it is a voter's own)


@dataclass(slots=True)
class LocalRead:
    """An application read: ``offset`` is None until a leader answered; ``asked`` is the correlation id of
    the ReadOffset in flight for it (None: not asked; -1: in a round of our own leadership), sent to the
    leader ``asked_of`` (id, epoch)."""

    read_id: int
    deadline: int
    offset: int | None = None
    asked: int | None = None
    asked_at: int = 0
    asked_of: tuple[int, int] | None = None
    retry_at: int = 0
