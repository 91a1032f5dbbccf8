"""The simulator's clock and event queue: one heap of ``(time, seq, action, arg)`` on a virtual clock.

Ties at the same virtual millisecond run in scheduling order (``seq``), so a run is a pure function of
its seed. Nothing here reads a wall clock.
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Callable


class EventQueue:
    """Pops events in (time, scheduling order); :attr:`now` is the time of the event being run."""

    __slots__ = ("now", "_heap", "_seq")

    def __init__(self, start_ms: int = 0) -> None:
        self.now = start_ms
        self._heap: list[tuple[int, int, Callable[[Any], None], Any]] = []
        self._seq = 0

    def at(self, time_ms: int, action: Callable[[Any], None], arg: Any = None) -> None:
        """Run ``action(arg)`` at ``time_ms`` (never in the past)."""
        self._seq += 1
        heappush(self._heap, (time_ms if time_ms > self.now else self.now, self._seq, action, arg))

    def after(self, delay_ms: int, action: Callable[[Any], None], arg: Any = None) -> None:
        self.at(self.now + delay_ms, action, arg)

    def pop(self) -> tuple[Callable[[Any], None], Any] | None:
        """The next event, with :attr:`now` advanced to its time; ``None`` when the queue is empty."""
        if not self._heap:
            return None
        time_ms, _, action, arg = heappop(self._heap)
        self.now = time_ms
        return action, arg
