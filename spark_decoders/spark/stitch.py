"""Stage two of the split plan: connections stitched across splits and files, then decoded.

Stage one (``segments_source``, its pieces made by ``pieces``) yields, per split, one *piece* per connection (its segments there)
and the split's packet count. ``read_split_exchanges`` sends each piece to the partition of its
route (every partition also gets every split's count), sorts each partition so that the counts come
first and each connection's pieces follow one another in capture order, and decodes a partition with
one streaming pass: a ``FlowTable`` (the local mode's) fed one connection at a time, so the rows are
local mode's rows and a task holds one Arrow batch of pieces at a time, not its whole input.
"""

from __future__ import annotations

from itertools import accumulate
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ..decode.pipeline import CollectorPaused, DecodeOptions, FlowTable
from ..kafka.bodies import BodyDecoder
from kraftwire.codegen.package_cache import load_codecs
from ..kafka.exchanges import packet_ref
from ..kafka.rows import Row
from ..output.tables import EXCHANGES, to_arrow
from ..packets.layers import Segment
from .pieces import unpack_segments

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kraftwire.codegen.package_cache import CodecBundle

# pyarrow has no type annotations: the Arrow batches that flow through here are typed Any.

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


def piece_order(piece: dict[str, Any]) -> tuple[bool, str, int, int, int]:
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
    batches: Iterable[Any],
    files: tuple[str, ...],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    output: str = EXCHANGES,
) -> Iterator[Any]:
    """Arrow batches of ``output`` rows from one partition's sorted pieces (Arrow batches)."""
    with CollectorPaused():  # the collector's passes cost a tenth of the decode (see pipeline)
        yield from _decode_sorted(batches, files, bundle, ports, output)


def _decode_sorted(
    batches: Iterable[Any],
    files: tuple[str, ...],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    output: str,
) -> Iterator[Any]:
    rows: list[Row] = []
    flows = FlowTable(
        files,
        BodyDecoder(load_codecs(bundle)),
        rows.append,
        DecodeOptions(server_ports=ports, table=output),
    )
    counts: dict[tuple[int, int], int] = {}
    offsets: dict[tuple[int, int], int] | None = None
    last: tuple[str, int, int, int] | None = None  # (conn, file, split, chunk) of the last piece
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
            for item in unpack_segments(blob):
                number, ts_ns, segment = item[0], item[1], Segment(*item[2:])
                flows.segment(segment, packet_ref(file_index, number + offset), ts_ns)
            if len(rows) >= 4096:
                yield to_arrow(rows, output)
                rows.clear()  # in place: the flow table emits into this list
    flows.finish()
    if rows:
        yield to_arrow(rows, output)
