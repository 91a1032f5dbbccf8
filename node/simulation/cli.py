"""``kraftwire simulate``: run seeded fault-injection scenarios against the KRaft core.

Prints one summary line per scenario and voter count; for a failed run, the violation, the command that
replays it, and the tail of its event trace. Any trace is preceded once by a legend (time unit, party
names, kinds of line, summary counters). Exits 1 if any run broke an invariant, 2 on a usage error
(printed as one line).
"""

from __future__ import annotations

import argparse
import sys

from .runner import Summary, sweep
from .scenarios import SCENARIOS
from .trace import KINDS, LEGEND, TraceFilter

MAX_REPORTED_FAILURES = 3  # per scenario and voter count; the rest are only counted

FILTER_HELP = (
    "keep only trace lines matching TERM: node=N (3, n3, n-2 or admin: messages from or to it, its "
    "events, faults and admin results that name it as nN), api=NAME (Fetch, Vote, FetchSnapshot, ...) or kind=KIND ("
    + ", ".join(KINDS)
    + "). Repeatable: terms on the same key are alternatives, terms on different keys must all hold, "
    "e.g. --trace-filter node=2 --trace-filter kind=state --trace-filter kind=persist. A violation "
    "is always shown. Applies to --trace and to the trace tail of a failed run."
)


def configure(parser: argparse.ArgumentParser, name: str = "simulate") -> None:
    parser.add_argument("--scenario", default="all", help=f"one of: all, {', '.join(SCENARIOS)}")
    parser.add_argument(
        "--runs",
        type=int,
        default=10,
        help="runs per scenario and voter count, at least 1 (default 10)",
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
    parser.add_argument(
        "--trace-filter", action="append", default=[], metavar="TERM", help=FILTER_HELP
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")


def usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments (one line), or ``None``."""
    for option, value in (
        ("--runs", args.runs),
        ("--jobs", args.jobs),
        ("--trace-lines", args.trace_lines),
    ):
        if value < 1:
            return f"{option} must be at least 1, not {value}"
    if args.scenario != "all" and args.scenario not in SCENARIOS:
        return f"unknown scenario {args.scenario!r}; try --list"
    try:
        TraceFilter(args.trace_filter)
    except ValueError as exc:
        return f"--trace-filter {exc}"
    return None


def run(args: argparse.Namespace) -> int:
    if args.list:
        for sc in SCENARIOS.values():
            print(f"{sc.name:<22} {sc.doc}")
        return 0
    problem = usage_error(args)
    if problem is not None:
        print(f"kraftwire simulate: {problem}", file=sys.stderr)
        return 2
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    seeds = range(args.seed, args.seed + args.runs)
    failed = 0
    legend_shown = False
    for name in names:
        for voters in args.voters or [3, 5]:
            summary = sweep(
                name,
                voters,
                seeds,
                args.jobs,
                args.encode,
                keep_trace=args.trace,
                trace_limit=None if args.trace else args.trace_lines,
                trace_filter=tuple(args.trace_filter),
            )
            failed += summary.violations
            if not legend_shown and (summary.results or summary.failures):
                print(LEGEND)
                legend_shown = True
            report(summary, args)
    return 1 if failed else 0


def report(summary: Summary, args: argparse.Namespace) -> None:
    """The traces asked for, the first failures with their replay commands, then the summary line."""
    for r in summary.results:
        print(f"TRACE scenario={r.scenario} voters={r.voters} seed={r.seed}")
        print(r.trace)
    for r in summary.failures[:MAX_REPORTED_FAILURES]:
        print(
            f"VIOLATION scenario={r.scenario} voters={r.voters} seed={r.seed} at t={r.virtual_ms}ms"
        )
        print("  " + (r.violation or "").replace("\n", "\n  "))
        print(f"  replay: {r.replay_command()}")
        lines = r.trace.splitlines()
        shown = lines if args.trace else lines[-args.trace_lines :]
        print("\n".join("  | " + line for line in shown))
    print(summary.line(), flush=True)
