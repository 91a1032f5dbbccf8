"""What the HTML report shows, from the decoded rows: totals and latency distributions per API,
problems (error codes and statuses other than ok), connections, the KRaft epochs, and a bounded
sample of the exchanges themselves.

The page must stay small whatever the capture's size, so it embeds aggregates of every row and at
most ``ROW_LIMIT`` rows: every row with a problem while they fit (at most four fifths of the limit
when there are others), then the rest, each API an equal share of the room. ``sample_indices``
makes that choice.
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_right
from collections import Counter
from typing import Any

from kraftwire.generated import errors

from .report_elections import Elections

ROW_LIMIT = 5000
CONNECTION_LIMIT = 500  # the busiest, plus every connection a sampled row is on
EPOCH_LIMIT = 1000  # the latest
# Latency bins: five per decade from 10 µs to 100 s (a shorter or longer latency lands in the
# first or last bin). LATENCY_EDGES_US[i] is bin i's lower edge.
BINS_PER_DECADE = 5
LOWEST_DECADE, HIGHEST_DECADE = 1, 8
LATENCY_EDGES_US = [
    10 ** (LOWEST_DECADE + i / BINS_PER_DECADE)
    for i in range((HIGHEST_DECADE - LOWEST_DECADE) * BINS_PER_DECADE + 1)
]
ROW_COLUMNS = (
    "t",  # µs after the report's first exchange
    "conn",  # index into connections
    "client",  # index into tables.client
    "api",  # index into tables.api
    "version",
    "correlation",
    "latency_us",
    "request_size",
    "response_size",
    "problems",  # indices into tables.problem
    "note",  # what the exchange says about the quorum
)
CLIENT_ID_CHARS = 100  # a client id is up to 32,767 characters: the page keeps each one's start
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROSECOND = dt.timedelta(microseconds=1)


def error_label(code: int) -> str:
    """``NOT_LEADER_OR_FOLLOWER (6)``; a code Kafka does not define is shown as its number only."""
    error = errors.ERRORS.get(code)
    return str(code) if error is None else f"{error.name} ({code})"


def api_name(row: dict[str, Any]) -> str:
    return row["api_name"] or (f"key {row['api_key']}" if row["api_key"] is not None else "unknown")


def problems(row: dict[str, Any]) -> tuple[str, ...]:
    """The row's error codes other than NONE, and its status when not ok, as labels."""
    labels = tuple(dict.fromkeys(error_label(c) for c in row["error_codes"] or () if c))
    return labels + (("status " + row["status"],) if row["status"] != "ok" else ())


def client_id(row: dict[str, Any]) -> str:
    text = row["client_id"] or "(none)"  # null or empty: the table's filter needs a value
    return text if len(text) <= CLIENT_ID_CHARS else text[: CLIENT_ID_CHARS - 1] + "…"


def sample_indices(notable: list[list[int]], others: list[list[int]], limit: int) -> list[int]:
    """At most ``limit`` indices: all the ``notable`` ones when they fit, leaving the others at
    least a fifth of the limit when there are that many, the rest of it filled with others. Each
    part comes in groups (one per API); a part cut to its quota gives each group an equal share
    (a group smaller than its share whole, its leftover to the others), spread evenly within the
    group. Sorted."""
    notable_count, others_count = sum(map(len, notable)), sum(map(len, others))
    others_quota = min(others_count, max(limit - notable_count, limit // 5))
    notable_quota = min(notable_count, limit - others_quota)
    return sorted(_fair_shares(notable, notable_quota) + _fair_shares(others, others_quota))


def _fair_shares(groups: list[list[int]], quota: int) -> list[int]:
    out: list[int] = []
    ordered = sorted(groups, key=len)
    for position, group in enumerate(ordered):
        share = (quota - len(out)) // (len(ordered) - position)
        out += _spread(group, min(len(group), share))
    return out


def _spread(items: list[int], count: int) -> list[int]:
    return [items[i * len(items) // count] for i in range(count)] if count else []


def micros(ts: dt.datetime | None) -> int | None:
    return None if ts is None else (ts - _EPOCH) // _MICROSECOND


def latency_bin(latency_us: float) -> int:
    return min(max(bisect_right(LATENCY_EDGES_US, latency_us) - 1, 0), len(LATENCY_EDGES_US) - 2)


def percentile(ordered: list[float], share: float) -> float:
    """The nearest-rank percentile of an ascending list."""
    return ordered[min(len(ordered) - 1, max(0, int(share * len(ordered) + 0.5) - 1))]


# A connection: (capture file, connection id).
ConnKey = tuple[str, str]
# A row as the page needs it: (µs, connection, client id, API, version, correlation id, latency,
# request size, response size, problem labels, note).
_Compact = tuple[
    int | None,
    ConnKey,
    str,
    str,
    int,
    int,
    float | None,
    int | None,
    int | None,
    tuple[str, ...],
    str,
]


class _Connection:
    __slots__ = ("capture", "client", "server", "client_ids", "apis", "count", "bytes", "problems")

    def __init__(self, row: dict[str, Any]) -> None:
        self.capture = row["capture_file"]
        self.client = _endpoint(row["client_ip"], row["client_port"])
        self.server = _endpoint(row["server_ip"], row["server_port"])
        self.client_ids: Counter[str] = Counter()
        self.apis: Counter[str] = Counter()
        self.count = 0
        self.bytes = [0, 0]
        self.problems = 0


def _endpoint(ip: str | None, port: int | None) -> str:
    if ip is None:
        return "?"
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class _Collector:
    """One pass over the rows."""

    def __init__(self) -> None:
        self.elections = Elections()
        self.connections: dict[ConnKey, _Connection] = {}
        self.client_nodes: dict[ConnKey, int] = {}
        self.latencies: dict[str, list[float]] = {}
        self.counts: Counter[str] = Counter()
        self.api_problems: Counter[str] = Counter()
        self.problem_counts: Counter[tuple[str, str]] = Counter()  # (api, label)
        self.statuses: Counter[str] = Counter()
        self.compact: list[_Compact] = []  # per row
        self.notable: dict[str, list[int]] = {}  # API -> indices of its rows with a problem
        self.others: dict[str, list[int]] = {}

    def add(self, row: dict[str, Any]) -> None:
        api = api_name(row)
        request_us, response_us = micros(row["request_ts"]), micros(row["response_ts"])
        note, sender = self.elections.add(row, request_us, response_us)
        key = (row["capture_file"], row["conn_id"])
        connection = self.connections.get(key)
        if connection is None:
            connection = self.connections[key] = _Connection(row)
        if sender >= 0:
            self.client_nodes[key] = sender
        labels = problems(row)
        connection.count += 1
        connection.apis[api] += 1
        connection.client_ids[client_id(row)] += 1
        connection.bytes[0] += row["request_size"] or 0
        connection.bytes[1] += row["response_size"] or 0
        self.counts[api] += 1
        self.statuses[row["status"]] += 1
        if row["latency_us"] is not None:
            self.latencies.setdefault(api, []).append(row["latency_us"])
        if labels:
            connection.problems += 1
            self.api_problems[api] += 1
            self.problem_counts.update((api, label) for label in labels)
        (self.notable if labels else self.others).setdefault(api, []).append(len(self.compact))
        self.compact.append(
            (
                request_us if request_us is not None else response_us,
                key,
                client_id(row),
                api,
                row["api_version"],
                row["correlation_id"],
                row["latency_us"],
                row["request_size"],
                row["response_size"],
                labels,
                note,
            )
        )


def build(
    rows: list[dict[str, Any]], captures: list[str], row_limit: int = ROW_LIMIT
) -> dict[str, Any]:
    """The report's data (JSON-ready): see the module's docstring."""
    collector = _Collector()
    for row in rows:
        collector.add(row)
    times = [entry[0] for entry in collector.compact if entry[0] is not None]
    t0 = min(times) if times else 0
    chosen = sample_indices(
        list(collector.notable.values()), list(collector.others.values()), row_limit
    )
    chosen.sort(key=lambda i: (collector.compact[i][0] is None, collector.compact[i][0] or 0))
    connections = _connections(collector, [collector.compact[i][1] for i in chosen])
    return {
        "captures": captures,
        "t0_us": t0,
        "span_us": (max(times) - t0) if times else 0,
        "total": len(rows),
        "statuses": dict(collector.statuses.most_common()),
        "apis": _apis(collector),
        "problems": [[api, label, n] for (api, label), n in collector.problem_counts.most_common()],
        "connections": connections["list"],
        "connections_total": len(collector.connections),
        "sample": {
            "shown": len(chosen),
            "notable_shown": sum(1 for i in chosen if collector.compact[i][9]),
            "notable_total": sum(map(len, collector.notable.values())),
        },
        **_sample_rows(collector, chosen, connections["index"], t0),
        "elections": collector.elections.summary(t0, EPOCH_LIMIT),
    }


def _apis(collector: _Collector) -> list[dict[str, Any]]:
    out = []
    for api, count in sorted(collector.counts.items(), key=lambda item: (-item[1], item[0])):
        ordered = sorted(collector.latencies.get(api, []))
        bins = [0] * (len(LATENCY_EDGES_US) - 1)
        for latency in ordered:
            bins[latency_bin(latency)] += 1
        entry = {"name": api, "count": count, "problems": collector.api_problems[api]}
        if ordered:
            entry["latency"] = {
                "answered": len(ordered),
                "min": ordered[0],
                "p50": percentile(ordered, 0.5),
                "p90": percentile(ordered, 0.9),
                "p99": percentile(ordered, 0.99),
                "max": ordered[-1],
                "bins": bins,
            }
        out.append(entry)
    return out


def _connections(collector: _Collector, sampled_keys: list[ConnKey]) -> dict[str, Any]:
    """The busiest connections and those of sampled rows, busiest first, with their index."""
    ranked = sorted(collector.connections, key=lambda k: -collector.connections[k].count)
    keep = set(ranked[:CONNECTION_LIMIT]) | set(sampled_keys)
    listed: list[dict[str, Any]] = []
    index: dict[ConnKey, int] = {}
    endpoints = collector.elections.endpoints
    for key in ranked:
        if key not in keep:
            continue
        connection = collector.connections[key]
        index[key] = len(listed)
        server_node = endpoints.get(connection.server.replace("[", "").replace("]", ""), -1)
        listed.append(
            {
                "capture": connection.capture,
                "client": connection.client,
                "server": connection.server,
                "client_node": collector.client_nodes.get(key, -1),
                "server_node": server_node,
                "client_ids": [c for c, _ in connection.client_ids.most_common(3)],
                "exchanges": connection.count,
                "request_bytes": connection.bytes[0],
                "response_bytes": connection.bytes[1],
                "apis": connection.apis.most_common(),
                "problems": connection.problems,
            }
        )
    return {"list": listed, "index": index}


def _sample_rows(
    collector: _Collector, chosen: list[int], conn_index: dict[ConnKey, int], t0: int
) -> dict[str, Any]:
    """The chosen rows, each a list in ``ROW_COLUMNS`` order, strings as indices into tables."""
    tables: dict[str, dict[str, int]] = {"client": {}, "api": {}, "problem": {}}

    def code(table: str, value: str | None) -> int:
        return tables[table].setdefault(value if value is not None else "", len(tables[table]))

    out = []
    for i in chosen:
        t, key, client, api, version, corr, latency, req, resp, labels, note = collector.compact[i]
        out.append(
            [
                None if t is None else t - t0,
                conn_index[key],
                code("client", client),
                code("api", api),
                version,
                corr,
                latency,
                req,
                resp,
                [code("problem", label) for label in labels],
                note,
            ]
        )
    return {
        "columns": list(ROW_COLUMNS),
        "rows": out,
        "tables": {name: list(values) for name, values in tables.items()},
    }
