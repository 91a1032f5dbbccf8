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

import glob
import os
import weakref

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..output.tables import EXCHANGES, check_table, spark_ddl

NAME = "kafka-pcap"


def expand_paths(text: str) -> list[str]:
    """Comma-separated paths or globs, each expanded and the result sorted; missing ones raise."""
    out: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        matches = sorted(glob.glob(part)) if glob.has_magic(part) else [part]
        if not matches or not all(os.path.isfile(m) for m in matches):
            raise FileNotFoundError(f"no capture file matches {part!r}")
        out.extend(os.path.abspath(m) for m in matches)  # executors run in other directories
    return out


# The data sources registered in each session by this process. A session keeps what was
# registered in it; registering again on every read cost a few py4j calls and logged Spark's
# warning "The data source kafka-pcap replaced a previously registered data source" each query.
_REGISTERED: "weakref.WeakKeyDictionary[object, set[str]]" = weakref.WeakKeyDictionary()


def register_once(spark, source: type[DataSource]) -> None:
    """Register the data source class ``source`` in ``spark`` unless this process already did."""
    names = _REGISTERED.setdefault(spark, set())
    if source.name() not in names:
        _register_as_active(spark, source)
        names.add(source.name())


def _register_as_active(spark, source: type[DataSource]) -> None:
    """Register ``source`` in ``spark`` while it is the JVM's active session. Spark refuses a name
    that the *active* session already knows, so a session made by ``newSession()`` from one that
    had read captures could not register it (DATA_SOURCE_ALREADY_EXISTS), yet could not load it
    either: the registration itself is per session. The active session is restored after."""
    jsession = getattr(spark, "_jsparkSession", None)  # a classic (not Spark Connect) session
    if jsession is None:
        spark.dataSource.register(source)
        return
    sessions = spark.sparkContext._jvm.org.apache.spark.sql.SparkSession
    previous = sessions.getActiveSession()
    sessions.setActiveSession(jsession)
    try:
        spark.dataSource.register(source)
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()


class KafkaPcapDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def table(self) -> str:
        return check_table(self.options.get("table") or EXCHANGES)

    def schema(self) -> str:
        return spark_ddl(self.table())

    def reader(self, schema) -> "KafkaPcapReader":
        from ..api import codec_bundle

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
        self, paths: list[str], bundle, ports: frozenset[int], shards: int, table: str
    ) -> None:
        self.paths = paths
        self.bundle = bundle
        self.ports = ports
        self.shards = shards
        self.table = table

    def partitions(self) -> list[Shard]:
        return [Shard(i) for i in range(self.shards)]

    def read(self, partition: Shard):
        from .spark_tasks import as_spark_task

        return as_spark_task(self._batches(partition))

    def _batches(self, partition: Shard):
        """The shard's Arrow batches, made while it decodes (``stream_shard``): a task holds a
        few batches' worth of rows, not all of its shard's."""
        from ..api import stream_shard
        from ..output.tables import arrow_batches

        for rows in stream_shard(
            self.paths, self.bundle, self.ports, partition.index, self.shards, self.table
        ):
            yield from arrow_batches(rows, self.table)
