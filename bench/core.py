"""KRaft core events/s on one CPU core, driven by the deterministic simulator (target: >= 100,000).

    .venv/bin/python bench/core.py [--repeat 3] [--cases steady:3:0,chaos:5:4,...] [--quick]

An *event* is one input a :class:`KRaftCore` handles: a received request or response, a request
failure, a tick, an application append, a snapshot request, or an ``advance`` after a Ready.
Each case is one seeded simulator run (faults, invariant checks after every event, liveness watchdog).

Three figures, best of ``--repeat`` rounds each (the machine is shared and noisy):

* **core**: events / time spent inside ``KRaftCore`` calls, with the wire codecs on. This is the
  core's own throughput on the simulator's event mix, the figure the target is about.
* **simulator, codecs on**: events / wall time of whole runs, every message encoded and decoded
  through the generated codecs, invariants checked after every event (what a sweep costs).
* **simulator, codecs off**: the same with message objects handed over as they are.

Exit status 0 either way; the verdict line says whether the target was met.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from kraftwire.node.core import KRaftCore
from kraftwire.node.simulation import run_one

TARGET = 100_000
DEFAULT_CASES = "steady:3:0,steady:5:0,message_loss:3:1,leader_isolation:5:2,restarts:3:3,chaos:5:4"
CORE_METHODS = (
    "step",
    "ready",
    "advance",
    "has_ready",
    "next_deadline_ms",
    "append",
    "create_snapshot",
)


def run(case: tuple[str, int, int], encode: bool = True) -> int:
    result = run_one(*case, encode=encode, trace_limit=100)
    if not result.ok:
        raise SystemExit(f"{case}: {result.violation}")
    return result.core_events


def timed(case: tuple[str, int, int], encode: bool, rounds: int) -> tuple[int, float]:
    """(events, best wall seconds) of whole simulator runs."""
    best, events = float("inf"), 0
    for _ in range(rounds):
        start = time.perf_counter()
        events = run(case, encode)
        best = min(best, time.perf_counter() - start)
    return events, best


class CoreClock:
    """Patches the public KRaftCore methods to add up the time spent inside them (outermost calls only)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.kinds: dict[str, int] = defaultdict(int)
        self._originals = {name: getattr(KRaftCore, name) for name in CORE_METHODS}

    def __enter__(self) -> "CoreClock":
        depth = [0]
        clock = time.perf_counter

        def wrap(fn):
            def timed_call(*args, **kwargs):
                if depth[0]:
                    return fn(*args, **kwargs)  # nested core calls count once
                depth[0] = 1
                start = clock()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.seconds += clock() - start
                    depth[0] = 0

            return timed_call

        for name, fn in self._originals.items():
            setattr(KRaftCore, name, wrap(fn))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, fn in self._originals.items():
            setattr(KRaftCore, name, fn)


def core_rate(cases: list[tuple[str, int, int]], rounds: int) -> tuple[float, float]:
    """(events per second inside the core, share of wall time spent there), best round."""
    best_rate, share = 0.0, 0.0
    for _ in range(rounds):
        with CoreClock() as clock:
            start = time.perf_counter()
            events = sum(run(case) for case in cases)
            wall = time.perf_counter() - start
        rate = events / clock.seconds
        if rate > best_rate:
            best_rate, share = rate, clock.seconds / wall
    return best_rate, share


def event_mix(cases: list[tuple[str, int, int]]) -> dict[str, int]:
    kinds: dict[str, int] = defaultdict(int)
    step, advance = KRaftCore.step, KRaftCore.advance

    def counting_step(self, event):
        result = step(self, event)
        kind = type(event).__name__
        kinds[kind if kind != "Tick" or self.has_ready() else "Tick (no output)"] += 1
        return result

    def counting_advance(self, ready):
        kinds["advance"] += 1
        return advance(self, ready)

    KRaftCore.step, KRaftCore.advance = counting_step, counting_advance
    try:
        for case in cases:
            run(case)
    finally:
        KRaftCore.step, KRaftCore.advance = step, advance
    return dict(kinds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", default=DEFAULT_CASES, help="scenario:voters:seed,...")
    parser.add_argument("--quick", action="store_true", help="one round of one short case (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.cases, args.repeat = "steady:3:0", 1
    cases = [(n, int(v), int(s)) for n, v, s in (c.split(":") for c in args.cases.split(","))]

    totals = {True: [0, 0.0], False: [0, 0.0]}
    print(f"{'case':<24} {'events':>8} {'sim, codecs on':>16} {'sim, codecs off':>16}")
    for case in cases:
        row = []
        for encode in (True, False):
            events, seconds = timed(case, encode, args.repeat)
            totals[encode][0] += events
            totals[encode][1] += seconds
            row.append(f"{events / seconds:>14,.0f}/s")
        print(f"{':'.join(map(str, case)):<24} {events:>8} {row[0]:>16} {row[1]:>16}")
    on = totals[True][0] / totals[True][1]
    off = totals[False][0] / totals[False][1]
    core, share = core_rate(cases, args.repeat)
    mix = event_mix(cases)
    total = sum(mix.values())

    print()
    print(f"core:                    {core:>9,.0f} events/s (time inside KRaftCore calls, codecs on)")
    print(f"simulator, codecs on:    {on:>9,.0f} events/s (whole runs; the core is {share:.0%} of the time)")
    print(f"simulator, codecs off:   {off:>9,.0f} events/s")
    print(
        "event mix: "
        + ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1]))
    )
    verdict = "MET" if core >= TARGET else "NOT MET"
    print(f"target: core >= {TARGET:,} events/s on one core: {verdict} ({core / TARGET:.2f}x)")


if __name__ == "__main__":
    main()
