"""Accumulates the core's outputs between two :meth:`KRaftCore.ready` calls.

Invariant: everything collected here is released as one :class:`Ready`, whose durability items
(``quorum_state``, ``flush_log_to``) the driver completes before sending its messages. So a message is
never released ahead of a state write or log append that happened before it was queued.
"""

from __future__ import annotations

from .api import ElectionState, LogBatch, Message, Notification, Ready, SnapshotWrite


class Outbox:
    __slots__ = (
        "dirty",
        "quorum_state",
        "truncated_to",
        "appended_batches",
        "flush_to",
        "snapshot_writes",
        "messages",
        "notifications",
        "shutdown_reported",
        "refused",
    )

    def __init__(self) -> None:
        self.shutdown_reported = False
        self._clear()

    def _clear(self) -> None:
        self.dirty = False  # anything collected since the last take (is_empty runs after every input)
        self.quorum_state: ElectionState | None = None
        self.truncated_to: int | None = None
        self.appended_batches: list[LogBatch] = []
        self.flush_to: int | None = None
        self.snapshot_writes: list[SnapshotWrite] = []
        self.messages: list[Message] = []
        self.notifications: list[Notification] = []
        self.refused: list[str] = []

    def persist(self, state: ElectionState) -> None:
        self.quorum_state = state
        self.dirty = True

    def send(self, msg: Message) -> None:
        self.messages.append(msg)
        self.dirty = True

    def notify(self, n: Notification) -> None:
        self.notifications.append(n)
        self.dirty = True

    def refuse(self, line: str) -> None:
        """A peer's message was refused: one line for the driver's log."""
        self.refused.append(line)
        self.dirty = True

    def appended(self, batch: LogBatch) -> None:
        self.appended_batches.append(batch)
        self.dirty = True

    def truncated(self, offset: int) -> None:
        self.dirty = True
        self.truncated_to = offset if self.truncated_to is None else min(self.truncated_to, offset)
        self.appended_batches = [b for b in self.appended_batches if b.base_offset < offset]
        if self.flush_to is not None:
            self.flush_to = min(self.flush_to, offset)

    def need_flush(self, offset: int) -> None:
        self.flush_to = offset
        self.dirty = True

    def snapshot(self, w: SnapshotWrite) -> None:
        self.snapshot_writes.append(w)
        self.dirty = True

    def is_empty(self) -> bool:
        return not self.dirty

    def take(self, shutdown_done: bool, next_deadline: int | None) -> Ready:
        report_shutdown = shutdown_done and not self.shutdown_reported
        if report_shutdown:
            self.shutdown_reported = True
        rd = Ready(  # positional: one is built per input, in Ready's field order
            self.quorum_state,
            self.truncated_to,
            tuple(self.appended_batches),
            self.flush_to,
            tuple(self.snapshot_writes),
            tuple(self.messages),
            tuple(self.notifications),
            report_shutdown,
            next_deadline,
            tuple(self.refused),
        )
        self._clear()
        return rd
