"""The stream readers fed whole, byte by byte, and with trailing data."""

from __future__ import annotations

import pytest

from captures import conversation, pcap_of
from kraftwire.spark_decoders.packets.capture import CaptureStats
from kraftwire.spark_decoders.kafka.framing import FrameReader
from kraftwire.spark_decoders.kafka.headers import plausible_request, plausible_response
from kraftwire.spark_decoders.decode.pipeline import segments
from kraftwire.spark_decoders.packets.reassembly import TcpStream
from kraftwire.synthetic_capture import pcapng_section, link_frame
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

EXCHANGES = kraft_exchanges(14, seed=11)
REQUESTS = b"".join(e.request for e in EXCHANGES)


def _frames_of(chunks: list[bytes]) -> list[tuple[bytes, int]]:
    frames = []
    reader = FrameReader(frames.append, plausible_request)
    for number, chunk in enumerate(chunks, 1):
        reader.data(chunk, number, number * 10)
    return [(f.payload, f.last_packet) for f in frames] + [("left", len(reader.buf))]


def _cuts(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_frame_reader_whole_byte_by_byte_and_with_trailing_data():
    whole = _frames_of([REQUESTS])
    assert [p for p, _ in whole[:-1]] == [e.request[4:] for e in EXCHANGES] and whole[-1] == (
        "left",
        0,
    )
    by_byte = _frames_of(_cuts(REQUESTS, 1))
    assert [p for p, _ in by_byte[:-1]] == [p for p, _ in whole[:-1]]
    ends = [sum(len(e.request) for e in EXCHANGES[: i + 1]) for i in range(len(EXCHANGES))]
    assert [n for _, n in by_byte[:-1]] == ends  # the packet that brought each frame's last byte
    trailing = _frames_of([REQUESTS + EXCHANGES[0].request[:9]])
    assert trailing[:-1] == whole[:-1] and trailing[-1] == ("left", 9)


@pytest.mark.parametrize("size", [100, 1460, 100_000])
def test_frame_reader_response_side_resynchronises_on_pending_ids(size):
    """Mid-stream, the reader finds the first response that answers a waiting request. (Fed in
    packets, not bytes: where packets start is part of what it judges. Ids from 1000 on: ids 1-14
    also occur as small numbers inside response bodies, where a resync can be fooled.)"""
    exchanges = kraft_exchanges(14, seed=11, first_correlation_id=1000)
    responses = b"".join(e.response for e in exchanges)
    frames = []
    pending = {e.correlation_id for e in exchanges[5:]}
    reader = FrameReader(frames.append, plausible_response(pending))
    reader.gap("midstream")
    for number, chunk in enumerate(_cuts(responses[7:], size), 1):
        reader.data(chunk, number, 0)
    ids = [int.from_bytes(f.payload[:4], "big") for f in frames]
    assert ids == [e.correlation_id for e in exchanges[5:]]


class _Collect:
    def __init__(self) -> None:
        self.bytes = bytearray()
        self.gaps: list[str] = []

    def data(self, payload, packet, ts_ns) -> None:
        self.bytes += payload

    def gap(self, kind) -> None:
        self.gaps.append(kind)


@pytest.mark.parametrize("size", [1, 2, 1460, len(REQUESTS)])
def test_tcp_stream_any_segmentation(size):
    sink = _Collect()
    stream = TcpStream(sink)
    stream.segment(0xFFFFFFFE, 0x02, b"", 0, 1, 0)  # SYN right before the wrap
    seq = 0xFFFFFFFF
    for index, chunk in enumerate(_cuts(REQUESTS, size)):
        stream.segment(seq, 0x18, chunk, 0, index + 2, 0)
        stream.segment(seq, 0x18, chunk, 0, index + 2, 0)  # and every segment retransmitted
        seq = (seq + len(chunk)) & 0xFFFFFFFF
    stream.finish()
    assert bytes(sink.bytes) == REQUESTS and sink.gaps == []
    assert stream.retransmits == len(_cuts(REQUESTS, size))


def test_capture_readers_with_trailing_data():
    conv = conversation(EXCHANGES[:3])
    pcap = pcap_of(conv.packets)
    ng = pcapng_section([(1, None)], [(0, ts, link_frame(1, ip)) for ts, ip in conv.packets])
    for data, first_record in ((pcap, 24), (ng, ng.index(b"\x06\x00\x00\x00"))):
        whole = list(segments(data, None, len(data), CaptureStats()))
        stats = CaptureStats()
        tail = data[first_record : first_record + 33]  # the start of a record, cut off
        with_tail = list(segments(data + tail, None, len(data) + 33, stats))
        assert with_tail == whole and stats.truncated_tail
        assert len(whole) == len(conv.packets)
