"""The split plan without Spark: splits cover the file, each split's pieces and count are what its
read numbers, and pieces stitched as stage two stitches them give local mode's rows."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from captures import T0, conversation, write
from kraftwire.spark_decoders import decode_local
from kraftwire.spark_decoders.packets.capture import CaptureStats
from kraftwire.spark_decoders.packets.fragments import ip_fragment
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET, LINK_SLL2, Segment
from kraftwire.spark_decoders.spark.ownership import shard_of
from kraftwire.spark_decoders.packets.layers import flow_key
from kraftwire.spark_decoders.packets.readers import open_reader
from kraftwire.spark_decoders.spark.routes import partition_labels, spark_hash_int, spark_partition
from kraftwire.spark_decoders.spark.pieces import (
    piece_arrow_schema,
    split_pieces,
    unpack_segments,
)
from kraftwire.spark_decoders.spark.splits import _plainly_unfragmented, plan_splits, split_segments
from kraftwire.spark_decoders.spark.stitch import (
    BYTES_PER_PARTITION,
    PiecesOutOfOrder,
    decode_pieces,
    piece_order,
    stage_two_partitions,
)
from kraftwire.synthetic_capture import link_frame, pcap_bytes, pcapng_section
from kraftwire.spark_decoders.output.tables import EXCHANGES, sort_key, utc_aware
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges
from packet_strategies import link_packets

PACKETS = conversation(kraft_exchanges(6, seed=3), mss=200).packets
PORTS = frozenset({9092, 9093})


def _capture(pcapng: bool, linktype: int, packets=PACKETS) -> bytes:
    frames = [(ts, link_frame(linktype, ip)) for ts, ip in packets]
    if pcapng:
        return pcapng_section([(linktype, 9)], [(0, ts, frame) for ts, frame in frames])
    return pcap_bytes(frames, linktype)


@given(size=st.integers(0, 10**7), split_bytes=st.integers(1, 10**6))
def test_splits_cover_the_file_in_equal_pieces_of_at_most_split_bytes(size, split_bytes):
    assume(size <= 5000 * split_bytes)  # a list of at most 5,000 splits
    splits = plan_splits(size, split_bytes)
    assert splits[0][0] == 0 and splits[-1][1] == size
    assert all(stop == start for (_, stop), (start, _) in zip(splits, splits[1:]))
    lengths = [stop - start for start, stop in splits]
    assert max(lengths) <= split_bytes
    assert max(lengths) - min(lengths) <= 1
    assert len(splits) == max(1, -(-size // split_bytes))


def _split_rows(buf, start, stop, place, routes, chunk_bytes=1 << 24) -> list[dict]:
    return [
        row
        for batch in split_pieces(buf, start, stop, place, routes, chunk_bytes)
        for row in batch.to_pylist()
    ]


@settings(max_examples=60, deadline=None)
@given(
    pcapng=st.booleans(),
    linktype=st.sampled_from([LINK_ETHERNET, LINK_SLL2]),
    split_bytes=st.integers(50, 4000),
    garbage=st.lists(st.tuples(st.integers(30, 10**6), st.binary(min_size=1, max_size=40))),
)
def test_a_splits_count_is_the_packets_its_pieces_number(pcapng, linktype, split_bytes, garbage):
    buf = _capture(pcapng, linktype)
    for at, junk in sorted(garbage, reverse=True):  # damage between (or inside) records
        at = min(at, len(buf))
        buf = buf[:at] + junk + buf[at:]
    whole = CaptureStats()
    reader, start = open_reader(buf, whole)
    assert sum(1 for _ in reader.records(start, len(buf))) == whole.packets
    routes = [5, 9, 2]
    counts = []
    for index, (start, stop) in enumerate(plan_splits(len(buf), split_bytes)):
        rows = _split_rows(buf, start, stop, (0, index), routes)
        count_rows = [row for row in rows if row["conn"] is None]
        assert sorted(row["route"] for row in count_rows) == sorted(routes)
        (count,) = {row["packets"] for row in count_rows}
        stats = CaptureStats()
        expected = [(n, ts, *seg) for n, ts, seg in split_segments(buf, start, stop, stats)]
        assert count == stats.packets
        pieces = [row for row in rows if row["conn"] is not None]
        carried = [item for row in pieces for item in unpack_segments(row["segments"])]
        assert sorted(carried) == sorted(expected)
        assert all(1 <= item[0] <= count for item in carried)
        for row in pieces:  # one connection per piece, routed by its canonical endpoints
            (key,) = {flow_key_of(item) for item in unpack_segments(row["segments"])}
            assert row["conn"] == repr(key)
            assert row["route"] == routes[shard_of(key, len(routes))]
        counts.append(count)
    if not garbage:  # damage may make a split resynchronise differently from the whole read
        assert sum(counts) == whole.packets == len(PACKETS)


def flow_key_of(item: tuple) -> tuple:
    """The canonical endpoints of a carried ``(number, ts_ns, *segment fields)``."""
    return flow_key(Segment(*item[2:]))


def _stage_two(pieces: list[dict], files: tuple[str, ...]) -> list[dict]:
    """Stage two as Spark runs it: pieces by route, each partition sorted (counts first, then by
    connection and place), decoded in Arrow batches of a few rows."""
    schema = piece_arrow_schema()
    rows = []
    for route in {row["route"] for row in pieces}:
        partition = sorted((row for row in pieces if row["route"] == route), key=piece_order)
        batches = [
            pa.RecordBatch.from_pylist(partition[k : k + 3], schema=schema)
            for k in range(0, len(partition), 3)
        ]
        for out in decode_pieces(batches, files, None, PORTS):
            rows += [utc_aware(row) for row in out.to_pylist()]
    return sorted(rows, key=sort_key(EXCHANGES))


@pytest.fixture(scope="module")
def rotated(tmp_path_factory):
    """Three interleaved connections over two files, one continuing from the first into the second."""
    convs = [
        conversation(
            kraft_exchanges(8, seed=i, first_correlation_id=100 * i + 1),
            client=(f"10.0.0.{i + 1}", 40000 + i),
            t0=T0 + i * 10**5,
            mss=150 + 100 * i,
        )
        for i in range(3)
    ]
    packets = sorted(p for c in convs for p in c.packets)
    half = len(packets) // 2
    tmp = tmp_path_factory.mktemp("splits")
    files = (
        write(tmp, "a.pcap", _capture(False, LINK_ETHERNET, packets[:half])),
        write(tmp, "b.pcapng", _capture(True, LINK_SLL2, packets[half:])),
    )
    return files, decode_local(list(files))


@settings(max_examples=25, deadline=None)
@given(
    split_bytes=st.integers(200, 30000),
    chunk_bytes=st.sampled_from([1, 500, 5000, 1 << 24]),
    partitions=st.integers(1, 5),
)
def test_pieces_stitched_in_stage_two_give_local_rows(
    rotated, split_bytes, chunk_bytes, partitions
):
    files, local = rotated
    assert sum(row["status"] == "ok" for row in local) == 3 * 8
    routes = partition_labels(partitions)
    pieces = []
    for file_index, path in enumerate(files):
        with open(path, "rb") as handle:
            buf = handle.read()
        for index, (start, stop) in enumerate(plan_splits(len(buf), split_bytes)):
            pieces += _split_rows(buf, start, stop, (file_index, index), routes, chunk_bytes)
    assert _stage_two(pieces, files) == local


def test_stage_two_refuses_pieces_out_of_order(rotated):
    files, _ = rotated
    with open(files[0], "rb") as handle:
        buf = handle.read()
    pieces = []
    for index, (start, stop) in enumerate(plan_splits(len(buf), len(buf) // 3 + 1)):
        pieces += _split_rows(buf, start, stop, (0, index), [0])
    counts = [row for row in pieces if row["conn"] is None]
    conn = next(row["conn"] for row in pieces if row["conn"] is not None)
    own = [row for row in pieces if row["conn"] == conn]
    assert len(own) >= 2
    schema = piece_arrow_schema()
    for order in (counts + own[::-1], own[:1] + counts + own[1:]):
        batch = pa.RecordBatch.from_pylist(order, schema=schema)
        with pytest.raises(PiecesOutOfOrder):
            list(decode_pieces([batch], files, None, PORTS))
    in_order = pa.RecordBatch.from_pylist(counts + own, schema=schema)
    assert list(decode_pieces([in_order], files, None, PORTS))


@given(size=st.integers(0, 10**12), more=st.integers(0, 10**10), cores=st.integers(1, 64))
def test_stage_two_has_a_partition_per_core_and_more_only_for_large_captures(size, more, cores):
    partitions = stage_two_partitions(size, cores)
    assert cores <= partitions <= 4 * cores
    assert partitions == cores or partitions <= size // BYTES_PER_PARTITION
    assert stage_two_partitions(size + more, cores) >= partitions


def test_spark_hash_of_ints_is_sparks():
    """Values Spark 4's ``SELECT hash(CAST(v AS INT))`` returns."""
    spark_says = {
        0: 933211791,
        1: -559580957,
        2: 1765031574,
        7: 1079293707,
        -1: -1604776387,
        2**31 - 1: 133916647,
        -(2**31): 723455942,
        123456: 1905992991,
    }
    assert {value: spark_hash_int(value) for value in spark_says} == spark_says


@given(st.integers(1, 300))
def test_each_partition_gets_one_label(partitions):
    labels = partition_labels(partitions)
    assert [spark_partition(label, partitions) for label in labels] == list(range(partitions))
    assert all(label >= 0 for label in labels)


@settings(max_examples=300, deadline=None)
@given(packets=st.lists(link_packets(), min_size=1, max_size=12))
def test_the_lookback_skips_no_fragment(packets):
    """A split's lookback passes over packets from their raw bytes only when they are no fragment
    the reassembler would take; plain packets are passed over."""
    for linktype, frame in (p for group in packets for p in group):
        if _plainly_unfragmented(linktype, frame, 0, len(frame)):
            assert ip_fragment(linktype, frame) is None
    plain = link_frame(LINK_ETHERNET, PACKETS[5][1])
    assert _plainly_unfragmented(LINK_ETHERNET, plain, 0, len(plain))
