"""The output row: one per request/response exchange, with the columns of issue #11.

``COLUMNS`` fixes the names and order; ``arrow_schema()`` and ``spark_ddl()`` give the types for
pyarrow and Spark (timestamps in microseconds, UTC). Rows are plain dicts in local mode;
``OrderedRows`` collects a decode's rows of any table and gives them in their order.
"""

from __future__ import annotations

from typing import Any, Callable, Final

import datetime as dt

STATUSES: Final = (
    "ok",
    "no_response",
    "no_request",
    "acks0",
    "gap",
    "truncated",
    "unsupported_version",
    "decode_error",
    "tls",
)

# name, Spark SQL type, pyarrow type name
_COLUMNS: Final[tuple[tuple[str, str, str], ...]] = (
    ("capture_file", "STRING", "string"),
    # every capture that saw the exchange (``sightings.merge_sightings``), capture_file first
    ("capture_files", "ARRAY<STRING>", "list<string>"),
    ("conn_id", "STRING", "string"),
    ("client_ip", "STRING", "string"),
    ("client_port", "INT", "int32"),
    ("server_ip", "STRING", "string"),
    ("server_port", "INT", "int32"),
    ("request_ts", "TIMESTAMP", "timestamp"),
    ("response_ts", "TIMESTAMP", "timestamp"),
    ("latency_us", "DOUBLE", "float64"),
    ("api_key", "SMALLINT", "int16"),
    ("api_name", "STRING", "string"),
    ("api_version", "SMALLINT", "int16"),
    ("correlation_id", "INT", "int32"),
    ("client_id", "STRING", "string"),
    ("request_size", "INT", "int32"),
    ("response_size", "INT", "int32"),
    ("request_frame", "BIGINT", "int64"),
    ("response_frame", "BIGINT", "int64"),
    ("error_code", "SMALLINT", "int16"),
    ("error_codes", "ARRAY<SMALLINT>", "list<int16>"),
    ("throttle_time_ms", "INT", "int32"),
    ("request_json", "STRING", "string"),
    ("response_json", "STRING", "string"),
    ("status", "STRING", "string"),
    ("decode_error", "STRING", "string"),
)
COLUMNS: Final[tuple[str, ...]] = tuple(name for name, _, _ in _COLUMNS)
# A row of any output table: column name -> value (COLUMNS for the exchanges, tables.py the others).
Row = dict[str, Any]
_UTC: Final = dt.timezone.utc
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=_UTC)
_timedelta: Final = dt.timedelta


def spark_ddl() -> str:
    return ", ".join(f"{name} {kind}" for name, kind, _ in _COLUMNS)


def arrow_schema() -> Any:  # a pyarrow.Schema (pyarrow has no type annotations)
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int16": pa.int16(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "list<int16>": pa.list_(pa.int16()),
        "list<string>": pa.list_(pa.string()),
    }
    return pa.schema([pa.field(name, types[kind]) for name, _, kind in _COLUMNS])


class _LastTimestamp:
    """The whole second and millisecond ``utc_datetime`` converted last, and their datetimes.
    Packets come in time order, so most timestamps fall in the same second as the one before, and
    in busy traffic in the same millisecond: their datetime is that millisecond's plus the
    microseconds, and the calendar arithmetic is done once per second."""

    def __init__(self) -> None:
        self.second = 0
        self.second_start = _EPOCH
        self.millisecond = 0
        self.millisecond_start = _EPOCH


_LAST: Final = _LastTimestamp()
# A datetime plus a timedelta is made without the argument parsing of datetime's constructor,
# which costs more than two additions: a fraction of a second is added as its milliseconds, then
# its remaining microseconds, each a timedelta made once.
_MILLISECONDS: Final = tuple(_timedelta(0, 0, 0, ms) for ms in range(1000))
_MICROSECONDS: Final = tuple(_timedelta(0, 0, us) for us in range(1000))


def timestamp(ts_ns: int | None) -> dt.datetime | None:
    """Nanoseconds since the epoch as an aware UTC datetime (microsecond precision), or None when
    there is none: no timestamp, or one past what a datetime (and Spark's TIMESTAMP) can hold."""
    return None if ts_ns is None else utc_datetime(ts_ns)


def utc_datetime(ts_ns: int) -> dt.datetime | None:
    """``timestamp`` of a timestamp that is there (compiled, its int is not boxed for the call)."""
    micros = ts_ns // 1000
    # Floor division: the remainders below are never negative. The remainders, not ``micros -
    # millisecond * 1000``: compiled, multiplying a large number leaves the fast integer arithmetic.
    millisecond = micros // 1000
    last = _LAST
    if millisecond != last.millisecond:
        second = millisecond // 1000
        if second != last.second:
            try:
                start = _EPOCH + _timedelta(0, second)  # positional: keywords cost a third more
            except OverflowError:  # past the year 9999 (a damaged 64-bit pcapng timestamp)
                return None
            last.second, last.second_start = second, start
        # Within the second: it never overflows.
        last.millisecond_start = last.second_start + _MILLISECONDS[millisecond % 1000]
        last.millisecond = millisecond
    return last.millisecond_start + _MICROSECONDS[micros % 1000]


def sort_key(row: Row) -> tuple[object, ...]:
    """Rows in the order of the packet that completed their first frame, per file."""
    request, response = row["request_frame"], row["response_frame"]
    first = request if request is not None else response
    return (row["capture_file"], first or 0, response or 0, row["conn_id"])


class OrderedRows:
    """A decode's rows as they are emitted, each with its sort key taken at once, while the row is
    still in the processor's cache; ``in_order`` then sorts the keys, not the rows. A sort of the
    rows by a key function at the end read each row back from memory long after it was made,
    which cost three times the sort itself (66,624 rows in the bench)."""

    def __init__(self, key: Callable[[Row], Any]) -> None:
        self.rows: list[Row] = []
        self.keys: list[Any] = []
        self.key = key

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.keys.append(self.key(row))

    def in_order(self) -> list[Row]:
        """The rows sorted by their keys; rows with equal keys in the order they came, as a
        stable sort of the rows themselves leaves them."""
        rows = self.rows
        order = sorted(range(len(rows)), key=self.keys.__getitem__)
        return [rows[index] for index in order]
