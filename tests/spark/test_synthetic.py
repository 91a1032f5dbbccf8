"""Synthetic captures built from the codecs, with known content, decode exactly."""

from __future__ import annotations

import json
import random

import pytest

from captures import (
    T0,
    assert_rows_match,
    conversation,
    decode,
    pcap_of,
    two_pcapng_sections,
    write,
)
from kraftwire.spark_decoders.packets.layers import (
    LINK_ETHERNET,
    LINK_LOOP,
    LINK_NULL,
    LINK_RAW,
    LINK_SLL,
    LINK_SLL2,
)
from kraftwire.synthetic_capture import link_frame, pcapng_section
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(120)


def test_plain_conversation_decodes_every_exchange(tmp_path):
    exchanges = kraft_exchanges(7)
    conv = conversation(exchanges)
    rows, stats = decode(write(tmp_path, "plain.pcap", pcap_of(conv.packets)))
    assert_rows_match(rows, exchanges)
    assert stats[next(iter(stats))].problems == []
    fetch = next(r for r in rows if r["api_key"] == 1)
    batches = json.loads(fetch["response_json"])["responses"][0]["partitions"][0]["records"][
        "batches"
    ]
    assert batches[-1]["isControl"] and batches[-1]["records"][0]["control"]["type"] == 2
    assert all(r["client_ip"] == "10.0.0.1" and r["server_port"] == 9093 for r in rows)
    assert all(r["latency_us"] == 500.0 for r in rows)


@pytest.mark.parametrize(
    "linktype,vlans",
    [
        (LINK_ETHERNET, (300,)),
        (LINK_ETHERNET, (10, 20)),
        (LINK_SLL, ()),
        (LINK_SLL2, ()),
        (LINK_RAW, ()),
        (LINK_NULL, ()),
        (LINK_LOOP, ()),
    ],
)
@pytest.mark.parametrize("ipv6", [False, True])
def test_link_types_and_ip_versions(tmp_path, linktype, vlans, ipv6):
    exchanges = kraft_exchanges(7, seed=3)
    client, server = (
        (("fd00::1", 40001), ("fd00::2", 9093))
        if ipv6
        else (("10.0.0.1", 40001), ("10.0.0.2", 9093))
    )
    conv = conversation(
        exchanges,
        client,
        server,
        ipv6_extension=ipv6,
        ip_options=b"" if ipv6 else b"\x01\x01\x01\x00",
    )
    rows, _ = decode(write(tmp_path, "link.pcap", pcap_of(conv.packets, linktype, vlans)))
    assert_rows_match(rows, exchanges)
    assert rows[0]["client_ip"] == client[0]


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("nanosecond", [False, True])
def test_pcap_byte_orders_and_resolutions(tmp_path, endian, nanosecond):
    exchanges = kraft_exchanges(3)
    conv = conversation(exchanges, t0=T0 + 123_456_789)
    data = pcap_of(conv.packets, endian=endian, nanosecond=nanosecond)
    rows, _ = decode(write(tmp_path, "order.pcap", data))
    assert_rows_match(rows, exchanges)
    expected_us = (
        (T0 + 123_456_789 + 1_000_000) // 1000
        if nanosecond
        else (T0 + 123_456_000 + 1_000_000) // 1000
    )
    first = rows[0]["request_ts"]
    assert int(first.timestamp()) * 1_000_000 + first.microsecond == expected_us


def test_pcapng_sections_interfaces_and_resolutions(tmp_path):
    a, b = kraft_exchanges(4, seed=1), kraft_exchanges(4, seed=2, first_correlation_id=100)
    conv_a = conversation(a)
    conv_b = conversation(b, client=("fd00::5", 40002), server=("fd00::6", 9092), t0=T0 + 7)
    rows, stats = decode(write(tmp_path, "multi.pcapng", two_pcapng_sections(conv_a, conv_b)))
    assert_rows_match([r for r in rows if r["correlation_id"] < 100], a)
    assert_rows_match([r for r in rows if r["correlation_id"] >= 100], b)
    assert rows[0]["request_frame"] == 4  # 3 handshake packets, then the request
    # ns on interface 1 (tsresol 9): the exact nanosecond survives to the microsecond column.
    assert all(r["request_ts"] is not None for r in rows)


def test_simple_packet_blocks(tmp_path):
    exchanges = kraft_exchanges(3)
    conv = conversation(exchanges)
    data = pcapng_section(
        [(LINK_ETHERNET, None)],
        [(0, ts, link_frame(LINK_ETHERNET, ip)) for ts, ip in conv.packets],
        simple=True,
    )
    rows, _ = decode(write(tmp_path, "spb.pcapng", data))
    assert_rows_match(rows, exchanges)
    assert rows[0]["request_ts"].timestamp() == 0


def test_one_frame_over_many_segments_and_many_frames_in_one_segment(tmp_path):
    exchanges = kraft_exchanges(7, seed=5)
    conv = conversation(exchanges, mss=3)  # every frame cut into 3-byte segments
    rows, _ = decode(write(tmp_path, "tiny.pcap", pcap_of(conv.packets)))
    assert_rows_match(rows, exchanges)
    # All requests in one segment, then all responses in one segment.
    conv = conversation([], close=False)
    conv.send(True, b"".join(e.request for e in exchanges), T0 + 10**6, mss=65000)
    conv.send(False, b"".join(e.response for e in exchanges), T0 + 2 * 10**6, mss=65000)
    rows, _ = decode(write(tmp_path, "batched.pcap", pcap_of(conv.packets)))
    assert_rows_match(rows, exchanges)
    assert {r["request_frame"] for r in rows} == {4} and {r["response_frame"] for r in rows} == {5}
