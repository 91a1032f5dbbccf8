"""Stage one of the split plan: the ``kafka-pcap-segments`` data source.

One input partition per byte range of each file (``split_bytes``, default 64 MiB); each yields the
TCP segments of the packets it owns, with where they are (file, split, packet number within the
split). With ``.option("counts", "true")`` it yields instead one row per split with the number of
packets the split owns (a cheap pass: the packets are counted, not parsed), from which the second
stage numbers packets as tshark does.
"""

from __future__ import annotations

import os

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

NAME = "kafka-pcap-segments"
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
SEGMENT_DDL = (
    "file_index INT, split_index INT, number BIGINT, ts_ns BIGINT, "
    "src STRING, sport INT, dst STRING, dport INT, seq BIGINT, ack BIGINT, flags INT, "
    "payload BINARY, missing INT, fragment BOOLEAN"
)
COUNT_DDL = "file_index INT, split_index INT, packets BIGINT"
_BATCH = 8192


def segment_arrow_schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("file_index", pa.int32()),
            ("split_index", pa.int32()),
            ("number", pa.int64()),
            ("ts_ns", pa.int64()),
            ("src", pa.string()),
            ("sport", pa.int32()),
            ("dst", pa.string()),
            ("dport", pa.int32()),
            ("seq", pa.int64()),
            ("ack", pa.int64()),
            ("flags", pa.int32()),
            ("payload", pa.binary()),
            ("missing", pa.int32()),
            ("fragment", pa.bool_()),
        ]
    )


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

    def counts(self) -> bool:
        return (self.options.get("counts") or "false").lower() == "true"

    def schema(self) -> str:
        return COUNT_DDL if self.counts() else SEGMENT_DDL

    def reader(self, schema) -> "SegmentsReader":
        from .datasource import expand_paths
        from .pipeline import first_timestamp

        paths = expand_paths(self.options.get("path") or "")
        files = sorted(paths, key=lambda p: (first_timestamp(p), p))
        split_bytes = int(self.options.get("split_bytes") or DEFAULT_SPLIT_BYTES)
        return SegmentsReader(files, split_bytes, self.counts())


class SegmentsReader(DataSourceReader):
    def __init__(self, files: list[str], split_bytes: int, counts: bool = False) -> None:
        self.files = files
        self.split_bytes = split_bytes
        self.counts = counts

    def partitions(self) -> list[SplitPartition]:
        from .splits import plan_splits

        out = []
        for file_index, path in enumerate(self.files):
            for split_index, (start, stop) in enumerate(
                plan_splits(os.path.getsize(path), self.split_bytes)
            ):
                out.append(SplitPartition(path, file_index, split_index, start, stop))
        return out

    def read(self, partition: SplitPartition):
        from .capture import CaptureStats
        from .pipeline import map_file
        from .splits import split_packet_count, split_segments

        buf = map_file(partition.path)
        ids = (partition.file_index, partition.split_index)
        if self.counts:
            try:
                count = split_packet_count(buf, partition.start, partition.stop)
            except ValueError:
                count = 0  # not a capture: it owns no packets
            yield (*ids, count)
            return
        schema = segment_arrow_schema()
        rows: list[tuple] = []
        try:
            for number, ts_ns, seg in split_segments(
                buf, partition.start, partition.stop, CaptureStats()
            ):
                rows.append((*ids, number, ts_ns, *seg))
                if len(rows) == _BATCH:
                    yield _batch(rows, schema)
                    rows = []
        except ValueError:
            pass  # not a capture: it owns no packets
        if rows:
            yield _batch(rows, schema)


def _batch(rows: list[tuple], schema):
    """Rows (tuples in the schema's column order) as one Arrow batch, built column by column."""
    import pyarrow as pa

    columns = zip(*rows)
    return pa.RecordBatch.from_arrays(
        [pa.array(values, type=field.type) for values, field in zip(columns, schema)],
        schema=schema,
    )
