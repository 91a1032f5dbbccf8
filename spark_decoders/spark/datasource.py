"""The ``kafka-pcap`` Spark data source (PySpark 4's Python data source API).

    kraftwire.spark_decoders.register(spark)
    spark.read.format("kafka-pcap").option("schemas", DIR).load(PATH_OR_GLOB[,...])

Each input partition is one shard of the connections (by a hash of the endpoints: ``ownership``): it
reads every file, in the order of their first timestamps, and decodes only its own connections, with
the same ``FlowTable`` the local mode uses; packets of other shards are passed over from their raw
bytes where that is certain, without being parsed. Decoding dominates the cost, so shards spread it over every core,
connections that continue from one file to the next stay whole, and the rows equal local mode's.
The codecs generated from ``schemas`` travel inside the reader (a ``CodecBundle``), so executors on
other machines need neither the spec files nor a shared cache.

Options: ``schemas`` (DIR[,DIR...]), ``ports`` (server ports, default 9092,9093), ``shards``
(default: the number of CPUs of the planning process, at least 2), ``table`` (exchanges, the
default; frames or connections: see ``tables``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..output.tables import EXCHANGES, arrow_batches, check_table, spark_ddl
from .shards import codec_bundle, expand_paths, stream_shard
from .spark_tasks import as_spark_task

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from kraftwire.codegen.package_cache import CodecBundle

NAME = "kafka-pcap"


class KafkaPcapDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def table(self) -> str:
        return check_table(self.options.get("table") or EXCHANGES)

    def schema(self) -> str:
        return spark_ddl(self.table())

    def reader(self, schema: StructType) -> "KafkaPcapReader":
        paths = expand_paths(self.options.get("path") or self.options.get("paths") or "")
        ports = frozenset(int(p) for p in (self.options.get("ports") or "9092,9093").split(","))
        shards = int(self.options.get("shards") or max(2, os.cpu_count() or 2))
        bundle = codec_bundle(self.options.get("schemas"))
        return KafkaPcapReader(paths, bundle, ports, shards, self.table())


class Shard(InputPartition):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


class KafkaPcapReader(DataSourceReader):
    def __init__(
        self,
        paths: list[str],
        bundle: CodecBundle | None,
        ports: frozenset[int],
        shards: int,
        table: str,
    ) -> None:
        self.paths = paths
        self.bundle = bundle
        self.ports = ports
        self.shards = shards
        self.table = table

    def partitions(self) -> list[Shard]:
        return [Shard(i) for i in range(self.shards)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, Shard):
            raise TypeError(f"not a partition this reader planned: {partition!r:.80}")
        return as_spark_task(self._batches(partition))

    def _batches(self, partition: Shard) -> Iterator[Any]:  # pyarrow RecordBatches
        """The shard's Arrow batches, made while it decodes (``stream_shard``): a task holds a
        few batches' worth of rows, not all of its shard's."""
        for rows in stream_shard(
            self.paths, self.bundle, self.ports, partition.index, self.shards, self.table
        ):
            yield from arrow_batches(rows, self.table)
