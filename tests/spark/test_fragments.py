"""IP fragment reassembly: Kafka frames split over IPv4 and IPv6 fragments decode exactly; overlaps,
oversized, stale and excess fragment sets stay bounded and are flagged."""

from __future__ import annotations

import random

import pytest

from captures import assert_rows_match, conversation, decode, fragmented, pcap_of, write
from kraftwire.spark_decoders.packets.fragments import FragmentReassembler
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET, LINK_RAW, LINK_SLL2, tcp_segment
from kraftwire.synthetic_capture import ip_fragments, tcp_packet
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(120)

V4 = (("10.0.0.1", 40001), ("10.0.0.2", 9093))
V6 = (("fd00::1", 40001), ("fd00::2", 9093))


@pytest.mark.parametrize("endpoints", [V4, V6], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("linktype", [LINK_ETHERNET, LINK_SLL2])
def test_kafka_frames_split_over_ip_fragments_decode_exactly(tmp_path, endpoints, linktype):
    exchanges = kraft_exchanges(14, seed=7)
    conv = conversation(exchanges, *endpoints, mss=1400, ipv6_extension=endpoints is V6)
    packets, completes = fragmented(conv.packets, 16, random.Random(3))
    assert len(packets) > 5 * len(conv.packets)
    rows, stats = decode(write(tmp_path, "frag.pcap", pcap_of(packets, linktype)))
    assert_rows_match(rows, exchanges)
    assert stats[next(iter(stats))].problems == []
    # Frames are numbered by the fragment that completed their last datagram: the original
    # packets are 3 handshake packets, then one request and one response packet per exchange.
    assert [r["request_frame"] for r in rows] == [completes[3 + 2 * i] for i in range(14)]
    assert [r["response_frame"] for r in rows] == [completes[4 + 2 * i] for i in range(14)]


def test_a_lost_fragment_flags_its_exchange_and_the_rest_decodes(tmp_path):
    exchanges = kraft_exchanges(7, seed=2)
    conv = conversation(exchanges, *V4, mss=1400)
    packets, _ = fragmented(conv.packets, 16, random.Random(1), duplicate=False)
    fetch = 3 + 2 * [e.api_key for e in exchanges].index(1) + 1  # the Fetch response's packet
    ip = conv.packets[fetch][1]
    lost = ip_fragments(ip, 16, fetch + 1)[1]
    packets = [p for p in packets if p[1] != lost]
    rows, stats = decode(write(tmp_path, "lost.pcap", pcap_of(packets)))
    fetch_row = next(r for r in rows if r["api_key"] == 1)
    assert fetch_row["status"] == "no_response" and fetch_row["response_frame"] is None
    assert_rows_match(
        [r for r in rows if r["api_key"] != 1], [e for e in exchanges if e.api_key != 1]
    )
    [problem] = stats[next(iter(stats))].problems
    assert problem == f"IP fragments dropped (incomplete): 10.0.0.2 > 10.0.0.1 id {fetch + 1}"


def _v4_fragments(payload: bytes, size: int, ident: int = 9):
    ip = tcp_packet("10.0.0.1", 40001, "10.0.0.2", 9093, 7, 0, 0x18, payload)
    return ip, ip_fragments(ip, size, ident)


def _feed(reassembler, pieces, ts=0):
    return [reassembler.packet(LINK_RAW, p, ts) for p in pieces]


def _with_payload(fragment: bytes, payload: bytes) -> bytes:
    """An IPv4 fragment with the same header fields (offset, flags) but another payload."""
    header = bytearray(fragment[:20])
    header[2:4] = (20 + len(payload)).to_bytes(2, "big")
    return bytes(header) + payload


def test_overlaps_keep_the_bytes_that_arrived_first():
    ip, pieces = _v4_fragments(bytes(range(200)), 64)
    whole = tcp_segment(LINK_RAW, ip, len(ip))
    # An overlapping fragment with the same bytes (the first two re-cut), arriving first of all.
    overlapping = _with_payload(pieces[0], pieces[0][20:] + pieces[1][20:52])
    reassembler = FragmentReassembler()
    results = _feed(reassembler, [overlapping, *pieces])
    assert results[:-1] == [None] * len(pieces) and results[-1] == whole
    assert reassembler.conflicts == 0 and reassembler.reassembled == 1
    # A forged fragment at offset 0 arriving after the real one cannot rewrite the TCP header.
    forged = _with_payload(pieces[0], b"\xee" * 16)
    reassembler = FragmentReassembler()
    assert _feed(reassembler, [*pieces[:2], forged, *pieces[2:]])[-1] == whole
    assert reassembler.conflicts == 1 and "different bytes" in reassembler.stats.problems[0]


def test_late_duplicates_are_ignored_but_a_reused_id_is_a_new_datagram():
    ip, pieces = _v4_fragments(bytes(range(200)), 64)
    reassembler = FragmentReassembler()
    assert _feed(reassembler, pieces)[-1] == tcp_segment(LINK_RAW, ip, len(ip))
    assert _feed(reassembler, pieces[1:2]) == [None]
    assert reassembler.duplicates == 1 and not reassembler.pending
    other, again = _v4_fragments(bytes(range(200))[::-1], 64)  # the same id, other bytes
    assert _feed(reassembler, again)[-1] == tcp_segment(LINK_RAW, other, len(other))
    reassembler.finish()
    assert reassembler.dropped == {} and reassembler.reassembled == 2


def test_oversized_stale_and_excess_fragment_sets_are_dropped_and_flagged():
    ip, pieces = _v4_fragments(bytes(100), 48)
    huge = bytearray(pieces[1])
    huge[6:8] = (0x2000 | (65528 // 8)).to_bytes(2, "big")  # offset 65528 + 48 bytes > 65535
    reassembler = FragmentReassembler()
    assert _feed(reassembler, [pieces[0], bytes(huge)]) == [None, None]
    assert reassembler.dropped == {"oversized": 1} and not reassembler.pending

    reassembler = FragmentReassembler(timeout_ns=10**9)
    assert _feed(reassembler, pieces[:1], ts=0) + _feed(
        reassembler, pieces[1:], ts=2 * 10**9
    ) == [None] * len(pieces)
    assert reassembler.dropped == {"expired": 1}
    reassembler.finish()
    assert reassembler.dropped == {"expired": 1, "incomplete": 1} and not reassembler.pending

    reassembler = FragmentReassembler(max_datagrams=3)
    for ident in range(1, 6):
        _feed(reassembler, _v4_fragments(bytes(100), 48, ident)[1][:1])
    assert reassembler.dropped == {"evicted": 2} and len(reassembler.pending) == 3
    reassembler = FragmentReassembler(max_bytes=1000)
    for ident in range(1, 40):
        _feed(reassembler, _v4_fragments(bytes(400), 48, ident)[1][:-1])
    assert reassembler.held_bytes <= 1000 and reassembler.dropped["evicted"] > 30
    assert (
        reassembler.stats.problems[0] == "IP fragments dropped (evicted): 10.0.0.1 > 10.0.0.2 id 1"
    )


def test_a_fragment_cut_by_the_snaplen_drops_its_datagram():
    ip, pieces = _v4_fragments(bytes(100), 48)
    reassembler = FragmentReassembler()
    last = pieces[-1]
    assert _feed(reassembler, pieces[:-1]) == [None] * (len(pieces) - 1)
    assert reassembler.packet(LINK_RAW, last[:-4], 0) is None
    assert reassembler.dropped == {"cut": 1}


def test_unfragmented_and_non_tcp_packets_are_not_fragments():
    ip = tcp_packet("10.0.0.1", 1, "10.0.0.2", 2, 0, 0, 0x18, b"x" * 100)
    udp = bytearray(ip_fragments(ip, 48)[0])
    udp[9] = 17
    reassembler = FragmentReassembler()
    assert _feed(reassembler, [ip, bytes(udp), b"", b"\x45"]) == [None] * 4
    assert not reassembler.pending and reassembler.dropped == {}
