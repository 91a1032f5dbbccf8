"""``kraftwire simulate``: run seeded fault-injection scenarios against the KRaft core.

Prints one summary line per scenario and voter count; for a failed run, the violation, the command that
replays it, and the tail of its event trace. Exits 1 if any run broke an invariant.
"""

from __future__ import annotations

import argparse
import sys

from .runner import sweep
from .scenarios import SCENARIOS

MAX_REPORTED_FAILURES = 3  # per scenario and voter count; the rest are only counted


def configure(parser: argparse.ArgumentParser, name: str = "simulate") -> None:
    parser.add_argument("--scenario", default="all", help=f"one of: all, {', '.join(SCENARIOS)}")
    parser.add_argument(
        "--runs", type=int, default=10, help="runs per scenario and voter count (default 10)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="first seed; run i uses seed S+i (default 0)"
    )
    parser.add_argument(
        "--voters",
        type=int,
        choices=(3, 5),
        action="append",
        help="quorum size (repeatable; default: both 3 and 5)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument(
        "--no-encode",
        dest="encode",
        action="store_false",
        help="hand message objects over instead of round-tripping them through the wire codecs",
    )
    parser.add_argument(
        "--trace", action="store_true", help="print the full event trace of every run"
    )
    parser.add_argument(
        "--trace-lines", type=int, default=200, help="trace lines shown for a failed run"
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")


def run(args: argparse.Namespace) -> int:
    if args.list:
        for sc in SCENARIOS.values():
            print(f"{sc.name:<22} {sc.doc}")
        return 0
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"kraftwire simulate: unknown scenario {unknown[0]!r}; try --list", file=sys.stderr)
        return 2
    voter_counts = args.voters or [3, 5]
    seeds = range(args.seed, args.seed + args.runs)
    failed = 0
    for name in names:
        for voters in voter_counts:
            summary = sweep(
                name,
                voters,
                seeds,
                args.jobs,
                args.encode,
                keep_trace=args.trace,
                trace_limit=None if args.trace else max(args.trace_lines, 1),
            )
            failed += summary.violations
            for r in summary.results:
                print(f"TRACE scenario={r.scenario} voters={r.voters} seed={r.seed}")
                print(r.trace)
            for r in summary.failures[:MAX_REPORTED_FAILURES]:
                print(
                    f"VIOLATION scenario={r.scenario} voters={r.voters} seed={r.seed} at t={r.virtual_ms}ms"
                )
                print("  " + r.violation.replace("\n", "\n  "))
                print(f"  replay: {r.replay_command()}")
                lines = r.trace.splitlines()
                shown = lines if args.trace else lines[-args.trace_lines :]
                print("\n".join("  | " + line for line in shown))
            print(summary.line(), flush=True)
    return 1 if failed else 0
