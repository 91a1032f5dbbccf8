"""``kraftwire report CAPTURE... --out report.html [--schemas DIR]``: an HTML page of plots.

API mix, latency percentiles per API, error codes, and the KRaft timelines (elections: Vote,
BeginQuorumEpoch, EndQuorumEpoch; replication: Fetch and FetchSnapshot latency over time), drawn with
matplotlib into PNGs embedded in one self-contained file.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import sys
from collections import Counter, defaultdict
from pathlib import Path

from .capture import shown_name
from .kafka_errors import error_label

ELECTION_APIS = ("Vote", "BeginQuorumEpoch", "EndQuorumEpoch")
REPLICATION_APIS = ("Fetch", "FetchSnapshot")
PREFIX = "kraftwire report"  # every problem line starts with the command's name


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("captures", nargs="+", metavar="CAPTURE")
    parser.add_argument(
        "--out", type=Path, required=True, help="the HTML file to write (must not exist)"
    )
    parser.add_argument("--schemas", default=None, metavar="DIR[,DIR...]")


def run(args: argparse.Namespace) -> int:
    from .api import local_decoder
    from .cli import path_problem, unreadable_captures
    from .pipeline import decode_files

    problem = path_problem(args.captures, args.out)
    if problem:
        print(f"{PREFIX}: {problem}", file=sys.stderr)
        return 2
    try:
        rows, stats = decode_files(args.captures, local_decoder(args.schemas))
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


def _name(row: dict) -> str:
    return row["api_name"] or (f"key {row['api_key']}" if row["api_key"] is not None else "unknown")


def _png(figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def plots(rows: list[dict]) -> list[tuple[str, str]]:
    """``(title, base64 PNG)`` of each plot that has data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    mix = Counter(_name(r) for r in rows)
    if mix:
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(mix) + 1))
        names = [n for n, _ in mix.most_common()][::-1]
        bars = ax.barh(names, [mix[n] for n in names], color="#4C78A8")
        ax.bar_label(bars, labels=[f"{mix[n]:,}" for n in names], padding=3)
        if max(mix.values()) >= 100 * min(mix.values()):
            ax.set_xscale("log")  # one API (often Fetch) dwarfs the rest: keep them visible
        ax.set_xlabel("exchanges")
        ax.margins(x=0.12)  # room for the count labels
        out.append(("API mix", _png(fig)))
    latencies = defaultdict(list)
    for r in rows:
        if r["latency_us"] is not None:
            latencies[_name(r)].append(r["latency_us"] / 1000)
    if latencies:
        fig, ax = plt.subplots(figsize=(8, 0.5 * len(latencies) + 1.5))
        names = sorted(latencies)
        for offset, (share, color) in enumerate(
            ((0.5, "#54A24B"), (0.9, "#EECA3B"), (0.99, "#E45756"))
        ):
            ax.barh(
                [i + offset * 0.27 for i in range(len(names))],
                [_percentile(latencies[n], share) for n in names],
                height=0.27,
                color=color,
                label=f"p{int(share * 100)}",
            )
        ax.set_yticks([i + 0.27 for i in range(len(names))], names)
        ax.set_xlabel("latency (ms)")
        ax.legend()
        out.append(("Latency percentiles per API", _png(fig)))
    errors = Counter((_name(r), code) for r in rows for code in (r["error_codes"] or []) if code)
    if errors:
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(errors) + 1))
        ranked = errors.most_common()[::-1]
        labels = [f"{api}: {error_label(code)}" for (api, code), _ in ranked]
        bars = ax.barh(labels, [n for _, n in ranked], color="#E45756")
        ax.bar_label(bars, labels=[f"{n:,}" for _, n in ranked], padding=3)
        if ranked[-1][1] >= 100 * ranked[0][1]:
            ax.set_xscale("log")
        ax.set_xlabel("occurrences (nested error codes included)")
        ax.margins(x=0.12)
        out.append(("Error codes", _png(fig)))
    out.extend(_timeline(rows, ELECTION_APIS, "KRaft elections over time", plt))
    out.extend(_timeline(rows, REPLICATION_APIS, "KRaft fetch latency over time", plt))
    return out


def _timeline(rows: list[dict], apis: tuple[str, ...], title: str, plt) -> list[tuple[str, str]]:
    chosen = [r for r in rows if r["api_name"] in apis and r["request_ts"] is not None]
    if not chosen:
        return []
    fig, ax = plt.subplots(figsize=(10, 3.5))
    for api in apis:
        points = [r for r in chosen if r["api_name"] == api]
        if points:
            ax.scatter(
                [r["request_ts"] for r in points],
                [(r["latency_us"] or 0) / 1000 for r in points],
                s=12,
                label=api,
            )
    ax.set_ylabel("latency (ms; 0 = unanswered)")
    # Always wall-clock time of day: left alone, matplotlib labels a short capture "08:04.000000".
    from matplotlib.dates import DateFormatter

    first = min(r["request_ts"] for r in chosen)
    ax.xaxis.set_major_formatter(DateFormatter("%H:%M:%S", tz=first.tzinfo))
    ax.set_xlabel(f"request time, UTC, {first:%Y-%m-%d}")
    ax.legend()
    fig.autofmt_xdate()
    return [(title, _png(fig))]


def render(rows: list[dict], captures: list[str]) -> str:
    statuses = Counter(r["status"] for r in rows)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>kraftwire report</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1000px}img{max-width:100%}</style>",
        "</head><body><h1>Kafka traffic report</h1>",
        f"<p>{len(rows):,} exchanges in {html.escape(', '.join(captures))}</p>",
        "<p>" + ", ".join(f"{html.escape(s)}: {n:,}" for s, n in statuses.most_common()) + "</p>",
    ]
    for title, png in plots(rows):
        parts.append(
            f"<section><h2>{html.escape(title)}</h2>"
            f"<img class='plot' alt='{html.escape(title)}' src='data:image/png;base64,{png}'></section>"
        )
    parts.append("</body></html>")
    return "\n".join(parts)
