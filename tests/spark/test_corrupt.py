"""Corrupt input never fails the job: the damage is reported and the rest decodes."""

from __future__ import annotations

import random
import struct

import pytest

import kraftwire.spark_decoders as decoders
from captures import T0, assert_rows_match, conversation, decode, pcap_of, write
from kraftwire.spark_decoders.decode import pipeline
from kraftwire.spark_decoders.spark.shards import decode_shard
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET
from kraftwire.spark_decoders.kafka.rows import STATUSES
from kraftwire.synthetic_capture import link_frame, pcapng_section
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(300)


def _records(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every record of a little-endian pcap."""
    out, pos = [], 24
    while pos < len(data):
        (incl,) = struct.unpack_from("<I", data, pos + 8)
        out.append((pos, pos + 16 + incl))
        pos += 16 + incl
    return out


def test_truncated_file_keeps_every_complete_exchange(tmp_path):
    exchanges = kraft_exchanges(14, seed=1)
    data = pcap_of(conversation(exchanges, close=False).packets)
    cut = _records(data)[-1][0] + 30  # inside the last record (the last response)
    rows, stats = decode(write(tmp_path, "cut.pcap", data[:cut]))
    [file_stats] = stats.values()
    assert file_stats.truncated_tail
    assert_rows_match(rows[:-1], exchanges[:-1])
    assert rows[-1]["status"] == "no_response" and rows[-1]["correlation_id"] == 14


def test_garbage_between_packets_is_skipped(tmp_path):
    exchanges = kraft_exchanges(14, seed=2)
    data = pcap_of(conversation(exchanges).packets)
    records = _records(data)
    rng = random.Random(3)
    garbage_at = sorted(rng.sample([end for _, end in records[:-1]], 5), reverse=True)
    for pos in garbage_at:
        data = (
            data[:pos] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))) + data[pos:]
        )
    rows, stats = decode(write(tmp_path, "garbage.pcap", data))
    [file_stats] = stats.values()
    assert file_stats.resyncs >= 1
    assert_rows_match(rows, exchanges)


def test_huge_bogus_frame_size_flags_the_stream_and_resumes(tmp_path):
    exchanges = kraft_exchanges(7, seed=4)
    bogus = kraft_exchanges(1, seed=5, first_correlation_id=99)[0]
    conv = conversation([], close=False)
    ts = T0 + 10**6
    for index, exchange in enumerate(exchanges):
        request = exchange.request
        if index == 3:  # a frame claiming 2 GB: the reader resynchronises at the next request
            conv.send(True, b"\x7f\xff\xff\xf0" + bogus.request[4:], ts)
        conv.send(True, request, ts)
        conv.send(False, exchange.response, ts + 500_000)
        ts += 10**6
    rows, _ = decode(write(tmp_path, "huge.pcap", pcap_of(conv.packets)))
    assert_rows_match(rows, exchanges)


@pytest.mark.parametrize("seed", range(8))
def test_random_byte_flips_never_fail(tmp_path, seed):
    rng = random.Random(seed)
    exchanges = kraft_exchanges(21, seed=seed)
    data = bytearray(pcap_of(conversation(exchanges, mss=200).packets))
    for _ in range(6):
        data[rng.randrange(24, len(data))] ^= 1 << rng.randrange(8)
    rows, _ = decode(write(tmp_path, "flips.pcap", bytes(data)))
    by_corr = {e.correlation_id: e for e in exchanges}
    ok = [r for r in rows if r["status"] == "ok"]
    # A flipped size field can swallow the frames after it until the stream resynchronises, so
    # only a share survives; and a flip inside a header field or string still decodes (captures
    # carry no checksum we can trust), so the test counts the rows that are exactly right.
    right = [
        r
        for r in ok
        if r["correlation_id"] in by_corr and r["api_key"] == by_corr[r["correlation_id"]].api_key
    ]
    assert len(right) >= 5
    assert all(r["status"] in STATUSES for r in rows)


def test_damaged_pcapng_block_is_skipped(tmp_path):
    exchanges = kraft_exchanges(7, seed=6)
    conv = conversation(exchanges)
    packets = [(0, ts, link_frame(LINK_ETHERNET, ip)) for ts, ip in conv.packets]
    good = pcapng_section([(LINK_ETHERNET, None)], packets)
    extra = pcapng_section([(LINK_ETHERNET, None)], packets[:1])[
        -100:
    ]  # a block's tail, misaligned
    data = good[: len(good) // 2] + b"\xde\xad\xbe\xef" * 3 + good[len(good) // 2 :] + extra
    rows, stats = decode(write(tmp_path, "damaged.pcapng", data))
    [file_stats] = stats.values()
    assert file_stats.resyncs >= 1
    assert sum(r["status"] == "ok" for r in rows) >= 5


def test_not_a_capture_is_reported(tmp_path):
    rows, stats = decode(write(tmp_path, "text.pcap", b"hello, this is not a capture\n"))
    assert rows == [] and "not a pcap or pcapng file" in stats[next(iter(stats))].problems[0]


@pytest.mark.skipif(decoders.IMPLEMENTATION != "pure", reason="compiled calls are not patched")
def test_a_fault_of_the_decoder_is_not_reported_as_a_file_that_is_no_capture(tmp_path, monkeypatch):
    """Only a file that is no capture is noted and passed over; any other error inside the decode
    is a fault of ours and is raised, not turned into "not a capture" and zero rows."""
    path = write(tmp_path, "good.pcap", pcap_of(conversation(kraft_exchanges(2, seed=3)).packets))

    def faulty(*args, **kwargs):
        raise ValueError("a fault inside the decode")

    monkeypatch.setattr(pipeline._PacketPaths, "route", faulty)
    with pytest.raises(ValueError, match="a fault inside the decode"):
        decode(path)
    with pytest.raises(ValueError, match="a fault inside the decode"):
        decode_shard([str(path)], None, frozenset({9092}), 0, 2)
