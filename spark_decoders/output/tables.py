"""The optional tables beside the exchanges: one row per Kafka frame, or one per TCP connection.

``--table frames`` / ``.option("table", "frames")``: every frame each side sent, with the header
fields pairing reads (a response takes its API key and version from the request it answers) and a
status of its own: ok, gap or truncated (the frame was cut), unreadable (too short for a header), or
no_request (a response whose request the capture lacks).

``--table connections``: every TCP connection with its endpoints, first and last packet times,
packets and payload bytes each way, frames each way, stream gaps, retransmitted bytes (captured
payload that the reassembly dropped as already delivered), and flags: a mid-stream start, a
truncation (snaplen or end of capture inside a frame), a reset, a close (FIN both ways or RST).

Both come from ``ObservedConnection``, the same ``Connection`` the exchanges come from with
observers wired to its frame readers and streams, so every decoding path (local, Spark shards,
stitched splits) gives the same rows. Bodies are not decoded for these tables.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable, Final, Iterator

from ..kafka.bodies import BodyDecoder
from ..kafka.connection import Connection
from ..kafka.exchanges import FILE_SHIFT
from ..kafka.framing import Frame, FrameReader
from ..kafka.headers import read_correlation_id, read_request_head
from ..packets.layers import Segment
from ..packets.reassembly import GAP, MIDSTREAM, TRUNCATED, StreamSink
from ..kafka.rows import COLUMNS as EXCHANGE_COLUMNS
from ..kafka.rows import arrow_schema as exchange_arrow_schema
from ..kafka.rows import sort_key as exchange_order
from ..kafka.rows import spark_ddl as exchange_ddl
from ..kafka.rows import Row, timestamp

EXCHANGES: Final = "exchanges"
FRAMES: Final = "frames"
CONNECTIONS: Final = "connections"
TABLES: Final = (EXCHANGES, FRAMES, CONNECTIONS)
FRAME_STATUSES: Final = ("ok", "gap", "truncated", "unreadable", "no_request")
_NUMBER: Final = (1 << FILE_SHIFT) - 1

# name, Spark SQL type, pyarrow type name (as in ``rows``)
FRAME_COLUMNS: Final[tuple[tuple[str, str, str], ...]] = (
    ("capture_file", "STRING", "string"),
    ("conn_id", "STRING", "string"),
    ("direction", "STRING", "string"),  # "request" (client to server) or "response"
    ("frame_index", "INT", "int32"),  # the frame's place in its direction of the connection
    ("frame", "BIGINT", "int64"),  # the packet that completed the frame, as tshark numbers it
    ("ts", "TIMESTAMP", "timestamp"),
    ("size", "INT", "int32"),
    ("api_key", "SMALLINT", "int16"),
    ("api_version", "SMALLINT", "int16"),
    ("correlation_id", "INT", "int32"),
    ("status", "STRING", "string"),
)
CONNECTION_COLUMNS: Final[tuple[tuple[str, str, str], ...]] = (
    ("capture_file", "STRING", "string"),  # the file of the connection's first packet
    ("conn_id", "STRING", "string"),
    ("client_ip", "STRING", "string"),
    ("client_port", "INT", "int32"),
    ("server_ip", "STRING", "string"),
    ("server_port", "INT", "int32"),
    ("first_frame", "BIGINT", "int64"),
    ("first_ts", "TIMESTAMP", "timestamp"),
    ("last_ts", "TIMESTAMP", "timestamp"),
    ("packets_to_server", "BIGINT", "int64"),
    ("packets_to_client", "BIGINT", "int64"),
    ("bytes_to_server", "BIGINT", "int64"),
    ("bytes_to_client", "BIGINT", "int64"),
    ("requests", "INT", "int32"),
    ("responses", "INT", "int32"),
    ("gaps", "INT", "int32"),
    ("retransmitted_bytes", "BIGINT", "int64"),
    ("midstream_start", "BOOLEAN", "bool"),
    ("truncated", "BOOLEAN", "bool"),
    ("reset", "BOOLEAN", "bool"),
    ("closed", "BOOLEAN", "bool"),
)


# A frame's API key, API version and correlation id, each None when the frame does not say.
FrameFields = tuple[int | None, int | None, int | None]


def check_table(name: str) -> str:
    if name not in TABLES:
        raise ValueError(f"unknown table {name!r}; choose one of {', '.join(TABLES)}")
    return name


def connection_class(table: str) -> Callable[..., Connection]:
    """What ``FlowTable`` builds for each connection when decoding ``table``."""
    if check_table(table) == EXCHANGES:
        return Connection
    return FrameConnection if table == FRAMES else SummaryConnection


class _HeadersOnly(BodyDecoder):
    """A BodyDecoder that knows every API's name and flexibility but decodes no body."""

    def knows(self, api_key: int, api_version: int) -> bool:
        return False


class _Tally(StreamSink):
    """Between a stream and its frame reader: counts the bytes delivered and the kinds of gaps."""

    def __init__(self, reader: FrameReader) -> None:
        self.reader = reader
        self.delivered = 0
        self.gap_kinds: set[str] = set()
        self.gaps = 0

    def data(self, payload: bytes, packet: int, ts_ns: int) -> None:
        self.delivered += len(payload)
        self.reader.data(payload, packet, ts_ns)

    def gap(self, kind: str, missing: int = -1) -> None:
        self.gap_kinds.add(kind)
        self.gaps += kind == GAP
        self.reader.gap(kind, missing)


class ObservedConnection(Connection):
    """A connection whose frames and bytes are watched; its own rows go to ``emit``."""

    def __init__(
        self,
        seg: Segment,
        ts_ns: int,
        capture_files: tuple[str, ...],
        bodies: BodyDecoder,
        server_ports: frozenset[int],
        emit: Callable[[Row], None],
    ) -> None:
        super().__init__(
            seg,
            ts_ns,
            capture_files,
            _HeadersOnly(bodies.package, bodies.limit_s),
            server_ports,
            _drop_exchange,
        )
        self.capture_files = capture_files
        self.emit_row = emit
        self.frame_counts = {"request": 0, "response": 0}
        self.truncated_frame = False
        self.requests.on_frame = self._request_frame
        self.responses.on_frame = self._response_frame
        self.to_server.sink = self.server_tally = _Tally(self.requests)
        self.to_client.sink = self.client_tally = _Tally(self.responses)

    def _request_frame(self, frame: Frame) -> None:
        head = read_request_head(frame.payload)
        status = "unreadable" if head is None else frame.damage or "ok"
        fields: FrameFields = (
            (None, None, None)
            if head is None
            else (head.api_key, head.api_version, head.correlation_id)
        )
        self._frame("request", frame, fields, status)
        self.matcher.request(frame)

    def _response_frame(self, frame: Frame) -> None:
        correlation_id = read_correlation_id(frame.payload)
        fields: FrameFields = (None, None, correlation_id)
        if correlation_id is None:
            status = "unreadable"
        elif correlation_id not in self.matcher.pending:
            status = frame.damage or "no_request"
        else:
            head = self.matcher.pending[correlation_id][1]
            status, fields = frame.damage or "ok", (head.api_key, head.api_version, correlation_id)
        self._frame("response", frame, fields, status)
        self.matcher.response(frame)

    def _frame(self, direction: str, frame: Frame, fields: FrameFields, status: str) -> None:
        self.frame_counts[direction] += 1
        self.truncated_frame |= frame.damage == TRUNCATED
        self.frame_seen(direction, frame, fields, status)

    def frame_seen(self, direction: str, frame: Frame, fields: FrameFields, status: str) -> None:
        """Each frame as it is read (the frames table's row)."""


def _drop_exchange(row: Row) -> None:
    """The exchange rows of a connection observed for another table are not wanted."""


class FrameConnection(ObservedConnection):
    def frame_seen(self, direction: str, frame: Frame, fields: FrameFields, status: str) -> None:
        api_key, api_version, correlation_id = fields
        self.emit_row(
            {
                "capture_file": self.capture_files[frame.last_packet >> FILE_SHIFT],
                "conn_id": self.conn_id,
                "direction": direction,
                "frame_index": self.frame_counts[direction] - 1,
                "frame": frame.last_packet & _NUMBER,
                "ts": timestamp(frame.ts_ns),
                "size": frame.size,
                "api_key": api_key,
                "api_version": api_version,
                "correlation_id": correlation_id,
                "status": status,
            }
        )


class SummaryConnection(ObservedConnection):
    def __init__(
        self,
        seg: Segment,
        ts_ns: int,
        capture_files: tuple[str, ...],
        bodies: BodyDecoder,
        server_ports: frozenset[int],
        emit: Callable[[Row], None],
    ) -> None:
        # Every argument named: mypyc passes ``*args`` on to a compiled ``super().__init__`` as
        # one tuple argument.
        super().__init__(seg, ts_ns, capture_files, bodies, server_ports, emit)
        self.first_packet: int | None = None
        self.first_ts, self.last_ts = ts_ns, ts_ns
        self.packets = {True: 0, False: 0}  # by "sent by the client"
        self.payload_bytes = {True: 0, False: 0}

    def carry(
        self,
        from_client: bool,
        seq: int,
        ack: int,
        flags: int,
        payload: bytes,
        missing: int,
        packet: int,
        ts_ns: int,
    ) -> None:
        if self.first_packet is None:
            self.first_packet = packet
        self.packets[from_client] += 1
        self.payload_bytes[from_client] += len(payload)
        self.last_ts = max(self.last_ts, ts_ns)
        super().carry(from_client, seq, ack, flags, payload, missing, packet, ts_ns)

    def finish(self) -> None:
        super().finish()
        tallies = (self.server_tally, self.client_tally)
        kinds = self.server_tally.gap_kinds | self.client_tally.gap_kinds
        delivered = sum(t.delivered for t in tallies)
        first = self.first_packet
        assert first is not None, "a connection is made for its first segment"
        self.emit_row(
            {
                "capture_file": self.capture_files[first >> FILE_SHIFT],
                "conn_id": self.conn_id,
                "client_ip": self.client[0],
                "client_port": self.client[1],
                "server_ip": self.server[0],
                "server_port": self.server[1],
                "first_frame": first & _NUMBER,
                "first_ts": timestamp(self.first_ts),
                "last_ts": timestamp(self.last_ts),
                "packets_to_server": self.packets[True],
                "packets_to_client": self.packets[False],
                "bytes_to_server": self.payload_bytes[True],
                "bytes_to_client": self.payload_bytes[False],
                "requests": self.frame_counts["request"],
                "responses": self.frame_counts["response"],
                "gaps": sum(t.gaps for t in tallies),
                "retransmitted_bytes": sum(self.payload_bytes.values()) - delivered,
                "midstream_start": MIDSTREAM in kinds,
                "truncated": TRUNCATED in kinds or self.truncated_frame,
                "reset": self.reset,
                "closed": self.closed,
            }
        )


# -- schemas, order and output of every table (the exchanges' own are in ``rows``) -------------


def _own_columns(table: str) -> tuple[tuple[str, str, str], ...]:
    return FRAME_COLUMNS if table == FRAMES else CONNECTION_COLUMNS


def column_names(table: str) -> tuple[str, ...]:
    if check_table(table) == EXCHANGES:
        return EXCHANGE_COLUMNS
    return tuple(name for name, _, _ in _own_columns(table))


def timestamp_columns(table: str) -> tuple[str, ...]:
    if check_table(table) == EXCHANGES:
        return ("request_ts", "response_ts")
    return tuple(name for name, kind, _ in _own_columns(table) if kind == "TIMESTAMP")


def spark_ddl(table: str = EXCHANGES) -> str:
    if check_table(table) == EXCHANGES:
        return exchange_ddl()
    return ", ".join(f"{name} {kind}" for name, kind, _ in _own_columns(table))


# pyarrow has no type annotations: its schemas and batches are typed Any here.
def arrow_schema(table: str = EXCHANGES) -> Any:
    schema = _ARROW_SCHEMAS.get(table)
    if schema is None:
        schema = _ARROW_SCHEMAS[table] = _build_arrow_schema(table)
    return schema


# A task converts its rows in batches of a few thousand: each batch would otherwise build its
# table's schema again (pyarrow schemas are immutable, so one per table serves every batch).
_ARROW_SCHEMAS: dict[str, Any] = {}


def _build_arrow_schema(table: str) -> Any:
    import pyarrow as pa

    if check_table(table) == EXCHANGES:
        return exchange_arrow_schema()
    types = {
        "string": pa.string(),
        "bool": pa.bool_(),
        "int16": pa.int16(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([pa.field(name, types[kind]) for name, _, kind in _own_columns(table)])


def to_arrow(rows: list[Row], table: str = EXCHANGES) -> Any:
    """A pyarrow RecordBatch of ``rows`` with exactly the table's declared types (Spark needs them)."""
    import pyarrow as pa

    schema = arrow_schema(table)
    # A list per column, not a tuple per row (``zip(*map(itemgetter(...), rows))``): those
    # thousands of tuples set off collections that walk every row the task holds.
    return pa.RecordBatch.from_pydict(
        {name: [row[name] for row in rows] for name in schema.names}, schema=schema
    )


def arrow_batches(rows: list[Row], table: str = EXCHANGES, size: int = 4096) -> Iterator[Any]:
    """Arrow batches of at most ``size`` of ``rows``, emptying ``rows`` as it goes: each batch's
    dicts are freed as soon as it is converted, instead of all of them after the last batch."""
    rows.reverse()  # each batch is then cut from the end: it costs its own size, not the rest's
    while rows:
        batch = rows[-size:]
        del rows[-size:]
        batch.reverse()
        yield to_arrow(batch, table)


def sort_key(table: str) -> Callable[[Row], tuple[object, ...]]:
    """Rows of ``table`` in one total order, the same whichever path decoded them."""
    if check_table(table) == EXCHANGES:
        return exchange_order
    if table == FRAMES:
        return _frame_order
    return _connection_order


def _frame_order(row: Row) -> tuple[object, ...]:
    return (row["capture_file"], row["frame"], row["conn_id"], row["direction"], row["frame_index"])


def _connection_order(row: Row) -> tuple[object, ...]:
    return (row["capture_file"], row["first_frame"], row["conn_id"])


def json_ready(row: Row, table: str = EXCHANGES) -> Row:
    """The row with its timestamps as ISO-8601 text, for jsonl output."""
    out = dict(row)
    for name in timestamp_columns(table):
        if out[name] is not None:
            out[name] = out[name].isoformat().replace("+00:00", "Z")
    return out


def utc_aware(row: Row, table: str = EXCHANGES) -> Row:
    """A row collected from Spark with its naive timestamps marked UTC, as local mode's are."""
    for name in timestamp_columns(table):
        if row[name] is not None and row[name].tzinfo is None:
            row[name] = row[name].replace(tzinfo=dt.timezone.utc)
    return row
