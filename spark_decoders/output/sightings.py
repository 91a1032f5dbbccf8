"""One row per exchange when several captures saw it.

Each node of a quorum captures its own connections, so an exchange between two nodes is in both
their capture files (and a tap may add a third). Decoded together, every capture gives its own row
of it: the sightings. ``merge_sightings`` keeps one row per exchange and lists in ``capture_files``
every capture that saw it.

Two rows are sightings of one exchange when all of these hold:

- they come from different capture files (one capture never sees an exchange twice: a second row
  in the same file is another exchange);
- the same connection: client and server address and port;
- the same request: API key, version, correlation id (unique per connection while it lasts, as
  Kafka's clients number their requests), client id, frame size and decoded body; for a response
  whose request no capture held, the same correlation id, response size and decoded body;
- seen within ``MERGE_WINDOW_US`` of each other (request time, else response time): the clocks of
  the capturing hosts and the time a frame takes between them differ by far less, while a port and
  a correlation id used again by a later connection come much later.

The row kept is the most complete sighting (an answered exchange before one that missed the
response, before a damaged one); among answered ones the one with the shortest latency, which is
the server's own view (it sees the request last and the response first), as a broker measures its
request time; then the earliest in the rows' order. Its ``capture_file`` and frame numbers are
those of the capture it came from.
"""

from __future__ import annotations

from typing import Final

from ..kafka.rows import Row

MERGE_WINDOW_US: Final = 1_000_000

# Lower is more complete: the sighting kept.
_STATUS_RANK: Final = {"ok": 0, "acks0": 0, "no_response": 1, "no_request": 1}
_OTHER_STATUS: Final = 2


def merge_sightings(rows: list[Row], window_us: int = MERGE_WINDOW_US) -> list[Row]:
    """``rows`` (of the exchanges table, in their order) with the sightings of each exchange merged
    into the row kept; that row's ``capture_files`` lists every capture that saw it, in the order of
    the rows. Rows of one capture come back unchanged."""
    if len({row["capture_file"] for row in rows}) < 2:
        return rows
    groups: list[list[int]] = []
    open_groups: dict[tuple[object, ...], list[list[int]]] = {}
    for index, row in enumerate(rows):
        at = _time_us(row)
        candidates = open_groups.setdefault(_identity(row), [])
        group = next((g for g in candidates if _joins(rows, g, row, at, window_us)), None)
        if group is None:
            group = []
            candidates.append(group)
            groups.append(group)
        group.append(index)
    kept: dict[int, Row] = {}
    for group in groups:
        best = min(group, key=lambda i: (_rank(rows[i]), _latency(rows[i]), i))
        merged = dict(rows[best])
        files: list[str] = [rows[best]["capture_file"]]
        files += [rows[i]["capture_file"] for i in group if rows[i]["capture_file"] not in files]
        merged["capture_files"] = files
        kept[best] = merged
    return [kept[index] for index in sorted(kept)]


def _identity(row: Row) -> tuple[object, ...]:
    """What two sightings of one exchange share, apart from their time."""
    connection = (row["client_ip"], row["client_port"], row["server_ip"], row["server_port"])
    if row["request_ts"] is not None or row["api_key"] is not None:
        request = (row["api_key"], row["api_version"], row["client_id"], row["request_size"])
        return connection + (row["correlation_id"], "request") + request + (row["request_json"],)
    return (
        connection
        + (row["correlation_id"], "response", row["response_size"])
        + (row["response_json"],)
    )


def _time_us(row: Row) -> float | None:
    stamp = row["request_ts"] if row["request_ts"] is not None else row["response_ts"]
    return None if stamp is None else stamp.timestamp() * 1e6


def _joins(rows: list[Row], group: list[int], row: Row, at: float | None, window_us: int) -> bool:
    """Whether ``row`` is one more sighting of the exchange ``group`` holds: from a capture the
    group has no row of yet, and within the window of its first sighting."""
    first = rows[group[0]]
    if any(rows[i]["capture_file"] == row["capture_file"] for i in group):
        return False
    then = _time_us(first)
    if at is None or then is None:
        return at is None and then is None
    return abs(at - then) <= window_us


def _rank(row: Row) -> int:
    return _STATUS_RANK.get(row["status"], _OTHER_STATUS)


def _latency(row: Row) -> float:
    latency = row["latency_us"]
    return float("inf") if latency is None else latency
