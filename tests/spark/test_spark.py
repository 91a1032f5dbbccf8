"""Spark gives local mode's rows: the kafka-pcap data source, its shards as ``read_exchanges`` reads
them, and the split plan at any split size."""

from __future__ import annotations

import os
import random
import sys

import pytest

from captures import T0, conversation, fragmented, pcap_of, write
from corpus.corpus_data import spark_agrees_with_local
from kraftwire.spark_decoders import decode_local, read_exchanges, register
from kraftwire.spark_decoders.spark.reading import spark_rows_as_dicts
from kraftwire.spark_decoders.packets.layers import LINK_SLL2
from kraftwire.synthetic_capture import link_frame, pcapng_section
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges
from shared import shared_path

pytest.importorskip("pyspark")
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kraftwire-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Two files: several connections (IPv4 and IPv6), one continuing from the first file into the
    second (a rotated capture), in pcap and multi-interface pcapng."""
    tmp = tmp_path_factory.mktemp("spark")
    convs = [
        conversation(
            kraft_exchanges(14, seed=i, first_correlation_id=100 * i + 1),
            client=(f"10.0.0.{i + 1}", 40000 + i),
            t0=T0 + i * 10**6,
            mss=300 + 100 * i,
        )
        for i in range(4)
    ]
    convs.append(
        conversation(
            kraft_exchanges(14, seed=9), client=("fd00::9", 41000), server=("fd00::1", 9092)
        )
    )
    packets = sorted(p for c in convs for p in c.packets)
    half = len(packets) // 2
    first = write(tmp, "rotated-0.pcap", pcap_of(packets[:half]))
    second = write(
        tmp,
        "rotated-1.pcapng",
        pcapng_section(
            [(1, None), (LINK_SLL2, 9)],
            [
                (i % 2, ts, link_frame(1 if i % 2 == 0 else LINK_SLL2, ip))
                for i, (ts, ip) in enumerate(packets[half:])
            ],
        ),
    )
    return [first, second]


def test_data_source_equals_local_on_real_and_synthetic_captures(spark, synthetic, upstream):
    real = [
        str(shared_path("captures") / n)
        for n in ("ndpi-kafka.pcapng", "go-sniffer-kafka.pcap", "arkime-kafka.pcap")
    ]
    schemas = str(shared_path("kafka-schemas"))
    local = decode_local(real, schemas=schemas)
    assert len(local) == 20
    assert spark_rows_as_dicts(read_exchanges(spark, real, schemas=schemas)) == local
    local = decode_local(synthetic)
    assert sum(r["status"] == "ok" for r in local) == 5 * 14  # the rotated connection is stitched
    assert spark_rows_as_dicts(read_exchanges(spark, synthetic, shards=3)) == local
    register(spark)  # the data source itself, as a user reads through it
    for shards in ("1", "3"):
        frame = (
            spark.read.format("kafka-pcap")
            .option("shards", shards)
            .load(",".join(os.path.abspath(p) for p in synthetic))
        )
        assert spark_rows_as_dicts(frame) == local
    frame = spark.read.format("kafka-pcap").option("schemas", schemas).load(",".join(real))
    assert spark_rows_as_dicts(frame) == decode_local(real, schemas=schemas)


def test_read_exchanges_plans_no_python_data_source(spark, synthetic, monkeypatch):
    """``read_exchanges`` reads the data source's shards through a ``mapInArrow`` over the shard
    numbers, not through the data source: Spark plans a Python data source in Python planner
    processes (its schema, reader and partitions), seconds of a command's start. One shard per
    task slot unless told otherwise."""
    import weakref

    from pyspark.sql.datasource import DataSourceRegistration

    from kraftwire.spark_decoders.spark import reading

    def refuse(self, source):
        raise AssertionError(f"registered {source.name()}")

    monkeypatch.setattr(DataSourceRegistration, "register", refuse)
    monkeypatch.setattr(reading, "_REGISTERED", weakref.WeakKeyDictionary())
    local = decode_local(synthetic)
    slots = spark.sparkContext.defaultParallelism
    for shards, tasks in ((None, slots), (3, 3), (1, 1)):
        frame = read_exchanges(spark, synthetic, shards=shards, split_bytes=0)
        assert frame.rdd.getNumPartitions() == tasks
        assert spark_rows_as_dicts(frame) == local
    # A shard gets at most SHARD_MAX_BYTES of capture (a task's rows are one result in the
    # driver's JVM), in whole rounds of the task slots.
    total = sum(os.path.getsize(path) for path in synthetic)
    for most, tasks in (
        (total, slots),
        (-(-total // slots), slots),
        (total // (slots + 1), 2 * slots),
    ):
        monkeypatch.setattr(reading, "SHARD_MAX_BYTES", most)
        frame = read_exchanges(spark, synthetic, split_bytes=0)
        assert frame.rdd.getNumPartitions() == tasks
        assert spark_rows_as_dicts(frame) == local
    with pytest.raises(ValueError, match="shards must be at least 1"):
        reading.read_shards(spark, synthetic, None, frozenset({9092}), 0)


def test_real_clients_corpus_equals_local(spark):
    """The captures of Kafka's own clients, kafka-python and librdkafka (tests/corpus)."""
    assert spark_agrees_with_local(spark, shards=2) > 0


def test_a_session_registers_each_data_source_once(spark, synthetic, monkeypatch):
    """A session's reads register each data source once (registering again logged Spark's
    "replaced a previously registered data source" warning on every read); this process's record
    of ``spark``'s registrations starts empty here."""
    import weakref

    from pyspark.sql.datasource import DataSourceRegistration

    from kraftwire.spark_decoders.spark import reading

    registered = []
    original = DataSourceRegistration.register

    def counting(self, source):
        registered.append(source.name())
        return original(self, source)

    monkeypatch.setattr(DataSourceRegistration, "register", counting)
    monkeypatch.setattr(reading, "_REGISTERED", weakref.WeakKeyDictionary())
    local = decode_local(synthetic)
    for _ in range(2):
        register(spark)
        frame = spark.read.format("kafka-pcap").load(",".join(synthetic))
        assert spark_rows_as_dicts(frame) == local
        assert spark_rows_as_dicts(read_exchanges(spark, synthetic, split_bytes=4096)) == local
    assert registered == ["kafka-pcap", "kafka-pcap-segments"]


def test_a_new_session_reads_after_its_parent_did(spark, synthetic):
    """``newSession()`` shares the parent's JVM but not its registered data sources; Spark checks
    a name against the active session (still the parent), so registering in the child used to
    fail with DATA_SOURCE_ALREADY_EXISTS. Both read after, and the parent stays the active one."""
    from pyspark.sql import SparkSession

    local = decode_local(synthetic)
    assert spark_rows_as_dicts(read_exchanges(spark, synthetic)) == local
    child = spark.newSession()
    assert spark_rows_as_dicts(read_exchanges(child, synthetic)) == local
    assert spark_rows_as_dicts(read_exchanges(child, synthetic, split_bytes=4096)) == local
    assert spark_rows_as_dicts(read_exchanges(spark, synthetic)) == local
    assert SparkSession.getActiveSession() is spark


@pytest.mark.parametrize("split_bytes", [997, 4096, 1 << 30])
def test_split_plan_equals_unsplit(spark, synthetic, split_bytes):
    local = decode_local(synthetic)
    rows = spark_rows_as_dicts(read_exchanges(spark, synthetic, split_bytes=split_bytes))
    assert rows == local


def test_large_captures_take_the_split_plan_unless_told_not_to(spark, synthetic, monkeypatch):
    """A data source shard holds its rows until it ends; above ``SPLIT_ABOVE_BYTES`` of capture
    ``read_exchanges`` streams them through the split plan instead (thresholds shrunk here so the
    small captures count as large), and ``split_bytes=0`` keeps the data source."""
    from kraftwire.spark_decoders.spark import reading

    chosen: list[int] = []
    original = reading.read_split_exchanges

    def recording(spark, paths, bundle, ports, split_bytes, output="exchanges"):
        chosen.append(split_bytes)
        return original(spark, paths, bundle, ports, split_bytes, output)

    monkeypatch.setattr(reading, "read_split_exchanges", recording)
    local = decode_local(synthetic)
    total = sum(os.path.getsize(path) for path in synthetic)
    monkeypatch.setattr(reading, "SPLIT_ABOVE_BYTES", total)  # not above: the data source
    assert spark_rows_as_dicts(read_exchanges(spark, synthetic)) == local
    assert chosen == []
    monkeypatch.setattr(reading, "SPLIT_ABOVE_BYTES", total - 1)
    monkeypatch.setattr(reading, "SPLIT_BYTES", 997)
    assert spark_rows_as_dicts(read_exchanges(spark, synthetic)) == local
    assert chosen == [997]
    assert spark_rows_as_dicts(read_exchanges(spark, synthetic, split_bytes=0)) == local
    assert chosen == [997]


@pytest.mark.parametrize("table", ["frames", "connections"])
def test_frame_and_connection_tables_equal_local(spark, synthetic, upstream, table):
    real = [
        str(shared_path("captures") / n)
        for n in ("ndpi-kafka.pcapng", "go-sniffer-kafka.pcap", "arkime-kafka.pcap")
    ]
    for paths in (real, synthetic):
        local = decode_local(paths, table=table)
        assert local
        shards = read_exchanges(spark, paths, shards=3, table=table)
        assert spark_rows_as_dicts(shards, table) == local
        splits = read_exchanges(spark, paths, split_bytes=997, table=table)
        assert spark_rows_as_dicts(splits, table) == local
    if table == "connections":  # the connection rotated from the first file into the second
        assert len(local) == 5 and all(row["requests"] == 14 for row in local)


@pytest.fixture(scope="module")
def fragmented_capture(tmp_path_factory):
    """IPv4 and IPv6 conversations whose data packets all travel as shuffled IP fragments (with
    duplicates), so datagrams straddle the split boundaries."""
    convs = [
        conversation(kraft_exchanges(14, seed=20 + i), *ends, t0=T0 + i * 10**5, mss=1400)
        for i, ends in enumerate(
            [
                (("10.0.0.1", 40001), ("10.0.0.2", 9093)),
                (("fd00::1", 40002), ("fd00::2", 9092)),
            ]
        )
    ]
    packets = []
    for index, conv in enumerate(convs):
        packets += fragmented(conv.packets, 16, random.Random(index))[0]
    packets.sort(key=lambda p: p[0])
    return [write(tmp_path_factory.mktemp("frag"), "frag.pcap", pcap_of(packets))]


@pytest.mark.parametrize("split_bytes", [None, 997])
def test_fragmented_datagrams_across_splits_equal_local(spark, fragmented_capture, split_bytes):
    local = decode_local(fragmented_capture)
    assert len(local) == 28 and all(row["status"] == "ok" for row in local)
    frame = read_exchanges(spark, fragmented_capture, split_bytes=split_bytes)
    assert spark_rows_as_dicts(frame) == local


def test_route_labels_land_in_their_partitions(spark):
    """The split plan's second stage gets one route per partition: Spark's own hash partitioning
    puts ``partition_labels(n)[p]`` in partition p (balance depends on it, the rows do not)."""
    from pyspark.sql import functions as F

    from kraftwire.spark_decoders.spark.routes import partition_labels

    for partitions in (1, 2, 8, 13):
        labels = partition_labels(partitions)
        frame = (
            spark.createDataFrame([(label,) for label in labels], "route INT")
            .repartition(partitions, "route")
            .select("route", F.spark_partition_id().alias("partition"))
        )
        placed = {row.route: row.partition for row in frame.collect()}
        assert [placed[label] for label in labels] == list(range(partitions))


@pytest.mark.parametrize("table", ["exchanges", "frames", "connections"])
def test_lines_encoded_in_the_tasks_equal_local_jsonl(
    spark, synthetic, fragmented_capture, upstream, table, monkeypatch
):
    """``kraftwire decode CAP --spark --format jsonl``'s lines, encoded in Spark's tasks and put in
    order by the driver, are local mode's lines of that capture, byte for byte, whatever the batches
    (several per task, or one); a capture the split plan would take is left to it (None)."""
    from kraftwire.spark_decoders.cli import jsonl_line
    from kraftwire.spark_decoders.spark import encoded, reading

    real = str(shared_path("captures") / "ndpi-kafka.pcapng")
    schemas = str(shared_path("kafka-schemas"))
    for path, specs in ((synthetic[1], None), (fragmented_capture[0], None), (real, schemas)):
        local = [jsonl_line(row, table) for row in decode_local([path], specs, table=table)]
        assert local
        lines = reading.read_encoded_lines(spark, path, jsonl_line, specs, table=table)
        assert lines == local
    # Many batches, as two tasks' worth in reverse: the keys put the lines back in order (here in
    # this process: Spark's workers import their own ``encoded``).
    import pyarrow as pa

    monkeypatch.setattr(encoded, "BATCH_ROWS", 3)
    rows = decode_local([real], schemas, table=table)
    half = len(rows) // 2
    batches = [
        batch
        for part in (rows[half:], rows[:half])
        for batch in encoded.encoded_batches(part[::-1], jsonl_line, table)
    ]
    assert len(batches) > 2
    assert encoded.lines_in_order(pa.Table.from_batches(batches)) == local
    monkeypatch.setattr(reading, "SPLIT_ABOVE_BYTES", os.path.getsize(real) - 1)
    assert reading.read_encoded_lines(spark, real, jsonl_line, schemas, table=table) is None
