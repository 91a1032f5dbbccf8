"""Stage two of the split plan: connections stitched across splits and files, then decoded.

``read_split_exchanges`` counts each split's packets with ``kafka-pcap-segments`` (a cheap first pass)
and turns the counts into the number of packets before each split, then reads the segments, groups
them by connection endpoints, and feeds each group in capture order to a ``FlowTable`` (the local
mode's), so the rows are local mode's rows.
"""

from __future__ import annotations

from itertools import accumulate

from .layers import Segment
from .tables import EXCHANGES, spark_ddl


def packet_offsets(counts: list[tuple[int, int, int]]) -> dict[tuple[int, int], int]:
    """``{(file, split): packets in the file's earlier splits}`` from ``(file, split, count)``."""
    out: dict[tuple[int, int], int] = {}
    by_file: dict[int, list[tuple[int, int]]] = {}
    for file_index, split_index, count in counts:
        by_file.setdefault(file_index, []).append((split_index, count))
    for file_index, splits in by_file.items():
        splits.sort()
        before = [0, *accumulate(count for _, count in splits)]
        for (split_index, _), offset in zip(splits, before):
            out[(file_index, split_index)] = offset
    return out


def decode_group(
    table,
    files: tuple[str, ...],
    offsets: dict,
    bundle,
    ports: frozenset[int],
    output: str = EXCHANGES,
):
    """The rows of the ``output`` table for one connection group (a pyarrow Table of segment rows)."""
    from .bodies import BodyDecoder
    from .codecs import load_codecs
    from .exchanges import packet_ref
    from .pipeline import DecodeOptions, FlowTable
    from .tables import arrow_schema, to_arrow

    rows: list[dict] = []
    flows = FlowTable(
        files,
        BodyDecoder(load_codecs(bundle)),
        rows.append,
        DecodeOptions(server_ports=ports, table=output),
    )
    ordered = table.sort_by(
        [("file_index", "ascending"), ("split_index", "ascending"), ("number", "ascending")]
    )
    # Where each packet is, then the Segment's fields in order, as columns zipped into rows.
    place = ("file_index", "split_index", "number", "ts_ns")
    columns = [ordered.column(name).to_pylist() for name in place + Segment._fields]
    for file_index, split_index, number, ts_ns, *fields in zip(*columns):
        number += offsets[(file_index, split_index)]
        flows.segment(Segment(*fields), packet_ref(file_index, number), ts_ns)
    flows.finish()
    import pyarrow as pa

    return pa.Table.from_batches([to_arrow(rows, output)], schema=arrow_schema(output))


def read_split_exchanges(
    spark,
    paths: list[str],
    bundle,
    ports: frozenset[int],
    split_bytes: int,
    output: str = EXCHANGES,
):
    from pyspark.sql import functions as F

    from .datasource import expand_paths
    from .pipeline import first_timestamp
    from .segments_source import KafkaPcapSegmentsDataSource

    spark.dataSource.register(KafkaPcapSegmentsDataSource)
    files = tuple(sorted(expand_paths(",".join(paths)), key=lambda p: (first_timestamp(p), p)))

    def splits(counts: bool):
        return (
            spark.read.format("kafka-pcap-segments")
            .option("split_bytes", str(split_bytes))
            .option("counts", str(counts).lower())
            .option("count_tasks", str(spark.sparkContext.defaultParallelism))
            .load(",".join(files))
        )

    # A cheap first pass counts each split's packets; the segments are read once, by the shuffle.
    counts = splits(counts=True).collect()
    offsets = packet_offsets([(r.file_index, r.split_index, r.packets) for r in counts])

    def stage_two(table):
        return decode_group(table, files, offsets, bundle, ports, output)

    # Both directions of a connection in one group: its endpoints in a canonical order.
    near = F.struct(F.col("src").alias("ip"), F.col("sport").alias("port"))
    far = F.struct(F.col("dst").alias("ip"), F.col("dport").alias("port"))
    # More partitions than cores, so a core that finishes early takes another (connections differ
    # in size); a fixed number, so adaptive execution does not merge them back into a few.
    partitions = max(2, 4 * spark.sparkContext.defaultParallelism)
    return (
        splits(counts=False)
        .withColumns({"end_a": F.least(near, far), "end_b": F.greatest(near, far)})
        .repartition(partitions, "end_a", "end_b")
        .groupBy("end_a", "end_b")
        .applyInArrow(stage_two, spark_ddl(output))
    )
