"""Core events/s in the deterministic simulator (target: >= 100,000 on one core).

    .venv/bin/python bench/core.py [--repeat 3] [--cases steady:3:0,chaos:5:1,...]

An *event* is one input the simulator feeds a :class:`KRaftCore`: a received request or response, a
request failure, a tick, an application append, a snapshot request, or an ``advance`` after a Ready.
Each case is one seeded simulator run (faults, invariant checks after every event, liveness watchdog);
it is timed with the wire codecs on (every message encoded and decoded, the default) and off. The best
of ``--repeat`` rounds is kept, which suits a shared, noisy machine. A last pass times the calls into the
core itself, to split the cost between the core and the simulator around it.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from kraftwire.node.core import KRaftCore
from kraftwire.node.simulation import run_one

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


def timed(case: tuple[str, int, int], encode: bool, rounds: int) -> tuple[int, float]:
    best = float("inf")
    events = 0
    for _ in range(rounds):
        start = time.perf_counter()
        result = run_one(*case, encode=encode, trace_limit=100)
        elapsed = time.perf_counter() - start
        if not result.ok:
            raise SystemExit(f"{case}: {result.violation}")
        events = result.core_events
        best = min(best, elapsed)
    return events, best


def core_share(cases: list[tuple[str, int, int]]) -> tuple[float, dict[str, int]]:
    """Fraction of wall time spent inside KRaftCore methods (encode on), and the events by kind."""
    spent = defaultdict(float)
    kinds: dict[str, int] = defaultdict(int)
    originals = {name: getattr(KRaftCore, name) for name in CORE_METHODS}
    depth = [0]

    def wrap(name: str, fn):
        def timed_call(self, *args, **kwargs):
            if depth[0]:
                return fn(self, *args, **kwargs)  # nested core calls count once
            depth[0] += 1
            start = time.perf_counter()
            try:
                return fn(self, *args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start
                depth[0] -= 1
                if name == "step":
                    kind = type(args[0]).__name__
                    if kind == "Tick" and not self.has_ready():
                        kind = "Tick (no output)"
                    kinds[kind] += 1
                elif name in ("advance", "append", "create_snapshot"):
                    kinds[name] += 1

        return timed_call

    for name, fn in originals.items():
        setattr(KRaftCore, name, wrap(name, fn))
    try:
        start = time.perf_counter()
        for case in cases:
            run_one(*case, trace_limit=100)
        total = time.perf_counter() - start
    finally:
        for name, fn in originals.items():
            setattr(KRaftCore, name, fn)
    return sum(spent.values()) / total, dict(kinds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", default=DEFAULT_CASES, help="scenario:voters:seed,...")
    args = parser.parse_args()
    cases = [(n, int(v), int(s)) for n, v, s in (c.split(":") for c in args.cases.split(","))]
    totals = {True: [0, 0.0], False: [0, 0.0]}
    print(f"{'case':<24} {'events':>8} {'codecs on':>12} {'codecs off':>12}")
    for case in cases:
        row = []
        for encode in (True, False):
            events, seconds = timed(case, encode, args.repeat)
            totals[encode][0] += events
            totals[encode][1] += seconds
            row.append(f"{events / seconds:>10,.0f}/s")
        print(f"{':'.join(map(str, case)):<24} {events:>8} {row[0]:>12} {row[1]:>12}")
    on = totals[True][0] / totals[True][1]
    off = totals[False][0] / totals[False][1]
    share, kinds = core_share(cases)
    print(
        f"core events/s in the simulator: {on:,.0f} with the wire codecs, {off:,.0f} without (target >= 100,000)"
    )
    print(
        f"time inside KRaftCore calls: {share:.0%} (codecs on); core-only ceiling ~{on / share:,.0f} events/s"
    )
    total = sum(kinds.values())
    print(
        "events by kind: "
        + ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
    )


if __name__ == "__main__":
    main()
