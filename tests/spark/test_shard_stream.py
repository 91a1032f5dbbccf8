"""The data source's shard decode handed on while it runs (``stream_shard``): the same rows as
``decode_shard``, over pcap and pcapng, several files and shards, damaged and cut-off files, and
never more than a bounded number of rows held at once."""

from __future__ import annotations

from collections import Counter

import pytest

from captures import T0, conversation, pcap_of, two_pcapng_sections, write
from kraftwire.spark_decoders.spark import shards
from kraftwire.spark_decoders.spark.shards import decode_shard, stream_shard
from kraftwire.spark_decoders.spark.datasource import KafkaPcapReader, Shard
from kraftwire.spark_decoders.decode.pipeline import STOP_CHECK_PACKETS
from kraftwire.spark_decoders.output.tables import EXCHANGES, FRAMES, arrow_batches, utc_aware
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

PORTS = frozenset({9092, 9093})
HOLD = 300  # far below the rows of the captures, so that every one of them pauses many times


def _conversations(count: int, exchanges: int, seed: int, port: int = 9092):
    return [
        conversation(
            kraft_exchanges(exchanges, seed=seed + i),
            client=(f"10.0.{seed}.{i + 1}", 40000 + i),
            server=("10.0.9.9", port),
            t0=T0 + 1000 * i + seed * 10**9,
            mss=200,
        )
        for i in range(count)
    ]


def _pcap(convs, **options) -> bytes:
    return pcap_of(sorted(p for c in convs for p in c.packets), **options)


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> list[str]:
    """Three files of many thousand packets each: a pcap, a pcapng of two sections, and a pcap cut
    off mid-record with garbage in between records; and a file that is no capture at all."""
    folder = tmp_path_factory.mktemp("stream")
    plain = write(folder, "a.pcap", _pcap(_conversations(6, 1500, seed=1)))
    first, second = _conversations(2, 4000, seed=2, port=9093)
    sections = write(folder, "b.pcapng", two_pcapng_sections(first, second))
    damaged = bytearray(_pcap(_conversations(5, 1500, seed=3)))
    middle = len(damaged) // 2
    damaged[middle:middle] = b"\xff" * 37  # garbage inside the file: skipped over by the reader
    cut = write(folder, "c.pcap", bytes(damaged[:-50]))  # its last record cut off
    other = write(folder, "d.pcap", b"not a capture at all")
    return [plain, sections, cut, other]


def _counted(rows) -> Counter:
    return Counter(repr(sorted(row.items())) for row in rows)


@pytest.mark.parametrize("table", [EXCHANGES, FRAMES])
@pytest.mark.parametrize("shards", [1, 3])
def test_streamed_shards_hold_decode_shards_rows(captures, shards, table):
    for shard in range(shards):
        whole = decode_shard(captures, None, PORTS, shard, shards, table, in_order=False)
        parts = list(stream_shard(captures, None, PORTS, shard, shards, table, hold_rows=HOLD))
        assert len(parts) > 3  # it did pause, and resumed
        assert _counted(row for part in parts for row in part) == _counted(whole)


@pytest.mark.parametrize("name", ["a.pcap", "b.pcapng", "c.pcap"])
def test_each_kind_of_file_streams_its_rows(captures, name):
    [path] = [p for p in captures if p.endswith(name)]
    whole = decode_shard([path], None, PORTS, 0, 1, FRAMES, in_order=False)
    parts = list(stream_shard([path], None, PORTS, 0, 1, FRAMES, hold_rows=HOLD))
    assert len(parts) > 2
    assert _counted(row for part in parts for row in part) == _counted(whole)


def test_rows_held_stay_bounded(captures):
    """Every list handed on holds at most the bound and what one stretch between two checks
    makes; the decode is still going when the first of them is handed on."""
    lists = stream_shard(captures, None, PORTS, 0, 1, FRAMES, hold_rows=HOLD)
    sizes = [len(rows) for rows in lists]
    assert len(sizes) > 10
    assert max(sizes) <= HOLD + STOP_CHECK_PACKETS  # a packet makes at most one frame row here
    assert sum(sizes) > 20 * HOLD


def test_reader_batches_come_out_while_the_shard_decodes(captures, monkeypatch):
    """The reader's first Arrow batch comes before the shard's last file is even opened."""
    opened: list[str] = []
    real_map = shards.map_file

    def recorded(path):
        opened.append(path)
        return real_map(path)

    monkeypatch.setattr(shards, "map_file", recorded)
    monkeypatch.setattr(shards, "STREAM_HOLD_ROWS", HOLD)
    reader = KafkaPcapReader(captures, None, PORTS, 1, FRAMES)
    batches = reader._batches(Shard(0))
    first = next(batches)
    assert first.num_rows > 0 and len(opened) < len(captures)
    rows = [utc_aware(row, FRAMES) for batch in [first, *batches] for row in batch.to_pylist()]
    whole = decode_shard(captures, None, PORTS, 0, 1, FRAMES, in_order=False)
    through_arrow = (row for batch in arrow_batches(whole, FRAMES) for row in batch.to_pylist())
    assert _counted(rows) == _counted(utc_aware(row, FRAMES) for row in through_arrow)
