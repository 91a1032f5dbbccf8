"""The report as one self-contained HTML page: the summary, the charts (``report_svg``), the
problem and epoch tables written here, and the connection list and exchange table that the
embedded script (``report_script``) draws from the embedded data (``report_data``)."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from ..packets.capture import shown_name
from .report_script import SCRIPT, STYLE
from .report_svg import duration, latency_chart, timeline_chart, wall_clock

# What the script needs; the rest of the data is drawn here.
_SCRIPT_DATA = ("captures", "t0_us", "connections", "columns", "rows", "tables")


def page(data: dict[str, Any]) -> str:
    captures = ", ".join(shown_name(c) for c in data["captures"])
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Kafka traffic report: {escape(captures)}</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Kafka traffic report</h1>",
        _summary(data, captures),
        "<nav><a href='#latency'>Latency</a><a href='#problems-section'>Problems</a>"
        "<a href='#elections'>Leaders and epochs</a><a href='#connections'>Connections</a>"
        "<a href='#exchanges'>Exchanges</a></nav>",
        _latency_section(data),
        _problems_section(data),
        _elections_section(data),
        _connections_section(data),
        _exchanges_section(data),
        "<script id='report-data' type='application/json'>",
        _embedded_json({key: data[key] for key in _SCRIPT_DATA}),
        f"</script><script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


def _embedded_json(value: object) -> str:
    """JSON that cannot end its script element: every ``<`` escaped (still the same JSON)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


def _summary(data: dict[str, Any], captures: str) -> str:
    statuses = ", ".join(f"{escape(s)} {n:,}" for s, n in data["statuses"].items())
    span = ""
    if data["total"]:
        span = (
            f" from {wall_clock(data['t0_us'], 0, 6)} to "
            f"{wall_clock(data['t0_us'], data['span_us'], 6)} UTC "
            f"({duration(data['span_us'])})"
        )
    return (
        f"<p id='summary'>{data['total']:,} exchanges in {escape(captures)}{span}; "
        f"{data['connections_total']:,} connections. Status: {statuses or 'none'}.</p>"
    )


def _latency_section(data: dict[str, Any]) -> str:
    chart = latency_chart(data["apis"])
    return (
        "<section id='latency'><h2>Latency per API (log scale)</h2>"
        + (
            "<p class='note'>Each row is one API's latency histogram, scaled to its own "
            "busiest bin, from every exchange (not only those listed below). Click a row to list "
            "its exchanges.</p><p class='note legend'><span>▍black: median</span>"
            "<span style='color:#E45756'>▍red dashes: p99</span></p>" + chart
            if chart
            else "<p>No answered exchange.</p>"
        )
        + "</section>"
    )


def _problems_section(data: dict[str, Any]) -> str:
    rows = data["problems"]
    if not rows:
        return (
            "<section id='problems-section'><h2>Problems</h2>"
            "<p>No error code and no status other than ok.</p></section>"
        )
    busiest = rows[0][2]
    body = "".join(
        f"<tr class='clickable' data-api='{escape(api)}' data-problem='{escape(label)}'>"
        f"<td>{escape(api)}</td><td>{escape(label)}</td><td class='num'>{count:,}</td>"
        f"<td><span class='bar' style='width:{max(1, 200 * count // busiest)}px'></span></td></tr>"
        for api, label, count in rows
    )
    return (
        "<section id='problems-section'><h2>Problems</h2>"
        "<p class='note'>Error codes other than NONE (nested ones included, each counted once per "
        "exchange) and statuses other than ok. Click a row to list those exchanges.</p>"
        "<table id='problems'><thead><tr><th>API</th><th>problem</th><th class='num'>exchanges"
        f"</th><th></th></tr></thead><tbody>{body}</tbody></table></section>"
    )


def _elections_section(data: dict[str, Any]) -> str:
    elections, t0 = data["elections"], data["t0_us"]
    head = "<section id='elections'><h2>KRaft leaders and epochs</h2>"
    if not elections["epochs"]:
        return head + (
            "<p>No quorum exchange names an epoch (Vote, BeginQuorumEpoch, EndQuorumEpoch, "
            "DescribeQuorum, or a Fetch response with its current leader).</p></section>"
        )
    chart = timeline_chart(elections, t0, data["span_us"])
    note = (
        "<p class='note'>Each lane is a node. A bar is an epoch the node led, from the first "
        "exchange that names it leader to the last that names the epoch, from every exchange "
        "(not only those listed below).</p><p class='note legend'><span>◆ candidacy (Vote "
        "request)</span><span>○ pre-vote</span><span style='color:#E45756'>▌resignation "
        "(EndQuorumEpoch)</span></p>"
    )
    if elections["epochs_total"] > len(elections["epochs"]):
        note += (
            f"<p class='note'>The latest {len(elections['epochs']):,} of "
            f"{elections['epochs_total']:,} epochs.</p>"
        )
    rows = "".join(_epoch_row(epoch, t0) for epoch in elections["epochs"])
    return (
        head
        + note
        + chart
        + "<table id='epochs'><thead><tr><th class='num'>epoch</th><th>leader</th><th>led from"
        "</th><th>last seen</th><th>resigned</th><th>candidates (votes granted)</th></tr></thead>"
        f"<tbody id='epochs-body'>{rows}</tbody></table></section>"
    )


def _epoch_row(epoch: dict[str, Any], t0: int) -> str:
    leaders = epoch["leaders"]
    leader = ", ".join(map(str, leaders)) or "none seen"
    if len(leaders) > 1:
        leader = f"<strong style='color:#b00'>conflict: {leader}</strong>"
    candidates = ", ".join(f"node {c} ({votes})" for c, _, votes in epoch["candidates"])

    def when(offset: int | None) -> str:
        return "" if offset is None else wall_clock(t0, offset, 6)

    return (
        f"<tr data-epoch='{epoch['epoch']}' data-leaders='{','.join(map(str, leaders))}'>"
        f"<td class='num'>{epoch['epoch']}</td><td>{leader}</td><td>{when(epoch['led_from'])}</td>"
        f"<td>{when(epoch['last'])}</td><td>{when(epoch['ended'])}</td><td>{candidates}</td></tr>"
    )


def _connections_section(data: dict[str, Any]) -> str:
    listed, total = len(data["connections"]), data["connections_total"]
    cut = "" if listed == total else f" The busiest {listed:,} of {total:,} connections (with "
    cut += "" if listed == total else "those of every exchange listed below)."
    return (
        "<section id='connections'><h2>Connections</h2>"
        f"<p class='note'>Click a connection to list its exchanges; click it again to list all.{cut}"
        "</p><div class='scroll'><table id='conns'><thead><tr><th class='num'>#</th>"
        "<th id='conn-capture'>capture</th><th>client</th><th>server</th><th>client ids</th>"
        "<th class='num'>exchanges</th><th class='num'>request bytes</th>"
        "<th class='num'>response bytes</th><th>APIs</th><th class='num'>problems</th></tr></thead>"
        "<tbody id='conn-body'></tbody></table></div></section>"
    )


def _exchanges_section(data: dict[str, Any]) -> str:
    return (
        "<section id='exchanges'><h2>Exchanges</h2>"
        f"<p class='note' id='sample-note'>{escape(sample_note(data))}</p>"
        "<div class='filters'><label>API <select id='f-api'></select></label>"
        "<label>client id <select id='f-client'></select></label>"
        "<label>connection <select id='f-conn'></select></label>"
        "<label>problem <select id='f-problem'></select></label>"
        "<button id='clear'>clear filters</button></div>"
        "<p id='match-count'>The exchange table needs JavaScript.</p>"
        "<div class='scroll'><table id='rows'><thead><tr><th data-sort='t'>request time (UTC)</th>"
        "<th class='num' data-sort='conn'>conn</th><th data-sort='client'>client id</th>"
        "<th data-sort='api'>API</th><th class='num' data-sort='correlation'>correlation id</th>"
        "<th class='num' data-sort='latency_us'>latency</th>"
        "<th class='num' data-sort='request_size'>request bytes</th>"
        "<th class='num' data-sort='response_size'>response bytes</th>"
        "<th data-sort='problems'>problems</th><th>KRaft</th></tr></thead>"
        "<tbody id='rows-body'></tbody></table></div><button id='more' hidden>show more</button>"
        "</section>"
    )


def sample_note(data: dict[str, Any]) -> str:
    """``showing 5,000 of 200,000 exchanges: ...``, or that all are shown."""
    shown, total = data["sample"]["shown"], data["total"]
    notable, notable_shown = data["sample"]["notable_total"], data["sample"]["notable_shown"]
    if shown == total:
        return f"All {total:,} exchanges. Click a column heading to sort."
    if not notable:
        problems = "none has a problem"
    elif notable_shown == notable:
        problems = f"all {notable:,} with a problem included"
    else:
        problems = f"{notable_shown:,} of the {notable:,} with a problem (each API a share)"
    return (
        f"Showing {shown:,} of {total:,} exchanges: {problems}, and {shown - notable_shown:,} of "
        f"the {total - notable:,} others (each API an equal share, an even sample of its "
        "exchanges; an API with fewer, all of them). The charts and tables above count every "
        "exchange. Click a column heading to sort."
    )
