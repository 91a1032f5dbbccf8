"""Scenario scripts: generators that yield what to wait for, run on the simulator's virtual clock.

A script yields an ``int`` (sleep that many virtual ms) or an :class:`Until` (poll a condition every
``POLL_MS`` until it holds; failing to hold within its timeout is a liveness violation). Between yields
it calls the simulation's fault methods. :func:`converge` is the common epilogue of every scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .invariants import Violation

if TYPE_CHECKING:
    from .simulation import Simulation

POLL_MS = 50


@dataclass
class Until:
    """Wait until ``condition()`` holds; not holding within ``timeout_ms`` is a liveness violation."""

    condition: Callable[[], bool]
    timeout_ms: int
    what: str


class ScriptRunner:
    def __init__(self, sim: "Simulation", script: Iterator[Any]) -> None:
        self.sim = sim
        self.script = script
        self.done = False
        self._waiting: Until | None = None
        self._deadline = 0

    def resume(self, _: Any = None) -> None:
        sim = self.sim
        waiting = self._waiting
        if waiting is not None:
            if not waiting.condition():
                if sim.queue.now < self._deadline:
                    sim.queue.after(POLL_MS, self.resume)
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
            self._deadline = sim.queue.now + step.timeout_ms
            self.resume()
        else:
            sim.queue.after(int(step), self.resume)


def leader_elected(sim: "Simulation", timeout_ms: int = 30_000) -> Until:
    """Wait for a leader whose application has been told it leads (it is appending)."""

    def ready() -> bool:
        lid = sim.leader()
        return lid is not None and sim.nodes[lid].counter.writable

    return Until(ready, timeout_ms, "a leader is elected and accepts appends")


def converge(sim: "Simulation", timeout_ms: int = 60_000) -> Iterator[Any]:
    """Heal everything, restart every process, then require: a leader, a freshly appended record
    committed, and every node's application caught up to the leader's high watermark."""
    for node in sim.nodes.values():
        node.kill_on_next_fsync = False
    yield Until(
        lambda: not any(n.running and n.stopping for n in sim.nodes.values()),
        15_000,
        "shutdowns complete",
    )
    sim.set_faults(loss=0.0, duplicate=0.0, reorder=0.0)
    sim.heal()
    sim.restart_all()
    healed_at = sim.queue.now
    yield leader_elected(sim, timeout_ms)
    yield Until(
        lambda: sim.checker.data_committed_at > healed_at,
        timeout_ms,
        "a new append commits after healing",
    )
    target = sim.checker.committed_end

    def caught_up() -> bool:
        return all(n.counter.next_offset >= target for n in sim.running)

    yield Until(caught_up, timeout_ms, f"every node's application reaches offset {target}")
