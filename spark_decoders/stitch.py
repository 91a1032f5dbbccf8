"""Stage two of the split plan: connections stitched across splits and files, then decoded.

``read_split_exchanges`` reads segments with ``kafka-pcap-segments``, turns each split's packet
count into the number of packets before it, groups the segments by connection endpoints, and feeds
each group in capture order to a ``FlowTable`` (the local mode's), so the rows are local mode's rows.
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
    segments = (
        spark.read.format("kafka-pcap-segments")
        .option("split_bytes", str(split_bytes))
        .load(",".join(files))
    ).cache()
    counts = (
        segments.where(F.col("flow").isNull())
        .select("file_index", "split_index", "number")
        .collect()
    )
    offsets = packet_offsets([(r.file_index, r.split_index, r.number) for r in counts])

    def stage_two(table):
        return decode_group(table, files, offsets, bundle, ports, output)

    return (
        segments.where(F.col("flow").isNotNull())
        .groupBy("flow")
        .applyInArrow(stage_two, spark_ddl(output))
    )
