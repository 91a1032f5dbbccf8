"""Stage two of the split plan: connections stitched across splits and files, then decoded.

Stage one (``segments_source``) yields, per split, one *piece* per connection (its segments there)
and the split's packet count. ``read_split_exchanges`` sends each piece to the partition of its
route (every partition also gets every split's count), sorts each partition so that the counts come
first and each connection's pieces follow one another in capture order, and decodes a partition with
one streaming pass: a ``FlowTable`` (the local mode's) fed one connection at a time, so the rows are
local mode's rows and a task holds one Arrow batch of pieces at a time, not its whole input.
"""

from __future__ import annotations

import os
from itertools import accumulate
from typing import Iterable, Iterator

from .tables import EXCHANGES, spark_ddl

# Second-stage partitions. Each Spark task of Python code costs about 70 ms (half of it the JVM's,
# which two cores hardly share out): a task should decode at least ``BYTES_PER_PARTITION`` of
# capture, seconds of work. Beyond one per core, more partitions balance the cores better (a core
# that finishes early takes another; connections differ in size), up to ``MAX_PARTITIONS_PER_CORE``.
BYTES_PER_PARTITION = 64 * 1024 * 1024
MAX_PARTITIONS_PER_CORE = 4


def stage_two_partitions(capture_bytes: int, cores: int) -> int:
    """How many partitions decode ``capture_bytes`` of captures on ``cores`` cores."""
    wanted = capture_bytes // BYTES_PER_PARTITION
    return max(1, cores, min(wanted, MAX_PARTITIONS_PER_CORE * cores))


def packet_offsets(counts: dict[tuple[int, int], int]) -> dict[tuple[int, int], int]:
    """``{(file, split): packets in the file's earlier splits}`` from ``{(file, split): count}``."""
    out: dict[tuple[int, int], int] = {}
    by_file: dict[int, list[tuple[int, int]]] = {}
    for (file_index, split_index), count in counts.items():
        by_file.setdefault(file_index, []).append((split_index, count))
    for file_index, splits in by_file.items():
        splits.sort()
        before = [0, *accumulate(count for _, count in splits)]
        for (split_index, _), offset in zip(splits, before):
            out[(file_index, split_index)] = offset
    return out


def piece_order(piece: dict) -> tuple:
    """The order stage two takes a partition's pieces in (``read_split_exchanges`` has Spark sort
    them so): every split's packet count first, then each connection's pieces by place."""
    return (
        piece["conn"] is not None,
        piece["conn"] or "",
        piece["file_index"],
        piece["split_index"],
        piece["chunk"] or 0,
    )


class PiecesOutOfOrder(RuntimeError):
    """A partition's pieces did not arrive sorted (counts first, then by connection and place)."""


def decode_pieces(
    batches: Iterable,
    files: tuple[str, ...],
    bundle,
    ports: frozenset[int],
    output: str = EXCHANGES,
) -> Iterator:
    """Arrow batches of ``output`` rows from one partition's sorted pieces (Arrow batches)."""
    from .pipeline import CollectorPaused

    with CollectorPaused():  # the collector's passes cost a tenth of the decode (see pipeline)
        yield from _decode_sorted(batches, files, bundle, ports, output)


def _decode_sorted(
    batches: Iterable, files: tuple[str, ...], bundle, ports: frozenset[int], output: str
) -> Iterator:
    from .bodies import BodyDecoder
    from kraftwire.codegen.package_cache import load_codecs
    from .exchanges import packet_ref
    from .layers import Segment
    from .pipeline import DecodeOptions, FlowTable
    from .segments_source import unpack_segments
    from .tables import to_arrow

    rows: list[dict] = []
    flows = FlowTable(
        files,
        BodyDecoder(load_codecs(bundle)),
        rows.append,
        DecodeOptions(server_ports=ports, table=output),
    )
    counts: dict[tuple[int, int], int] = {}
    offsets: dict[tuple[int, int], int] | None = None
    last: tuple | None = None  # (conn, file, split, chunk) of the previous piece
    names = ("conn", "file_index", "split_index", "chunk", "packets", "segments")
    for batch in batches:
        for conn, file_index, split_index, chunk, packets, blob in zip(
            *(batch.column(name).to_pylist() for name in names)
        ):
            if conn is None:
                if offsets is not None:
                    raise PiecesOutOfOrder("a split's packet count came after the pieces")
                counts[(file_index, split_index)] = packets
                continue
            if offsets is None:
                offsets = packet_offsets(counts)
            place = (conn, file_index, split_index, chunk)
            if last is not None and place <= last:
                raise PiecesOutOfOrder(f"piece {place} came after {last}")
            if last is not None and conn != last[0]:
                flows.finish()  # the previous connection is complete
            last = place
            offset = offsets.get((file_index, split_index))
            if offset is None:
                raise PiecesOutOfOrder(f"piece {place} came before its split's packet count")
            for number, ts_ns, *fields in unpack_segments(blob):
                flows.segment(Segment(*fields), packet_ref(file_index, number + offset), ts_ns)
            if len(rows) >= 4096:
                yield to_arrow(rows, output)
                rows.clear()  # in place: the flow table emits into this list
    flows.finish()
    if rows:
        yield to_arrow(rows, output)


def read_split_exchanges(
    spark,
    paths: list[str],
    bundle,
    ports: frozenset[int],
    split_bytes: int,
    output: str = EXCHANGES,
):
    """A DataFrame of the ``output`` rows of ``paths``, read in splits of ``split_bytes``."""
    from pyspark.sql import functions as F

    from .datasource import expand_paths, register_once
    from .pipeline import first_timestamp
    from .routes import partition_labels
    from .segments_source import NAME, KafkaPcapSegmentsDataSource
    from .spark_tasks import as_spark_task

    register_once(spark, KafkaPcapSegmentsDataSource)
    files = tuple(sorted(expand_paths(",".join(paths)), key=lambda p: (first_timestamp(p), p)))
    # A fixed number of partitions, so adaptive execution does not merge them back into a few;
    # one route label per partition, so none gets two routes' work and another none.
    partitions = stage_two_partitions(
        sum(os.path.getsize(path) for path in files), spark.sparkContext.defaultParallelism
    )
    pieces = (
        spark.read.format(NAME)
        .option("split_bytes", str(split_bytes))
        .option("routes", ",".join(str(label) for label in partition_labels(partitions)))
        .load(",".join(files))
    )

    def stage_two(batches):
        return as_spark_task(decode_pieces(batches, files, bundle, ports, output))

    return (
        pieces.repartition(partitions, "route")
        .sortWithinPartitions(F.col("conn").asc_nulls_first(), "file_index", "split_index", "chunk")
        .mapInArrow(stage_two, spark_ddl(output))
    )
