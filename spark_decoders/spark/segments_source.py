"""Stage one of the split plan: the ``kafka-pcap-segments`` data source.

One input partition per byte range of each file (``split_bytes``, default 64 MiB). Each reads the
TCP segments of the packets its split owns (``splits``) and yields them in *pieces*: one row per
connection holding that connection's segments of the split, packed into one binary value, and
routed (``route``) to the second-stage partition that decodes the connection. Spark then moves a
few large values per split and connection instead of a row per packet, which is what made the
shuffle cost more than the decoding it feeds.

Each split also yields its packet count, once for every route, so that every second-stage
partition learns how many packets come before each split (tshark numbers packets from the start of
the file) without a counting pass of its own.

Options: ``split_bytes``; ``routes``, the route labels (``routes.partition_labels``) as a
comma-separated list: a connection takes ``labels[ownership.shard_of(connection, len(labels))]``.
"""

from __future__ import annotations

import marshal
import os
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

NAME = "kafka-pcap-segments"
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
# A split flushes its pieces when it holds this many payload bytes: memory stays bounded however
# large the split, and a connection's pieces are ordered by (file, split, chunk).
CHUNK_BYTES = 16 * 1024 * 1024
# ``conn`` is the connection's canonical endpoints; a count row has none (and no ``segments``), a
# piece no ``packets``.
PIECE_DDL = (
    "route INT, conn STRING, file_index INT, split_index INT, chunk INT, "
    "packets BIGINT, segments BINARY"
)


def piece_arrow_schema():
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


def pack_segments(items: list[tuple]) -> bytes:
    """``[(number, ts_ns, *segment fields), ...]`` as one value. marshal is the fastest encoding
    of tuples of str, int, bytes and bool both ways, and the only reader is the second stage of
    the same job, which runs the same Python."""
    return marshal.dumps(items)


def unpack_segments(blob: bytes) -> list[tuple]:
    return marshal.loads(blob)


class SplitPartition(InputPartition):
    def __init__(self, path: str, file_index: int, split_index: int, start: int, stop: int) -> None:
        super().__init__((file_index, split_index))
        self.path, self.file_index, self.split_index, self.start, self.stop = (
            path,
            file_index,
            split_index,
            start,
            stop,
        )


class KafkaPcapSegmentsDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return PIECE_DDL

    def reader(self, schema) -> DataSourceReader:
        from .datasource import expand_paths
        from ..decode.pipeline import first_timestamp

        paths = expand_paths(self.options.get("path") or "")
        files = sorted(paths, key=lambda p: (first_timestamp(p), p))
        split_bytes = int(self.options.get("split_bytes") or DEFAULT_SPLIT_BYTES)
        routes = [int(label) for label in (self.options.get("routes") or "0").split(",")]
        return SegmentsReader(files, split_bytes, routes)


def plan_split_partitions(files: list[str], split_bytes: int) -> list[SplitPartition]:
    from .splits import plan_splits

    out = []
    for file_index, path in enumerate(files):
        for split_index, (start, stop) in enumerate(
            plan_splits(os.path.getsize(path), split_bytes)
        ):
            out.append(SplitPartition(path, file_index, split_index, start, stop))
    return out


class SegmentsReader(DataSourceReader):
    def __init__(self, files: list[str], split_bytes: int, routes: list[int]) -> None:
        self.files = files
        self.split_bytes = split_bytes
        self.routes = routes

    def partitions(self) -> list[SplitPartition]:
        return plan_split_partitions(self.files, self.split_bytes)

    def read(self, partition: SplitPartition):
        from ..decode.pipeline import map_file
        from .spark_tasks import as_spark_task

        return as_spark_task(
            split_pieces(
                map_file(partition.path),
                partition.start,
                partition.stop,
                (partition.file_index, partition.split_index),
                self.routes,
            )
        )


def split_pieces(
    buf,
    start: int,
    stop: int,
    place: tuple[int, int],
    routes: list[int],
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator:
    """Arrow batches of the split's pieces (``PIECE_DDL``), then of its count rows; ``place`` is
    ``(file_index, split_index)``."""
    import pyarrow as pa

    from ..packets.capture import CaptureError, CaptureStats
    from ..decode.pipeline import flow_key
    from .splits import split_segments

    schema = piece_arrow_schema()
    stats = CaptureStats()
    pending: dict[tuple, list[tuple]] = {}
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


def _pieces(pending: dict[tuple, list[tuple]], place, chunk: int, routes: list[int], schema):
    import pyarrow as pa

    from .ownership import shard_of

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
