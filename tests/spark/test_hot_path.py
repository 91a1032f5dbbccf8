"""The per-packet and per-frame fast paths give exactly what the general code gives.

Each fast path is a shortcut for the common case (untagged Ethernet + IPv4 without options, a frame
that starts a fresh buffer, an in-order segment); these tests build the common case and its near
misses and compare the shortcut with the general code it stands for, and check the shortcut is taken.
"""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.spark_decoders import layers
from kraftwire.spark_decoders.jsonview import dumps, json_view
from kraftwire.spark_decoders.layers import LINK_ETHERNET, tcp_segment


def _ethernet_ipv4_tcp(
    version_ihl: int,
    total: int,
    frag: int,
    proto: int,
    data_offset: int,
    flags: int,
    body: bytes,
) -> bytes:
    ip = struct.pack(
        ">BBHHHBBH4s4s",
        version_ihl,
        0,
        total,
        7,
        frag,
        64,
        proto,
        0,
        bytes([10, 0, 0, 1]),
        bytes([10, 0, 0, 2]),
    )
    options = b"\x00" * 4 * ((version_ihl & 0x0F) - 5) if version_ihl & 0x0F > 5 else b""
    tcp = struct.pack(
        ">HHIIBBHHH", 40001, 9092, 0xFFFFFFF0, 12345, data_offset << 4, flags, 0, 0, 0
    )
    tcp += b"\x01" * max(0, (data_offset - 5) * 4)
    return b"\x02" * 12 + b"\x08\x00" + ip + options + tcp + body


packets = st.builds(
    _ethernet_ipv4_tcp,
    version_ihl=st.sampled_from([0x45, 0x45, 0x46, 0x44, 0x65]),
    total=st.one_of(st.integers(0, 2000), st.just(0)),
    frag=st.sampled_from([0, 0x4000, 0x2000, 0x2001, 0x0005]),
    proto=st.sampled_from([6, 6, 17]),
    data_offset=st.integers(0, 15),
    flags=st.integers(0, 255),
    body=st.binary(max_size=300),
)


@settings(max_examples=400, deadline=None)
@given(packet=packets, cut=st.integers(0, 400), extra=st.integers(0, 3000))
def test_ethernet_ipv4_fast_path_equals_the_general_path(packet, cut, extra):
    """Whatever the header says (options, fragments, other protocols, bogus lengths, TSO's total
    length 0) and however the snaplen cut it, the one-unpack path agrees with the layered one."""
    data = packet[: max(0, len(packet) - cut)]
    orig_len = len(packet) + extra
    assert tcp_segment(LINK_ETHERNET, data, orig_len) == layers._ipv4(data, 14, orig_len)


def test_common_packet_takes_the_fast_path(monkeypatch):
    def general(*args):
        raise AssertionError("the common case went through the layered path")

    monkeypatch.setattr(layers, "_ipv4", general)
    packet = _ethernet_ipv4_tcp(0x45, 20 + 20 + 5, 0x4000, 6, 5, 0x18, b"hello")
    seg = tcp_segment(LINK_ETHERNET, packet, len(packet))
    assert seg == ("10.0.0.1", 40001, "10.0.0.2", 9092, 0xFFFFFFF0, 12345, 0x18, b"hello", 0, False)
    assert type(seg) is layers.Segment and seg.payload == b"hello"


@pytest.mark.parametrize("cut", [1, 5])
def test_fast_path_reports_what_the_snaplen_cut(cut):
    packet = _ethernet_ipv4_tcp(0x45, 20 + 20 + 5, 0, 6, 5, 0x18, b"hello")
    seg = tcp_segment(LINK_ETHERNET, packet[:-cut], len(packet))
    assert seg.payload == b"hello"[:-cut] and seg.missing == cut


def test_compiled_json_view_equals_the_codec_to_json_on_every_vector(upstream):
    """Every one of Kafka's 6,144 vectors, decoded: the compiled view is the codec's ``to_json``,
    key order included, and ``dumps`` writes what ``json.dumps`` with the same options writes."""
    from shared import shared_path
    from vectors import load_vectors

    checked = 0
    for vector in load_vectors(shared_path("kafka-vectors")):
        message = upstream.lookup(vector.spec).decode(vector.data, vector.version)
        expected = message.to_json(vector.version)
        view = json_view(message, vector.version)
        assert view == expected, vector.name
        text = json.dumps(expected, ensure_ascii=False, separators=(",", ":"))
        assert dumps(view) == text, vector.name
        checked += 1
    assert checked == 6144


def test_json_view_of_a_version_the_message_lacks_raises_the_codec_error(upstream):
    message = upstream.lookup("VoteRequest")()
    with pytest.raises(upstream.UnsupportedVersionError):
        json_view(message, 99)
