"""Scenario scripts: generators that yield what to wait for, run on the simulator's virtual clock.

A script yields an ``int`` (sleep that many virtual ms) or an :class:`Until` (poll a condition every
``POLL_MS`` until it holds; failing to hold within its timeout is a liveness violation). Between yields
it calls the simulation's fault methods. The runner needs nothing but the clock, so it sits below the
simulation; the scripts themselves (and :func:`.scenarios.converge`) live in :mod:`.scenarios`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .events import EventQueue
from .violation import Violation

POLL_MS = 50


@dataclass
class Until:
    """Wait until ``condition()`` holds; not holding within ``timeout_ms`` is a liveness violation."""

    condition: Callable[[], bool]
    timeout_ms: int
    what: str


class ScriptRunner:
    def __init__(self, queue: EventQueue, script: Iterator[Any]) -> None:
        self.queue = queue
        self.script = script
        self.done = False
        self._waiting: Until | None = None
        self._deadline = 0

    def resume(self, _: Any = None) -> None:
        queue = self.queue
        waiting = self._waiting
        if waiting is not None:
            if not waiting.condition():
                if queue.now < self._deadline:
                    queue.after(POLL_MS, self.resume)
                    return
                raise Violation(f"Liveness: not within {waiting.timeout_ms} ms: {waiting.what}")
            self._waiting = None
        try:
            step = next(self.script)
        except StopIteration:
            self.done = True
            return
        if isinstance(step, Until):
            self._waiting = step
            self._deadline = queue.now + step.timeout_ms
            self.resume()
        else:
            queue.after(int(step), self.resume)
