"""``kraftwire report CAPTURE... --out report.html [--schemas DIR]``: one self-contained HTML page
to explore the Kafka traffic in captures, offline.

Latency per API on a log axis, the problems (error codes, statuses other than ok), the KRaft leaders
and epochs over time, the connections, and a table of exchanges that filters by API, client id,
connection and problem. The charts are inline SVG, the table is drawn by the page's own script;
the page embeds aggregates of every exchange and a bounded sample of the exchanges themselves
(``report_data``), so it stays small for a large capture.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .api import local_decoder
from .cli import path_problem, unreadable_captures
from .decode.pipeline import decode_files
from .output.report_data import ROW_LIMIT, build
from .output.report_page import page
from .output.sightings import merge_sightings
from .packets.capture import shown_name

PREFIX = "kraftwire report"  # every problem line starts with the command's name


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("captures", nargs="+", metavar="CAPTURE")
    parser.add_argument(
        "--out", type=Path, required=True, help="the HTML file to write (must not exist)"
    )
    parser.add_argument("--schemas", default=None, metavar="DIR[,DIR...]")


def run(args: argparse.Namespace) -> int:
    problem = path_problem(args.captures, args.out)
    if problem:
        print(f"{PREFIX}: {problem}", file=sys.stderr)
        return 2
    try:
        rows, stats = decode_files(args.captures, local_decoder(args.schemas))
        rows = merge_sightings(rows)  # an exchange two nodes' captures saw counts once
    except (OSError, ValueError) as exc:
        print(f"{PREFIX}: {exc}", file=sys.stderr)
        return 1
    unreadable = unreadable_captures(stats, PREFIX)
    for path in unreadable:
        print(f"{PREFIX}: {shown_name(path)}: not a pcap or pcapng file", file=sys.stderr)
    if len(unreadable) == len(args.captures):
        return 1  # nothing to report on: write no file
    page = render(rows, [str(c) for c in args.captures])
    try:
        with open(args.out, "x", encoding="utf-8") as out:  # never replace a file made meanwhile
            out.write(page)
    except OSError as exc:
        print(f"{PREFIX}: --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 1 if unreadable else 0


def render(rows: list[dict[str, Any]], captures: list[str], row_limit: int = ROW_LIMIT) -> str:
    """The report page of ``rows`` decoded from ``captures``."""
    return page(build(rows, captures, row_limit))
