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
The pieces themselves are made by ``pieces``, which needs no Spark.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..decode.pipeline import capture_order, map_file
from .pieces import PIECE_DDL, split_pieces
from .shards import expand_paths
from .spark_tasks import as_spark_task
from .splits import plan_splits

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

NAME = "kafka-pcap-segments"
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024


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

    def reader(self, schema: StructType) -> DataSourceReader:
        paths = expand_paths(self.options.get("path") or "")
        files = list(capture_order(paths))
        split_bytes = int(self.options.get("split_bytes") or DEFAULT_SPLIT_BYTES)
        routes = [int(label) for label in (self.options.get("routes") or "0").split(",")]
        return SegmentsReader(files, split_bytes, routes)


def plan_split_partitions(files: list[str], split_bytes: int) -> list[SplitPartition]:
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

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, SplitPartition):
            raise TypeError(f"not a partition this reader planned: {partition!r:.80}")
        return as_spark_task(
            split_pieces(
                map_file(partition.path),
                partition.start,
                partition.stop,
                (partition.file_index, partition.split_index),
                self.routes,
            )
        )
