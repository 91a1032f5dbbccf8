"""The report's two charts as inline SVG: latency per API on a log axis, and the KRaft leaders and
epochs over time. Their parts carry ``data-`` attributes (``data-api``; ``data-epoch`` and
``data-leader``) so that the page's script can make them filter the exchange table, and a test
can read what they show."""

from __future__ import annotations

import datetime as dt
import math
from html import escape
from typing import Any, Callable

from .report_data import HIGHEST_DECADE, LATENCY_EDGES_US, LOWEST_DECADE

WIDTH = 960
PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#B279A2", "#9D755D", "#72B7B2", "#E45756", "#EECA3B")
_DECADE_LABELS = {1: "10 µs", 2: "100 µs", 3: "1 ms", 4: "10 ms", 5: "100 ms", 6: "1 s"}
_DECADE_LABELS.update({7: "10 s", 8: "100 s"})


def duration(us: float) -> str:
    """A latency for people: ``840 µs``, ``1.04 ms``, ``501 ms``, ``2.5 s``."""
    for unit, size in (("s", 1e6), ("ms", 1e3)):
        if us >= size:
            value = us / size
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:,.0f} {unit}"
    return f"{us:.3g} µs"


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def wall_clock(t0_us: int, offset_us: int, digits: int = 3) -> str:
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
        microseconds=t0_us + offset_us
    )
    text = moment.strftime("%H:%M:%S.%f")
    return text[: 9 + digits] if digits else text[:8]


def latency_chart(apis: list[dict[str, Any]]) -> str:
    """One row per API: its latency histogram on a shared log axis (each row scaled to its own
    busiest bin, so a rare API's shape shows beside Fetch's), the median and p99 marked."""
    rows = [api for api in apis if "latency" in api]
    if not rows:
        return ""
    left, right, row_h, top = 200, 760, 38, 10
    decades = HIGHEST_DECADE - LOWEST_DECADE

    def x(us: float) -> float:
        clamped = min(max(math.log10(max(us, 1e-9)), LOWEST_DECADE), HIGHEST_DECADE)
        return left + (clamped - LOWEST_DECADE) / decades * (right - left)

    height = top + row_h * len(rows) + 34
    out = [
        f'<svg id="latency-chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
        'aria-label="latency per API, log scale">'
    ]
    for decade in range(LOWEST_DECADE, HIGHEST_DECADE + 1):
        gx = x(10**decade)
        out.append(
            f'<line x1="{gx:.1f}" x2="{gx:.1f}" y1="{top}" y2="{height - 28}" class="grid"/>'
            f'<text x="{gx:.1f}" y="{height - 12}" class="axis" text-anchor="middle">'
            f"{_DECADE_LABELS[decade]}</text>"
        )
    for i, api in enumerate(rows):
        out.append(_latency_row(api, top + i * row_h, row_h, x))
    out.append("</svg>")
    return "".join(out)


def _latency_row(api: dict[str, Any], y: float, row_h: int, x: Callable[[float], float]) -> str:
    latency = api["latency"]
    name = escape(api["name"])
    bins = latency["bins"]
    busiest = max(bins) or 1
    base = y + row_h - 6
    tip = (
        f"{api['name']}: {api['count']:,} exchanges, {latency['answered']:,} answered; "
        f"min {duration(latency['min'])}, p50 {duration(latency['p50'])}, "
        f"p90 {duration(latency['p90'])}, p99 {duration(latency['p99'])}, "
        f"max {duration(latency['max'])}"
    )
    parts = [
        f'<g class="api-row" data-api="{name}" tabindex="0"><title>{escape(tip)}</title>',
        f'<rect x="0" y="{y}" width="{WIDTH}" height="{row_h}" class="row-bg"/>',
        f'<text x="8" y="{y + 16}" class="api-name">{name}</text>',
        f'<text x="8" y="{y + 31}" class="api-count">{plural(api["count"], "exchange")}'
        + (f", {api['problems']:,} with problems" if api["problems"] else "")
        + "</text>",
    ]
    for b, count in enumerate(bins):
        if count:
            x0, x1 = x(LATENCY_EDGES_US[b]), x(LATENCY_EDGES_US[b + 1])
            h = max(2.0, (row_h - 10) * count / busiest)
            parts.append(
                f'<rect x="{x0:.1f}" y="{base - h:.1f}" width="{x1 - x0 - 1:.1f}" '
                f'height="{h:.1f}" class="bin"/>'
            )
    for key, css in (("p50", "p50"), ("p99", "p99")):
        mx = x(latency[key])
        parts.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{y + 3}" y2="{base}" class="{css}"/>')
    parts.append(
        f'<text x="770" y="{y + 16}" class="stat">p50 {duration(latency["p50"])} · '
        f'p99 {duration(latency["p99"])}</text>'
        f'<text x="770" y="{y + 31}" class="stat">max {duration(latency["max"])}</text></g>'
    )
    return "".join(parts)


_STEPS_US = [
    n * unit
    for unit in (1_000, 1_000_000)
    for n in (1, 2, 5, 10, 20, 50, 100, 200, 500)
    if n * unit <= 500_000_000
] + [600_000_000, 1_800_000_000, 3_600_000_000, 21_600_000_000, 86_400_000_000]


def _time_step(span_us: int) -> int:
    return next((step for step in _STEPS_US if span_us / step <= 8), _STEPS_US[-1])


def timeline_chart(elections: dict[str, Any], t0_us: int, span_us: int) -> str:
    """Lanes of node ids; in each, the epochs that node led (from the first sign of its leadership
    to the epoch's last sign), its candidacies (◆: a Vote request; ○: a pre-vote) and its
    resignations (a red bar: EndQuorumEpoch)."""
    epochs = elections["epochs"]
    nodes = sorted(
        {leader for e in epochs for leader in e["leaders"]}
        | {c for e in epochs for c, _, _ in e["candidates"]}
        | {c for _, c, _ in elections["pre_votes"]}
    )
    if not nodes:
        return ""
    left, right, lane_h, top = 90, WIDTH - 20, 34, 8
    span = max(span_us, 1)
    lane = {node: top + i * lane_h for i, node in enumerate(nodes)}

    def x(t: float) -> float:
        return left + min(max(t, 0), span) / span * (right - left)

    height = top + lane_h * len(nodes) + 32
    out = [
        f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="KRaft leaders and epochs">'
    ]
    step = _time_step(span)
    digits = 0 if step >= 1_000_000 else 3
    first_tick = -t0_us % step  # ticks on round wall-clock times
    for tick in range(first_tick, span + 1, step):
        tx = x(tick)
        out.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top}" y2="{height - 26}" class="grid"/>'
            f'<text x="{tx:.1f}" y="{height - 10}" class="axis" text-anchor="middle">'
            f"{wall_clock(t0_us, tick, digits)}</text>"
        )
    for node, y in lane.items():
        out.append(
            f'<rect x="0" y="{y}" width="{WIDTH}" height="{lane_h}" class="row-bg"/>'
            f'<text x="8" y="{y + 21}" class="api-name">node {node}</text>'
        )
    for index, epoch in enumerate(epochs):
        out.extend(_epoch_marks(epoch, index, lane, lane_h, x, t0_us))
    for t, candidate, number in elections["pre_votes"]:
        out.append(
            f'<circle cx="{x(t):.1f}" cy="{lane[candidate] + lane_h / 2}" r="4" class="pre-vote">'
            f"<title>pre-vote by node {candidate} at epoch {number}, "
            f"{wall_clock(t0_us, t, 6)}</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)


def _epoch_marks(
    epoch: dict[str, Any],
    index: int,
    lane: dict[str, Any],
    lane_h: int,
    x: Callable[[float], float],
    t0_us: int,
) -> list[str]:
    number, leaders = epoch["epoch"], epoch["leaders"]
    color = PALETTE[index % len(PALETTE)]
    out = []
    for leader in leaders:
        x0, x1 = x(epoch["led_from"]), x(epoch["last"])
        y = lane[leader] + 6
        conflict = " conflict" if len(leaders) > 1 else ""
        tip = (
            f"epoch {number}: node {leader} leads from {wall_clock(t0_us, epoch['led_from'], 6)}"
            f", last seen {wall_clock(t0_us, epoch['last'], 6)}"
            + (f"; CONFLICT: leaders {', '.join(map(str, leaders))}" if conflict else "")
        )
        out.append(
            f'<g class="lead{conflict}" data-epoch="{number}" data-leader="{leader}">'
            f"<title>{escape(tip)}</title>"
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 3):.1f}" height="{lane_h - 12}" '
            f'fill="{color}"/>'
            f'<text x="{x0 + 4:.1f}" y="{y + lane_h / 2}" class="epoch-label">epoch {number}</text>'
            "</g>"
        )
        if epoch["ended"] is not None:
            ex = x(epoch["ended"])
            out.append(
                f'<rect x="{ex - 1.5:.1f}" y="{lane[leader] + 2}" width="3" height="{lane_h - 4}" '
                f'class="resign"><title>node {leader} resigns epoch {number} (EndQuorumEpoch), '
                f"{wall_clock(t0_us, epoch['ended'], 6)}</title></rect>"
            )
    for candidate, first, votes in epoch["candidates"]:
        cx, cy = x(first), lane[candidate] + lane_h / 2
        out.append(
            f'<path d="M{cx:.1f} {cy - 7}l6 7l-6 7l-6 -7z" class="candidacy" '
            f'data-epoch="{number}" data-candidate="{candidate}"><title>node {candidate} stands '
            f"for epoch {number}, {wall_clock(t0_us, first, 6)}: {votes} vote(s) granted"
            "</title></path>"
        )
    return out
