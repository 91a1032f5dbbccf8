"""Reassembly and framing under hostile TCP: retransmits, reordering, overlaps, gaps, mid-stream."""

from __future__ import annotations

import random

import pytest

from captures import T0, assert_rows_match, conversation, decode, pcap_of, write
from kraftwire.synthetic_capture import Conversation
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(120)


def _segmented(exchanges, mss=7, isn=1000):
    """Conversation whose data packets are listed per exchange and direction, not yet emitted."""
    conv = Conversation(
        ("10.0.0.1", 40001), ("10.0.0.2", 9093), client_isn=isn, server_isn=isn + 77
    )
    conv.handshake(T0)
    plan = []
    for e in exchanges:
        plan.append((True, conv.segments(True, e.request, mss)))
        plan.append((False, conv.segments(False, e.response, mss)))
    return conv, plan


def _emit(conv, plan, shuffle=None, lost=()):
    """Emit planned segments; each acknowledges what the peer had sent before this exchange step
    (lost segments too: the peer got them, only the capture missed them)."""
    ts = T0 + 10**6
    acked = {True: conv.client_isn + 1, False: conv.server_isn + 1}
    for from_client, segments in plan:
        packets = [
            conv.segment_packet(from_client, seq, data, ack=acked[not from_client])
            for seq, data in segments
            if (seq, data) not in lost
        ]
        if segments:
            acked[from_client] = (segments[-1][0] + len(segments[-1][1])) & 0xFFFFFFFF
        if shuffle:
            packets = shuffle(packets)
        for packet in packets:
            conv.emit(ts, packet)
            ts += 1000


def test_partial_overlaps_deliver_each_byte_once(tmp_path):
    """Each segment after the first is re-cut to start inside its predecessor: half old bytes,
    half new, as a sender re-segmenting a retransmission does."""
    exchanges = kraft_exchanges(14, seed=12)
    conv, plan = _segmented(exchanges, mss=8)
    overlapped = []
    for from_client, segments in plan:
        merged = [segments[0]] + [
            (segments[i][0] - 4, segments[i - 1][1][-4:] + segments[i][1])
            for i in range(1, len(segments))
        ]
        overlapped.append((from_client, [(seq & 0xFFFFFFFF, data) for seq, data in merged]))
    _emit(conv, overlapped)
    rows, _ = decode(write(tmp_path, "partial.pcap", pcap_of(conv.packets)))
    assert_rows_match(rows, exchanges)


def test_retransmits_overlaps_and_reordering_decode_exactly(tmp_path):
    exchanges = kraft_exchanges(14, seed=9)
    rng = random.Random(4)
    conv, plan = _segmented(exchanges)

    # Overlapping re-sends: every segment also sent again merged with its neighbour.
    def hostile(packets):
        extra = [packets[i] for i in range(len(packets)) if rng.random() < 0.3]
        out = packets + extra
        rng.shuffle(out)
        return out

    _emit(conv, plan, hostile)
    # Overlaps: a segment covering two earlier ones, sent again.
    seq, data = plan[0][1][0]
    seq2, data2 = plan[0][1][1]
    conv.emit(T0 + 10**9, conv.segment_packet(True, seq, data + data2, ack=conv.seq[False]))
    rows, _ = decode(write(tmp_path, "hostile.pcap", pcap_of(conv.packets)))
    assert_rows_match(rows, exchanges)


@pytest.mark.parametrize("isn", [0xFFFFFFF0, 0xFFFFFF00])
def test_sequence_wraparound(tmp_path, isn):
    exchanges = kraft_exchanges(7, seed=2)
    conv, plan = _segmented(exchanges, mss=5, isn=isn)
    _emit(conv, plan)
    rows, _ = decode(write(tmp_path, "wrap.pcap", pcap_of(conv.packets)))
    assert_rows_match(rows, exchanges)


def test_gap_is_flagged_and_decoding_resumes(tmp_path):
    exchanges = kraft_exchanges(7, seed=1)
    conv, plan = _segmented(exchanges, mss=1460)
    lost = plan[4][1]  # the request of exchange 3 (one segment) never reaches the capture
    _emit(conv, plan, lost=lost)
    # The server's later ACK covers the lost bytes: the capture lost them, the server did not.
    rows, _ = decode(write(tmp_path, "gap.pcap", pcap_of(conv.packets)))
    by_corr = {r["correlation_id"]: r for r in rows}
    assert by_corr[3]["status"] == "no_request"
    others = [e for e in exchanges if e.correlation_id != 3]
    assert_rows_match([r for r in rows if r["correlation_id"] != 3], others)


def test_gap_inside_a_frame_flags_that_exchange(tmp_path):
    exchanges = kraft_exchanges(7, seed=1)
    conv, plan = _segmented(exchanges, mss=10)
    fetch_index = 2 * [e.api_key for e in exchanges].index(1) + 1  # the Fetch response
    _emit(conv, plan, lost=[plan[fetch_index][1][3]])
    rows, _ = decode(write(tmp_path, "gap2.pcap", pcap_of(conv.packets)))
    fetch = next(r for r in rows if r["api_key"] == 1)
    # The damaged response never completed: no frame number; the intact request still decodes.
    assert fetch["status"] == "gap" and fetch["response_frame"] is None
    assert fetch["request_frame"] is not None and fetch["request_json"] is not None
    rest = [e for e in exchanges if e.api_key != 1]
    assert_rows_match([r for r in rows if r["api_key"] != 1], rest)


def test_mid_stream_start_resynchronises(tmp_path):
    exchanges = kraft_exchanges(7, seed=6)
    conv, plan = _segmented(exchanges, mss=9)
    conv.packets.clear()  # no handshake captured
    plan[0] = (True, plan[0][1][2:])  # and the first request's head is missing
    _emit(conv, plan)
    rows, _ = decode(write(tmp_path, "mid.pcap", pcap_of(conv.packets)))
    assert rows[0]["status"] == "no_request" and rows[0]["correlation_id"] == 1
    assert_rows_match(rows[1:], exchanges[1:])


def test_snaplen_truncation_is_flagged(tmp_path):
    exchanges = kraft_exchanges(7, seed=1)
    conv = conversation(exchanges, mss=1460)
    data = pcap_of(conv.packets, snaplen=54 + 40 + 30)  # Ethernet+IP+TCP headers + 30 payload bytes
    rows, _ = decode(write(tmp_path, "snap.pcap", data))
    fetch = next(r for r in rows if r["api_key"] == 1)
    assert fetch["status"] == "truncated"
    assert [r["status"] for r in rows if r["api_key"] != 1] == ["ok"] * 6


def test_port_reuse_starts_a_new_connection(tmp_path):
    a, b = kraft_exchanges(3, seed=1), kraft_exchanges(3, seed=2, first_correlation_id=1)
    first = conversation(a)
    second = conversation(b, t0=T0 + 10**10, client_isn=777)
    rows, _ = decode(write(tmp_path, "reuse.pcap", pcap_of(first.packets + second.packets)))
    assert_rows_match(rows[:3], a)
    assert_rows_match(rows[3:], b)
    assert rows[0]["conn_id"] != rows[3]["conn_id"]
