"""Running scenarios: one seeded run, or many (optionally on several processes), with summaries.

A run's random source is seeded with ``"<scenario>/<voters>/<seed>"`` (string seeds hash with SHA-512,
independent of ``PYTHONHASHSEED``), so ``--scenario X --voters V --seed S --runs 1`` replays run S of a
sweep exactly, trace included.
"""

from __future__ import annotations

import functools
import multiprocessing
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable

from kraftwire.worker_interrupts import leave_interrupts_to_parent, workers_start_without_interrupts

from .scenarios import SCENARIOS, converge
from .simulation import SimOptions, Simulation
from .violation import Violation

FAULT_PHASE_LIMIT_MS = 300_000
COUNTED_OBSERVATIONS = ("refused", "epoch_bumped")
CONVERGE_LIMIT_MS = 120_000


@dataclass
class RunResult:
    scenario: str
    voters: int
    seed: int
    violation: str | None
    core_events: int
    virtual_ms: int
    frames: int
    trace: str = ""  # the (tail of the) trace, kept only for failed runs unless asked for
    observations: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.violation is None

    def replay_command(self) -> str:
        return (
            f"kraftwire simulate --scenario {self.scenario} --voters {self.voters} "
            f"--seed {self.seed} --runs 1 --trace"
        )


def play(sim: Simulation, script: Any, converge_after: bool = True) -> None:
    """Start the cluster, run a scenario script (fault phase), then :func:`converge`; a failure raises
    :class:`Violation`."""
    sim.start()
    sim.run_script(script, FAULT_PHASE_LIMIT_MS)
    if converge_after:
        sim.run_script(converge(sim), CONVERGE_LIMIT_MS)
    if sim.options.reads:
        sim.check_linearizable()


def run_one(
    scenario: str,
    voters: int,
    seed: int,
    encode: bool = True,
    trace_limit: int | None = 400,
    keep_trace: bool = False,
    trace_filter: tuple[str, ...] = (),
) -> RunResult:
    """One seeded run: the scenario's fault phase, then :func:`converge`."""
    sc = SCENARIOS[scenario]
    options = SimOptions(
        voters=voters,
        encode=encode,
        trace_limit=trace_limit,
        trace_filter=trace_filter,
        **sc.options,
    )
    sim = Simulation(f"{scenario}/{voters}/{seed}", options)
    violation = None
    try:
        play(sim, sc.run(sim))
    except Violation as exc:
        violation = str(exc) + _cause(exc)
    except Exception as exc:  # a simulator or codec failure is reported like a violation
        violation = f"simulator error: {type(exc).__name__}: {exc}\n" + "".join(
            traceback.format_exc(limit=-6)
        )
    if violation is not None:
        sim.trace.note(sim.queue.now, "violation", "VIOLATION", violation.splitlines()[0])
    trace = sim.trace.text() if (violation is not None or keep_trace) else ""
    return RunResult(
        scenario,
        voters,
        seed,
        violation,
        sim.core_events,
        sim.queue.now,
        sim.codec.frames,
        trace,
        dict(sim.observations),
    )


def _cause(exc: BaseException) -> str:
    """The tail of the traceback of a core exception wrapped in a Violation (where the core failed)."""
    cause = exc.__cause__
    if cause is None:
        return ""
    return (
        "\n"
        + "".join(
            traceback.format_exception(type(cause), cause, cause.__traceback__, limit=-4)
        ).rstrip()
    )


@dataclass
class Summary:
    scenario: str
    voters: int
    runs: int = 0
    violations: int = 0
    core_events: int = 0
    virtual_ms: int = 0
    wall_s: float = 0.0
    failures: list[RunResult] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)  # every run, when traces are kept
    observations: dict[str, int] = field(default_factory=dict)  # counts of what scenarios noted

    def line(self) -> str:
        return (
            f"{self.scenario:<22} voters={self.voters} runs={self.runs} events={self.core_events} "
            f"violations={self.violations} virtual_time={self.virtual_ms / 1000:.1f}s wall={self.wall_s:.1f}s"
            + "".join(f" {k}={v}" for k, v in sorted(self.observations.items()))
        )


def sweep(
    scenario: str,
    voters: int,
    seeds: Iterable[int],
    jobs: int = 1,
    encode: bool = True,
    keep_trace: bool = False,
    trace_limit: int | None = 400,
    trace_filter: tuple[str, ...] = (),
) -> Summary:
    """Run ``scenario`` once per seed; ``jobs > 1`` spreads runs over processes (results stay in seed order)."""
    summary = Summary(scenario, voters)
    seeds = list(seeds)
    one = functools.partial(
        run_one,
        scenario,
        voters,
        encode=encode,
        trace_limit=trace_limit,
        keep_trace=keep_trace,
        trace_filter=trace_filter,
    )
    start = time.perf_counter()
    if jobs > 1 and len(seeds) > 1:
        with workers_start_without_interrupts():
            pool = multiprocessing.get_context("fork").Pool(jobs, leave_interrupts_to_parent)
        with pool:
            results = pool.imap(one, seeds, chunksize=max(1, len(seeds) // (jobs * 8)))
            _collect(summary, results)
    else:
        _collect(summary, map(one, seeds))
    summary.wall_s = time.perf_counter() - start
    return summary


def _collect(summary: Summary, results: Iterable[RunResult]) -> None:
    for r in results:
        summary.runs += 1
        if r.trace and r.ok:
            summary.results.append(r)
        for key, value in r.observations.items():
            if key in COUNTED_OBSERVATIONS:
                summary.observations[key] = summary.observations.get(key, 0) + (
                    value if isinstance(value, int) else 1
                )
        summary.core_events += r.core_events
        summary.virtual_ms += r.virtual_ms
        if not r.ok:
            summary.violations += 1
            summary.failures.append(r)
