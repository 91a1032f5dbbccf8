"""Stage one of the split plan without Spark: a split's packets made into *pieces*.

A piece is one row per connection holding that connection's TCP segments of the split, packed into
one binary value (``pack_segments``), and routed (``route``) to the second-stage partition that
decodes the connection (``stitch``). Each split also yields its packet count, once for every route.
``segments_source`` is the data source that runs ``split_pieces`` in Spark's tasks.

pyarrow is imported where a batch is made: it is an optional extra (spark, parquet), and this
module is imported by ``kraftwire.spark_decoders`` itself (through ``reading`` and ``stitch``).
"""

from __future__ import annotations

import marshal
from typing import Any, Iterator

from ..packets.capture import CaptureBuffer, CaptureError, CaptureStats
from ..packets.layers import FlowKey, flow_key
from .ownership import shard_of
from .splits import split_segments

# A split flushes its pieces when it holds this many payload bytes: memory stays bounded however
# large the split, and a connection's pieces are ordered by (file, split, chunk).
CHUNK_BYTES = 16 * 1024 * 1024
# ``conn`` is the connection's canonical endpoints; a count row has none (and no ``segments``), a
# piece no ``packets``.
PIECE_DDL = (
    "route INT, conn STRING, file_index INT, split_index INT, chunk INT, "
    "packets BIGINT, segments BINARY"
)


# A segment as a piece carries it: its packet's number and ts_ns, then the ``Segment``'s fields.
PieceItem = tuple[Any, ...]


def piece_arrow_schema() -> Any:  # a pyarrow.Schema (pyarrow is untyped)
    import pyarrow as pa

    return pa.schema(
        [
            ("route", pa.int32()),
            ("conn", pa.string()),
            ("file_index", pa.int32()),
            ("split_index", pa.int32()),
            ("chunk", pa.int32()),
            ("packets", pa.int64()),
            ("segments", pa.binary()),
        ]
    )


def pack_segments(items: list[PieceItem]) -> bytes:
    """``[(number, ts_ns, *segment fields), ...]`` as one value. marshal is the fastest encoding
    of tuples of str, int, bytes and bool both ways, and the only reader is the second stage of
    the same job, which runs the same Python."""
    return marshal.dumps(items)


def unpack_segments(blob: bytes) -> list[PieceItem]:
    items: list[PieceItem] = marshal.loads(blob)
    return items


def split_pieces(
    buf: CaptureBuffer,
    start: int,
    stop: int,
    place: tuple[int, int],
    routes: list[int],
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[Any]:  # pyarrow.RecordBatch
    """Arrow batches of the split's pieces (``PIECE_DDL``), then of its count rows; ``place`` is
    ``(file_index, split_index)``."""
    import pyarrow as pa

    schema = piece_arrow_schema()
    stats = CaptureStats()
    pending: dict[FlowKey, list[PieceItem]] = {}
    held = chunk = 0
    try:
        for number, ts_ns, seg in split_segments(buf, start, stop, stats):
            key = flow_key(seg)
            items = pending.get(key)
            if items is None:
                items = pending[key] = []
            items.append((number, ts_ns, *seg))
            held += len(seg.payload) + 64  # the tuple's own size, roughly
            if held >= chunk_bytes:
                yield _pieces(pending, place, chunk, routes, schema)
                pending, held, chunk = {}, 0, chunk + 1
    except CaptureError:
        pass  # not a capture (told before any packet is read): it owns no packets
    if pending:
        yield _pieces(pending, place, chunk, routes, schema)
    file_index, split_index = place
    count = stats.packets
    yield pa.RecordBatch.from_pydict(
        {
            "route": routes,
            "conn": [None] * len(routes),
            "file_index": [file_index] * len(routes),
            "split_index": [split_index] * len(routes),
            "chunk": [None] * len(routes),
            "packets": [count] * len(routes),
            "segments": [None] * len(routes),
        },
        schema=schema,
    )


def _pieces(
    pending: dict[FlowKey, list[PieceItem]],
    place: tuple[int, int],
    chunk: int,
    routes: list[int],
    schema: Any,
) -> Any:  # a pyarrow.RecordBatch
    import pyarrow as pa

    file_index, split_index = place
    keys = list(pending)
    return pa.RecordBatch.from_pydict(
        {
            "route": [routes[shard_of(key, len(routes))] for key in keys],
            "conn": [repr(key) for key in keys],
            "file_index": [file_index] * len(keys),
            "split_index": [split_index] * len(keys),
            "chunk": [chunk] * len(keys),
            "packets": [None] * len(keys),
            "segments": [pack_segments(pending[key]) for key in keys],
        },
        schema=schema,
    )
