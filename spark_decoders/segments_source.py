"""Stage one of the split plan: the ``kafka-pcap-segments`` data source.

One input partition per byte range of each file (``split_bytes``, default 64 MiB); each yields the
TCP segments of the packets it owns, with where they are (file, split, packet number within the
split). With ``.option("counts", "true")`` it yields instead one row per split with the number of
packets the split owns (a cheap pass: the packets are counted, not parsed; ``count_tasks`` tasks
share the splits), from which the second stage numbers packets as tshark does.
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


class CountPartition(InputPartition):
    """Several splits counted by one task (counting costs little next to a task's start-up)."""

    def __init__(self, index: int, splits: list[SplitPartition]) -> None:
        super().__init__(index)
        self.splits = splits


class KafkaPcapSegmentsDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def counts(self) -> bool:
        return (self.options.get("counts") or "false").lower() == "true"

    def schema(self) -> str:
        return COUNT_DDL if self.counts() else SEGMENT_DDL

    def reader(self, schema) -> DataSourceReader:
        from .datasource import expand_paths
        from .pipeline import first_timestamp

        paths = expand_paths(self.options.get("path") or "")
        files = sorted(paths, key=lambda p: (first_timestamp(p), p))
        split_bytes = int(self.options.get("split_bytes") or DEFAULT_SPLIT_BYTES)
        if not self.counts():
            return SegmentsReader(files, split_bytes)
        return CountsReader(files, split_bytes, int(self.options.get("count_tasks") or 1))


def plan_split_partitions(files: list[str], split_bytes: int) -> list[SplitPartition]:
    from .splits import plan_splits

    out = []
    for file_index, path in enumerate(files):
        for split_index, (start, stop) in enumerate(
            plan_splits(os.path.getsize(path), split_bytes)
        ):
            out.append(SplitPartition(path, file_index, split_index, start, stop))
    return out


class CountsReader(DataSourceReader):
    """One row per split: ``(file_index, split_index, packets)``, in ``tasks`` partitions."""

    def __init__(self, files: list[str], split_bytes: int, tasks: int) -> None:
        self.files = files
        self.split_bytes = split_bytes
        self.tasks = max(1, tasks)

    def partitions(self) -> list[CountPartition]:
        splits = plan_split_partitions(self.files, self.split_bytes)
        tasks = min(self.tasks, len(splits))
        bounds = [len(splits) * k // tasks for k in range(tasks + 1)]
        return [CountPartition(k, splits[bounds[k] : bounds[k + 1]]) for k in range(tasks)]

    def read(self, partition: CountPartition):
        from .pipeline import map_file
        from .splits import split_packet_count

        for split in partition.splits:
            buf = map_file(split.path)
            try:
                count = split_packet_count(buf, split.start, split.stop)
            except ValueError:
                count = 0  # not a capture: it owns no packets
            yield split.file_index, split.split_index, count


class SegmentsReader(DataSourceReader):
    def __init__(self, files: list[str], split_bytes: int) -> None:
        self.files = files
        self.split_bytes = split_bytes

    def partitions(self) -> list[SplitPartition]:
        return plan_split_partitions(self.files, self.split_bytes)

    def read(self, partition: SplitPartition):
        from .capture import CaptureStats
        from .pipeline import map_file
        from .splits import split_segments

        buf = map_file(partition.path)
        ids = (partition.file_index, partition.split_index)
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
