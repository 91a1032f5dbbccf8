"""Helpers for the simulator tests: run a hand-written script against a seeded simulation."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from kraftwire.node.simulation import SimOptions, Simulation, Violation
from kraftwire.node.simulation.runner import play


def run_script(
    script: Callable[[Simulation], Iterator[Any]],
    seed: str = "t",
    with_converge: bool = True,
    **options: Any,
) -> tuple[Simulation, str | None]:
    """Start a cluster, run ``script`` (then :func:`converge`); returns the simulation and the violation."""
    sim = Simulation(seed, SimOptions(**options))
    try:
        play(sim, script(sim), converge_after=with_converge)
    except Violation as exc:
        return sim, str(exc)
    return sim, None


def sleep(ms: int) -> Callable[[Simulation], Iterator[Any]]:
    def script(sim: Simulation) -> Iterator[Any]:
        yield ms

    return script
