"""Reading captures in a Spark session: ``register`` the ``kafka-pcap`` data source,
``read_exchanges`` through its shards (``read_shards``) or through the split plan, and the collected
rows as local mode's.

This module imports pyspark (the data sources are Spark classes); ``kraftwire.spark_decoders``
imports it only when ``register`` or ``read_exchanges`` is first asked for, since Spark is an
optional extra.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource

from ..decode.pipeline import capture_order
from kraftwire.codegen.package_cache import CodecBundle
from ..kafka.connection import DEFAULT_SERVER_PORTS
from ..output.sightings import merge_sightings
from ..output.tables import (
    EXCHANGES,
    arrow_batches,
    check_table,
    sort_key,
    spark_ddl,
    utc_aware,
)
from .datasource import KafkaPcapDataSource
from .encoded import ENCODED_DDL, Encode, encoded_batches, lines_in_order
from .routes import partition_labels
from .segments_source import NAME as SEGMENTS
from .segments_source import KafkaPcapSegmentsDataSource
from .shards import check_spark_paths, codec_bundle, expand_paths, stream_shard
from .spark_tasks import as_spark_task
from .stitch import decode_pieces, stage_two_partitions


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("kafka-pcap")`` available in this session."""
    register_once(spark, KafkaPcapDataSource)


# The data sources registered in each session by this process. A session keeps what was
# registered in it; registering again on every read cost a few py4j calls and logged Spark's
# warning "The data source kafka-pcap replaced a previously registered data source" each query.
_REGISTERED: "weakref.WeakKeyDictionary[object, set[str]]" = weakref.WeakKeyDictionary()


def register_once(spark: SparkSession, source: type[DataSource]) -> None:
    """Register the data source class ``source`` in ``spark`` unless this process already did."""
    names = _REGISTERED.setdefault(spark, set())
    if source.name() not in names:
        _register_as_active(spark, source)
        names.add(source.name())


def _register_as_active(spark: SparkSession, source: type[DataSource]) -> None:
    """Register ``source`` in ``spark`` while it is the JVM's active session. Spark refuses a name
    that the *active* session already knows, so a session made by ``newSession()`` from one that
    had read captures could not register it (DATA_SOURCE_ALREADY_EXISTS), yet could not load it
    either: the registration itself is per session. The active session is restored after."""
    jsession = getattr(spark, "_jsparkSession", None)  # a classic (not Spark Connect) session
    if jsession is None:
        spark.dataSource.register(source)
        return
    jvm: Any = spark.sparkContext._jvm  # py4j's gateway, untyped (None only once stopped)
    sessions = jvm.org.apache.spark.sql.SparkSession
    previous = sessions.getActiveSession()
    sessions.setActiveSession(jsession)
    try:
        spark.dataSource.register(source)
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()


# Captures above this many bytes in all are read through the split plan unless told otherwise:
# every data source shard reads all of the input (passing over the other shards' packets), so its
# reading grows with the number of cores, while the split plan reads each byte once, at about
# twice the CPU of the decode.
SPLIT_ABOVE_BYTES = 256 * 1024 * 1024
SPLIT_BYTES = 64 * 1024 * 1024  # the byte ranges of the split plan chosen for large captures


def read_exchanges(
    spark: SparkSession,
    paths: list[str],
    schemas: str | None = None,
    ports: frozenset[int] = DEFAULT_SERVER_PORTS,
    shards: int | None = None,
    split_bytes: int | None = None,
    table: str = EXCHANGES,
) -> DataFrame:
    """A DataFrame of the exchanges in ``paths`` (or of their frames or connections: ``table``).

    Through the ``kafka-pcap`` data source's connection shards (``read_shards``: every file read
    by every shard; ``shards`` None: ``default_shards``), or with ``split_bytes``
    through the split plan (``stitch``): files cut into byte ranges read in parallel, connections
    stitched across them in a second stage. Both give local mode's rows. ``split_bytes`` None
    chooses: the split plan (``SPLIT_BYTES``) when the captures hold more than
    ``SPLIT_ABOVE_BYTES`` in all, so that no task holds more rows than fit in memory; 0 means the
    shards whatever the size.
    """
    check_spark_paths(paths)
    if split_bytes is None and _total_bytes(paths) > SPLIT_ABOVE_BYTES:
        split_bytes = SPLIT_BYTES
    if split_bytes:
        return read_split_exchanges(
            spark,
            [os.path.abspath(p) for p in paths],
            codec_bundle(schemas),
            ports,
            split_bytes,
            check_table(table),
        )
    return read_shards(
        spark,
        expand_paths(",".join(paths)),
        codec_bundle(schemas),
        ports,
        shards or default_shards(spark, paths),
        check_table(table),
    )


# The most capture bytes a shard of ``read_shards`` gets when the shards are not given. A task's
# rows reach the driver's JVM as one result, held twice while it is read (serialized and not): a
# 76 MiB capture in one task (410 MB of jsonl lines) ran the default 1 GiB heap out of memory, and
# Spark then waits forever. Every shard reads the whole file, but passing over the others'
# packets costs little (bench/decode.py: two shards' CPU within 0.1 s of one's).
SHARD_MAX_BYTES = 16 * 1024 * 1024


def default_shards(spark: SparkSession, paths: list[str]) -> int:
    """One shard per task slot, or a multiple of that (so that every round of tasks fills the
    slots) giving each at most ``SHARD_MAX_BYTES`` of the captures ``paths``."""
    slots = spark.sparkContext.defaultParallelism
    rounds = -(-_total_bytes(paths) // (slots * SHARD_MAX_BYTES))
    return slots * max(1, rounds)


def read_shards(
    spark: SparkSession,
    paths: list[str],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    shards: int,
    output: str = EXCHANGES,
    encode: Encode | None = None,
) -> DataFrame:
    """The ``kafka-pcap`` data source's shards (``stream_shard``), one Spark task each, as a
    ``mapInArrow`` over the shard numbers instead of a data source read. The tasks and rows are
    the same; what goes is the data source's planning: Spark runs a Python data source's
    ``schema`` and ``reader`` and pickles its partitions in Python planner processes, three round
    trips between the JVM and Python per query (about 2.5 CPU seconds and 4-5 s of a command's
    wall time on two busy cores), where a ``mapInArrow`` function is pickled by this process.
    With ``encode``, the rows encoded in the tasks (``encoded``) instead of typed columns."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, not {shards}")

    def shard_task(batches: Iterator[Any]) -> Iterator[Any]:  # pyarrow.RecordBatch
        return as_spark_task(_shard_batches(batches, paths, bundle, ports, shards, output, encode))

    ddl = spark_ddl(output) if encode is None else ENCODED_DDL
    return spark.range(0, shards, 1, shards).mapInArrow(shard_task, ddl)


def _shard_batches(
    batches: Iterator[Any],
    paths: list[str],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    shards: int,
    output: str,
    encode: Encode | None,
) -> Iterator[Any]:
    """The Arrow batches of the shards whose numbers ``batches`` (of ``spark.range``) hold."""
    for batch in batches:
        for shard in batch.column(0).to_pylist():
            for rows in stream_shard(paths, bundle, ports, shard, shards, output):
                if encode is None:
                    yield from arrow_batches(rows, output)
                else:
                    yield from encoded_batches(rows, encode, output)


def read_encoded_lines(
    spark: SparkSession,
    path: str,
    encode: Encode,
    schemas: str | None = None,
    ports: frozenset[int] = DEFAULT_SERVER_PORTS,
    table: str = EXCHANGES,
) -> list[bytes] | None:
    """``encode(row, table)`` of each row of the capture ``path``, in local mode's order, encoded
    in the Spark tasks (``encoded``), in ``default_shards``. None when ``read_exchanges`` would
    take the split plan for it (its stage two makes typed rows)."""
    check_spark_paths([path])
    if _total_bytes([path]) > SPLIT_ABOVE_BYTES:
        return None
    frame = read_shards(
        spark,
        expand_paths(path),
        codec_bundle(schemas),
        ports,
        default_shards(spark, [path]),
        check_table(table),
        encode,
    )
    return lines_in_order(frame.toArrow())


def read_split_exchanges(
    spark: SparkSession,
    paths: list[str],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    split_bytes: int,
    output: str = EXCHANGES,
) -> DataFrame:
    """A DataFrame of the ``output`` rows of ``paths``, read in splits of ``split_bytes``."""
    register_once(spark, KafkaPcapSegmentsDataSource)
    files = capture_order(expand_paths(",".join(paths)))
    # A fixed number of partitions, so adaptive execution does not merge them back into a few;
    # one route label per partition, so none gets two routes' work and another none.
    partitions = stage_two_partitions(
        sum(os.path.getsize(path) for path in files), spark.sparkContext.defaultParallelism
    )
    pieces = (
        spark.read.format(SEGMENTS)
        .option("split_bytes", str(split_bytes))
        .option("routes", ",".join(str(label) for label in partition_labels(partitions)))
        .load(",".join(files))
    )

    def stage_two(batches: Iterator[Any]) -> Iterator[Any]:  # pyarrow.RecordBatch
        return as_spark_task(decode_pieces(batches, files, bundle, ports, output))

    return (
        pieces.repartition(partitions, "route")
        .sortWithinPartitions(F.col("conn").asc_nulls_first(), "file_index", "split_index", "chunk")
        .mapInArrow(stage_two, spark_ddl(output))
    )


def _total_bytes(paths: list[str]) -> int:
    """The size of the captures ``paths`` names (globs expanded, as the data source does)."""
    return sum(os.path.getsize(path) for path in expand_paths(",".join(paths)))


def spark_rows_as_dicts(frame: DataFrame, table: str = EXCHANGES) -> list[dict[str, Any]]:
    """Collected rows as local mode's dicts (UTC-aware timestamps), in local mode's order, the
    sightings of an exchange merged as ``decode_local`` merges them (the DataFrame itself has a
    row per capture that saw an exchange)."""
    rows = [utc_aware(row, table) for row in frame.toArrow().to_pylist()]
    rows.sort(key=sort_key(table))
    return merge_sightings(rows) if table == EXCHANGES else rows
