"""A shard passes over a packet from its raw bytes only when the full path agrees it is not its own.

``ShardOwnership.skips`` is checked against the reference (``tcp_segment`` + ``flow_key`` +
``shard_of``) on packets of every link type the reader knows, IPv4 with and without options, IPv6
with and without extension headers, IP fragments, and damaged packets (cut short, bytes flipped);
then through the readers (pcap and pcapng, packet numbers included) and the whole shard decode.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from captures import T0, conversation, fragmented, pcap_of, write
from packet_strategies import link_packets
from kraftwire.spark_decoders import decode_local
from kraftwire.spark_decoders.spark.shards import decode_shard
from kraftwire.spark_decoders.packets.capture import CaptureStats
from kraftwire.spark_decoders.packets.fragments import ip_fragment
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET, tcp_segment
from kraftwire.spark_decoders.spark.ownership import ShardOwnership, shard_of
from kraftwire.spark_decoders.decode.pipeline import segments
from kraftwire.spark_decoders.packets.layers import flow_key
from kraftwire.spark_decoders.kafka.rows import sort_key
from kraftwire.synthetic_capture import (
    link_frame,
    pcap_bytes,
    pcapng_section,
    tcp_packet,
)
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges


def reference_owns(seg, shard: int, shards: int) -> bool:
    return shard_of(flow_key(seg), shards) == shard


@settings(max_examples=400, deadline=None)
@given(
    packets=st.lists(link_packets(), min_size=1, max_size=12),
    shards=st.integers(2, 4),
    data=st.data(),
)
def test_a_skipped_packet_is_never_the_shards_own_nor_a_fragment(packets, shards, data):
    shard = data.draw(st.integers(0, shards - 1))
    ownership = ShardOwnership(shard, shards)
    for linktype, frame in (p for group in packets for p in group):
        seg = tcp_segment(linktype, frame, len(frame))
        if ownership.skips(linktype, frame, 0, len(frame)):
            assert ip_fragment(linktype, frame) is None  # the reassembler still sees it
            assert seg is None or not reference_owns(seg, shard, shards)
        if seg is not None:
            assert ownership.owns(seg) == reference_owns(seg, shard, shards)


def test_plain_ethernet_packets_are_decided_from_their_bytes():
    """The common cases do skip (a filter that never skips would pass the property above)."""
    for src, dst in (("10.0.0.1", "10.0.0.2"), ("fd00::1", "fd00::2")):
        frame = link_frame(LINK_ETHERNET, tcp_packet(src, 40000, dst, 9092, 1, 2, 0x18, b"x"))
        seg = tcp_segment(LINK_ETHERNET, frame, len(frame))
        owner = shard_of(flow_key(seg), 2)
        assert not ShardOwnership(owner, 2).skips(LINK_ETHERNET, frame, 0, len(frame))
        assert ShardOwnership(1 - owner, 2).skips(LINK_ETHERNET, frame, 0, len(frame))


def _shard_view(buf: bytes, shard: int, shards: int) -> list:
    ownership = ShardOwnership(shard, shards)
    found = segments(buf, None, len(buf), CaptureStats(), skips=ownership.skips)
    return [(n, ts, seg) for n, ts, seg in found if ownership.owns(seg)]


def _reference_view(buf: bytes, shard: int, shards: int) -> list:
    found = segments(buf, None, len(buf), CaptureStats())
    return [(n, ts, seg) for n, ts, seg in found if reference_owns(seg, shard, shards)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    packets=st.lists(link_packets(), min_size=1, max_size=20),
    shards=st.integers(1, 3),
    pcapng=st.booleans(),
    data=st.data(),
)
def test_readers_give_a_shard_the_same_numbered_segments(packets, shards, pcapng, data):
    """Through the pcap and pcapng readers (fragments reassembled, numbering kept over skipped
    packets), with garbage between records, a shard's segments are the reference's."""
    frames = [p for group in packets for p in group]
    linktype = frames[0][0]
    frames = [frame for kind, frame in frames if kind == linktype and frame]
    timed = [(T0 + i * 1000, frame) for i, frame in enumerate(frames)]
    if pcapng:
        buf = pcapng_section([(linktype, 9)], [(0, ts, frame) for ts, frame in timed])
    else:
        buf = pcap_bytes(timed, linktype)
    if data.draw(st.booleans()) and len(buf) > 40:
        at = data.draw(st.integers(24, len(buf) - 1))
        buf = buf[:at] + data.draw(st.binary(min_size=1, max_size=30)) + buf[at:]
    for shard in range(shards):
        assert _shard_view(buf, shard, shards) == _reference_view(buf, shard, shards)


def test_shards_together_give_local_rows(tmp_path):
    """Every shard's rows, put together, are local mode's rows: plain, VLAN-tagged, IPv6 and
    fragmented connections in one capture."""
    convs = [
        conversation(
            kraft_exchanges(6, seed=i, first_correlation_id=50 * i + 1),
            client=client,
            server=server,
            t0=T0 + i * 10**5,
            mss=400,
        )
        for i, (client, server) in enumerate(
            [
                (("10.0.0.1", 40001), ("10.0.0.2", 9092)),
                (("10.0.0.3", 40002), ("10.0.0.2", 9093)),
                (("fd00::1", 40003), ("fd00::2", 9092)),
                (("10.0.0.4", 40004), ("10.0.0.2", 9092)),
            ]
        )
    ]
    packets = sorted(p for c in convs[:3] for p in c.packets)
    packets += fragmented(convs[3].packets, 64, random.Random(3))[0]
    packets.sort(key=lambda p: p[0])
    plain = write(tmp_path, "plain.pcap", pcap_of(packets))
    tagged = write(tmp_path, "tagged.pcap", pcap_of(packets, vlans=(9,)))
    for path in (plain, tagged):
        local = decode_local([path])
        assert len(local) == 24 and all(row["status"] == "ok" for row in local)
        for shards in (1, 2, 3):
            rows = [
                row
                for shard in range(shards)
                for row in decode_shard([path], None, frozenset({9092, 9093}), shard, shards)
            ]
            assert sorted(rows, key=sort_key) == local
